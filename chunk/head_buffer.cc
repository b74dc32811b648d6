#include "chunk/head_buffer.h"

#include <algorithm>
#include <cstring>

namespace ingot {

namespace {
constexpr std::size_t kMaxSlots = kChunkCapacity + 1;
}  // namespace

void HeadBuffer::Grow() {
  // By half (doubling while small), capped at one chunk plus the overflow slot: growth by a
  // factor would jump past 1025 slots for the single overflowing point.
  const std::size_t cap = cap_;
  const std::size_t grown_cap = cap < 4 ? cap * 2 : cap + cap / 2;
  const std::size_t next = std::min(grown_cap, std::max(kMaxSlots, cap + 1));
  auto* grown = new std::uint64_t[next * 2];
  if (size_ != 0) {
    std::memcpy(grown, ts_data(), size_ * sizeof(std::int64_t));
    std::memcpy(grown + next, values_data(), size_ * sizeof(std::uint64_t));
  }
  FreeHeap();
  u_.heap = grown;
  cap_ = static_cast<std::uint16_t>(next);
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
  if (size_ != 0) return;
  FreeHeap();
}

}  // namespace ingot
