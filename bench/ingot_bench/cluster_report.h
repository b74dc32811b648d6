// The state of an Ingot cluster and the latencies of its write and read paths, as
// `ingot-bench cluster` reports them, from each node's
//   GET /internal/cluster/status  members, partition owners, what the node applied of the log;
//   GET /metrics                  the ingot_cluster_* histograms, counters and gauges.
//
// Latency quantiles are estimated from the histograms' buckets the way Prometheus'
// histogram_quantile does (linear interpolation within the bucket that holds the rank), so they
// agree with a dashboard over the same metrics. Between two scrapes the counters and histograms are
// subtracted, which gives the quantiles of the observations of that interval alone.
//
// Thread safety: plain values and pure functions; ScrapeCluster runs on the calling thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/status.h"

namespace ingot::bench {

// One sample line of the Prometheus text format.
struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped, in the order written
  double value = 0;

  // The value of label `key`, or nullptr.
  const std::string* Label(std::string_view key) const;
};

// Samples of every line but comments and blank lines; a timestamp after the value is ignored.
// A line that is not `name[{labels}] value` is Corruption, naming the line.
Status ParsePrometheusText(std::string_view text, std::vector<PromSample>* samples);

// A histogram's cumulative buckets, summed over its label sets other than `le` (as
// `sum by (le)` would).
struct PromHistogram {
  std::vector<std::pair<double, double>> buckets;  // (upper bound, count <= bound), bounds rising
  double sum = 0;
  double count = 0;

  bool present() const { return !buckets.empty(); }
};

// The histogram `name` (its name_bucket, name_sum and name_count samples); empty when absent.
PromHistogram HistogramOf(const std::vector<PromSample>& samples, std::string_view name);

// The q-quantile (q in [0, 1]) as Prometheus' histogram_quantile estimates it: NaN without
// observations or without a +Inf bucket; a rank in the +Inf bucket gives the highest finite bound.
double HistogramQuantile(double q, const PromHistogram& h);

// Whether the q-quantile's rank falls in the +Inf bucket, i.e. the true value is above the bound
// HistogramQuantile returns.
bool QuantileAboveLastBound(double q, const PromHistogram& h);

// The observations between two scrapes of one histogram. A count that went down (the node
// restarted) or changed buckets gives `now` whole, as Prometheus' rate() treats a counter reset.
PromHistogram HistogramDelta(const PromHistogram& now, const PromHistogram& before);

// The cluster metrics of one node's /metrics answer.
struct ClusterMetrics {
  bool found = false;  // the answer had any ingot_cluster_ sample (cluster mode)
  PromHistogram publish_seconds;
  double published_messages = 0;
  double published_bytes = 0;
  double publish_failures = 0;
  PromHistogram fanout_seconds;
  std::map<std::string, double> remote_errors;  // by reason
  double applied_messages = 0;
  // Gauges: a delta keeps the newer values.
  std::map<uint32_t, double> consumer_lag;  // by partition
  double partitions_consumed = 0;
  double nodes_live = 0;

  double total_lag() const;
  double total_remote_errors() const;
};

Status ParseClusterMetrics(std::string_view text, ClusterMetrics* metrics);

// Counters and histograms of `now` minus those of `before`; gauges as in `now`.
ClusterMetrics MetricsDelta(const ClusterMetrics& now, const ClusterMetrics& before);

struct MemberStatus {
  std::string id;
  std::string http;  // host:port that peers (and this tool) call
  bool live = false;
  bool owns_partitions = false;
  int64_t lease_age_ms = 0;
};

struct PartitionStatus {
  uint32_t partition = 0;
  std::vector<std::string> owners;
  bool consuming = false;  // whether the reporting node applies this partition
  uint64_t applied = 0;    // the reporting node's position
  // False when the node could not read the log's bounds; log_error says why.
  bool has_bounds = false;
  uint64_t log_first = 0;
  uint64_t log_last = 0;
  uint64_t lag = 0;  // log_last - applied
  std::string log_error;
};

// GET /internal/cluster/status of one node: its view of the members and its own progress.
struct ClusterStatus {
  std::string node;
  std::string cluster;
  std::vector<MemberStatus> members;
  std::vector<PartitionStatus> partitions;

  size_t partitions_consumed() const;
  const PartitionStatus* Partition(uint32_t partition) const;
};

Status ParseClusterStatus(std::string_view json, ClusterStatus* status);

enum class NodeState {
  kOk,
  kUnreachable,   // no connection, or no answer in time
  kNotClustered,  // 404 on the status route: ingotd without [cluster]
  kError,         // another status, or an answer that does not parse
};
std::string_view NodeStateName(NodeState state);

struct NodeReport {
  std::string url;        // http://host:port[/prefix], as scraped
  std::string member_id;  // the id a member list gave this address, when it was found there
  bool asked = false;     // named by the user, not found in a member list
  NodeState state = NodeState::kUnreachable;
  std::string error;  // why the state is not kOk
  ClusterStatus status;
  bool has_metrics = false;
  std::string metrics_error;  // why has_metrics is false, when the status answered
  ClusterMetrics metrics;     // since the node started, or over interval_s
  double interval_s = 0;      // > 0: metrics are the change over this many seconds
  double scraped_at_s = 0;    // steady clock, when the metrics arrived

  // The node's id, or failing that its member id, or its URL.
  std::string name() const;
};

struct ClusterReport {
  std::vector<NodeReport> nodes;
  double interval_s = 0;  // > 0: a --watch interval; 0: numbers since each node started
  double unix_time_s = 0;

  // The node whose member list and partition owners are shown: the first node the user named that
  // answered its status, or else the first that answered.
  const NodeReport* View() const;
  // The node that answered with `id` as its own, or nullptr.
  const NodeReport* Node(std::string_view id) const;
  // Whether every node answered in cluster mode.
  bool AllOk() const;
};

// Replaces the metrics of every node of *now that `before` also scraped (same URL) by their change
// since then, and sets the intervals.
void ApplyDeltas(const ClusterReport& before, ClusterReport* now);

std::string FormatClusterReport(const ClusterReport& report);
std::string ClusterReportJson(const ClusterReport& report);

// Scrapes every URL (http://host:port) at once; when exactly one is given and it answers in
// cluster mode, also every other member it lists, at the member's advertised HTTP address. Nodes
// come in the member list's order. A node that does not answer is reported, not an error; a URL
// that is not http://host:port is InvalidArgument.
Status ScrapeCluster(const std::vector<std::string>& urls, int64_t timeout_ns,
                     ClusterReport* report);

}  // namespace ingot::bench
