// Applier: consumes the partitions this node owns from the log into local storage. Each owned
// partition has a thread that reads the log from the partition's position + 1 and feeds the
// messages' lines through a LineIngester, as a connection would (the same parser, series
// resolution, shards, WAL and head buffers; remote-write messages through the remote-write
// handler), then advances the position once storage made them durable. Owners of a partition apply the same messages in the same order.
//
// A partition given up (the node is no longer among its owners) stops after the batch it is
// applying; its data stays and keeps answering queries, and its position stays, so that taking
// it back later resumes from there.
//
// Thread safety: thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chunk/series_index.h"
#include "cluster/log.h"
#include "cluster/positions.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/thread_annotations.h"
#include "ingest/remote_write_handler.h"
#include "ingest/shard_set.h"

namespace ingot::cluster {

struct PartitionProgress {
  PartitionId partition = 0;
  LogSeq applied = 0;         // last sequence applied
  std::uint64_t pending = 0;  // messages after it in the log when it was read
  bool consuming = false;
};

class Applier {
 public:
  // `remote_write` stores remote-write messages (a handler of its own: without a router).
  Applier(Log& log, Positions& positions, ingest::ShardSet& shards, SeriesIndex& index,
          const Clock& clock, const IngestOptions& options,
          const ingest::RemoteWriteHandler& remote_write);
  ~Applier();

  // Consumes exactly the partitions in `owned` from now on (starts and stops threads).
  void SetOwned(const std::vector<PartitionId>& owned);
  // Stops every partition's thread after its current batch.
  void Stop();
  // Every partition this node ever consumed since start, by partition.
  std::vector<PartitionProgress> Progress() const;
  // Partition `p`'s (all zero, not consuming, when it never was).
  PartitionProgress ProgressOf(PartitionId p) const;

 private:
  struct Partition {
    PartitionId id = 0;
    std::atomic<bool> run{true};
    std::atomic<LogSeq> applied{0};
    std::atomic<std::uint64_t> pending{0};
    std::atomic<bool> consuming{false};
    std::thread thread;
  };
  void Consume(Partition* partition);

  Log& log_;
  Positions& positions_;
  ingest::ShardSet& shards_;
  SeriesIndex& index_;
  const Clock& clock_;
  const IngestOptions options_;
  const ingest::RemoteWriteHandler& remote_write_;
  mutable Mutex mu_;
  std::map<PartitionId, std::unique_ptr<Partition>> partitions_ GUARDED_BY(mu_);
};

}  // namespace ingot::cluster
