// ShardSet: one writer thread per storage shard, fed with batches of points through bounded
// queues.
//
// A shard thread is the single writer of its ShardEngine (head buffers + WAL), so points never
// take a lock of their own: producers hand over whole batches (one queue lock per batch), and a
// full queue blocks the producer, which is how a fast TCP sender gets slowed down instead of
// points being dropped. Batches come from a pool and go back to it, so steady-state ingest does
// not allocate. A Completion lets a producer wait until everything it submitted is durable.
//
// Thread safety: Acquire/Submit from any thread; Start/Stop from the owner.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "chunk/shard_engine.h"
#include "chunk/storage.h"
#include "config/status.h"
#include "config/thread_annotations.h"

namespace ingot::ingest {

// What a producer's points arrived over. Accepted points are counted per protocol
// (ingot_points_accepted_by_protocol_total{protocol}), once per batch.
// kClusterLog: points a cluster node applies from its partitions of the log.
enum class WriteProtocol : std::uint8_t { kTcp, kHttp, kRemoteWrite, kClusterLog };

// Tracks batches submitted by one producer (a connection or a /write request).
class Completion {
 public:
  explicit Completion(WriteProtocol protocol) : protocol_(protocol) {}

  void Add() {
    MutexLock lock(mu_);
    ++pending_;
  }
  // Whether every added batch is done (Wait would not block).
  bool done() const {
    MutexLock lock(mu_);
    return pending_ == 0;
  }
  // Counts and error back to zero, for the next use. REQUIRES: done().
  void Reset() {
    MutexLock lock(mu_);
    accepted_ = rejected_ = 0;
    first_error_ = Status();
  }
  void Done(const AppendResult& result, const Status& status);
  // Blocks until every added batch is done. Returns the first storage error, if any.
  Status Wait();
  // Waits at most `timeout` for every added batch to be done; whether they are.
  bool WaitFor(std::chrono::microseconds timeout);
  std::uint64_t accepted() const;
  std::uint64_t rejected() const;

 private:
  const WriteProtocol protocol_;
  mutable Mutex mu_;
  CondVar cv_;
  int pending_ GUARDED_BY(mu_) = 0;
  std::uint64_t accepted_ GUARDED_BY(mu_) = 0;
  std::uint64_t rejected_ GUARDED_BY(mu_) = 0;
  Status first_error_ GUARDED_BY(mu_);
};

struct Batch {
  static constexpr std::size_t kCapacity = 4096;
  std::vector<PointRecord> points;  // capacity kCapacity, reused
  // Definitions of pending series (SeriesIndex::AppendDefinition), logged ahead of the points.
  std::vector<std::uint8_t> definitions;
  Completion* completion = nullptr;
};

class ShardSet {
 public:
  // `storage` must outlive the set. `queue_batches` bounds each shard's queue.
  ShardSet(Storage& storage, std::uint32_t queue_batches);
  ~ShardSet();

  ShardSet(const ShardSet&) = delete;
  ShardSet& operator=(const ShardSet&) = delete;

  void Start();
  // Drains every queue, then joins the threads.
  void Stop();

  int shard_count() const { return storage_.shard_count(); }
  int ShardOf(SeriesId sid) const { return storage_.ShardOf(sid); }

  // An empty batch from the pool.
  std::unique_ptr<Batch> Acquire();
  // Queues `batch` for `shard` (blocking while the queue is full) and registers it with its
  // completion. An empty batch goes straight back to the pool.
  void Submit(int shard, std::unique_ptr<Batch> batch);
  // Like Submit, but when the shard is idle (nothing queued, nothing being applied) the caller
  // applies the batch itself, in place of the shard's thread: for a producer that waits for its
  // batches anyway (a remote-write or /write request), a hand-off to the shard thread and the
  // wake-up back cost more than a small batch's apply. A caller that applied also applies up to
  // two batches queued behind it meanwhile. Batches of a shard are still applied one at a time
  // and in the order they were submitted.
  void SubmitOrApply(int shard, std::unique_ptr<Batch> batch);
  // Submit (or SubmitOrApply, with `apply_when_idle`) that never waits: false, with `batch` left
  // to the caller, when the shard's queue is full. For a caller on a thread that must not block
  // (an HTTP I/O thread).
  bool TrySubmit(int shard, std::unique_ptr<Batch>& batch, bool apply_when_idle);
  // Applies `batch` here when the shard is idle; false (the batch left to the caller) when not.
  bool TryApply(int shard, std::unique_ptr<Batch>& batch);
  std::size_t queue_depth(int shard) const;

 private:
  struct Shard {
    Mutex mu;
    CondVar not_empty, not_full;
    std::deque<std::unique_ptr<Batch>> queue GUARDED_BY(mu);
    bool applying GUARDED_BY(mu) = false;  // a batch is being applied, by the thread or a caller
    std::thread thread;
  };
  void Run(int shard);
  // Applies `batch` here when `apply_when_idle` and the shard is idle, else queues it when
  // `may_queue` (waiting for room when `may_wait`); false, with the batch left in place, when it
  // did neither.
  bool Offer(int shard, std::unique_ptr<Batch>& batch, bool apply_when_idle, bool may_wait,
             bool may_queue = true);
  // Appends `batch` to the shard's engine and completes it; the caller holds the shard's
  // `applying` mark.
  void Apply(int shard, std::unique_ptr<Batch> batch);
  void Release(std::unique_ptr<Batch> batch);

  Storage& storage_;
  const std::size_t queue_batches_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<bool> stopping_{false};
  Mutex pool_mu_;
  std::vector<std::unique_ptr<Batch>> pool_ GUARDED_BY(pool_mu_);
};

}  // namespace ingot::ingest
