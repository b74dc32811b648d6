#include "chunk/late_compactor.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "chunk/chunk_format.h"
#include "chunk/shard_engine.h"
#include "chunk/storage_metrics.h"
#include "config/logging.h"

namespace ingot {

namespace {

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();

std::span<const std::uint8_t> AsBytes(const rocksdb::Slice& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string ToString(const LateKey& k) {
  return std::string(reinterpret_cast<const char*>(k.bytes), kLateKeyBytes);
}

}  // namespace

LateCompactor::LateCompactor(ChunkStore& store, LateSet& late,
                             std::function<ShardEngine&(SeriesId)> shard_of)
    : store_(store),
      late_(late),
      shard_of_(std::move(shard_of)),
      ws_(std::make_unique<codec::Workspace>()),
      ts_(kMaxChunkPoints),
      raw_(kMaxChunkPoints),
      bits_(kChunkCapacity),
      out_(MaxSealedChunkBytes(kChunkCapacity)) {}

LateCompactor::~LateCompactor() = default;

Status LateCompactor::Run(std::uint64_t max_points, LateCompactionStats* stats, bool* done) {
  *done = false;
  const std::uint64_t written_before = stats->points_written;
  const auto spent = [&] { return stats->points_written - written_before; };
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(store_.db()->NewIterator(ro, store_.late_cf()));
  if (cursor_.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(cursor_);
  }
  while (spent() < max_points) {
    if (!it->Valid()) {
      INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "scan late chunks"));
      cursor_.clear();
      *done = true;
      return Status::OK();
    }
    SeriesId sid;
    std::int64_t first;
    std::uint64_t seq;
    if (!DecodeLateKey(it->key(), &sid, &first, &seq)) {
      // Not ours to interpret; step over it.
      it->Next();
      continue;
    }
    bool more = true;
    bool merged = false;
    while (more && spent() < max_points) {
      Status st = CompactSeries(sid, max_points - spent(), stats, &more);
      if (!st.ok()) {
        stats->errors++;
        Metrics().late_compaction_errors->Add();
        Logger("storage")->error("merging late chunks of series {}: {}", sid, st.ToString());
        more = false;
        break;
      }
      merged = true;
    }
    if (merged) stats->series++;
    if (more) {
      cursor_ = ToString(EncodeLateKey(sid, kMinTs, 0));
      return Status::OK();
    }
    cursor_ = ToString(EncodeLateKey(sid + 1, kMinTs, 0));
    it->Seek(cursor_);
  }
  return Status::OK();
}

Status LateCompactor::ReadPoints(rocksdb::ColumnFamilyHandle* cf, const Entry& e, ValueType* type,
                                 LateCompactionStats* stats) {
  rocksdb::PinnableSlice value;
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  rocksdb::Status rs = store_.db()->Get(ro, cf, e.key, &value);
  if (!rs.ok()) return FromRocks(rs, "read chunk for merge");
  const auto bytes = AsBytes(value);
  ChunkHeader h;
  INGOT_RETURN_IF_ERROR(ParseChunkHeader(bytes, &h));
  INGOT_RETURN_IF_ERROR(DecodeChunkRaw(bytes, std::span(ts_).first(h.count),
                                       std::span(raw_).first(h.count), *ws_)
                            .WithContext("chunk at " + std::to_string(e.first_ts_ns)));
  *type = h.type;
  for (std::size_t i = 0; i < h.count; ++i) {
    points_.push_back({ts_[i], e.rank, static_cast<std::uint64_t>(raw_[i])});
  }
  stats->chunks_read++;
  stats->bytes_read += bytes.size();
  Metrics().late_compaction_chunks_read->Add();
  Metrics().late_compaction_bytes_read->Add(bytes.size());
  return Status::OK();
}

Status LateCompactor::CompactSeries(SeriesId sid, std::uint64_t budget,
                                    LateCompactionStats* stats, bool* more) {
  const auto started = std::chrono::steady_clock::now();
  ShardEngine& shard = shard_of_(sid);
  // Read before the late chunks are listed: a late chunk made readable after this is either
  // listed or moves the count, and then the series keeps its late bit.
  const std::uint64_t seals_before = shard.late_seals();
  late_entries_.clear();
  *more = false;

  // Every late chunk of the series, in (first timestamp, sequence) order; headers only.
  {
    const LateKey lower = EncodeLateKey(sid, kMinTs, 0);
    const LateKey upper = EncodeLateKey(sid + 1, kMinTs, 0);
    const rocksdb::Slice lower_slice = lower.slice(), upper_slice = upper.slice();
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_slice;
    ro.iterate_upper_bound = &upper_slice;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(store_.db()->NewIterator(ro, store_.late_cf()));
    for (it->Seek(lower_slice); it->Valid(); it->Next()) {
      SeriesId key_sid;
      Entry e;
      ChunkHeader h;
      if (!DecodeLateKey(it->key(), &key_sid, &e.first_ts_ns, &e.rank)) continue;
      Status st = ParseChunkHeader(AsBytes(it->value()), &h);
      if (!st.ok()) {
        return Status::Corruption("late chunk at " + std::to_string(e.first_ts_ns) + ": " +
                                  std::string(st.message()));
      }
      e.max_ts_ns = h.max_ts_ns;
      e.key = it->key().ToString();
      late_entries_.push_back(std::move(e));
    }
    INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "list late chunks"));
  }
  if (late_entries_.empty()) {
    shard.ClearLateIfQuiet(sid, seals_before);
    return Status::OK();
  }

  // Windows in time order: from the oldest late chunk not yet merged, closed under overlap with
  // late and sealed chunks, until the budget is spent.
  std::size_t begin = 0;
  std::uint64_t written = 0;
  while (begin < late_entries_.size() && written < budget) {
    std::size_t taken = begin;
    INGOT_RETURN_IF_ERROR(FindWindow(sid, begin, &taken));
    INGOT_RETURN_IF_ERROR(MergeWindow(sid, begin, taken, stats, &written));
    begin = taken;
  }
  *more = begin < late_entries_.size();
  if (!*more) shard.ClearLateIfQuiet(sid, seals_before);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  Metrics().late_compaction_seconds->Observe(took.count());
  return Status::OK();
}

Status LateCompactor::FindWindow(SeriesId sid, std::size_t begin, std::size_t* end) {
  std::int64_t lo = late_entries_[begin].first_ts_ns;
  std::int64_t hi = late_entries_[begin].max_ts_ns;
  std::size_t taken = begin + 1;
  for (;;) {
    while (taken < late_entries_.size() && late_entries_[taken].first_ts_ns <= hi) {
      hi = std::max(hi, late_entries_[taken].max_ts_ns);
      ++taken;
    }
    // Sealed chunks overlapping [lo, hi]: the one starting at or before lo, then those inside.
    main_entries_.clear();
    std::int64_t new_lo = lo, new_hi = hi;
    const ChunkKey lower = EncodeChunkKey(sid, kMinTs);
    const ChunkKey upper = EncodeChunkKey(sid + 1, kMinTs);
    const rocksdb::Slice lower_slice = lower.slice(), upper_slice = upper.slice();
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_slice;
    ro.iterate_upper_bound = &upper_slice;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(store_.db()->NewIterator(ro, store_.chunks_cf()));
    it->SeekForPrev(EncodeChunkKey(sid, lo).slice());
    if (!it->Valid()) it->Seek(lower_slice);
    for (; it->Valid(); it->Next()) {
      SeriesId key_sid;
      Entry e;
      if (!DecodeChunkKey(it->key(), &key_sid, &e.first_ts_ns) || key_sid != sid) continue;
      if (e.first_ts_ns > hi) break;
      ChunkHeader h;
      Status st = ParseChunkHeader(AsBytes(it->value()), &h);
      if (!st.ok()) {
        return Status::Corruption("chunk at " + std::to_string(e.first_ts_ns) + ": " +
                                  std::string(st.message()));
      }
      if (h.max_ts_ns < lo) continue;
      e.max_ts_ns = h.max_ts_ns;
      e.rank = 0;
      e.key = it->key().ToString();
      new_lo = std::min(new_lo, e.first_ts_ns);
      new_hi = std::max(new_hi, e.max_ts_ns);
      main_entries_.push_back(std::move(e));
    }
    INGOT_RETURN_IF_ERROR(FromRocks(it->status(), "list chunks"));
    const bool grown = new_lo != lo || new_hi != hi;
    lo = new_lo;
    hi = new_hi;
    // A wider window may overlap further late chunks (those starting by the new hi).
    if (!grown) break;
  }
  *end = taken;
  return Status::OK();
}

Status LateCompactor::MergeWindow(SeriesId sid, std::size_t begin, std::size_t end,
                                  LateCompactionStats* stats, std::uint64_t* written) {
  points_.clear();
  if (main_entries_.empty() && end - begin == 1) {
    // A late chunk that overlaps nothing moves as it is.
    const Entry& e = late_entries_[begin];
    rocksdb::PinnableSlice value;
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    INGOT_RETURN_IF_ERROR(
        FromRocks(store_.db()->Get(ro, store_.late_cf(), e.key, &value), "read late chunk"));
    ChunkHeader h;
    INGOT_RETURN_IF_ERROR(ValidateChunk(AsBytes(value), &h));
    rocksdb::WriteBatch batch;
    batch.Delete(store_.late_cf(), e.key);
    batch.Put(store_.chunks_cf(), EncodeChunkKey(sid, h.min_ts_ns).slice(), value);
    INGOT_RETURN_IF_ERROR(
        FromRocks(store_.Write(rocksdb::WriteOptions(), &batch), "move late chunk"));
    stats->chunks_read++;
    stats->bytes_read += value.size();
    stats->chunks_written++;
    stats->bytes_written += value.size();
    stats->points_written += h.count;
    StorageMetrics& m = Metrics();
    m.late_compactions->Add();
    m.late_compaction_chunks_read->Add();
    m.late_compaction_bytes_read->Add(value.size());
    m.late_compaction_bytes_written->Add(value.size());
    m.late_compaction_points->Add(h.count);
    *written += h.count;
    return Status::OK();
  }

  ValueType type = ValueType::kFloat;
  for (const Entry& e : main_entries_) {
    INGOT_RETURN_IF_ERROR(ReadPoints(store_.chunks_cf(), e, &type, stats));
  }
  for (std::size_t i = begin; i < end; ++i) {
    INGOT_RETURN_IF_ERROR(ReadPoints(store_.late_cf(), late_entries_[i], &type, stats));
  }
  SortAndDedupeLatePoints(&points_);

  rocksdb::WriteBatch batch;
  for (const Entry& e : main_entries_) batch.Delete(store_.chunks_cf(), e.key);
  for (std::size_t i = begin; i < end; ++i) batch.Delete(store_.late_cf(), late_entries_[i].key);
  const std::size_t n = points_.size();
  const std::size_t chunks = (n + kChunkCapacity - 1) / kChunkCapacity;
  codec::SeriesHint hint;
  std::size_t offset = 0;
  std::uint64_t bytes_written = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t count = n / chunks + (c < n % chunks ? 1 : 0);
    for (std::size_t i = 0; i < count; ++i) {
      ts_[i] = points_[offset + i].ts_ns;
      bits_[i] = points_[offset + i].bits;
    }
    ChunkHeader h;
    const std::size_t bytes = SealChunk(type, std::span(ts_).first(count),
                                        std::span(bits_).first(count), hint, *ws_, out_, &h);
    batch.Put(store_.chunks_cf(), EncodeChunkKey(sid, h.min_ts_ns).slice(),
              rocksdb::Slice(reinterpret_cast<const char*>(out_.data()), bytes));
    bytes_written += bytes;
    offset += count;
  }
  INGOT_RETURN_IF_ERROR(
      FromRocks(store_.Write(rocksdb::WriteOptions(), &batch), "write merged chunks"));
  stats->chunks_written += chunks;
  stats->bytes_written += bytes_written;
  stats->points_written += n;
  StorageMetrics& m = Metrics();
  m.late_compactions->Add();
  m.late_compaction_bytes_written->Add(bytes_written);
  m.late_compaction_points->Add(n);
  *written += n;

  return Status::OK();
}

}  // namespace ingot
