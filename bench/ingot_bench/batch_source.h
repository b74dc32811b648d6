// BatchSource: where a connection gets the line-protocol batches it sends.
//
// GeneratedSource runs a CpuWorkload on its own thread and keeps a few batches generated ahead in
// a ring of reused buffers, so the sender never waits for the generator and no batch allocates once
// the buffers have grown. ReplaySource hands out batches of a line-protocol file loaded in memory.
//
// Thread safety: Next() is called by one consumer thread; Stop() may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/ingot_bench/byte_buffer.h"
#include "bench/ingot_bench/cpu_workload.h"
#include "config/status.h"

namespace ingot::bench {

// Complete lines; `bytes` stays valid until the next Next() on the same source.
struct Batch {
  std::string_view bytes;
  uint64_t lines = 0;
  uint64_t values = 0;
  uint64_t new_series = 0;  // series of hosts never sent before (0 for replayed files: unknown)
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Blocks until a batch is ready. Returns false once the source is exhausted or stopped.
  virtual bool Next(Batch* batch) = 0;
  // Makes pending and future Next() calls return false.
  virtual void Stop() = 0;
};

class GeneratedSource final : public BatchSource {
 public:
  // Generates hosts [host_begin, host_end) in batches of at most `batch_lines` lines.
  // REQUIRES: as CpuWorkload's constructor; batch_lines > 0.
  GeneratedSource(const CpuWorkloadOptions& options, uint32_t host_begin, uint32_t host_end,
                  size_t batch_lines);
  ~GeneratedSource() override;

  bool Next(Batch* batch) override;
  void Stop() override;

 private:
  static constexpr size_t kSlots = 4;
  struct Slot {
    ByteBuffer bytes;
    uint64_t lines = 0;
    uint64_t new_series_lines = 0;
  };

  void Produce();

  CpuWorkload workload_;
  const uint64_t fields_;
  const size_t batch_lines_;
  std::array<Slot, kSlots> slots_;
  std::mutex mu_;
  std::condition_variable changed_;
  uint64_t produced_ = 0;  // slots filled so far (guarded by mu_)
  uint64_t consumed_ = 0;  // slots handed out so far (guarded by mu_)
  bool holding_ = false;   // the consumer still reads slot (consumed_ - 1) (guarded by mu_)
  bool done_ = false;      // the generator has no more lines (guarded by mu_)
  bool stopped_ = false;   // guarded by mu_
  std::thread producer_;
};

// Deals the batches of one source to `n` connections in turn: batch k goes to connection k % n,
// so every series' points are spread over all connections and arrive interleaved (what a
// multi-threaded sender, retries or parallel remote-write shards do). Each connection gets a copy
// of its batch, valid until its next Next().
class RoundRobinDealer {
 public:
  RoundRobinDealer(std::unique_ptr<BatchSource> inner, uint32_t n);
  // The source of connection `c` (0 <= c < n); the dealer must outlive it.
  std::unique_ptr<BatchSource> Connection(uint32_t c);

 private:
  class Dealt;
  bool Next(uint32_t c, std::string* copy, Batch* batch);
  void Stop();

  std::unique_ptr<BatchSource> inner_;
  const uint32_t n_;
  std::mutex mu_;
  std::condition_variable turn_changed_;
  uint64_t turn_ = 0;     // batches dealt so far (guarded by mu_)
  bool exhausted_ = false;  // guarded by mu_
};

// A line-protocol file split into batches of whole lines, with per-batch value counts and the
// range of timestamps (read as the last token of each line, in ns).
struct LineProtocolFile {
  struct Span {
    size_t offset = 0;
    size_t size = 0;
    uint64_t lines = 0;
    uint64_t values = 0;
  };
  std::string bytes;
  std::vector<Span> batches;
  uint64_t lines = 0;
  uint64_t values = 0;
  int64_t min_ts_ns = 0;
  int64_t max_ts_ns = 0;
  bool has_timestamps = false;
};

// Loads `path` and splits it into batches of at most `batch_lines` lines. Blank and comment lines
// are skipped.
Status LoadLineProtocolFile(const std::string& path, size_t batch_lines, LineProtocolFile* file);
// The same over bytes already in memory.
void SplitLineProtocol(std::string bytes, size_t batch_lines, LineProtocolFile* file);
// Fields on one line (without its newline); 0 for blank or comment lines.
uint64_t CountFields(std::string_view line);

class ReplaySource final : public BatchSource {
 public:
  // Hands out batches first, first + stride, first + 2 * stride, ...
  // REQUIRES: `file` outlives this source; stride > 0.
  ReplaySource(const LineProtocolFile& file, size_t first, size_t stride);

  bool Next(Batch* batch) override;
  void Stop() override { stopped_.store(true, std::memory_order_relaxed); }

 private:
  const LineProtocolFile& file_;
  size_t next_;
  const size_t stride_;
  std::atomic<bool> stopped_{false};
};

}  // namespace ingot::bench
