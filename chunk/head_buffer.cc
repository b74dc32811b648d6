#include "chunk/head_buffer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

namespace ingot {

namespace {

constexpr std::size_t kMaxSlots = kChunkCapacity + 1;
// The prefetch stride over a frozen segment's bytes.
constexpr std::size_t kCacheLineBytes = 64;

double BitsToDouble(ValueType type, std::uint64_t bits) {
  if (type == ValueType::kFloat) return std::bit_cast<double>(bits);
  return static_cast<double>(static_cast<std::int64_t>(bits));
}

// The first index of the suffix of `ts` whose elements satisfy `after` (a predicate that holds
// from some index on, as "t > x" does on sorted times). Searched from the end with doubling
// steps, then by bisection: reads usually ask for the newest points (a dashboard's "now"), and
// a head's older points are then never touched, where a plain binary search would miss the cache
// about ten times per series on a cold head.
template <typename After>
std::size_t SuffixStart(std::span<const std::int64_t> ts, After after) {
  std::size_t hi = ts.size();  // ts[hi, size) satisfy `after`
  std::size_t step = 1;
  while (hi > 0) {
    const std::size_t probe = hi > step ? hi - step : 0;
    if (!after(ts[probe])) {
      // ts[probe] does not: the boundary is in (probe, hi].
      const auto it = std::partition_point(ts.begin() + static_cast<std::ptrdiff_t>(probe) + 1,
                                           ts.begin() + static_cast<std::ptrdiff_t>(hi),
                                           [&](std::int64_t t) { return !after(t); });
      return static_cast<std::size_t>(it - ts.begin());
    }
    hi = probe;
    step *= 2;
  }
  return 0;
}

}  // namespace

void HeadBuffer::Grow() {
  // By half (doubling while small), capped at one chunk plus the overflow slot: growth by a
  // factor would jump past 1025 slots for the single overflowing point.
  const std::size_t cap = cap_;
  const std::size_t grown_cap = cap < 4 ? cap * 2 : cap + cap / 2;
  Resize(std::min(grown_cap, std::max(kMaxSlots, cap + 1)));
}

void HeadBuffer::Resize(std::size_t cap) {
  auto* grown = new std::uint64_t[cap * 2];
  if (size_ != 0) {
    std::memcpy(grown, ts_data(), size_ * sizeof(std::int64_t));
    std::memcpy(grown + cap, values_data(), size_ * sizeof(std::uint64_t));
  }
  FreeHeap();
  u_.heap = grown;
  cap_ = static_cast<std::uint16_t>(cap);
}

void HeadBuffer::Freeze(codec::Workspace& ws, std::span<std::uint8_t> scratch) {
  while (size_ >= kTailPoints) {
    if (frozen_ == nullptr) {
      frozen_ = std::make_unique<Frozen>();
      frozen_->hint = hint_;
    }
    const std::span<const std::int64_t> ts(ts_data(), kFreezePoints);
    const std::span<const std::uint64_t> bits(values_data(), kFreezePoints);
    const std::size_t bytes = SealChunk(type_, ts, bits, frozen_->hint, ws, scratch);
    Segment seg;
    seg.first_ts_ns = ts.front();
    seg.last_ts_ns = ts.back();
    seg.bytes = std::make_unique_for_overwrite<std::uint8_t[]>(bytes);
    std::memcpy(seg.bytes.get(), scratch.data(), bytes);
    seg.size = static_cast<std::uint32_t>(bytes);
    seg.count = static_cast<std::uint16_t>(kFreezePoints);
    frozen_->segments.push_back(std::move(seg));
    frozen_->points += kFreezePoints;
    frozen_->last_ts_ns = ts.back();
    DropFront(kFreezePoints, /*sealed=*/false);
  }
}

namespace {

// One frozen segment's points into ts/bits (exactly its count long).
Status DecodeSegment(std::span<const std::uint8_t> bytes, codec::Workspace& ws,
                     std::span<std::int64_t> ts, std::span<std::uint64_t> bits) {
  // The codec writes signed raw values; the buffer holds the same 64 bits unsigned.
  static_assert(sizeof(std::int64_t) == sizeof(std::uint64_t));
  const std::span<std::int64_t> raw(reinterpret_cast<std::int64_t*>(bits.data()), bits.size());
  Status st = DecodeChunkRaw(bytes, ts, raw, ws, ChunkSource::kInMemory);
  if (!st.ok()) return st.WithContext("frozen head segment");
  return Status::OK();
}

}  // namespace

Status HeadBuffer::Materialize(codec::Workspace& ws, std::span<std::int64_t> ts,
                               std::span<std::uint64_t> bits) const {
  std::size_t at = 0;
  if (frozen_ != nullptr) {
    for (const Segment& seg : frozen_->segments) {
      INGOT_RETURN_IF_ERROR(DecodeSegment({seg.bytes.get(), seg.size}, ws,
                                          ts.subspan(at, seg.count), bits.subspan(at, seg.count)));
      at += seg.count;
    }
  }
  std::memcpy(ts.data() + at, ts_data(), size_ * sizeof(std::int64_t));
  std::memcpy(bits.data() + at, values_data(), size_ * sizeof(std::uint64_t));
  return Status::OK();
}

Status HeadBuffer::Thaw(codec::Workspace& ws) {
  if (frozen_ == nullptr) return Status::OK();
  const std::size_t total = size();
  const std::size_t cap = std::max(total + 1, std::size_t{2});
  auto* raw = new std::uint64_t[cap * 2];
  const Status st = Materialize(ws, std::span(reinterpret_cast<std::int64_t*>(raw), total),
                                std::span(raw + cap, total));
  if (!st.ok()) {
    delete[] raw;
    return st;
  }
  FreeHeap();
  u_.heap = raw;
  cap_ = static_cast<std::uint16_t>(cap);
  size_ = static_cast<std::uint16_t>(total);
  frozen_.reset();
  return Status::OK();
}

Status HeadBuffer::ReadRange(std::int64_t start_ns, std::int64_t end_ns, codec::Workspace& ws,
                             std::vector<std::int64_t>* out_ts,
                             std::vector<double>* out_values) const {
  auto append = [&](std::span<const std::int64_t> t, std::span<const std::uint64_t> b) {
    const std::size_t to = SuffixStart(t, [end_ns](std::int64_t x) { return x > end_ns; });
    const std::size_t from =
        SuffixStart(t.first(to), [start_ns](std::int64_t x) { return x >= start_ns; });
    out_ts->insert(out_ts->end(), t.begin() + static_cast<std::ptrdiff_t>(from),
                   t.begin() + static_cast<std::ptrdiff_t>(to));
    const std::size_t base = out_values->size();
    out_values->resize(base + (to - from));
    double* v = out_values->data() + base;
    for (std::size_t i = from; i < to; ++i) v[i - from] = BitsToDouble(type_, b[i]);
  };
  if (frozen_ != nullptr) {
    // Each segment is a heap block of its own, usually cold when a query reaches it: all of them
    // are requested first, so that their cache misses overlap instead of each decode waiting for
    // its own (a range query spent ~4% of its time on the first load of segment headers).
    for (const Segment& seg : frozen_->segments) {
      if (seg.last_ts_ns < start_ns || seg.first_ts_ns > end_ns) continue;
      for (std::size_t at = 0; at < seg.size; at += kCacheLineBytes) {
        __builtin_prefetch(seg.bytes.get() + at);
      }
    }
    std::int64_t seg_ts[kFreezePoints];
    double seg_values[kFreezePoints];
    for (const Segment& seg : frozen_->segments) {
      if (seg.last_ts_ns < start_ns || seg.first_ts_ns > end_ns) continue;
      const std::span<const std::uint8_t> bytes(seg.bytes.get(), seg.size);
      if (seg.first_ts_ns >= start_ns && seg.last_ts_ns <= end_ns) {
        // Wholly inside: straight into the output.
        const std::size_t base = out_ts->size();
        out_ts->resize(base + seg.count);
        out_values->resize(base + seg.count);
        INGOT_RETURN_IF_ERROR(DecodeChunk(bytes, std::span(*out_ts).subspan(base),
                                          std::span(*out_values).subspan(base), ws,
                                          ChunkSource::kInMemory)
                                  .WithContext("frozen head segment"));
        continue;
      }
      const std::span<std::int64_t> t(seg_ts, seg.count);
      const std::span<double> v(seg_values, seg.count);
      INGOT_RETURN_IF_ERROR(DecodeChunk(bytes, t, v, ws, ChunkSource::kInMemory)
                                .WithContext("frozen head segment"));
      const std::size_t to = SuffixStart(t, [end_ns](std::int64_t x) { return x > end_ns; });
      const std::size_t from =
          SuffixStart(t.first(to), [start_ns](std::int64_t x) { return x >= start_ns; });
      out_ts->insert(out_ts->end(), t.begin() + static_cast<std::ptrdiff_t>(from),
                     t.begin() + static_cast<std::ptrdiff_t>(to));
      out_values->insert(out_values->end(), v.begin() + static_cast<std::ptrdiff_t>(from),
                         v.begin() + static_cast<std::ptrdiff_t>(to));
    }
  }
  append(ts(), values_bits());
  return Status::OK();
}

HeadBuffer::InsertResult HeadBuffer::InsertSlow(std::int64_t ts_ns, std::uint64_t value_bits) {
  const std::int64_t* ts = ts_data();
  const std::size_t pos = static_cast<std::size_t>(std::lower_bound(ts, ts + size_, ts_ns) - ts);
  if (pos < size_ && ts[pos] == ts_ns) {
    values_data()[pos] = value_bits;
    return InsertResult::kReplaced;
  }
  if (size_ == cap_) Grow();
  std::int64_t* t = ts_data();
  std::uint64_t* v = values_data();
  std::memmove(t + pos + 1, t + pos, (size_ - pos) * sizeof(std::int64_t));
  std::memmove(v + pos + 1, v + pos, (size_ - pos) * sizeof(std::uint64_t));
  t[pos] = ts_ns;
  v[pos] = value_bits;
  ++size_;
  return InsertResult::kInserted;
}

void HeadBuffer::DropFront(std::size_t n, bool sealed) {
  n = std::min<std::size_t>(n, size_);
  if (n == 0) return;
  std::int64_t* t = ts_data();
  std::uint64_t* v = values_data();
  if (sealed) {
    newest_sealed_ts_ns_ = sealed_any_ ? std::max(newest_sealed_ts_ns_, t[n - 1]) : t[n - 1];
    sealed_any_ = true;
  }
  std::memmove(t, t + n, (size_ - n) * sizeof(std::int64_t));
  std::memmove(v, v + n, (size_ - n) * sizeof(std::uint64_t));
  size_ = static_cast<std::uint16_t>(size_ - n);
}

void HeadBuffer::ReleaseMemoryIfEmpty() {
  if (size() != 0) return;
  FreeHeap();
  frozen_.reset();
}

void HeadBuffer::TrimTail() {
  const std::size_t keep = std::max<std::size_t>(size_, kTailPoints) + 1;
  if (cap_ > keep) Resize(keep);
}

std::size_t HeadBuffer::heap_bytes() const {
  std::size_t bytes = on_heap() ? std::size_t{cap_} * 2 * sizeof(std::uint64_t) : 0;
  if (frozen_ != nullptr) {
    bytes += sizeof(Frozen) + frozen_->segments.capacity() * sizeof(Segment);
    for (const Segment& seg : frozen_->segments) bytes += seg.size;
  }
  return bytes;
}

}  // namespace ingot
