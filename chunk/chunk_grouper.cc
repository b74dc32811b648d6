#include "chunk/chunk_grouper.h"

#include <array>
#include <limits>
#include <span>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "chunk/chunk_format.h"
#include "chunk/storage_metrics.h"
#include "config/logging.h"

namespace ingot {

ChunkGrouper::ChunkGrouper(ChunkStore& store)
    : store_(store), ws_(std::make_unique<codec::Workspace>()) {
  run_keys_.reserve(kMaxChunkBlocks);
  run_values_.reserve(kMaxChunkBlocks);
}

ChunkGrouper::~ChunkGrouper() = default;

Status ChunkGrouper::FlushRun(ChunkGroupStats* stats) {
  const std::size_t n = run_keys_.size();
  Status st;
  if (n >= 2) {
    std::array<std::span<const std::uint8_t>, kMaxChunkBlocks> chunks;
    std::size_t before = 0;
    for (std::size_t i = 0; i < n; ++i) {
      chunks[i] = {reinterpret_cast<const std::uint8_t*>(run_values_[i].data()),
                   run_values_[i].size()};
      before += run_values_[i].size();
    }
    StorageMetrics& m = Metrics();
    Status grouped = GroupChunks(std::span(chunks).first(n), *ws_, &group_);
    if (!grouped.ok()) {
      // A damaged chunk stays where it is; reads report it.
      stats->errors++;
      m.chunk_grouping_errors->Add();
      std::uint64_t suppressed = 0;
      SeriesId sid;
      std::int64_t first;
      if (log_limit_.Allow(&suppressed) && DecodeChunkKey(run_keys_[0], &sid, &first)) {
        Logger("storage")->warn("series {}: chunks from {} left ungrouped ({} similar suppressed): {}",
                                sid, first, suppressed, grouped.ToString());
      }
    } else {
      rocksdb::WriteBatch batch;
      for (std::size_t i = 1; i < n; ++i) batch.Delete(store_.chunks_cf(), run_keys_[i]);
      batch.Put(store_.chunks_cf(), run_keys_[0], group_);
      st = FromRocks(store_.Write(rocksdb::WriteOptions(), &batch), "write group chunk");
      if (st.ok()) {
        stats->groups_written++;
        stats->chunks_grouped += n;
        const std::uint64_t saved = before > group_.size() ? before - group_.size() : 0;
        stats->bytes_saved += saved;
        m.chunk_groups_written->Add();
        m.chunks_grouped->Add(n);
        m.chunk_bytes_saved_by_grouping->Add(saved);
      }
    }
  }
  run_keys_.clear();
  run_values_.clear();
  run_points_ = 0;
  return st;
}

Status ChunkGrouper::Run(std::uint64_t max_chunks, ChunkGroupStats* stats, bool* done) {
  *done = false;
  run_keys_.clear();
  run_values_.clear();
  run_points_ = 0;
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;  // a background scan must not evict the queries' blocks
  std::unique_ptr<rocksdb::Iterator> it(store_.db()->NewIterator(ro, store_.chunks_cf()));
  if (cursor_.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(cursor_);
  }
  std::uint64_t scanned = 0;
  SeriesId last_sid = 0;
  if (!cursor_.empty()) {
    std::int64_t first;
    DecodeChunkKey(cursor_, &last_sid, &first);
  }
  for (; it->Valid(); it->Next()) {
    if (scanned == max_chunks) {
      // Resume at the pending run, so that it can still fill up.
      cursor_ = run_keys_.empty() ? it->key().ToString() : run_keys_[0];
      return Status::OK();
    }
    ++scanned;
    stats->chunks_scanned++;
    SeriesId sid;
    std::int64_t first;
    ChunkHeader h;
    const rocksdb::Slice value = it->value();
    const bool keyed = DecodeChunkKey(it->key(), &sid, &first);
    if (keyed) last_sid = sid;
    if (!keyed ||
        !ParseChunkHeader({reinterpret_cast<const std::uint8_t*>(value.data()), value.size()}, &h)
             .ok() ||
        h.blocks != 1) {
      // A group or an unreadable chunk ends the run before it, which is not full: left as is.
      run_keys_.clear();
      run_values_.clear();
      run_points_ = 0;
      continue;
    }
    if (sid != run_sid_ || run_points_ + h.count > kMaxChunkPoints) {
      // A run that the next chunk would overflow is full; one of another series is not.
      if (sid == run_sid_) {
        INGOT_RETURN_IF_ERROR(FlushRun(stats));
      } else {
        run_keys_.clear();
        run_values_.clear();
        run_points_ = 0;
      }
    }
    run_sid_ = sid;
    run_keys_.push_back(it->key().ToString());
    run_values_.push_back(value.ToString());
    run_points_ += h.count;
    if (run_keys_.size() == kMaxChunkBlocks || run_points_ == kMaxChunkPoints) {
      INGOT_RETURN_IF_ERROR(FlushRun(stats));
    }
  }
  run_keys_.clear();
  run_values_.clear();
  run_points_ = 0;
  if (!it->status().ok()) {
    // An unreadable table block (reads report it for the chunks in it): the scan resumes at the
    // next series, then at growing distances if the same block is hit again, as the data check's
    // walk does.
    stats->errors++;
    Metrics().chunk_grouping_errors->Add();
    std::uint64_t suppressed = 0;
    if (log_limit_.Allow(&suppressed)) {
      Logger("storage")->warn("grouping: unreadable chunks after series {} ({} similar suppressed): {}",
                              last_sid, suppressed, it->status().ToString());
    }
    skip_ = scanned > 0 ? 1 : std::min<SeriesId>(skip_ * 2, SeriesId{1} << 40);
    const SeriesId next = last_sid + skip_;
    if (next > last_sid) {
      const ChunkKey key = EncodeChunkKey(next, std::numeric_limits<std::int64_t>::min());
      cursor_.assign(reinterpret_cast<const char*>(key.bytes), kChunkKeyBytes);
      return Status::OK();
    }
  }
  // The last run of the scan is a series' newest chunks: it waits for more.
  cursor_.clear();
  skip_ = 1;
  *done = true;
  return Status::OK();
}

}  // namespace ingot
