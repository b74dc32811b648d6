// HeadBuffer: the open (not yet sealed) points of one series, kept sorted by time.
//
// Holds at most kChunkCapacity points plus one: the point that overflows a full buffer is
// inserted first and then the oldest kChunkCapacity points are sealed, so an out-of-order point
// that belongs inside a full buffer is still accepted. Timestamps and values share one
// allocation that grows on demand (2, 4, 8, ... 1025 slots of 16 bytes): with a million series
// the per-series overhead is what sizes the node, so an empty buffer is 40 bytes and no heap, a
// one-point buffer 40 + 32 bytes, and a full one ~16 KiB.
//
// Inserts: appending in time order is the fast path (one compare, one store per array); an older
// point is placed by binary search and a duplicate timestamp replaces the stored value (last write
// wins). Points at or before the newest sealed timestamp of the series are rejected (kTooOld):
// sealed chunks are immutable.
//
// Thread safety: not thread-safe; owned by one ShardEngine which guards it with its head mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>

#include "chunk/chunk_format.h"
#include "chunk/series_key.h"
#include "codec/series_hint.h"

namespace ingot {

class HeadBuffer {
 public:
  enum class InsertResult : std::uint8_t { kAppended, kInserted, kReplaced, kTooOld };

  static constexpr std::int64_t kNoSealedTs = std::numeric_limits<std::int64_t>::min();

  HeadBuffer(ValueType type, std::int64_t newest_sealed_ts_ns)
      : newest_sealed_ts_ns_(newest_sealed_ts_ns), type_(type) {}
  HeadBuffer(HeadBuffer&&) noexcept = default;
  HeadBuffer& operator=(HeadBuffer&&) noexcept = default;

  // `value_bits`: double bits for float series, the int64 for integer/boolean series.
  InsertResult Insert(std::int64_t ts_ns, std::uint64_t value_bits) {
    const std::size_t n = size_;
    if (n != 0 && ts_ns > ts_data()[n - 1]) {
      Append(ts_ns, value_bits);
      return InsertResult::kAppended;
    }
    if (ts_ns <= newest_sealed_ts_ns_) return InsertResult::kTooOld;
    if (n == 0) {
      Append(ts_ns, value_bits);
      return InsertResult::kAppended;
    }
    return InsertSlow(ts_ns, value_bits);
  }

  // True when the buffer holds more than a chunk: the caller seals the oldest kChunkCapacity.
  bool overfull() const { return size_ > kChunkCapacity; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::span<const std::int64_t> ts() const { return {ts_data(), size_}; }
  std::span<const std::uint64_t> values_bits() const { return {values_data(), size_}; }

  // Removes the oldest `n` points; if `sealed` they went into a chunk and newer points only may
  // follow, so the newest sealed timestamp advances to the last removed point.
  void DropFront(std::size_t n, bool sealed);

  // Returns storage to the allocator when the buffer is empty (idle series stay small).
  void ReleaseMemoryIfEmpty();

  // Bytes of heap held by the buffer (capacity, not size).
  std::size_t heap_bytes() const { return std::size_t{cap_} * 2 * sizeof(std::uint64_t); }

  ValueType type() const { return type_; }
  std::int64_t newest_sealed_ts_ns() const { return newest_sealed_ts_ns_; }
  codec::SeriesHint& hint() { return hint_; }

 private:
  // Layout of data_: cap_ timestamps, then cap_ values.
  std::int64_t* ts_data() const { return reinterpret_cast<std::int64_t*>(data_.get()); }
  std::uint64_t* values_data() const { return data_.get() + cap_; }
  void Append(std::int64_t ts_ns, std::uint64_t value_bits) {
    if (size_ == cap_) Grow();
    ts_data()[size_] = ts_ns;
    values_data()[size_] = value_bits;
    ++size_;
  }
  InsertResult InsertSlow(std::int64_t ts_ns, std::uint64_t value_bits);
  void Grow();

  std::unique_ptr<std::uint64_t[]> data_;
  std::int64_t newest_sealed_ts_ns_;
  std::uint16_t size_ = 0;
  std::uint16_t cap_ = 0;
  ValueType type_;
  codec::SeriesHint hint_;
};

}  // namespace ingot
