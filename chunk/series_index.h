// SeriesIndex: canonical series key <-> series id, the label postings used by selectors, and the
// series limits. One compact in-memory copy serves ingest and query alike.
//
// Memory (the node's cost per series): a series is its canonical key once, in an arena, a 16-byte
// record (key view, type) and a 12-byte hash slot; every label pair (metric name or tag) is stored
// once with one PostingList (the ascending ids carrying it, the first id inline): a label value
// unique to one series costs its bytes, a 32-byte pair and a hash slot. Nothing is kept per
// series in any other module: readers describe a series from its key.
//
// Durability: creating a series is in memory only, and cheap. Its definition (id, type, key) is
// logged by the caller together with the series' points in the shard WAL (AppendDefinition),
// and FlushDefinitions() later writes the definitions created since the last flush to the
// `series_by_id` family in one write (Storage does it in the background and before a checkpoint
// deletes WAL segments). Recovery restores definitions that the family lacks from the WAL
// (Restore). A series whose definition is not yet flushed is "pending": every writer that starts
// using it logs the definition with its first batch, so an acknowledged point is never durable
// without its series' definition ahead of it in the same WAL.
//
// Ids are dense (1, 2, 3, ... in creation order; a crash may leave gaps), so postings are sorted
// ascending and intersect by a linear merge.
//
// Thread safety: thread-safe. Lookups of existing keys take a shared lock on one of 16 stripes;
// creators are serialized by a creation mutex and take the stripe and the postings lock
// exclusively only to publish. Postings and label queries take the postings lock shared.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/id_hash_table.h"
#include "chunk/posting_list.h"
#include "chunk/series_key.h"
#include "chunk/string_arena.h"
#include "config/options.h"
#include "config/status.h"
#include "config/thread_annotations.h"

namespace ingot {

// Why a new series was refused (kNone when it was not).
enum class SeriesRejection : std::uint8_t {
  kNone = 0,
  kInvalidKey,   // the key does not parse, or uses the reserved label name __name__
  kMaxSeries,    // limits.max_series reached
  kRate,         // limits.max_new_series_per_minute reached
  kLabelCount,   // more than limits.max_labels_per_series labels
  kLabelBytes,   // a name or value longer than limits.max_label_bytes
  kKeyBytes,     // the whole key longer than limits.max_series_key_bytes
};
inline constexpr int kSeriesRejectionCount = 7;
// "invalid_key", "max_series", ... (metric label values).
const char* SeriesRejectionName(SeriesRejection r) noexcept;

struct ResolvedSeries {
  SeriesId sid = kInvalidSeriesId;
  ValueType type = ValueType::kFloat;  // the stored type; the caller rejects a different one
  bool created = false;                // this call created the series
  // The definition is not flushed yet: the caller logs it (AppendDefinition) ahead of the
  // series' first point in the WAL of the series' shard.
  bool definition_pending = false;
  SeriesRejection rejection = SeriesRejection::kNone;
};

// Top entries for /api/v1/status/tsdb.
struct IndexStats {
  struct Entry {
    std::string name;
    std::uint64_t value = 0;
  };
  std::uint64_t series = 0;
  std::uint64_t label_pairs = 0;
  std::vector<Entry> series_by_metric;        // metric name -> series
  std::vector<Entry> series_by_label;         // label name -> series carrying it
  std::vector<Entry> values_by_label;         // label name -> distinct values
  std::vector<Entry> series_by_pair;          // "name=value" -> series
  std::vector<Entry> memory_bytes_by_label;   // label name -> bytes of its values
};

class SeriesIndex {
 public:
  // The label name under which metric names (`<measurement>_<field>`) are indexed.
  static constexpr std::string_view kMetricName = "__name__";

  // Loads every series from `store`, which must outlive the index.
  static Status Load(ChunkStore& store, const LimitsOptions& limits,
                     std::unique_ptr<SeriesIndex>* index);
  static Status Load(ChunkStore& store, std::unique_ptr<SeriesIndex>* index) {
    return Load(store, LimitsOptions{}, index);
  }
  ~SeriesIndex();

  SeriesIndex(const SeriesIndex&) = delete;
  SeriesIndex& operator=(const SeriesIndex&) = delete;

  // Gets or creates the series of `canonical_key` (built by BuildSeriesKey). A refused new series
  // returns a non-OK status naming the limit (InvalidArgument for a bad key or a size limit, Busy
  // for the count and rate limits) with `out->rejection` saying which.
  Status Resolve(std::string_view canonical_key, ValueType type, ResolvedSeries* out);
  // Convenience form for callers that log nothing (benchmarks, tests).
  Status Resolve(std::string_view canonical_key, ValueType type, SeriesId* sid,
                 ValueType* stored_type);
  // Resolve for many keys. REQUIRES: all spans of equal size.
  Status ResolveMany(std::span<const std::string_view> canonical_keys,
                     std::span<const ValueType> types, std::span<SeriesId> sids,
                     std::span<ValueType> stored_types);

  // NotFound for an unknown id.
  Status Lookup(SeriesId sid, std::string* canonical_key, ValueType* type) const;
  // The key of `sid`, valid as long as the index; empty for an unknown id.
  std::string_view KeyOf(SeriesId sid, ValueType* type = nullptr) const;
  // kInvalidSeriesId when absent; never creates.
  SeriesId Find(std::string_view canonical_key, ValueType* type = nullptr) const;

  // --- durability of definitions (see the file comment) ---
  // Appends the WAL form of `sid`'s definition to `out`. REQUIRES: sid known.
  void AppendDefinition(SeriesId sid, std::vector<std::uint8_t>* out) const;
  // Parses definitions written by AppendDefinition, calling fn for each; Corruption if malformed.
  static Status ForEachDefinition(
      std::span<const std::uint8_t> bytes,
      const std::function<Status(SeriesId, ValueType, std::string_view key)>& fn);
  // Recovery: adds the definition if the index lacks it (it is then flushed like a new one). A key
  // already known under another id, or an id already used by another key, is Corruption.
  Status Restore(SeriesId sid, ValueType type, std::string_view canonical_key);
  // Writes the definitions not yet flushed to the store in one write (synced when `sync`).
  Status FlushDefinitions(bool sync);
  // Definitions created and not yet flushed.
  std::size_t pending_definitions() const;
  // Series with ids at or above this were created by this process (no chunk exists for them).
  // Restore() raises it past restored ids (recovery runs before any writer).
  SeriesId first_new_sid() const { return first_new_sid_; }

  // --- postings (sorted ascending ids) ---
  // `key` is a tag key, or kMetricName for metric names.
  std::vector<SeriesId> ByTag(std::string_view key, std::string_view value) const;
  std::vector<SeriesId> AllSeries() const;

  // Tag keys in use (kMetricName not included).
  std::vector<std::string> TagKeys() const;
  // Values of tag `key`, or metric names for kMetricName, sorted, as views into the index valid
  // as long as the index: no copy of the values, so that listing a million-value label costs 16
  // bytes per value while the answer is built.
  std::vector<std::string_view> TagValues(std::string_view key) const;

  // Calls fn(value, ids) for every value of `key` (a tag key or kMetricName), in no particular
  // order, under the shared lock: `fn` must not call back into the index. Views are valid during
  // the call only.
  void ForEachTagValue(
      std::string_view key,
      const std::function<void(std::string_view value, std::span<const std::uint32_t> ids)>& fn)
      const;

  IndexStats Stats(std::size_t top_n) const;

  std::size_t size() const { return count_.load(std::memory_order_relaxed); }
  // Highest id handed out so far (ids may have gaps after a crash).
  SeriesId max_sid() const { return published_.load(std::memory_order_acquire); }
  // Heap bytes held by the index (arenas, tables, postings), for the memory gauge.
  std::size_t memory_bytes() const;

 private:
  struct Record {
    const char* key = nullptr;  // in keys_ (arena)
    std::uint32_t key_len = 0;
    ValueType type = ValueType::kFloat;
  };
  static constexpr std::size_t kRecordsPerPage = 1 << 16;
  static constexpr std::size_t kRecordPages = 1 << 15;  // 2^31 series
  static constexpr int kStripes = 16;

  struct Stripe {
    mutable SharedMutex mu;
    IdHashTable table GUARDED_BY(mu);
  };
  // One label name (or the measurement / field / metric-name dimension) and its values.
  struct LabelName {
    std::string_view name;
    std::vector<std::uint32_t> pairs;  // indexes into pairs_, in creation order
    std::uint64_t series = 0;          // series carrying this name
  };
  struct Pair {
    const char* value = nullptr;  // in values_
    std::uint32_t value_len = 0;
    std::uint32_t name = 0;       // index into names_
    PostingList ids;
  };

  SeriesIndex(ChunkStore& store, const LimitsOptions& limits);

  const Record* RecordOf(SeriesId sid) const;
  Record* MutableRecord(SeriesId sid);
  SeriesId FindLocked(const Stripe& stripe, std::uint64_t hash, std::string_view key) const
      REQUIRES_SHARED(stripe.mu);
  // REQUIRES: create_mu_ held. Checks limits (unless restoring) and publishes the series. A series
  // that is not `findable` gets a record and postings but no key-table entry (a legacy duplicate
  // label set, see AddExistingLocked).
  Status CreateLocked(std::string_view key, std::uint64_t hash, ValueType type, SeriesId sid,
                      bool check_limits, SeriesRejection* rejection, bool findable = true)
      REQUIRES(create_mu_);
  // REQUIRES: create_mu_ held. Adds a series that exists already (loaded from `series_by_id` or
  // restored from the WAL), canonicalizing a legacy key (see series_key.h). Two legacy keys with
  // one label set both stay readable by id; the first one loaded takes new points.
  Status AddExistingLocked(SeriesId sid, ValueType type, std::string_view stored_key,
                           std::string_view source) REQUIRES(create_mu_);
  // The canonical form of a stored key (legacy keys rebuilt as label sets).
  static Status CanonicalKey(std::string_view key, std::string* canonical, bool* legacy);
  // REQUIRES: mu_ held exclusively.
  std::uint32_t NameIndexLocked(std::string_view name) REQUIRES(mu_);
  void AddPostingLocked(std::uint32_t name, std::string_view value, std::uint32_t sid)
      REQUIRES(mu_);
  static std::string_view ValueOf(const Pair& p) { return {p.value, p.value_len}; }
  // REQUIRES: mu_ held (shared is enough).
  const LabelName* FindName(std::string_view name) const REQUIRES_SHARED(mu_);
  std::vector<SeriesId> PostingsCopy(std::uint32_t name, std::string_view value) const
      REQUIRES_SHARED(mu_);
  std::vector<std::string> ValuesOf(std::uint32_t name) const REQUIRES_SHARED(mu_);
  bool AllowNewSeriesLocked() REQUIRES(create_mu_);

  ChunkStore& store_;
  const LimitsOptions limits_;

  // Lock order: flush_mu_, create_mu_, a stripe's mu, mu_.
  mutable Mutex create_mu_;  // serializes creators, Restore and the pending list
  // Canonical keys: appended under create_mu_, read without it (records publish them).
  StringArena keys_;
  std::unique_ptr<std::atomic<Record*>[]> record_pages_;
  std::atomic<SeriesId> published_{0};
  std::atomic<std::size_t> count_{0};
  SeriesId next_sid_ GUARDED_BY(create_mu_) = 1;
  SeriesId first_new_sid_ = 1;  // set by Load and Restore, before any writer
  std::vector<std::uint32_t> pending_ GUARDED_BY(create_mu_);  // ids created since the last flush
  std::atomic<SeriesId> durable_below_{1};
  Mutex flush_mu_;
  // Token bucket of the new-series rate limit.
  double rate_tokens_ GUARDED_BY(create_mu_) = 0;
  std::int64_t rate_refilled_ns_ GUARDED_BY(create_mu_) = 0;

  Stripe stripes_[kStripes];

  mutable SharedMutex mu_;
  StringArena values_ GUARDED_BY(mu_);           // label names and values
  std::deque<LabelName> names_ GUARDED_BY(mu_);  // [0] metric name, then tag keys
  std::unordered_map<std::string_view, std::uint32_t> tag_names_ GUARDED_BY(mu_);
  std::deque<Pair> pairs_ GUARDED_BY(mu_);  // [0] unused
  IdHashTable pair_table_ GUARDED_BY(mu_);
};

}  // namespace ingot
