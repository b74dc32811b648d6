#include "chunk/head_buffer.h"

#include <algorithm>

namespace ingot {

namespace {
constexpr std::size_t kMinSlots = 16;
constexpr std::size_t kMaxSlots = kChunkCapacity + 1;
}  // namespace

void HeadBuffer::Grow() {
  // Doubling, capped at one chunk plus the overflow slot: plain vector growth would jump from
  // 1024 to 2048 slots for the single overflowing point.
  const std::size_t cap = ts_.capacity();
  const std::size_t next = std::min(std::max(kMinSlots, cap * 2), std::max(kMaxSlots, cap + 1));
  ts_.reserve(next);
  values_.reserve(next);
}

HeadBuffer::InsertResult HeadBuffer::InsertSlow(std::int64_t ts_ns, std::uint64_t value_bits) {
  auto it = std::lower_bound(ts_.begin(), ts_.end(), ts_ns);
  const std::size_t pos = static_cast<std::size_t>(it - ts_.begin());
  if (it != ts_.end() && *it == ts_ns) {
    values_[pos] = value_bits;
    return InsertResult::kReplaced;
  }
  if (ts_.size() == ts_.capacity()) Grow();
  ts_.insert(ts_.begin() + static_cast<std::ptrdiff_t>(pos), ts_ns);
  values_.insert(values_.begin() + static_cast<std::ptrdiff_t>(pos), value_bits);
  return InsertResult::kInserted;
}

void HeadBuffer::DropFront(std::size_t n, bool sealed) {
  n = std::min(n, ts_.size());
  if (n == 0) return;
  if (sealed) newest_sealed_ts_ns_ = std::max(newest_sealed_ts_ns_, ts_[n - 1]);
  ts_.erase(ts_.begin(), ts_.begin() + static_cast<std::ptrdiff_t>(n));
  values_.erase(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(n));
}

void HeadBuffer::ReleaseMemoryIfEmpty() {
  if (!ts_.empty()) return;
  std::vector<std::int64_t>().swap(ts_);
  std::vector<std::uint64_t>().swap(values_);
}

}  // namespace ingot
