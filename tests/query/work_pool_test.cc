#include "query/work_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ingot {
namespace {

TEST(WorkPoolTest, RunsEveryPieceOnceWithWorkerIdsInRange) {
  WorkPool& pool = WorkPool::Instance();
  pool.Configure(3);
  std::vector<std::atomic<int>> runs(1000);
  std::atomic<std::size_t> max_worker{0};
  pool.ParallelFor(runs.size(), [&](std::size_t i, std::size_t worker) {
    runs[i].fetch_add(1);
    std::size_t seen = max_worker.load();
    while (worker > seen && !max_worker.compare_exchange_weak(seen, worker)) {
    }
  });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
  EXPECT_LT(max_worker.load(), 3u);
  pool.ParallelFor(0, [](std::size_t, std::size_t) { FAIL() << "no pieces, no calls"; });
}

// Callers that are themselves busy pool users, and nested loops, finish: the caller takes pieces
// too, so no call waits for a pool thread that is waiting for it.
TEST(WorkPoolTest, ConcurrentAndNestedCallsFinish) {
  WorkPool& pool = WorkPool::Instance();
  pool.Configure(2);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        pool.ParallelFor(8, [&](std::size_t, std::size_t) {
          pool.ParallelFor(4, [&](std::size_t i, std::size_t) {
            total.fetch_add(static_cast<long>(i) + 1);
          });
        });
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4L * 50 * 8 * (1 + 2 + 3 + 4));
}

}  // namespace
}  // namespace ingot
