// Storage: the storage layer's facade: the chunk store, the series index, one ShardEngine per
// ingest shard, recovery at start and a clean shutdown.
//
// Layout under options.data_dir: `db/` (RocksDB) and `wal/shard-<i>/` (WAL segments). The caller
// holds the DataDirLock on data_dir before Open.
//
// Open() recovers: it loads the series index, restores the checkpointed head buffers, replays
// every WAL segment of every shard directory (routing each point by ShardOf(sid), so the shard
// count may differ from the previous run), persists the result (synced), deletes the replayed
// segments and starts one fresh WAL per shard. A background thread then syncs WALs under the
// "interval" policy and runs time-based checkpoints.
//
// Reads combine sealed chunks and head buffers with read-your-writes: ReadSeries snapshots the
// head first, then reads the chunks and drops chunk points at or after the snapshot's first
// timestamp, so a concurrent seal neither loses nor duplicates points. Series with late data
// (points older than their sealed chunks, see ShardEngine) are read in three steps: head, late
// data (ReadLate: late buffer, then late chunks), chunks; MergeLate then lets the late points win.
// The background thread also merges late chunks back into the chunks family (LateCompactor), at
// most storage.late_compaction_points_per_s points per second.
//
// Thread safety: every method is thread-safe except Close(), which must not race with others;
// shard(i).Append must be called by one thread per shard at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "chunk/chunk_format.h"
#include "chunk/chunk_grouper.h"
#include "chunk/chunk_store.h"
#include "chunk/late_compactor.h"
#include "chunk/late_merge.h"
#include "chunk/late_set.h"
#include "chunk/series_index.h"
#include "chunk/series_key.h"
#include "chunk/shard_engine.h"
#include "codec/workspace.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/status.h"
#include "config/thread_annotations.h"

namespace ingot {

// One sealed chunk as stored; `bytes` points into RocksDB's block and is valid only during the
// ForEachChunk callback that received it.
struct ChunkView {
  SeriesId sid = 0;
  std::int64_t first_ts_ns = 0;  // from the key
  // Parsed without the checksum; when !header_ok the chunk is corrupt and DecodeChunk says why.
  bool header_ok = false;
  ChunkHeader header;
  std::span<const std::uint8_t> bytes;

  std::size_t count() const { return header_ok ? header.count : 0; }
  // Newest point per the header, or first_ts_ns when the header is unreadable.
  std::int64_t last_ts_ns() const { return header_ok ? header.max_ts_ns : first_ts_ns; }
};

// A chunk that failed validation or decoding, as reported by a skipping read.
struct CorruptChunk {
  SeriesId sid = 0;
  std::int64_t first_ts_ns = 0;
  std::int64_t last_ts_ns = 0;
  Status status;
};

// Parses a WAL points or batch payload into `records` and the series `definitions` it carries
// (points with a bad type or id are counted in `*bad_points` and left out); false if the framing
// inside the payload is bad. Recovery and the offline check use it.
bool ParseWalPointsPayload(std::span<const std::uint8_t> payload, std::vector<PointRecord>* records,
                           std::span<const std::uint8_t>* definitions, std::uint64_t* bad_points);

// Buffers of a late-data read, reused across reads by one reader.
struct LateReadBuffers {
  std::vector<LatePoint> points;  // sorted, one per timestamp: what MergeLate applies
  ValueType type = ValueType::kFloat;
  std::vector<std::int64_t> ts, raw;
  std::vector<std::int64_t> merge_ts;
  std::vector<double> merge_values;
};

struct RecoveryStats {
  std::uint64_t heads_restored = 0;
  std::uint64_t heads_corrupt = 0;
  std::uint64_t definitions_restored = 0;  // series definitions the index family lacked
  std::uint64_t corrupt_definitions = 0;
  std::uint64_t segments = 0;
  std::uint64_t records = 0;
  std::uint64_t points_replayed = 0;  // accepted again into heads (or sealed)
  std::uint64_t corrupt_records = 0;
  std::uint64_t torn_tail_bytes = 0;
};

// One iterator over the chunks family for reading many series in a row (a query's block of
// series). It sees the chunks sealed before it was opened. ForEachChunk through it seeks only
// when it must: read in increasing id order, a series whose chunks directly follow the previous
// series' range needs no seek, the iterator already stands on them.
class ChunkCursor {
 public:
  ChunkCursor();
  ~ChunkCursor();
  ChunkCursor(const ChunkCursor&) = delete;
  ChunkCursor& operator=(const ChunkCursor&) = delete;
  bool open() const { return it_ != nullptr; }

 private:
  friend class Storage;
  std::unique_ptr<rocksdb::Iterator> it_;
  ChunkKey after_{};        // when positioned_, the iterator stands on the first key after it
  bool positioned_ = false;
};

class Storage {
 public:
  // REQUIRES: shard_count >= 1; `clock` outlives the storage.
  static Status Open(const StorageOptions& options, int shard_count, const Clock& clock,
                     std::unique_ptr<Storage>* storage);
  ~Storage();

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  int shard_count() const { return static_cast<int>(shards_.size()); }
  // Stable across runs for a given shard count.
  int ShardOf(SeriesId sid) const {
    return static_cast<int>(sid % static_cast<std::uint64_t>(shards_.size()));
  }
  ShardEngine& shard(int i) { return *shards_[static_cast<std::size_t>(i)]; }
  SeriesIndex& index() { return *index_; }
  const StorageOptions& options() const { return options_; }
  ChunkStore& chunks() { return *store_; }
  const RecoveryStats& recovery_stats() const { return recovery_; }

  // Points of `sid` with start_ns <= ts <= end_ns (both inclusive), sorted by time, values as
  // doubles (integer/boolean series converted). Clears the vectors first. A corrupt chunk makes
  // the read fail with Corruption naming the series and the chunk's time range (counted, logged).
  Status ReadSeries(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                    std::vector<std::int64_t>* ts, std::vector<double>* values);
  // As above, but corrupt chunks are skipped and appended to `*skipped` (OK is returned).
  Status ReadSeries(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                    std::vector<std::int64_t>* ts, std::vector<double>* values,
                    std::vector<CorruptChunk>* skipped, codec::Workspace& ws);

  // Calls fn for every sealed chunk of `sid` that may hold points in [start_ns, end_ns], in time
  // order; non-OK from fn stops the walk and is returned. Chunks are not filtered against the head
  // (see ReadSeries for combining with ShardEngine::ReadHead).
  Status ForEachChunk(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                      const std::function<Status(const ChunkView&)>& fn);
  // The same walk through `cursor` (opened here if it is not): the chunks as of its opening.
  Status ForEachChunk(ChunkCursor& cursor, SeriesId sid, std::int64_t start_ns,
                      std::int64_t end_ns, const std::function<Status(const ChunkView&)>& fn);
  // (Re)opens `cursor` on the chunks sealed until now.
  void OpenChunkCursor(ChunkCursor& cursor);

  // Validates and decodes a whole chunk into the caller's spans (sizes == view.count()). A
  // corrupt chunk is Corruption naming the series and time range, counted and logged.
  static Status DecodeChunk(const ChunkView& view, std::span<std::int64_t> ts,
                            std::span<double> values, codec::Workspace& ws);
  // DecodeChunk for a range read (ingot::DecodeChunkOverlapping): only the blocks of a group that
  // may hold points in [start_ns, end_ns], into the front of the spans; *decoded gets how many.
  static Status DecodeChunkOverlapping(const ChunkView& view, std::int64_t start_ns,
                                       std::int64_t end_ns, std::span<std::int64_t> ts,
                                       std::span<double> values, codec::Workspace& ws,
                                       std::size_t* decoded);
  // Values as stored: double bits for float series, int64 for integer/boolean series.
  static Status DecodeChunkRaw(const ChunkView& view, std::span<std::int64_t> ts,
                               std::span<std::int64_t> values_raw, codec::Workspace& ws);

  // Whether `sid` may have late data (one bit test, no lock); false means it has none.
  bool MayHaveLateData(SeriesId sid) const { return late_.Test(sid); }
  // The late points of `sid` in [start_ns, end_ns] into buf->points: its late buffer, then its
  // late chunks, one point per timestamp (the last write). Call it after ShardEngine::ReadHead
  // and before reading the series' chunks. A corrupt late chunk fails the read with Corruption
  // (or, with `skipped`, is skipped and reported there).
  Status ReadLate(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                  LateReadBuffers* buf, codec::Workspace& ws,
                  std::vector<CorruptChunk>* skipped = nullptr);
  // Applies buf->points to a read series (sorted ts/values): late points replace points with the
  // same timestamp and fill in the others.
  static void MergeLate(LateReadBuffers* buf, std::vector<std::int64_t>* ts,
                        std::vector<double>* values);
  // Writes every late buffer and merges every late chunk into the chunks family now.
  Status CompactLate(LateCompactionStats* stats = nullptr);
  // Series that may have late data.
  std::size_t late_series() const { return late_.count(); }
  std::size_t late_buffered_points() const;

  // Joins every full run of consecutive chunks into group chunks now (ChunkGrouper), unless
  // storage.group_chunks is off.
  Status GroupChunks(ChunkGroupStats* stats = nullptr);

  // Checkpoints every shard now.
  Status Checkpoint();
  // Checkpoints every shard, then rewrites every head whose checkpoint is not yet compact with the
  // compact encodings (checkpoints do this on their own for heads left unchanged, a bounded
  // number at a time). *heads: how many were rewritten.
  Status CompactHeads(std::size_t* heads = nullptr);

  // Stops the background thread, persists every head buffer, closes the WALs (deleting them
  // when everything is in RocksDB) and closes RocksDB. Idempotent.
  Status Close();

 private:
  Storage(const StorageOptions& options, const Clock& clock);
  Status Recover();
  // Marks the series that have late chunks and raises the late sequence past theirs.
  Status LoadLateChunks();
  void BackgroundLoop();
  // Sum of the shards' chunk writes and the late merges that wrote chunks.
  std::uint64_t ChunkWrites() const REQUIRES(compact_mu_);
  // One bounded step of the background grouping scan.
  void GroupStep(std::uint64_t max_chunks) REQUIRES(compact_mu_);

  const StorageOptions options_;
  const Clock& clock_;
  WalSyncPolicy policy_ = WalSyncPolicy::kInterval;
  std::unique_ptr<ChunkStore> store_;
  std::unique_ptr<SeriesIndex> index_;
  std::vector<std::unique_ptr<ShardEngine>> shards_;
  RecoveryStats recovery_;
  LateSet late_;
  Mutex compact_mu_;
  std::unique_ptr<LateCompactor> compactor_ PT_GUARDED_BY(compact_mu_);  // set by Open
  std::unique_ptr<ChunkGrouper> grouper_ PT_GUARDED_BY(compact_mu_);     // set by Open
  // The chunk writes (ShardEngine::chunk_writes, summed, plus late merges) when the grouper's
  // last full scan started: a scan runs again only once they move.
  std::uint64_t grouped_at_writes_ GUARDED_BY(compact_mu_) = ~std::uint64_t{0};
  bool grouping_ GUARDED_BY(compact_mu_) = false;  // a scan is under way, started at:
  std::uint64_t grouping_from_writes_ GUARDED_BY(compact_mu_) = 0;
  std::uint64_t late_merges_ GUARDED_BY(compact_mu_) = 0;  // late merges that wrote chunks

  Mutex bg_mu_;
  CondVar bg_cv_;
  bool stop_ GUARDED_BY(bg_mu_) = false;
  std::thread background_;
  bool closed_ = false;
};

}  // namespace ingot
