// HeadBuffer: the open (not yet sealed) points of one series, kept sorted by time.
//
// Holds at most kChunkCapacity points plus one: the point that overflows a full buffer is
// inserted first and then the oldest kChunkCapacity points are sealed, so an out-of-order point
// that belongs inside a full buffer is still accepted. With a million series the per-series
// overhead is what sizes the node: one point lives inline (a 48-byte buffer, no heap); from the
// second on, the raw tail's timestamps and values share one allocation that grows by half (2, 4,
// 6, 9, ... slots of 16 bytes).
//
// Frozen segments: a raw point costs 16 bytes, so a full buffer of raw points would cost ~16 KiB
// per series. The owner calls Freeze() when the raw tail reaches kTailPoints: its oldest
// kFreezePoints are encoded with the chunk codec (SealChunk's bytes, warm with a copy of the
// series' hint) into a frozen segment of typically 1-4 bytes a point, and the newest points stay
// raw, where instant queries and appends find them. Segments are never appended to or edited in
// place: a point that falls in their range (InsertResult::kFrozenRange) makes the owner Thaw()
// the buffer back to raw first, and so does sealing. Readers decode the segments they need
// (Materialize, ReadRange). A buffer the owner never freezes (the late buffers) stays raw.
//
// Inserts: appending in time order is the fast path (one compare, one store per array); an older
// point is placed by binary search and a duplicate timestamp replaces the stored value (last write
// wins). Points at or before the newest sealed timestamp of the series are refused (kTooOld):
// sealed chunks are immutable, and the shard sends such points to the series' late buffer.
//
// Thread safety: not thread-safe; owned by one ShardEngine which guards it with its head mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "chunk/chunk_format.h"
#include "chunk/series_key.h"
#include "codec/series_hint.h"
#include "config/status.h"

namespace ingot {

class HeadBuffer {
 public:
  // kFrozenRange: the point belongs among frozen points; nothing changed (Thaw, then insert).
  enum class InsertResult : std::uint8_t { kAppended, kInserted, kReplaced, kTooOld, kFrozenRange };

  // A raw tail of kTailPoints is frozen down to kTailPoints - kFreezePoints raw points.
  static constexpr std::size_t kTailPoints = 128;
  static constexpr std::size_t kFreezePoints = 96;

  static constexpr std::int64_t kNoSealedTs = std::numeric_limits<std::int64_t>::min();

  // `newest_sealed_ts_ns` = kNoSealedTs: nothing sealed yet, every timestamp is accepted.
  HeadBuffer(ValueType type, std::int64_t newest_sealed_ts_ns)
      : newest_sealed_ts_ns_(newest_sealed_ts_ns),
        type_(type),
        sealed_any_(newest_sealed_ts_ns != kNoSealedTs) {}
  ~HeadBuffer() { FreeHeap(); }
  HeadBuffer(HeadBuffer&& o) noexcept { MoveFrom(o); }
  HeadBuffer& operator=(HeadBuffer&& o) noexcept {
    if (this != &o) {
      FreeHeap();
      MoveFrom(o);
    }
    return *this;
  }
  HeadBuffer(const HeadBuffer&) = delete;
  HeadBuffer& operator=(const HeadBuffer&) = delete;

  // `value_bits`: double bits for float series, the int64 for integer/boolean series.
  InsertResult Insert(std::int64_t ts_ns, std::uint64_t value_bits) {
    const std::size_t n = size_;
    if (n != 0 && ts_ns > ts_data()[n - 1]) {
      Append(ts_ns, value_bits);
      return InsertResult::kAppended;
    }
    if (sealed_any_ && ts_ns <= newest_sealed_ts_ns_) return InsertResult::kTooOld;
    if (frozen_ != nullptr && ts_ns <= frozen_->last_ts_ns) return InsertResult::kFrozenRange;
    if (n == 0) {
      Append(ts_ns, value_bits);
      return InsertResult::kAppended;
    }
    return InsertSlow(ts_ns, value_bits);
  }

  // True when the buffer holds more than a chunk: the caller seals the oldest kChunkCapacity.
  bool overfull() const { return size() > kChunkCapacity; }
  bool empty() const { return size() == 0; }
  std::size_t size() const { return size_ + (frozen_ != nullptr ? frozen_->points : 0); }
  // The oldest point's timestamp. REQUIRES: !empty().
  std::int64_t first_ts() const {
    return frozen_ != nullptr ? frozen_->segments.front().first_ts_ns : ts_data()[0];
  }

  // The points as arrays. REQUIRES: !frozen() (Thaw() first, or use Materialize/ReadRange).
  std::span<const std::int64_t> ts() const { return {ts_data(), size_}; }
  std::span<const std::uint64_t> values_bits() const { return {values_data(), size_}; }

  // Whether some points are in frozen segments, and whether the raw tail is due for Freeze().
  bool frozen() const { return frozen_ != nullptr; }
  bool tail_full() const { return size_ >= kTailPoints; }
  // Encodes the oldest raw points into frozen segments until the tail is below kTailPoints.
  // `scratch` is the caller's seal buffer (at least MaxSealedChunkBytes(kFreezePoints) bytes).
  void Freeze(codec::Workspace& ws, std::span<std::uint8_t> scratch);
  // Decodes every frozen segment back into the raw tail. An error means a segment did not decode
  // (memory corruption): the buffer is left as it was.
  Status Thaw(codec::Workspace& ws);
  // Decodes all points, oldest first, into ts[0, size()) and bits[0, size()) without changing the
  // buffer. REQUIRES: both spans hold at least size() entries.
  Status Materialize(codec::Workspace& ws, std::span<std::int64_t> ts,
                     std::span<std::uint64_t> bits) const;
  // Appends the points with start_ns <= ts <= end_ns, oldest first, to `ts` and to `values`
  // (integer and boolean values converted to double); frozen segments outside the range are not
  // decoded.
  Status ReadRange(std::int64_t start_ns, std::int64_t end_ns, codec::Workspace& ws,
                   std::vector<std::int64_t>* ts, std::vector<double>* values) const;

  // Removes the oldest `n` points; if `sealed` they went into a chunk and newer points only may
  // follow, so the newest sealed timestamp advances to the last removed point.
  void DropFront(std::size_t n, bool sealed);

  // Returns storage to the allocator when the buffer is empty (idle series stay small).
  void ReleaseMemoryIfEmpty();
  // Shrinks a raw tail left large by Thaw() and a seal back to what freezing keeps.
  void TrimTail();

  // Bytes of heap held by the buffer (capacities, not sizes).
  std::size_t heap_bytes() const;

  ValueType type() const { return type_; }
  std::int64_t newest_sealed_ts_ns() const { return newest_sealed_ts_ns_; }
  bool sealed_any() const { return sealed_any_; }
  codec::SeriesHint& hint() { return hint_; }
  const codec::SeriesHint& hint() const { return hint_; }

 private:
  // Inline (cap_ == 1): the point is in u_.ts and inline_value_. On the heap (cap_ >= 2): cap_
  // timestamps, then cap_ values.
  bool on_heap() const { return cap_ >= 2; }
  std::int64_t* ts_data() const {
    return on_heap() ? reinterpret_cast<std::int64_t*>(u_.heap) : const_cast<std::int64_t*>(&u_.ts);
  }
  std::uint64_t* values_data() const {
    return on_heap() ? u_.heap + cap_ : const_cast<std::uint64_t*>(&inline_value_);
  }
  void FreeHeap() {
    if (on_heap()) delete[] u_.heap;
    cap_ = 1;
  }
  void MoveFrom(HeadBuffer& o) {
    frozen_ = std::move(o.frozen_);
    u_ = o.u_;
    inline_value_ = o.inline_value_;
    newest_sealed_ts_ns_ = o.newest_sealed_ts_ns_;
    size_ = o.size_;
    cap_ = o.cap_;
    type_ = o.type_;
    sealed_any_ = o.sealed_any_;
    hint_ = o.hint_;
    o.cap_ = 1;
    o.size_ = 0;
  }
  void Append(std::int64_t ts_ns, std::uint64_t value_bits) {
    if (size_ == cap_) Grow();
    ts_data()[size_] = ts_ns;
    values_data()[size_] = value_bits;
    ++size_;
  }
  InsertResult InsertSlow(std::int64_t ts_ns, std::uint64_t value_bits);
  void Grow();
  void Resize(std::size_t cap);  // moves the raw tail to a buffer of `cap` slots (>= size_)

  struct Segment {
    std::int64_t first_ts_ns = 0;
    std::int64_t last_ts_ns = 0;
    std::unique_ptr<std::uint8_t[]> bytes;  // a chunk as SealChunk writes it
    std::uint32_t size = 0;
    std::uint16_t count = 0;
  };
  struct Frozen {
    std::vector<Segment> segments;  // oldest first, each older than the next and the tail
    std::size_t points = 0;
    std::int64_t last_ts_ns = 0;
    codec::SeriesHint hint;  // the segments' own: they must not steer the series' chunks
  };

  union {
    std::uint64_t* heap;
    std::int64_t ts;
  } u_{};
  std::uint64_t inline_value_ = 0;
  std::int64_t newest_sealed_ts_ns_ = kNoSealedTs;
  std::uint16_t size_ = 0;
  std::uint16_t cap_ = 1;
  ValueType type_ = ValueType::kFloat;
  bool sealed_any_ = false;  // newest_sealed_ts_ns_ is a sealed point (INT64_MIN is a timestamp)
  codec::SeriesHint hint_;
  std::unique_ptr<Frozen> frozen_;
};

}  // namespace ingot
