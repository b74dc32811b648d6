#include "query/work_pool.h"

#include <algorithm>
#include <atomic>

namespace ingot {

struct WorkPool::Job {
  std::size_t n = 0;
  const std::function<void(std::size_t, std::size_t)>* body = nullptr;
  std::atomic<std::size_t> next{0};     // the next piece to take
  std::atomic<std::size_t> workers{1};  // ids handed out (the caller is 0)
  std::size_t done = 0;                 // pieces finished, under mu
  std::mutex mu;
  std::condition_variable finished;
};

WorkPool& WorkPool::Instance() {
  static WorkPool pool;
  return pool;
}

WorkPool::WorkPool() : threads_(std::max(1u, std::thread::hardware_concurrency())) {}

WorkPool::~WorkPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : pool_) t.join();
}

void WorkPool::Configure(unsigned threads) {
  std::lock_guard<std::mutex> lock(mu_);
  threads_ = threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads;
}

void WorkPool::StartLocked() {
  while (pool_.size() + 1 < threads_) pool_.emplace_back([this] { Loop(); });
}

void WorkPool::Work(Job& job, std::size_t worker) {
  std::size_t did = 0;
  for (std::size_t i = job.next.fetch_add(1); i < job.n; i = job.next.fetch_add(1)) {
    (*job.body)(i, worker);
    ++did;
  }
  if (did == 0) return;
  std::lock_guard<std::mutex> lock(job.mu);
  job.done += did;
  if (job.done == job.n) job.finished.notify_all();
}

void WorkPool::Loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    // A job whose pieces are all taken needs no id (and the body may be gone).
    if (job->next.load() >= job->n) continue;
    Work(*job, job->workers.fetch_add(1));
  }
}

void WorkPool::ParallelFor(std::size_t n,
                           const std::function<void(std::size_t, std::size_t)>& body) {
  if (n == 0) return;
  auto job = std::make_shared<Job>();
  job->n = n;
  job->body = &body;
  std::size_t helpers = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    helpers = std::min<std::size_t>(threads_ - 1, n - 1);
    if (helpers > 0) {
      StartLocked();
      for (std::size_t h = 0; h < helpers; ++h) queue_.push_back(job);
    }
  }
  for (std::size_t h = 0; h < helpers; ++h) wake_.notify_one();
  Work(*job, 0);
  std::unique_lock<std::mutex> lock(job->mu);
  job->finished.wait(lock, [&] { return job->done == job->n; });
}

}  // namespace ingot
