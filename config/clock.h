// Clock: the wall clock as a collaborator, so that retention and default timestamps can be tested
// with a controlled time. Called per batch or per compaction, never per point.
//
// Thread safety: implementations are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ingot {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::int64_t NowNs() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::int64_t NowNs() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static SystemClock& Instance() {
    static SystemClock clock;
    return clock;
  }
};

// A clock that only moves when told to; for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t now_ns) : now_ns_(now_ns) {}
  std::int64_t NowNs() const override { return now_ns_.load(std::memory_order_relaxed); }
  void Set(std::int64_t now_ns) { now_ns_.store(now_ns, std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> now_ns_;
};

}  // namespace ingot
