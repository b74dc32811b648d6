// LateSet: which series may have late data (a late head or late chunks), one bit per series id.
//
// Readers test a bit on every series read, so the test is lock-free: a fixed directory of page
// pointers (allocated once, 2^15 entries, like the series index's record pages) whose pages of
// 2^16 bits are created on first Set and never freed before the set is destroyed. A set bit may
// be stale (the series' late data was merged since); a clear bit never is: bits are set before
// the late data they announce becomes visible, and cleared only by the compactor once the series
// has none (ShardEngine::ClearLateIfQuiet).
//
// Thread safety: thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "chunk/series_key.h"

namespace ingot {

class LateSet {
 public:
  static constexpr std::size_t kBitsPerPage = 1 << 16;
  static constexpr std::size_t kPages = 1 << 15;  // 2^31 series

  LateSet() : pages_(new std::atomic<std::atomic<std::uint64_t>*>[kPages]) {
    for (std::size_t i = 0; i < kPages; ++i) pages_[i].store(nullptr, std::memory_order_relaxed);
  }
  ~LateSet() {
    for (std::size_t i = 0; i < kPages; ++i) delete[] pages_[i].load(std::memory_order_relaxed);
  }
  LateSet(const LateSet&) = delete;
  LateSet& operator=(const LateSet&) = delete;

  bool Test(SeriesId sid) const {
    const std::atomic<std::uint64_t>* page = Page(sid);
    if (page == nullptr) return false;
    const std::size_t bit = sid % kBitsPerPage;
    return (page[bit / 64].load(std::memory_order_acquire) >> (bit % 64)) & 1;
  }

  // Returns true if the bit was clear.
  bool Set(SeriesId sid) {
    std::atomic<std::uint64_t>* page = Page(sid);
    if (page == nullptr) page = CreatePage(sid);
    if (page == nullptr) return false;  // beyond 2^31 ids: the index refuses those series
    const std::size_t bit = sid % kBitsPerPage;
    const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
    const bool was_clear = (page[bit / 64].fetch_or(mask, std::memory_order_acq_rel) & mask) == 0;
    if (was_clear) count_.fetch_add(1, std::memory_order_relaxed);
    return was_clear;
  }

  void Clear(SeriesId sid) {
    std::atomic<std::uint64_t>* page = Page(sid);
    if (page == nullptr) return;
    const std::size_t bit = sid % kBitsPerPage;
    const std::uint64_t mask = std::uint64_t{1} << (bit % 64);
    if (page[bit / 64].fetch_and(~mask, std::memory_order_acq_rel) & mask) {
      count_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  // Series whose bit is set.
  std::size_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t>* Page(SeriesId sid) const {
    const std::uint64_t p = sid / kBitsPerPage;
    if (p >= kPages) return nullptr;
    return pages_[p].load(std::memory_order_acquire);
  }
  std::atomic<std::uint64_t>* CreatePage(SeriesId sid) {
    const std::uint64_t p = sid / kBitsPerPage;
    if (p >= kPages) return nullptr;
    auto* fresh = new std::atomic<std::uint64_t>[kBitsPerPage / 64];
    for (std::size_t i = 0; i < kBitsPerPage / 64; ++i) fresh[i].store(0, std::memory_order_relaxed);
    std::atomic<std::uint64_t>* expected = nullptr;
    if (!pages_[p].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
      delete[] fresh;
      return expected;
    }
    return fresh;
  }

  std::unique_ptr<std::atomic<std::atomic<std::uint64_t>*>[]> pages_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace ingot
