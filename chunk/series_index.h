// SeriesIndex: canonical series key <-> series id, and the inverted index used by selectors.
//
// Both directions are persisted in the `series` and `series_by_id` column families and loaded into
// memory by Load(). Ids are dense (1, 2, 3, ... in creation order), so every id list returned here
// is sorted ascending and lists can be intersected by a linear merge.
//
// Thread safety: thread-safe. Lookups take a shared lock; creating a series takes a creation
// mutex (one creator at a time, the synced RocksDB write happens outside the shared lock so
// lookups proceed) and then briefly the exclusive lock to publish it.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/series_key.h"
#include "config/status.h"

namespace ingot {

class SeriesIndex {
 public:
  // Loads every series from `store`, which must outlive the index.
  static Status Load(ChunkStore& store, std::unique_ptr<SeriesIndex>* index);

  SeriesIndex(const SeriesIndex&) = delete;
  SeriesIndex& operator=(const SeriesIndex&) = delete;

  // Gets or creates the series of `canonical_key` (built by BuildSeriesKey). A new series gets
  // `type` and is durable (synced RocksDB write) before this returns. `*stored_type` is the type the
  // series was created with: if it differs from `type` the caller must reject the point.
  // InvalidArgument if the key does not parse.
  Status Resolve(std::string_view canonical_key, ValueType type, SeriesId* sid,
                 ValueType* stored_type);

  // Resolve for many keys at once: every missing series is created in one synced write, so a
  // batch of new series costs one fsync. REQUIRES: all spans of equal size.
  Status ResolveMany(std::span<const std::string_view> canonical_keys,
                     std::span<const ValueType> types, std::span<SeriesId> sids,
                     std::span<ValueType> stored_types);

  // NotFound for an unknown id.
  Status Lookup(SeriesId sid, std::string* canonical_key, ValueType* type) const;
  // kInvalidSeriesId when absent; never creates.
  SeriesId Find(std::string_view canonical_key, ValueType* type = nullptr) const;

  // Inverted index (copies; sorted ascending ids).
  std::vector<SeriesId> ByMeasurement(std::string_view measurement) const;
  std::vector<SeriesId> ByTag(std::string_view key, std::string_view value) const;
  std::vector<SeriesId> ByField(std::string_view field) const;
  std::vector<SeriesId> AllSeries() const;

  // Sorted names.
  std::vector<std::string> Measurements() const;
  std::vector<std::string> Fields() const;
  std::vector<std::string> TagKeys() const;
  std::vector<std::string> TagValues(std::string_view key) const;

  // Calls fn(value, ids) for every value of tag `key` (e.g. for regex matching), in value order,
  // under the shared lock: `fn` must not call back into the index. The views are valid during the
  // call only.
  void ForEachTagValue(
      std::string_view key,
      const std::function<void(std::string_view value, std::span<const SeriesId> ids)>& fn) const;

  std::size_t size() const;

 private:
  struct Entry {
    SeriesId sid;
    ValueType type;
  };
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  using IdList = std::vector<SeriesId>;
  template <typename V>
  using NameMap = std::map<std::string, V, std::less<>>;

  explicit SeriesIndex(ChunkStore& store) : store_(store) {}
  // REQUIRES: mu_ held exclusively.
  void InsertLocked(std::string key, SeriesId sid, ValueType type, const SeriesKeyParts& parts);

  ChunkStore& store_;
  std::mutex create_mu_;             // serializes creators (and next_sid_)
  mutable std::shared_mutex mu_;     // guards everything below
  std::unordered_map<std::string, Entry, StringHash, std::equal_to<>> by_key_;
  // by_id_[sid] points at the key stored in by_key_ (node-based map: stable addresses).
  std::vector<const std::string*> by_id_;
  std::vector<ValueType> type_by_id_;
  NameMap<IdList> by_measurement_;
  NameMap<IdList> by_field_;
  NameMap<NameMap<IdList>> by_tag_;
  SeriesId next_sid_ = 1;
};

}  // namespace ingot
