#include "cluster/membership.h"

#include <algorithm>

#include "cluster/partition.h"
#include "config/logging.h"

namespace ingot::cluster {
namespace {

constexpr std::string_view kNodePrefix = "node.";

std::int64_t MillisBetween(std::chrono::steady_clock::time_point from,
                           std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

}  // namespace

Membership::Membership(Coordination& kv, const ClusterOptions& options, std::string http_address)
    : kv_(kv),
      options_(options),
      key_(std::string(kNodePrefix) + options.node_id),
      value_(std::move(http_address)) {}

Membership::~Membership() { Stop(); }

Status Membership::Start() {
  std::uint64_t revision = 0;
  INGOT_RETURN_IF_ERROR(kv_.Put(key_, value_, &revision));
  INGOT_RETURN_IF_ERROR(kv_.Watch([this](const KvEntry& e) { OnEntry(e); }, &watch_));
  renewer_ = std::thread([this] { Renew(); });
  return Status::OK();
}

void Membership::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (renewer_.joinable()) renewer_.join();
  watch_.reset();
}

void Membership::OnEntry(const KvEntry& entry) {
  if (entry.key.compare(0, kNodePrefix.size(), kNodePrefix) != 0) return;
  const std::string id = entry.key.substr(kNodePrefix.size());
  MutexLock lock(mu_);
  if (entry.deleted) {
    nodes_.erase(id);
    return;
  }
  Node& node = nodes_[id];
  node.http = entry.value;
  node.changed = std::chrono::steady_clock::now();
  if (entry.key == key_) seen_self_ = true;
}

void Membership::Renew() {
  auto log = Logger("cluster");
  const auto period = std::chrono::milliseconds(options_.lease_renew_ms);
  int failures = 0;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (cv_.WaitFor(lock, period, [this] {
            mu_.AssertHeld();
            return stopping_;
          })) {
        return;
      }
    }
    std::uint64_t revision = 0;
    const Status st = kv_.Put(key_, value_, &revision);
    if (!st.ok()) {
      if (failures++ % 10 == 0) log->warn("renewing this node's lease: {}", st.ToString());
      continue;
    }
    failures = 0;
    // Nodes down past the grace leave the bucket, so that nodes started later never count them.
    std::vector<std::string> expired;
    {
      MutexLock lock(mu_);
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [id, node] : nodes_) {
        if (UnchangedLocked(node, now) >
            static_cast<std::int64_t>(options_.lease_ttl_ms) + options_.dead_node_grace_ms) {
          expired.push_back(id);
        }
      }
    }
    for (const std::string& id : expired) {
      log->info("node {} has been down for longer than cluster.dead_node_grace_ms; removing it",
                id);
      (void)kv_.Delete(std::string(kNodePrefix) + id);
    }
  }
}

bool Membership::StaleLocked(SteadyTime now) const {
  auto self = nodes_.find(options_.node_id);
  return self == nodes_.end() ||
         MillisBetween(self->second.changed, now) > static_cast<std::int64_t>(options_.lease_ttl_ms);
}

std::int64_t Membership::UnchangedLocked(const Node& node, SteadyTime now) const {
  // A view whose own renewals stopped arriving (the watch or this node's connection is down)
  // judges no one: the others' silence may be its own.
  return StaleLocked(now) ? 0 : MillisBetween(node.changed, now);
}

std::vector<std::string> Membership::CandidatesLocked(SteadyTime now) const {
  std::vector<std::string> out;
  for (const auto& [id, node] : nodes_) {
    const std::int64_t unchanged = UnchangedLocked(node, now);
    if (id == options_.node_id ||
        unchanged <= static_cast<std::int64_t>(options_.lease_ttl_ms) +
                         options_.dead_node_grace_ms) {
      out.push_back(id);
    }
  }
  if (std::find(out.begin(), out.end(), options_.node_id) == out.end()) {
    out.push_back(options_.node_id);
  }
  return out;
}

std::vector<MemberView> Membership::Members() const {
  MutexLock lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  const std::vector<std::string> candidates = CandidatesLocked(now);
  std::vector<MemberView> out;
  for (const auto& [id, node] : nodes_) {
    MemberView v;
    v.id = id;
    v.http = node.http;
    v.unchanged_ms = UnchangedLocked(node, now);
    v.live = id == options_.node_id ||
             v.unchanged_ms <= static_cast<std::int64_t>(options_.lease_ttl_ms);
    v.candidate = std::find(candidates.begin(), candidates.end(), id) != candidates.end();
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<PartitionId> Membership::Owned() const {
  std::vector<std::string> candidates;
  {
    MutexLock lock(mu_);
    candidates = CandidatesLocked(std::chrono::steady_clock::now());
  }
  std::vector<PartitionId> owned;
  for (PartitionId p = 0; p < options_.partitions; ++p) {
    const auto owners = OwnersOf(p, candidates, options_.replication);
    if (std::find(owners.begin(), owners.end(), options_.node_id) != owners.end()) {
      owned.push_back(p);
    }
  }
  return owned;
}

std::vector<std::string> Membership::OwnersOfPartition(PartitionId p) const {
  MutexLock lock(mu_);
  return OwnersOf(p, CandidatesLocked(std::chrono::steady_clock::now()), options_.replication);
}

std::vector<std::string> Membership::LivePeers() const {
  std::vector<std::string> out;
  for (const MemberView& m : Members()) {
    if (m.live && m.id != options_.node_id) out.push_back(m.http);
  }
  return out;
}

bool Membership::settled() const {
  MutexLock lock(mu_);
  return seen_self_;
}

}  // namespace ingot::cluster
