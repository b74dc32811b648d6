// WorkPool: a fixed set of threads, started once per process, that help a query with independent
// pieces of its work (series of a range function, say), so that one query can use more than one
// core without a thread started per request.
//
//   WorkPool::Instance().ParallelFor(blocks, [&](std::size_t block, std::size_t worker) {...});
//
// The calling thread takes pieces too, from the same counter as the helpers, so a ParallelFor
// finishes even when every pool thread is busy with other queries (it then runs on the caller
// alone): queries never wait on each other, and nesting cannot deadlock. `worker` numbers the
// threads taking part in one call (0 is the caller), for per-thread scratch state.
//
// Thread safety: thread-safe. Configure before the first ParallelFor.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ingot {

class WorkPool {
 public:
  static WorkPool& Instance();

  // Threads one ParallelFor may use, the caller included (>= 1); 0 = the number of cores. Takes
  // effect for pool threads not yet started (they start on first use).
  void Configure(unsigned threads);
  unsigned threads() const { return threads_; }

  // Runs body(i, worker) for every i in [0, n), on the caller and up to threads() - 1 helpers;
  // returns when all are done. worker < threads().
  void ParallelFor(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body);

  ~WorkPool();

 private:
  struct Job;
  WorkPool();
  void StartLocked();
  void Loop();
  static void Work(Job& job, std::size_t worker);

  unsigned threads_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::thread> pool_;
  bool stop_ = false;
};

}  // namespace ingot
