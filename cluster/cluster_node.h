// ClusterNode: what a node runs in a cluster (docs/scale-out.md), built by ingotd when
// [cluster] is set: the write path to the log (LineRouting), the applier of the partitions this
// node owns, its lease (Membership), and the query fan-out over the live nodes. The log and the
// bucket come from the caller (cluster/nats/ for NATS JetStream), so nothing here talks to NATS.
//
// Thread safety: thread-safe.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "chunk/storage.h"
#include "cluster/applier.h"
#include "cluster/fanout.h"
#include "cluster/line_router.h"
#include "cluster/log.h"
#include "cluster/membership.h"
#include "cluster/positions.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/thread_annotations.h"
#include "ingest/shard_set.h"

namespace ingot::cluster {

class ClusterNode {
 public:
  // Checks (or creates) the log's layout and loads this node's positions. Everything passed in
  // must outlive the node.
  static Status Open(const Options& options, Log& log, Coordination& kv, Storage& storage,
                     ingest::ShardSet& shards, const Clock& clock,
                     std::unique_ptr<ClusterNode>* out);
  ~ClusterNode();

  LineRouting& routing() { return *routing_; }
  ClusterFanout& fanout() { return *fanout_; }

  // Takes the lease (peers reach this node at `http_address`) and starts applying the
  // partitions this node owns.
  Status Start(const std::string& http_address);
  // Stops applying and renewing the lease. Call before the shards stop.
  void Stop();
  // Persists the positions applied so far: after the shards stopped and storage closed.
  Status PersistPositions();

  // GET /internal/cluster/status: members, and per partition its owners and this node's
  // progress against the log.
  std::string StatusJson() const;

 private:
  ClusterNode(const ClusterOptions& options, Log& log, Coordination& kv, const Clock& clock);
  void Control();

  const ClusterOptions options_;
  Log& log_;
  Coordination& kv_;
  std::unique_ptr<Positions> positions_;
  std::unique_ptr<LineRouting> routing_;
  std::unique_ptr<ingest::RemoteWriteHandler> remote_write_;  // applies remote-write messages
  std::unique_ptr<Applier> applier_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<ClusterFanout> fanout_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread control_;
};

}  // namespace ingot::cluster
