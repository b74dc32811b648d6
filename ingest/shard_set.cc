#include "ingest/shard_set.h"

#include <algorithm>

#include "config/logging.h"
#include "ingest/ingest_metrics.h"

namespace ingot::ingest {
namespace {
// Batches queued behind a caller's own apply that it applies too before it returns.
constexpr int kCombinedBatches = 2;
Mutex g_live_mu;
ShardSet* g_live GUARDED_BY(g_live_mu) = nullptr;  // the set the queue-depth gauges read
int g_registered_shards GUARDED_BY(g_live_mu) = 0;
}  // namespace

void Completion::Done(const AppendResult& result, const Status& status) {
  if (result.accepted > 0) {
    Metrics().points_accepted_by_protocol[static_cast<std::size_t>(protocol_)]->Add(
        result.accepted);
  }
  MutexLock lock(mu_);
  accepted_ += result.accepted;
  rejected_ += result.rejected();
  if (!status.ok() && first_error_.ok()) first_error_ = status;
  if (--pending_ == 0) cv_.NotifyAll();
}

bool Completion::WaitFor(std::chrono::microseconds timeout) {
  MutexLock lock(mu_);
  return cv_.WaitFor(lock, timeout, [this] {
    mu_.AssertHeld();
    return pending_ == 0;
  });
}

Status Completion::Wait() {
  MutexLock lock(mu_);
  cv_.Wait(lock, [this] {
    mu_.AssertHeld();
    return pending_ == 0;
  });
  return first_error_;
}

std::uint64_t Completion::accepted() const {
  MutexLock lock(mu_);
  return accepted_;
}

std::uint64_t Completion::rejected() const {
  MutexLock lock(mu_);
  return rejected_;
}

ShardSet::ShardSet(Storage& storage, std::uint32_t queue_batches)
    : storage_(storage), queue_batches_(queue_batches == 0 ? 1 : queue_batches) {
  Metrics();  // registered up front, so /metrics shows the ingest counters before any write
  for (int i = 0; i < storage_.shard_count(); ++i) shards_.push_back(std::make_unique<Shard>());
}

ShardSet::~ShardSet() { Stop(); }

void ShardSet::Start() {
  for (int i = 0; i < static_cast<int>(shards_.size()); ++i) {
    shards_[static_cast<std::size_t>(i)]->thread = std::thread([this, i] { Run(i); });
  }
  int from = 0, to = 0;
  {
    MutexLock lock(g_live_mu);
    g_live = this;
    from = g_registered_shards;
    to = std::max(from, static_cast<int>(shards_.size()));
    g_registered_shards = to;
  }
  // The gauges are registered once per process and read whichever set is live. Registered
  // outside g_live_mu: rendering /metrics holds the registry's lock while a gauge takes
  // g_live_mu, so taking them in the other order here could deadlock.
  for (int i = from; i < to; ++i) {
    MetricsRegistry::Default().AddCallbackGauge(
        "ingot_shard_queue_depth", "Batches waiting in each shard's queue.",
        [i] {
          MutexLock live_lock(g_live_mu);
          if (g_live == nullptr || i >= g_live->shard_count()) return 0.0;
          return static_cast<double>(g_live->queue_depth(i));
        },
        "shard=\"" + std::to_string(i) + "\"");
  }
}

void ShardSet::Stop() {
  {
    MutexLock lock(g_live_mu);
    if (g_live == this) g_live = nullptr;
  }
  for (auto& shard : shards_) {
    MutexLock lock(shard->mu);
    stopping_ = true;
    shard->not_empty.NotifyAll();
  }
  for (auto& shard : shards_) {
    if (shard->thread.joinable()) shard->thread.join();
  }
}

std::unique_ptr<Batch> ShardSet::Acquire() {
  {
    MutexLock lock(pool_mu_);
    if (!pool_.empty()) {
      auto batch = std::move(pool_.back());
      pool_.pop_back();
      return batch;
    }
  }
  auto batch = std::make_unique<Batch>();
  batch->points.reserve(Batch::kCapacity);
  return batch;
}

void ShardSet::Release(std::unique_ptr<Batch> batch) {
  batch->points.clear();
  batch->definitions.clear();
  batch->completion = nullptr;
  MutexLock lock(pool_mu_);
  pool_.push_back(std::move(batch));
}

void ShardSet::Submit(int shard_index, std::unique_ptr<Batch> batch) {
  Offer(shard_index, batch, /*apply_when_idle=*/false, /*may_wait=*/true);
}

void ShardSet::SubmitOrApply(int shard_index, std::unique_ptr<Batch> batch) {
  Offer(shard_index, batch, /*apply_when_idle=*/true, /*may_wait=*/true);
}

bool ShardSet::TrySubmit(int shard_index, std::unique_ptr<Batch>& batch, bool apply_when_idle) {
  return Offer(shard_index, batch, apply_when_idle, /*may_wait=*/false);
}

bool ShardSet::TryApply(int shard_index, std::unique_ptr<Batch>& batch) {
  return Offer(shard_index, batch, /*apply_when_idle=*/true, /*may_wait=*/false,
               /*may_queue=*/false);
}

bool ShardSet::Offer(int shard_index, std::unique_ptr<Batch>& batch, bool apply_when_idle,
                     bool may_wait, bool may_queue) {
  if (batch->points.empty() && batch->definitions.empty()) {
    Release(std::move(batch));
    return true;
  }
  Shard& shard = *shards_[static_cast<std::size_t>(shard_index)];
  bool apply_here = false;
  {
    MutexLock lock(shard.mu);
    if (apply_when_idle && !shard.applying && shard.queue.empty() && !stopping_) {
      apply_here = true;
      shard.applying = true;
    } else {
      if (!may_queue || (!may_wait && shard.queue.size() >= queue_batches_)) return false;
      shard.not_full.Wait(lock, [&] {
        shard.mu.AssertHeld();
        return shard.queue.size() < queue_batches_;
      });
      if (batch->completion != nullptr) batch->completion->Add();
      shard.queue.push_back(std::move(batch));
      shard.not_empty.NotifyOne();
    }
  }
  if (!apply_here) return true;
  if (batch->completion != nullptr) batch->completion->Add();
  Apply(shard_index, std::move(batch));
  // Batches queued behind this apply are usually other requests' last batches, whose producers
  // wait for them: a few are applied here too rather than waking the shard's thread for them.
  for (int combined = 0;; ++combined) {
    std::unique_ptr<Batch> next;
    {
      MutexLock lock(shard.mu);
      if (shard.queue.empty() || combined == kCombinedBatches) {
        shard.applying = false;
        // The thread waits for the mark to clear before it takes what is still queued, or
        // before it ends when the set is stopping.
        if (!shard.queue.empty() || stopping_) shard.not_empty.NotifyOne();
        return true;
      }
      next = std::move(shard.queue.front());
      shard.queue.pop_front();
      shard.not_full.NotifyOne();
    }
    Apply(shard_index, std::move(next));
  }
}

std::size_t ShardSet::queue_depth(int shard_index) const {
  Shard& shard = *shards_[static_cast<std::size_t>(shard_index)];
  MutexLock lock(shard.mu);
  return shard.queue.size();
}

void ShardSet::Run(int shard_index) {
  Shard& shard = *shards_[static_cast<std::size_t>(shard_index)];
  for (;;) {
    std::unique_ptr<Batch> batch;
    {
      MutexLock lock(shard.mu);
      shard.not_empty.Wait(lock, [&] {
        shard.mu.AssertHeld();
        return !shard.applying && (stopping_ || !shard.queue.empty());
      });
      if (shard.queue.empty()) return;  // stopping and drained
      batch = std::move(shard.queue.front());
      shard.queue.pop_front();
      shard.applying = true;
      shard.not_full.NotifyOne();
    }
    Apply(shard_index, std::move(batch));
    MutexLock lock(shard.mu);
    shard.applying = false;
  }
}

void ShardSet::Apply(int shard_index, std::unique_ptr<Batch> batch) {
  ShardEngine& engine = storage_.shard(shard_index);
  AppendResult result;
  Status st = engine.Append(batch->points, batch->definitions, &result);
  if (!st.ok()) {
    Metrics().points_storage_error->Add(batch->points.size() - result.accepted);
    // Storage errors repeat for every batch until the shard recovers: the log keeps a budget.
    static RateLimiter limiter(5);
    std::uint64_t suppressed = 0;
    if (limiter.Allow(&suppressed)) {
      Logger("ingest")->error(
          "shard {}: storing a batch of {} points failed: {}{}", shard_index, batch->points.size(),
          st.ToString(),
          suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
    }
  }
  if (batch->completion != nullptr) batch->completion->Done(result, st);
  Release(std::move(batch));
}

}  // namespace ingot::ingest
