#include "chunk/series_reader.h"

#include <algorithm>
#include <limits>

#include "chunk/chunk_format.h"
#include "codec/codec.h"

namespace ingot {
namespace {
constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();
}  // namespace

SeriesReader::SeriesReader(Storage& storage)
    : storage_(storage), own_ws_(std::make_unique<codec::Workspace>()), ws_(own_ws_.get()) {}

SeriesReader::SeriesReader(Storage& storage, codec::Workspace& ws)
    : storage_(storage), ws_(&ws) {}

Status SeriesReader::Read(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                          const ChunkFilter* filter) {
  ts_.clear();
  values_.clear();
  if (start_ns > end_ns) return Status::OK();
  std::int64_t head_first = kMaxTs;
  std::span<const std::int64_t> head_ts;
  std::span<const double> head_values;
  const bool next_in_block = block_next_ < block_sids_.size() &&
                             block_sids_[block_next_] == sid && block_start_ == start_ns &&
                             block_end_ == end_ns;
  // A series that may have late data reads alone: its late points must be read before its
  // chunks, which the shared iterator has taken already.
  const bool in_block = next_in_block && !block_alone_[block_next_];
  if (next_in_block) ++block_next_;
  if (in_block) {
    const std::size_t i = block_next_ - 1;
    head_first = block_head_first_[i];
    const std::size_t from = block_head_offset_[i], n = block_head_offset_[i + 1] - from;
    head_ts = std::span<const std::int64_t>(block_head_ts_).subspan(from, n);
    head_values = std::span<const double>(block_head_values_).subspan(from, n);
  } else {
    if (!next_in_block) {
      block_sids_.clear();
      block_next_ = 0;
    }
    INGOT_RETURN_IF_ERROR(
        storage_.shard(storage_.ShardOf(sid))
            .ReadHead(sid, start_ns, end_ns, &head_ts_, &head_values_, &head_first));
    head_ts = head_ts_;
    head_values = head_values_;
  }
  // Late data before the chunks (see Storage::ReadLate); chunks it overlaps are decoded, not handed
  // to the filter, so that late points can replace theirs.
  INGOT_RETURN_IF_ERROR(storage_.ReadLate(sid, start_ns, end_ns, &late_, *ws_, damage_));
  if (!late_.points.empty()) filter = nullptr;
  // Chunk points at or after the head's first point were sealed after the snapshot: the head copy
  // already has them.
  if (head_first != kMinTs) {
    const std::int64_t chunk_end = std::min(end_ns, head_first - 1);
    if (start_ns <= chunk_end) {
      const auto take = [&](const ChunkView& view) -> Status {
            const std::size_t n = view.count();
            if (filter != nullptr && n != 0 && view.header.min_ts_ns >= start_ns &&
                view.header.max_ts_ns <= chunk_end && filter->claim(view.header)) {
              Status taken = filter->take(view);
              if (taken.ok() || damage_ == nullptr || !taken.IsCorruption()) return taken;
              damage_->push_back({sid, view.first_ts_ns, view.last_ts_ns(), Damaged(sid, taken)});
              return Status::OK();
            }
            const std::size_t old = ts_.size();
            Status st;
            std::size_t decoded = 0;
            if (n == 0) {
              st = Storage::DecodeChunk(view, {}, {}, *ws_);
            } else {
              // A group decodes only its blocks that overlap the range.
              ts_.resize(old + n);
              values_.resize(old + n);
              st = Storage::DecodeChunkOverlapping(view, start_ns, chunk_end,
                                                   std::span(ts_).subspan(old),
                                                   std::span(values_).subspan(old), *ws_,
                                                   &decoded);
            }
            if (!st.ok()) {
              ts_.resize(old);
              values_.resize(old);
              if (damage_ == nullptr || !st.IsCorruption()) return st;
              damage_->push_back({sid, view.first_ts_ns, view.last_ts_ns(), Damaged(sid, st)});
              return Status::OK();
            }
            ts_.resize(old + decoded);
            values_.resize(old + decoded);
            if (decoded == 0) return Status::OK();
            // Only the first and the last chunk of the range hold points outside it.
            if (ts_[old] < start_ns || ts_.back() > chunk_end) {
              const auto first =
                  std::lower_bound(ts_.begin() + static_cast<std::ptrdiff_t>(old), ts_.end(),
                                   start_ns);
              const auto last = std::upper_bound(first, ts_.end(), chunk_end);
              const auto from = static_cast<std::size_t>(first - ts_.begin());
              const auto to = static_cast<std::size_t>(last - ts_.begin());
              std::copy(ts_.begin() + static_cast<std::ptrdiff_t>(from),
                        ts_.begin() + static_cast<std::ptrdiff_t>(to),
                        ts_.begin() + static_cast<std::ptrdiff_t>(old));
              std::copy(values_.begin() + static_cast<std::ptrdiff_t>(from),
                        values_.begin() + static_cast<std::ptrdiff_t>(to),
                        values_.begin() + static_cast<std::ptrdiff_t>(old));
              ts_.resize(old + (to - from));
              values_.resize(old + (to - from));
            }
            return Status::OK();
          };
      Status walked = in_block ? storage_.ForEachChunk(cursor_, sid, start_ns, chunk_end, take)
                               : storage_.ForEachChunk(sid, start_ns, chunk_end, take);
      if (!walked.ok()) {
        // With a sink, the callback passes over bad chunks: this is an unreadable block (the rest
        // of the range is left out) or not damage at all.
        if (damage_ == nullptr || !walked.IsCorruption()) return Damaged(sid, walked);
        damage_->push_back({sid, start_ns, chunk_end, Damaged(sid, walked)});
      }
    }
  }
  ts_.insert(ts_.end(), head_ts.begin(), head_ts.end());
  values_.insert(values_.end(), head_values.begin(), head_values.end());
  if (!late_.points.empty()) {
    late_ts_.assign(ts_.begin(), ts_.end());
    late_values_.assign(values_.begin(), values_.end());
    Storage::MergeLate(&late_, &late_ts_, &late_values_);
    ts_.assign(late_ts_.begin(), late_ts_.end());
    values_.assign(late_values_.begin(), late_values_.end());
  }
  return Status::OK();
}

Status SeriesReader::PrepareBlock(std::span<const SeriesId> sids, std::int64_t start_ns,
                                  std::int64_t end_ns) {
  block_sids_.clear();
  block_next_ = 0;
  block_head_first_.clear();
  block_alone_.clear();
  block_head_offset_.assign(1, 0);
  block_head_ts_.clear();
  block_head_values_.clear();
  if (start_ns > end_ns) return Status::OK();
  for (const SeriesId sid : sids) {
    std::int64_t head_first = kMaxTs;
    const bool alone = storage_.MayHaveLateData(sid);
    block_alone_.push_back(alone);
    if (alone) {
      block_head_first_.push_back(head_first);
      block_head_offset_.push_back(block_head_ts_.size());
      continue;
    }
    INGOT_RETURN_IF_ERROR(storage_.shard(storage_.ShardOf(sid))
                              .AppendHead(sid, start_ns, end_ns, &block_head_ts_,
                                          &block_head_values_, &head_first));
    block_head_first_.push_back(head_first);
    block_head_offset_.push_back(block_head_ts_.size());
  }
  // After every snapshot: the iterator sees each chunk sealed before any of them.
  storage_.OpenChunkCursor(cursor_);
  block_sids_.assign(sids.begin(), sids.end());
  block_start_ = start_ns;
  block_end_ = end_ns;
  return Status::OK();
}

Status SeriesReader::Damaged(SeriesId sid, const Status& st) const {
  if (!st.IsCorruption()) return st;
  std::string context = "series ";
  context.append(storage_.index().KeyOf(sid));
  return st.WithContext(context);
}

Status SeriesReader::DecodeValues(const ChunkView& view, std::span<double> out) {
  ChunkHeader h;
  Status st = ValidateChunk(view.bytes, &h);
  if (st.ok() && out.size() != h.count) {
    return Status::InvalidArgument("value span of " + std::to_string(out.size()) +
                                   " for a chunk of " + std::to_string(h.count));
  }
  ChunkBlocks blocks;
  const std::size_t n = st.ok() ? ListChunkBlocks(view.bytes, h, blocks) : 0;
  for (std::size_t b = 0; b < n && st.ok(); ++b) {
    const std::span<double> part = out.subspan(blocks[b].first, blocks[b].count);
    if (h.type == ValueType::kFloat) {
      st = codec::DecodeDoubles(blocks[b].values, part, *ws_);
    } else {
      int_scratch_.resize(part.size());
      st = codec::DecodeInts(blocks[b].values, int_scratch_, *ws_);
      if (st.ok()) {
        for (std::size_t i = 0; i < part.size(); ++i) part[i] = static_cast<double>(int_scratch_[i]);
      }
    }
  }
  if (st.ok()) return st;
  return Status::Corruption("chunk of series " + std::to_string(view.sid) + " at " +
                            std::to_string(view.first_ts_ns) + " ns: " + std::string(st.message()));
}

}  // namespace ingot
