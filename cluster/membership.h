// Membership: which nodes are in the cluster and alive, and so which partitions this node owns.
//
// Every node keeps a lease, the key `node.<id>` of the cluster's bucket, which it writes again
// every cluster.lease_renew_ms (value: its HTTP address and incarnation). Every node watches the
// bucket and notes, by its own monotonic clock, when each key last changed: a key unchanged for
// cluster.lease_ttl_ms is a node that is down. No clocks are compared across machines.
//
// A partition's owners are the cluster.replication nodes chosen by rendezvous hashing among the
// candidates: nodes alive, or down for less than cluster.dead_node_grace_ms (a node restarting
// within the grace keeps its partitions, so nothing moves). A node down for longer is dropped
// from the candidates, and its key deleted, so that nodes started later do not count it.
// Every node computes owners from its own view; views agree once the watches have delivered
// the same changes. A view whose own lease stopped coming back on the watch (its connection or
// watch is down) judges no one, so a node cut off from the log moves nothing.
//
// Thread safety: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/log.h"
#include "config/options.h"
#include "config/thread_annotations.h"

namespace ingot::cluster {

struct MemberView {
  std::string id;
  std::string http;  // "host:port"
  bool live = false;
  bool candidate = false;  // owns partitions
  std::int64_t unchanged_ms = 0;
};

class Membership {
 public:
  // `kv` must outlive the membership.
  Membership(Coordination& kv, const ClusterOptions& options, std::string http_address);
  ~Membership();

  // Writes the lease once and starts watching and renewing.
  Status Start();
  // Stops renewing and watching. The lease then expires at the other nodes: a restart within
  // the grace keeps this node's partitions.
  void Stop();

  std::vector<MemberView> Members() const;
  // The partitions this node owns by its current view.
  std::vector<PartitionId> Owned() const;
  // Owners of `p` by this node's view.
  std::vector<std::string> OwnersOfPartition(PartitionId p) const;
  // HTTP addresses of the other live nodes.
  std::vector<std::string> LivePeers() const;
  // Whether this node has seen its own lease come back on the watch (its view is current).
  bool settled() const;

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Node {
    std::string http;
    SteadyTime changed;
  };
  void OnEntry(const KvEntry& entry);
  void Renew();
  std::vector<std::string> CandidatesLocked(SteadyTime now) const REQUIRES(mu_);
  // Whether this node's own lease has not come back on the watch for cluster.lease_ttl_ms.
  bool StaleLocked(SteadyTime now) const REQUIRES(mu_);
  // How long `node`'s lease has been unchanged, as this view may judge it (0 when stale).
  std::int64_t UnchangedLocked(const Node& node, SteadyTime now) const REQUIRES(mu_);

  Coordination& kv_;
  const ClusterOptions options_;
  const std::string key_;
  const std::string value_;
  std::unique_ptr<WatchHandle> watch_;
  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool seen_self_ GUARDED_BY(mu_) = false;
  std::map<std::string, Node> nodes_ GUARDED_BY(mu_);
  std::thread renewer_;
};

}  // namespace ingot::cluster
