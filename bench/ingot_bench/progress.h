// ProgressMeter: samples the run's counters once per second on its own thread, keeps the
// per-second throughput for the report and prints a live line: rewritten in place with '\r' on a
// terminal, a plain line every few seconds otherwise, nothing when quiet.
//
// Thread safety: the counters are atomics written by the connections; Stop() from the owner.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ingot::bench {

struct alignas(64) ConnectionCounters {
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> lines{0};
  std::atomic<uint64_t> values{0};
  std::atomic<uint64_t> new_series{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> errors{0};
};

struct CounterTotals {
  uint64_t bytes = 0;
  uint64_t values = 0;
  uint64_t errors = 0;
};

class ProgressMeter {
 public:
  enum class Mode { kQuiet, kTerminal, kPlain };

  // `read` sums the counters; `total_values` (0 if unknown) and `duration_s` (0 if none) size the
  // bar. REQUIRES: `out` outlives the meter.
  ProgressMeter(std::function<CounterTotals()> read, uint64_t total_values, double duration_s,
                Mode mode, std::FILE* out);
  ~ProgressMeter();

  // Starts sampling; the clock of the per-second samples starts now.
  void Start();
  // Stops sampling, ends the live line, and returns the throughput of each whole second, plus
  // the last partial second scaled to a rate when it is long enough to count (or the only one).
  std::vector<double> Stop();

  // Terminal when `out` is a TTY, plain otherwise, quiet when asked.
  static Mode ModeFor(std::FILE* out, bool quiet);

 private:
  void Loop();
  void Print(double elapsed_s, const CounterTotals& now, double values_per_s, double mb_per_s);

  std::function<CounterTotals()> read_;
  const uint64_t total_values_;
  const double duration_s_;
  const Mode mode_;
  std::FILE* const out_;
  std::chrono::steady_clock::time_point start_;
  // Written by the sampling thread until Stop() joins it.
  std::vector<double> per_second_values_;
  CounterTotals previous_;
  int whole_seconds_ = 0;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ingot::bench
