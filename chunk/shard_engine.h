// ShardEngine: the head buffers of the series routed to one shard, and that shard's WAL.
//
// Write path (Append, called by the shard's single writer thread): the batch becomes one WAL
// record (group commit: one write and, under wal_sync = "always", one fdatasync for the whole
// batch); only then are its points applied to the head buffers under the head mutex, taken once
// per batch. A buffer that overflows a chunk is sealed and every chunk sealed by the batch goes
// to RocksDB in one WriteBatch before the mutex is released, so a reader sees each point either
// in a head snapshot or in a chunk (see Storage::ReadSeries for the reader's half).
//
// Late points (at or before the newest sealed point of their series, so not insertable into the
// head) go to the series' late buffer, a second HeadBuffer kept only while the series has late
// points. A full late buffer is written as a late chunk (`late` family, keyed by series, first
// time and a sequence number); checkpoints and FlushLate write every late buffer. The late set
// marks series with late data so that readers merge it and the LateCompactor finds it.
//
// Checkpoints keep the WAL bounded: roll the WAL to a new segment, write every head buffer that
// changed since the last checkpoint to the meta family (synced), delete the older segments. A
// checkpoint runs when the WAL has grown by wal_max_bytes (inline, by the writer) or when
// checkpoint_interval_ms has passed (Storage's background thread), and at Close().
//
// Errors: a failed WAL append rejects the batch (nothing applied). A failed RocksDB write puts the
// engine in a failed state: the chunks that could not be written are kept in memory, Append and
// Checkpoint return the error and the WAL is not deleted. Recover(), called by Storage's
// background thread, clears RocksDB's background error (DB::Resume) and writes the kept chunks;
// once that succeeds the shard takes writes again, so a transient condition (out of descriptors,
// a disk that was full) never needs a restart. Until then a restart replays the WAL. Reads keep
// working, without the points of the kept chunks.
//
// Thread safety: Append is called by one thread at a time; ReadHead from any thread;
// Checkpoint/CheckpointIfDue/SyncWal/Close from any thread (they serialize with Append on the
// write mutex).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <rocksdb/write_batch.h>

#include "chunk/chunk_store.h"
#include "chunk/head_buffer.h"
#include "chunk/late_merge.h"
#include "chunk/late_set.h"
#include "chunk/series_index.h"
#include "chunk/series_key.h"
#include "chunk/wal.h"
#include "codec/workspace.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/status.h"
#include "config/thread_annotations.h"

namespace ingot {

// One point on its way into storage.
struct PointRecord {
  SeriesId sid;
  std::int64_t ts_ns;
  std::uint64_t bits;  // double bits (kFloat), int64 (kInteger), 0 or 1 (kBoolean)
  ValueType type;      // must equal the series' stored type, else the point is rejected
};

struct AppendResult {
  std::uint64_t accepted = 0;
  std::uint64_t late = 0;              // accepted into late buffers (counted in accepted too)
  std::uint64_t rejected_too_old = 0;  // late and older than now - storage.late_max_age
  std::uint64_t rejected_expired = 0;  // older than now - retention
  std::uint64_t rejected_type = 0;     // type differs from the series' type
  std::uint64_t chunks_sealed = 0;
  std::uint64_t rejected() const { return rejected_too_old + rejected_expired + rejected_type; }
};

class ShardEngine {
 public:
  // `store`, `index`, `late` and `clock` must outlive the engine. The WAL is opened later by
  // StartWal().
  ShardEngine(int shard_id, int shard_count, const StorageOptions& options, WalSyncPolicy policy,
              ChunkStore& store, SeriesIndex& index, LateSet& late, const Clock& clock);
  ~ShardEngine();

  ShardEngine(const ShardEngine&) = delete;
  ShardEngine& operator=(const ShardEngine&) = delete;

  // Logs the batch, then applies it. OK means every accepted point is durable under the sync
  // policy; `result` (may be null) counts accepted and rejected points.
  // REQUIRES: every point's sid % shard_count == shard_id (Storage::ShardOf); a misrouted batch is
  // rejected whole with InvalidArgument. An error other than that may follow a WAL write, so a
  // retried batch can be logged twice, which is harmless (a duplicate timestamp replaces).
  // `definitions` (SeriesIndex::AppendDefinition form) are logged in the same WAL record, ahead of
  // the points: the definitions of pending series the batch introduces.
  Status Append(std::span<const PointRecord> batch, std::span<const std::uint8_t> definitions,
                AppendResult* result);
  Status Append(std::span<const PointRecord> batch, AppendResult* result) {
    return Append(batch, {}, result);
  }

  // Copies the head points of `sid` with start_ns <= ts <= end_ns (appending to the vectors after
  // clearing them). `*head_first_ts_ns` (optional) gets the oldest point of the whole head buffer,
  // or INT64_MAX when it is empty: chunks hold only older points.
  Status ReadHead(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                  std::vector<std::int64_t>* ts, std::vector<double>* values,
                  std::int64_t* head_first_ts_ns = nullptr) const;
  // The same without clearing the vectors first: the points are appended after what they hold.
  Status AppendHead(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                    std::vector<std::int64_t>* ts, std::vector<double>* values,
                    std::int64_t* head_first_ts_ns = nullptr) const;

  // Appends the late-buffer points of `sid` with start_ns <= ts <= end_ns to `out`, ranked
  // kLateHeadRank; `*type` gets the series' type when it has a late buffer.
  void ReadLateHead(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                    std::vector<LatePoint>* out, ValueType* type) const;
  // Writes every late buffer as late chunks when they hold more than `max_points` together.
  Status FlushLateIfOver(std::size_t max_points);
  // Late chunks this shard has written (and made readable) so far.
  std::uint64_t late_seals() const { return late_seals_.load(std::memory_order_acquire); }
  // Writes of sealed chunks (batches) this shard has made readable so far: what tells the chunk
  // grouper that a new scan may find runs to join.
  std::uint64_t chunk_writes() const { return chunk_writes_.load(std::memory_order_acquire); }
  // Clears the late bit of `sid` unless the shard wrote a late chunk since late_seals() returned
  // `seals_before` or the series has a late buffer; true if cleared.
  bool ClearLateIfQuiet(SeriesId sid, std::uint64_t seals_before);
  std::size_t late_points() const;

  Status Checkpoint();
  // In the failed state, retries what failed; OK (and writes accepted again) once it succeeded.
  // OK at once when not failed.
  Status Recover();
  bool failed() const;
  // Checkpoints if the WAL passed wal_max_bytes or checkpoint_interval_ms passed with writes.
  Status CheckpointIfDue();
  // fdatasync the WAL if dirty (the "interval" policy's background step).
  Status SyncWal();
  // Persists every open buffer, closes the WAL and deletes its segments (unless failed). After
  // Close, Append returns an error. Idempotent.
  Status Close();

  int shard_id() const { return shard_id_; }
  std::size_t head_series() const;
  std::size_t head_points() const;
  // The codec hint of a series' head (false when the series has no head here): what the series'
  // next chunk starts its encoding from.
  bool HeadHint(SeriesId sid, codec::SeriesHint* hint) const;

  // --- used by Storage during recovery, before StartWal; not for other callers ---
  // Applies points without logging them.
  Status Replay(std::span<const PointRecord> batch, AppendResult* result);
  // Gives a replayed series' head the codec hint saved with its checkpoint (no-op when the
  // series has no head here).
  void RestoreHint(SeriesId sid, const codec::SeriesHint& hint);
  // Writes every changed head to the meta family (synced), without touching the WAL.
  Status PersistHeads();
  // Checkpoints the changed heads, then rewrites every head whose checkpoint is not yet compact
  // with the compact encodings (SealFor::kCompact; force_merge). *heads: how many were rewritten.
  Status CompactHeads(std::size_t* heads);
  Status StartWal(const std::string& dir, std::uint64_t first_seq);

 private:
  struct Slot {
    HeadBuffer head{ValueType::kFloat, HeadBuffer::kNoSealedTs};
    bool live = false;     // the series has had a point since start
    bool dirty = false;    // changed since the last checkpoint
    bool compact = false;  // its checkpoint is written with the compact encodings
  };
  // Slots are dense by sid / shard_count (ids are dense), in pages so that growth never moves
  // them: no hash table and no node per series.
  static constexpr std::size_t kSlotsPerPage = 4096;

  // Names ending in Locked need the lock their annotation states.
  Status Apply(std::span<const PointRecord> batch, AppendResult* result) REQUIRES(write_mu_)
      EXCLUDES(heads_mu_);
  Slot* FindLocked(SeriesId sid) const REQUIRES_SHARED(heads_mu_);
  Slot* FindOrCreateLocked(SeriesId sid, ValueType type) REQUIRES(heads_mu_);
  template <typename Fn>
  void ForEachLiveLocked(Fn&& fn) REQUIRES(heads_mu_);
  // Turns a head's frozen segments back into raw points (before sealing it, or inserting among
  // them).
  void ThawLocked(SeriesId sid, HeadBuffer& head) REQUIRES(heads_mu_);
  void SealLocked(SeriesId sid, HeadBuffer& head, std::int64_t cutoff_ns, AppendResult* result)
      REQUIRES(heads_mu_);
  // Encodes the oldest `n` points of `buffer` not older than `cutoff_ns` into seal_buffer_; returns
  // the bytes (0 when every one expired) and the points encoded in *live_points.
  std::size_t EncodeOldestLocked(HeadBuffer& buffer, std::size_t n, std::int64_t cutoff_ns,
                                 ChunkHeader* h, std::size_t* live_points) REQUIRES(heads_mu_);
  void InsertLateLocked(const PointRecord& p, std::int64_t cutoff_ns) REQUIRES(heads_mu_);
  // Writes the oldest `n` points of a late buffer as a late chunk into `batch`.
  void SealLateLocked(SeriesId sid, HeadBuffer& late, std::size_t n, std::int64_t cutoff_ns,
                      rocksdb::WriteBatch& batch) REQUIRES(heads_mu_);
  // Writes every late buffer as late chunks and drops the buffers (heads_mu_ held throughout, so
  // readers see each point in a buffer or in a chunk).
  Status FlushLateLocked() REQUIRES(write_mu_, heads_mu_);
  std::int64_t RetentionCutoffNs() const;
  // Also rewrites up to `compact_budget` unchanged heads with the compact encodings.
  Status PersistHeadsLocked(std::size_t compact_budget = kIdleHeadsCompactedPerCheckpoint,
                            std::size_t* compacted = nullptr) REQUIRES(write_mu_)
      EXCLUDES(heads_mu_);
  // A checkpoint that finds a head unchanged since the last one rewrites it compactly (it is
  // read back only at recovery; a compact head costs 20-80 us to encode, so each checkpoint
  // takes a bounded number: 512 heads is ~25 ms of one shard's checkpoint).
  static constexpr std::size_t kIdleHeadsCompactedPerCheckpoint = 512;
  // Encodes `head` for its checkpoint into seal_buffer_ (chunk, then hint); returns the bytes,
  // 0 with *st set when a frozen segment does not decode.
  std::size_t EncodeHeadLocked(SeriesId sid, HeadBuffer& head, SealFor purpose, Status* st)
      REQUIRES(heads_mu_);
  Status CheckpointLocked() REQUIRES(write_mu_) EXCLUDES(heads_mu_);

  const int shard_id_;
  const int shard_count_;
  const StorageOptions options_;
  const WalSyncPolicy policy_;
  ChunkStore& store_;
  SeriesIndex& index_;
  LateSet& late_;
  const Clock& clock_;

  // Lock order: write_mu_ before heads_mu_.
  mutable Mutex write_mu_;  // serializes Append, Checkpoint, Close
  std::unique_ptr<Wal> wal_ GUARDED_BY(write_mu_);
  std::vector<std::uint8_t> wal_payload_ GUARDED_BY(write_mu_);
  Status failed_ GUARDED_BY(write_mu_);
  bool closed_ GUARDED_BY(write_mu_) = false;
  std::int64_t last_checkpoint_steady_ns_ GUARDED_BY(write_mu_) = 0;
  // Chunks a failed write could not store, and the late chunks among them.
  rocksdb::WriteBatch unwritten_ GUARDED_BY(write_mu_);
  std::uint64_t unwritten_late_seals_ GUARDED_BY(write_mu_) = 0;

  // Readers take only this one, shared: head reads run side by side (each decodes frozen
  // segments with its thread's own workspace); appends, seals and checkpoints hold it alone.
  mutable SharedMutex heads_mu_;
  std::vector<std::unique_ptr<Slot[]>> heads_ GUARDED_BY(heads_mu_);
  std::size_t live_heads_ GUARDED_BY(heads_mu_) = 0;
  std::vector<std::uint8_t> seal_buffer_ GUARDED_BY(heads_mu_);
  // A frozen head's points, decoded for its checkpoint.
  std::vector<std::int64_t> persist_ts_ GUARDED_BY(heads_mu_);
  std::vector<std::uint64_t> persist_bits_ GUARDED_BY(heads_mu_);
  std::unique_ptr<codec::Workspace> ws_ GUARDED_BY(heads_mu_);
  rocksdb::WriteBatch seal_batch_ GUARDED_BY(heads_mu_);  // reused per Append
  // Series with late points, by id.
  std::unordered_map<SeriesId, HeadBuffer> late_heads_ GUARDED_BY(heads_mu_);
  std::size_t late_points_ GUARDED_BY(heads_mu_) = 0;           // points in late_heads_
  std::uint64_t late_seals_pending_ GUARDED_BY(heads_mu_) = 0;  // late chunks in seal_batch_
  std::atomic<std::uint64_t> late_seals_{0};
  std::atomic<std::uint64_t> chunk_writes_{0};
};

}  // namespace ingot
