#include "chunk/storage.h"

#include "chunk/series_reader.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>

#include "chunk/series_reader.h"
#include "chunk/storage_metrics.h"
#include "chunk/wal_format.h"
#include "config/logging.h"

namespace ingot {

namespace {

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();
// Chunks the background grouping scan reads per second at most (headers and values, bypassing
// the block cache); a scan runs only after new chunks were written.
constexpr std::uint64_t kGroupScanChunksPerSecond = 16384;

std::span<const std::uint8_t> AsBytes(const rocksdb::Slice& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Increments a big-endian byte string; false on overflow (all bytes were 0xff).
bool IncrementKey(std::uint8_t* bytes, std::size_t n) {
  for (std::size_t i = n; i-- > 0;) {
    if (++bytes[i] != 0) return true;
  }
  return false;
}

// Damaged data is logged with its series key, at most a few times a second: a dashboard refreshing
// over a damaged chunk must not flood the log (the counter has every event).
void LogDamage(const Status& st) {
  static RateLimiter limiter(5);
  std::uint64_t suppressed = 0;
  if (!limiter.Allow(&suppressed)) return;
  if (suppressed == 0) {
    Logger("storage")->error("{}", st.ToString());
  } else {
    Logger("storage")->error("{} ({} more damage reports suppressed)", st.ToString(), suppressed);
  }
}

Status ChunkError(const ChunkView& view, const Status& cause) {
  Metrics().chunks_corrupt->Add();
  Status st = Status::Corruption(
      "series " + std::to_string(view.sid) + " chunk [" + std::to_string(view.first_ts_ns) + ", " +
      std::to_string(view.last_ts_ns()) + "]: " + std::string(cause.message()));
  LogDamage(st);
  return st;
}

// A RocksDB read error while walking a series' chunks: a block that fails its checksum is damage
// like a bad chunk (counted and logged); other errors are passed on as they are.
Status BlockError(SeriesId sid, std::int64_t after_ts_ns, const rocksdb::Status& rs,
                  std::string_view family) {
  Status st = FromRocks(rs, "read " + std::string(family) + " of series " + std::to_string(sid));
  if (!rs.IsCorruption()) return st;
  Metrics().chunks_corrupt->Add();
  std::string msg = "series ";
  msg.append(std::to_string(sid)).append(" ").append(family).append(" after ");
  msg.append(std::to_string(after_ts_ns)).append(": unreadable block: ").append(rs.ToString());
  st = Status::Corruption(msg);
  LogDamage(st);
  return st;
}

}  // namespace

bool ParseWalPointsPayload(std::span<const std::uint8_t> payload, std::vector<PointRecord>* records,
                           std::span<const std::uint8_t>* definitions, std::uint64_t* bad_points) {
  records->clear();
  *definitions = {};
  if (payload.size() < kWalPointsHeaderBytes) return false;
  std::uint32_t count;
  std::memcpy(&count, payload.data() + 4, 4);
  std::size_t header = kWalPointsHeaderBytes;
  if (payload[0] == kWalBatchRecord) {
    if (payload.size() < kWalBatchHeaderBytes) return false;
    std::uint32_t def_bytes;
    std::memcpy(&def_bytes, payload.data() + 8, 4);
    if (def_bytes > payload.size() - kWalBatchHeaderBytes) return false;
    *definitions = payload.subspan(kWalBatchHeaderBytes, def_bytes);
    header = kWalBatchHeaderBytes + def_bytes;
  } else if (payload[0] != kWalPointsRecord) {
    return false;
  }
  if (payload.size() != header + std::size_t{count} * kWalPointBytes) return false;
  records->reserve(count);
  const std::uint8_t* p = payload.data() + header;
  for (std::uint32_t i = 0; i < count; ++i, p += kWalPointBytes) {
    PointRecord r;
    std::memcpy(&r.sid, p, 8);
    std::memcpy(&r.ts_ns, p + 8, 8);
    std::memcpy(&r.bits, p + 16, 8);
    if (p[24] >= kValueTypeCount || r.sid == kInvalidSeriesId) {
      ++*bad_points;
      continue;
    }
    r.type = static_cast<ValueType>(p[24]);
    records->push_back(r);
  }
  return true;
}

Storage::Storage(const StorageOptions& options, const Clock& clock)
    : options_(options), clock_(clock) {}

Storage::~Storage() { (void)Close(); }

Status Storage::Open(const StorageOptions& options, int shard_count, const Clock& clock,
                     std::unique_ptr<Storage>* storage) {
  if (shard_count < 1) {
    return Status::InvalidArgument("shard count " + std::to_string(shard_count) + " < 1");
  }
  std::unique_ptr<Storage> s(new Storage(options, clock));
  INGOT_RETURN_IF_ERROR(ParseWalSyncPolicy(options.wal_sync, &s->policy_));
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return Status::IOError("create data dir '" + options.data_dir + "': " + ec.message());
  }
  INGOT_RETURN_IF_ERROR(ChunkStore::Open(options.data_dir + "/db", options, clock, &s->store_));
  INGOT_RETURN_IF_ERROR(SeriesIndex::Load(*s->store_, options.limits, &s->index_));
  for (int i = 0; i < shard_count; ++i) {
    s->shards_.push_back(std::make_unique<ShardEngine>(
        i, shard_count, options, s->policy_, *s->store_, *s->index_, s->late_, clock));
  }
  s->compactor_ = std::make_unique<LateCompactor>(
      *s->store_, s->late_, [p = s.get()](SeriesId sid) -> ShardEngine& {
        return p->shard(p->ShardOf(sid));
      });
  s->grouper_ = std::make_unique<ChunkGrouper>(*s->store_);
  INGOT_RETURN_IF_ERROR(s->LoadLateChunks());
  INGOT_RETURN_IF_ERROR(s->Recover());
  s->background_ = std::thread([p = s.get()] { p->BackgroundLoop(); });
  *storage = std::move(s);
  return Status::OK();
}

Status Storage::LoadLateChunks() {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(store_->db()->NewIterator(ro, store_->late_cf()));
  std::uint64_t max_seq = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    SeriesId sid;
    std::int64_t first;
    std::uint64_t seq;
    if (!DecodeLateKey(it->key(), &sid, &first, &seq)) continue;
    late_.Set(sid);
    max_seq = std::max(max_seq, seq);
  }
  INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "scan late chunks"));
  store_->RaiseLateSeq(max_seq + 1);
  return Status::OK();
}

Status Storage::Recover() {
  auto log = Logger("storage");
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<PointRecord>> routed(shards_.size());
  auto flush_routed = [&]() -> Status {
    for (std::size_t i = 0; i < routed.size(); ++i) {
      if (routed[i].empty()) continue;
      AppendResult r;
      INGOT_RETURN_IF_ERROR(shards_[i]->Replay(routed[i], &r));
      recovery_.points_replayed += r.accepted;
      routed[i].clear();
      // Replayed points that were sealed before the crash come back as late points; their
      // buffers are written out as they fill, as during ingest.
      INGOT_RETURN_IF_ERROR(shards_[i]->FlushLateIfOver(options_.late_buffer_points));
    }
    return Status::OK();
  };

  // 1. Head buffers persisted by the last checkpoint or clean shutdown.
  {
    std::unique_ptr<rocksdb::Iterator> it = store_->NewHeadIterator();
    auto ws = std::make_unique<codec::Workspace>();
    std::vector<std::int64_t> ts(kChunkCapacity), raw(kChunkCapacity);
    // Saved hints go to the heads once their points are replayed.
    std::vector<std::pair<SeriesId, codec::SeriesHint>> hints;
    for (; it->Valid(); it->Next()) {
      SeriesId sid;
      ChunkHeader h;
      codec::SeriesHint hint;
      const auto bytes = SplitHeadValue(AsBytes(it->value()), &hint);
      Status st = DecodeHeadKey(it->key(), &sid) ? ParseChunkHeader(bytes, &h)
                                                 : Status::Corruption("malformed head key");
      if (st.ok() && h.blocks != 1) st = Status::Corruption("head buffer stored as a group");
      if (st.ok()) {
        st = ingot::DecodeChunkRaw(bytes, std::span(ts).first(h.count),
                                   std::span(raw).first(h.count), *ws);
      }
      if (!st.ok()) {
        recovery_.heads_corrupt++;
        Metrics().chunks_corrupt->Add();
        log->error("checkpointed head buffer of series {} unreadable, skipped: {}", sid,
                   st.ToString());
        continue;
      }
      auto& out = routed[static_cast<std::size_t>(ShardOf(sid))];
      for (std::size_t i = 0; i < h.count; ++i) {
        out.push_back({sid, ts[i], static_cast<std::uint64_t>(raw[i]), h.type});
      }
      recovery_.heads_restored++;
      if (hint.last_encoding != codec::SeriesHint::kNoEncoding) hints.emplace_back(sid, hint);
    }
    INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "read head checkpoints"));
    INGOT_RETURN_IF_ERROR(flush_routed());
    for (const auto& [sid, hint] : hints) {
      shards_[static_cast<std::size_t>(ShardOf(sid))]->RestoreHint(sid, hint);
    }
  }

  // 2. Every WAL segment of every shard directory, oldest first per directory. A series' points
  // live in one directory only (each run starts with empty WALs), so directory order is free.
  const std::string wal_root = options_.data_dir + "/wal";
  std::vector<std::pair<int, std::string>> dirs;
  std::error_code ec;
  if (std::filesystem::exists(wal_root, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(wal_root, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("shard-", 0) != 0 || !entry.is_directory()) continue;
      dirs.emplace_back(std::atoi(name.c_str() + 6), entry.path().string());
    }
    if (ec) return Status::IOError("list '" + wal_root + "': " + ec.message());
  }
  std::uint64_t max_seq = 0;
  std::vector<PointRecord> records;
  std::vector<std::vector<WalSegment>> dir_segments(dirs.size());
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    INGOT_RETURN_IF_ERROR(ListWalSegments(dirs[d].second, &dir_segments[d]));
    for (const WalSegment& seg : dir_segments[d]) {
      max_seq = std::max(max_seq, seg.seq);
      WalReadStats stats;
      std::uint64_t bad_points = 0;
      INGOT_RETURN_IF_ERROR(ReadWalSegment(
          seg.path,
          [&](std::span<const std::uint8_t> payload) -> Status {
            std::span<const std::uint8_t> definitions;
            if (!ParseWalPointsPayload(payload, &records, &definitions, &bad_points)) {
              ++recovery_.corrupt_records;
              log->error("WAL segment '{}': record of {} bytes has a bad points layout, skipped",
                         seg.path, payload.size());
              return Status::OK();
            }
            // Definitions first: the index may lack series whose points follow.
            Status defs = SeriesIndex::ForEachDefinition(
                definitions, [&](SeriesId sid, ValueType type, std::string_view key) {
                  Status st = index_->Restore(sid, type, key);
                  if (!st.ok()) {
                    ++recovery_.corrupt_definitions;
                    log->error("WAL segment '{}': {}", seg.path, st.ToString());
                  }
                  return Status::OK();
                });
            if (!defs.ok()) {
              ++recovery_.corrupt_definitions;
              log->error("WAL segment '{}': {}", seg.path, defs.ToString());
            }
            for (const PointRecord& r : records) {
              routed[static_cast<std::size_t>(ShardOf(r.sid))].push_back(r);
            }
            return flush_routed();
          },
          &stats));
      recovery_.segments++;
      recovery_.records += stats.records;
      recovery_.corrupt_records += stats.corrupt_records;
      recovery_.torn_tail_bytes += stats.torn_tail_bytes;
      if (bad_points > 0) {
        log->error("WAL segment '{}': {} points with invalid series or type skipped", seg.path,
                   bad_points);
      }
    }
  }
  Metrics().wal_points_replayed->Add(recovery_.points_replayed);

  // 3. Persist the recovered series definitions and heads, then the replayed segments can go.
  recovery_.definitions_restored = index_->pending_definitions();
  for (auto& shard : shards_) INGOT_RETURN_IF_ERROR(shard->PersistHeads());
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    for (const WalSegment& seg : dir_segments[d]) {
      if (std::remove(seg.path.c_str()) != 0) {
        return Status::IOError("delete replayed WAL segment '" + seg.path + "'");
      }
    }
    if (dirs[d].first >= shard_count()) std::filesystem::remove(dirs[d].second, ec);
  }

  // 4. Fresh WALs, numbered above everything seen so numbers never repeat.
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    INGOT_RETURN_IF_ERROR(
        shards_[i]->StartWal(wal_root + "/shard-" + std::to_string(i), max_seq + 1));
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (recovery_.segments > 0 || recovery_.heads_restored > 0) {
    log->info(
        "recovered in {:.3f} s: {} head buffers ({} unreadable), {} series definitions from the "
        "WAL ({} unusable), {} WAL segments, {} records, {} points replayed, {} corrupt records, "
        "{} torn tail bytes",
        took.count(), recovery_.heads_restored, recovery_.heads_corrupt,
        recovery_.definitions_restored, recovery_.corrupt_definitions, recovery_.segments,
        recovery_.records, recovery_.points_replayed, recovery_.corrupt_records,
        recovery_.torn_tail_bytes);
  }
  return Status::OK();
}

void Storage::BackgroundLoop() {
  std::uint32_t tick_ms = 1000;
  if (policy_ == WalSyncPolicy::kInterval) tick_ms = std::min(tick_ms, options_.wal_sync_interval_ms);
  tick_ms = std::max<std::uint32_t>(1, std::min(tick_ms, options_.checkpoint_interval_ms));
  auto log = Logger("storage");
  // Failed shards are retried once a second; the error is logged at most once a minute.
  auto next_recovery = std::chrono::steady_clock::now();
  auto next_recovery_log = next_recovery;
  for (;;) {
    {
      MutexLock lock(bg_mu_);
      if (bg_cv_.WaitFor(lock, std::chrono::milliseconds(tick_ms), [this] {
            bg_mu_.AssertHeld();
            return stop_;
          })) {
        break;
      }
    }
    // New series' definitions reach the index family within a tick; until then they ride in the WAL
    // with their points.
    if (index_->pending_definitions() > 0) {
      Status st = index_->FlushDefinitions(/*sync=*/true);
      if (!st.ok()) log->error("flushing series definitions failed: {}", st.ToString());
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_recovery) {
      next_recovery = now + std::chrono::seconds(1);
      for (auto& shard : shards_) {
        if (!shard->failed()) continue;
        Status st = shard->Recover();
        if (!st.ok() && now >= next_recovery_log) {
          next_recovery_log = now + std::chrono::minutes(1);
          log->error("shard {} still failing, writes refused: {}", shard->shard_id(),
                     st.ToString());
        }
      }
    }
    for (auto& shard : shards_) {
      if (policy_ == WalSyncPolicy::kInterval) {
        Status st = shard->SyncWal();
        if (!st.ok()) log->error("shard {}: WAL sync failed: {}", shard->shard_id(), st.ToString());
      }
      Status st = shard->CheckpointIfDue();
      if (!st.ok()) log->error("shard {}: checkpoint failed: {}", shard->shard_id(), st.ToString());
      st = shard->FlushLateIfOver(options_.late_buffer_points);
      if (!st.ok()) log->error("shard {}: writing late chunks failed: {}", shard->shard_id(), st.ToString());
    }
    if (late_.count() > 0 && options_.late_compaction_points_per_s > 0) {
      MutexLock compact_lock(compact_mu_);
      LateCompactionStats stats;
      bool done = false;
      const std::uint64_t budget =
          std::max<std::uint64_t>(1, options_.late_compaction_points_per_s * tick_ms / 1000);
      Status st = compactor_->Run(budget, &stats, &done);
      if (!st.ok()) log->error("merging late chunks failed: {}", st.ToString());
      if (stats.chunks_written > 0) late_merges_++;
    }
    if (options_.group_chunks) {
      MutexLock compact_lock(compact_mu_);
      GroupStep(std::max<std::uint64_t>(64, kGroupScanChunksPerSecond * tick_ms / 1000));
    }
  }
}

std::uint64_t Storage::ChunkWrites() const {
  std::uint64_t writes = late_merges_;
  for (const auto& shard : shards_) writes += shard->chunk_writes();
  return writes;
}

void Storage::GroupStep(std::uint64_t max_chunks) {
  if (!grouping_) {
    const std::uint64_t writes = ChunkWrites();
    if (writes == grouped_at_writes_) return;  // nothing sealed since the last full scan
    grouping_ = true;
    grouping_from_writes_ = writes;
  }
  ChunkGroupStats stats;
  bool done = false;
  Status st = grouper_->Run(max_chunks, &stats, &done);
  if (!st.ok()) {
    Logger("storage")->error("grouping chunks failed: {}", st.ToString());
    grouping_ = false;  // retried from where it stopped once chunks are written again
    return;
  }
  if (done) {
    grouping_ = false;
    grouped_at_writes_ = grouping_from_writes_;
  }
}

Status Storage::GroupChunks(ChunkGroupStats* stats) {
  ChunkGroupStats local;
  if (stats == nullptr) stats = &local;
  if (!options_.group_chunks) return Status::OK();
  MutexLock lock(compact_mu_);
  const std::uint64_t writes = ChunkWrites();
  grouper_->Rewind();
  grouping_ = false;
  bool done = false;
  while (!done) {
    INGOT_RETURN_IF_ERROR(grouper_->Run(std::numeric_limits<std::uint64_t>::max(), stats, &done));
  }
  grouped_at_writes_ = writes;
  return Status::OK();
}

Status Storage::ReadLate(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                         LateReadBuffers* buf, codec::Workspace& ws,
                         std::vector<CorruptChunk>* skipped) {
  buf->points.clear();
  if (start_ns > end_ns || !late_.Test(sid)) return Status::OK();
  shard(ShardOf(sid)).ReadLateHead(sid, start_ns, end_ns, &buf->points, &buf->type);
  const LateKey lower = EncodeLateKey(sid, kMinTs, 0);
  const LateKey upper = end_ns == kMaxTs ? EncodeLateKey(sid + 1, kMinTs, 0)
                                         : EncodeLateKey(sid, end_ns + 1, 0);
  const rocksdb::Slice lower_slice = lower.slice(), upper_slice = upper.slice();
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(store_->db()->NewIterator(ro, store_->late_cf()));
  ChunkView view;
  view.sid = sid;
  for (it->Seek(lower_slice); it->Valid(); it->Next()) {
    SeriesId key_sid;
    std::uint64_t seq;
    if (!DecodeLateKey(it->key(), &key_sid, &view.first_ts_ns, &seq)) continue;
    view.bytes = AsBytes(it->value());
    view.header_ok = ParseChunkHeader(view.bytes, &view.header).ok();
    if (view.header_ok && view.header.max_ts_ns < start_ns) continue;
    const std::size_t n = view.count();
    buf->ts.resize(n);
    buf->raw.resize(n);
    Status st = DecodeChunkRaw(view, buf->ts, buf->raw, ws);
    if (!st.ok()) {
      if (skipped == nullptr || !st.IsCorruption()) return st;
      skipped->push_back({sid, view.first_ts_ns, view.last_ts_ns(), st});
      continue;
    }
    buf->type = view.header.type;
    for (std::size_t i = 0; i < n; ++i) {
      if (buf->ts[i] < start_ns || buf->ts[i] > end_ns) continue;
      buf->points.push_back({buf->ts[i], seq, static_cast<std::uint64_t>(buf->raw[i])});
    }
  }
  if (!it->status().ok()) {
    Status st = BlockError(sid, view.first_ts_ns, it->status(), "late chunks");
    if (skipped == nullptr || !st.IsCorruption()) return st;
    skipped->push_back({sid, view.first_ts_ns, end_ns, st});
  }
  SortAndDedupeLatePoints(&buf->points);
  return Status::OK();
}

void Storage::MergeLate(LateReadBuffers* buf, std::vector<std::int64_t>* ts,
                        std::vector<double>* values) {
  MergeLateInto(buf->points, buf->type, ts, values, &buf->merge_ts, &buf->merge_values);
}

Status Storage::CompactLate(LateCompactionStats* stats) {
  LateCompactionStats local;
  if (stats == nullptr) stats = &local;
  for (auto& shard : shards_) INGOT_RETURN_IF_ERROR(shard->FlushLateIfOver(0));
  MutexLock lock(compact_mu_);
  bool done = false;
  while (!done) {
    INGOT_RETURN_IF_ERROR(compactor_->Run(std::numeric_limits<std::uint64_t>::max(), stats, &done));
  }
  if (stats->chunks_written > 0) late_merges_++;
  return Status::OK();
}

std::size_t Storage::late_buffered_points() const {
  std::size_t n = 0;
  for (const auto& shard : shards_) n += shard->late_points();
  return n;
}

Status Storage::Checkpoint() {
  for (auto& shard : shards_) INGOT_RETURN_IF_ERROR(shard->Checkpoint());
  return Status::OK();
}

Status Storage::CompactHeads(std::size_t* heads) {
  std::size_t total = 0;
  for (auto& shard : shards_) {
    std::size_t n = 0;
    INGOT_RETURN_IF_ERROR(shard->CompactHeads(&n));
    total += n;
  }
  if (heads != nullptr) *heads = total;
  return Status::OK();
}

Status Storage::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  {
    MutexLock lock(bg_mu_);
    stop_ = true;
  }
  bg_cv_.NotifyAll();
  if (background_.joinable()) background_.join();
  Status first;
  for (auto& shard : shards_) {
    // A last try for a shard whose writes failed: if the condition has passed, nothing is left
    // for the WAL replay.
    if (shard->failed()) (void)shard->Recover();
    Status st = shard->Close();
    if (!st.ok()) {
      Logger("storage")->error("shard {}: close: {}", shard->shard_id(), st.ToString());
      if (first.ok()) first = st;
    }
  }
  shards_.clear();
  index_.reset();
  if (store_) {
    Status st = store_->Close();
    if (first.ok()) first = st;
  }
  return first;
}

namespace {

// The walk of both ForEachChunk: unless `seek` is false (the caller knows the iterator already
// stands where the seek would end), from the last key at or before key(sid, start_ns) — a chunk
// that may straddle start_ns, skipped when it is another series' — through key(sid, end_ns). On
// success the iterator stands on the first key after key(sid, end_ns), or past the end.
Status WalkChunks(rocksdb::Iterator* it, bool seek, SeriesId sid, std::int64_t start_ns,
                  std::int64_t end_ns, const std::function<Status(const ChunkView&)>& fn) {
  const ChunkKey last = EncodeChunkKey(sid, end_ns);
  const rocksdb::Slice last_slice = last.slice();
  if (seek) {
    it->SeekForPrev(EncodeChunkKey(sid, start_ns).slice());
    if (!it->Valid()) {
      if (!it->status().ok()) return BlockError(sid, start_ns, it->status(), "chunks");
      it->Seek(EncodeChunkKey(sid, kMinTs).slice());
    }
  }
  ChunkView view;
  view.sid = sid;
  view.first_ts_ns = kMinTs;
  for (; it->Valid(); it->Next()) {
    if (it->key().compare(last_slice) > 0) break;
    SeriesId key_sid;
    if (!DecodeChunkKey(it->key(), &key_sid, &view.first_ts_ns) || key_sid != sid) continue;
    view.bytes = AsBytes(it->value());
    view.header_ok = ParseChunkHeader(view.bytes, &view.header).ok();
    // An unreadable header may hide points in range: hand it over so the reader reports it.
    if (view.header_ok && view.header.max_ts_ns < start_ns) continue;
    INGOT_RETURN_IF_ERROR(fn(view));
  }
  if (!it->status().ok()) {
    return BlockError(sid, std::max(view.first_ts_ns, start_ns), it->status(), "chunks");
  }
  return Status::OK();
}

}  // namespace

Status Storage::ForEachChunk(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                             const std::function<Status(const ChunkView&)>& fn) {
  if (start_ns > end_ns) return Status::OK();
  const ChunkKey lower = EncodeChunkKey(sid, kMinTs);
  ChunkKey upper = EncodeChunkKey(sid, end_ns);
  const bool bounded = IncrementKey(upper.bytes, kChunkKeyBytes);
  const rocksdb::Slice lower_slice = lower.slice();
  const rocksdb::Slice upper_slice = upper.slice();
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  if (bounded) ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(store_->db()->NewIterator(ro, store_->chunks_cf()));
  return WalkChunks(it.get(), /*seek=*/true, sid, start_ns, end_ns, fn);
}

ChunkCursor::ChunkCursor() = default;
ChunkCursor::~ChunkCursor() = default;

void Storage::OpenChunkCursor(ChunkCursor& cursor) {
  cursor.it_.reset(store_->db()->NewIterator(rocksdb::ReadOptions(), store_->chunks_cf()));
  cursor.positioned_ = false;
}

Status Storage::ForEachChunk(ChunkCursor& cursor, SeriesId sid, std::int64_t start_ns,
                             std::int64_t end_ns,
                             const std::function<Status(const ChunkView&)>& fn) {
  if (start_ns > end_ns) return Status::OK();
  if (!cursor.open()) OpenChunkCursor(cursor);
  rocksdb::Iterator* it = cursor.it_.get();
  const ChunkKey target = EncodeChunkKey(sid, start_ns);
  const rocksdb::Slice target_slice = target.slice();
  // When no key lies between `after_` and the iterator's position, and `target` falls in that
  // gap, the seek would end right here: the key before `target` is at or before `after_` (another
  // series' or out of range) and the next one is the current key.
  const bool in_gap = cursor.positioned_ && cursor.after_.slice().compare(target_slice) < 0 &&
                      (!it->Valid() || it->key().compare(target_slice) > 0);
  cursor.positioned_ = false;
  INGOT_RETURN_IF_ERROR(WalkChunks(it, !in_gap, sid, start_ns, end_ns, fn));
  cursor.after_ = EncodeChunkKey(sid, end_ns);
  cursor.positioned_ = true;
  return Status::OK();
}

Status Storage::DecodeChunk(const ChunkView& view, std::span<std::int64_t> ts,
                            std::span<double> values, codec::Workspace& ws) {
  ChunkHeader scratch;
  Status st = view.header_ok ? ingot::DecodeChunk(view.bytes, ts, values, ws)
                             : ParseChunkHeader(view.bytes, &scratch);
  if (st.ok()) return st;
  if (st.IsInvalidArgument()) return st;  // caller's span sizes, not the chunk
  return ChunkError(view, st);
}

Status Storage::DecodeChunkOverlapping(const ChunkView& view, std::int64_t start_ns,
                                       std::int64_t end_ns, std::span<std::int64_t> ts,
                                       std::span<double> values, codec::Workspace& ws,
                                       std::size_t* decoded) {
  ChunkHeader scratch;
  *decoded = 0;
  Status st = view.header_ok ? ingot::DecodeChunkOverlapping(view.bytes, start_ns, end_ns, ts,
                                                             values, ws, decoded)
                             : ParseChunkHeader(view.bytes, &scratch);
  if (st.ok()) return st;
  if (st.IsInvalidArgument()) return st;
  return ChunkError(view, st);
}

Status Storage::DecodeChunkRaw(const ChunkView& view, std::span<std::int64_t> ts,
                               std::span<std::int64_t> values_raw, codec::Workspace& ws) {
  ChunkHeader scratch;
  Status st = view.header_ok ? ingot::DecodeChunkRaw(view.bytes, ts, values_raw, ws)
                             : ParseChunkHeader(view.bytes, &scratch);
  if (st.ok()) return st;
  if (st.IsInvalidArgument()) return st;
  return ChunkError(view, st);
}

Status Storage::ReadSeries(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                           std::vector<std::int64_t>* ts, std::vector<double>* values) {
  auto ws = std::make_unique<codec::Workspace>();
  return ReadSeries(sid, start_ns, end_ns, ts, values, nullptr, *ws);
}

Status Storage::ReadSeries(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                           std::vector<std::int64_t>* ts, std::vector<double>* values,
                           std::vector<CorruptChunk>* skipped, codec::Workspace& ws) {
  ts->clear();
  values->clear();
  SeriesReader reader(*this, ws);
  if (skipped != nullptr) reader.SkipDamage(skipped);
  INGOT_RETURN_IF_ERROR(reader.Read(sid, start_ns, end_ns));
  ts->assign(reader.ts().begin(), reader.ts().end());
  values->assign(reader.values().begin(), reader.values().end());
  return Status::OK();
}

}  // namespace ingot
