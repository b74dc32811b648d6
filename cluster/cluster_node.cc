#include "cluster/cluster_node.h"

#include <chrono>

#include "config/json_string.h"
#include "config/logging.h"
#include "config/metrics.h"

namespace ingot::cluster {
namespace {

// How often the owned partitions are recomputed from the membership view.
constexpr auto kControlPeriod = std::chrono::milliseconds(200);
// How often the positions are written (see Positions: the file trails by one period).
constexpr int kPersistEveryPeriods = 5;

}  // namespace

ClusterNode::ClusterNode(const ClusterOptions& options, Log& log, Coordination& kv,
                         const Clock& clock)
    : options_(options),
      log_(log),
      kv_(kv),
      routing_(std::make_unique<LineRouting>(log, options, clock)) {}

Status ClusterNode::Open(const Options& options, Log& log, Coordination& kv, Storage& storage,
                         ingest::ShardSet& shards, const Clock& clock,
                         std::unique_ptr<ClusterNode>* out) {
  LogLayout layout;
  layout.cluster = options.cluster.name;
  layout.partitions = options.cluster.partitions;
  layout.replicas = static_cast<int>(options.cluster.stream_replicas);
  layout.max_age_ns = options.cluster.stream_max_age_s * 1'000'000'000;
  INGOT_RETURN_IF_ERROR(log.EnsureLayout(layout));
  std::unique_ptr<ClusterNode> node(new ClusterNode(options.cluster, log, kv, clock));
  INGOT_RETURN_IF_ERROR(Positions::Open(options.storage.data_dir, &node->positions_));
  node->remote_write_ =
      std::make_unique<ingest::RemoteWriteHandler>(shards, storage.index(), options.ingest);
  node->applier_ = std::make_unique<Applier>(log, *node->positions_, shards, storage.index(),
                                             clock, options.ingest, *node->remote_write_);
  ClusterNode* self = node.get();
  node->fanout_ = std::make_unique<ClusterFanout>(
      storage,
      [self] {
        return self->membership_ != nullptr ? self->membership_->LivePeers()
                                            : std::vector<std::string>{};
      },
      options.cluster.peer_timeout_ms, options.auth, options.query.tls.enabled());
  auto& registry = MetricsRegistry::Default();
  for (PartitionId p = 0; p < options.cluster.partitions; ++p) {
    registry.AddCallbackGauge(
        "ingot_cluster_consumer_lag_messages",
        "Messages of a partition this node owns that it has not applied yet (as of its last "
        "read of the log).",
        [self, p] {
          const PartitionProgress pp = self->applier_->ProgressOf(p);
          return pp.consuming ? static_cast<double>(pp.pending) : 0.0;
        },
        "partition=\"" + std::to_string(p) + "\"");
  }
  registry.AddCallbackGauge("ingot_cluster_partitions_consumed",
                            "Partitions of the log this node applies.", [self] {
                              double n = 0;
                              for (const auto& pp : self->applier_->Progress()) n += pp.consuming;
                              return n;
                            });
  registry.AddCallbackGauge("ingot_cluster_nodes_live", "Nodes whose lease this node sees alive.",
                            [self] {
                              if (self->membership_ == nullptr) return 0.0;
                              double n = 0;
                              for (const auto& m : self->membership_->Members()) n += m.live;
                              return n;
                            });
  *out = std::move(node);
  return Status::OK();
}

ClusterNode::~ClusterNode() { Stop(); }

Status ClusterNode::Start(const std::string& http_address) {
  membership_ = std::make_unique<Membership>(kv_, options_, http_address);
  INGOT_RETURN_IF_ERROR(membership_->Start());
  control_ = std::thread([this] { Control(); });
  Logger("cluster")->info("node {} of cluster {} started: {} partitions, replication {}",
                          options_.node_id, options_.name, options_.partitions,
                          options_.replication);
  return Status::OK();
}

void ClusterNode::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (control_.joinable()) control_.join();
  if (applier_ != nullptr) applier_->Stop();
  if (membership_ != nullptr) membership_->Stop();
}

Status ClusterNode::PersistPositions() { return positions_->PersistCurrent(); }

void ClusterNode::Control() {
  auto log = Logger("cluster");
  std::vector<PartitionId> owned;
  for (int period = 1;; ++period) {
    if (membership_->settled()) {
      std::vector<PartitionId> now = membership_->Owned();
      if (now != owned) {
        log->info("node {} now applies {} partitions", options_.node_id, now.size());
        applier_->SetOwned(now);
        owned = std::move(now);
      }
    }
    if (period % kPersistEveryPeriods == 0) {
      const Status st = positions_->Persist();
      if (!st.ok()) log->error("writing the cluster positions: {}", st.ToString());
    }
    MutexLock lock(mu_);
    if (cv_.WaitFor(lock, kControlPeriod, [this] {
          mu_.AssertHeld();
          return stopping_;
        })) {
      return;
    }
  }
}

std::string ClusterNode::StatusJson() const {
  std::string out = "{\"node\":";
  AppendJsonString(options_.node_id, &out);
  out += ",\"cluster\":";
  AppendJsonString(options_.name, &out);
  out += ",\"members\":[";
  bool first = true;
  if (membership_ != nullptr) {
    for (const MemberView& m : membership_->Members()) {
      if (!first) out.push_back(',');
      first = false;
      out += "{\"id\":";
      AppendJsonString(m.id, &out);
      out += ",\"http\":";
      AppendJsonString(m.http, &out);
      out += ",\"live\":";
      out += m.live ? "true" : "false";
      out += ",\"owns_partitions\":";
      out += m.candidate ? "true" : "false";
      out += ",\"lease_age_ms\":" + std::to_string(m.unchanged_ms) + "}";
    }
  }
  out += "],\"partitions\":[";
  for (PartitionId p = 0; p < options_.partitions; ++p) {
    if (p != 0) out.push_back(',');
    out += "{\"partition\":" + std::to_string(p) + ",\"owners\":[";
    if (membership_ != nullptr) {
      const auto owners = membership_->OwnersOfPartition(p);
      for (std::size_t i = 0; i < owners.size(); ++i) {
        if (i) out.push_back(',');
        AppendJsonString(owners[i], &out);
      }
    }
    out += "]";
    PartitionProgress mine = applier_->ProgressOf(p);
    if (!mine.consuming && mine.applied == 0) mine.applied = positions_->Get(p);
    LogSeq first_seq = 0, last_seq = 0;
    const Status st = log_.Bounds(p, &first_seq, &last_seq);
    out += ",\"consuming\":";
    out += mine.consuming ? "true" : "false";
    out += ",\"applied\":" + std::to_string(mine.applied);
    if (st.ok()) {
      out += ",\"log_first\":" + std::to_string(first_seq);
      out += ",\"log_last\":" + std::to_string(last_seq);
      out += ",\"lag\":" + std::to_string(last_seq > mine.applied ? last_seq - mine.applied : 0);
    } else {
      out += ",\"log_error\":";
      AppendJsonString(st.ToString(), &out);
    }
    out += "}";
  }
  out += "]}";
  return out;
}

}  // namespace ingot::cluster
