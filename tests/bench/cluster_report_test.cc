// The cluster report: Prometheus text and status JSON parsing, histogram_quantile's estimate,
// deltas between scrapes, rendering, and ScrapeCluster against canned nodes served on ephemeral
// loopback ports.

#include "bench/ingot_bench/cluster_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/ingot_bench/asio.h"

namespace ingot::bench {
namespace {

using asio::ip::tcp;

// --- canned answers, in the format ingotd renders (bucket bounds of ExponentialBuckets) ---

std::string Member(const std::string& id, const std::string& http, bool live, int lease_age_ms) {
  return R"({"id":")" + id + R"(","http":")" + http + R"(","live":)" + (live ? "true" : "false") +
         R"(,"owns_partitions":true,"lease_age_ms":)" + std::to_string(lease_age_ms) + "}";
}

// A partition whose log holds messages 1..last.
std::string Partition(int partition, const std::string& owner_1, const std::string& owner_2,
                      bool consuming, int applied, int last) {
  return R"({"partition":)" + std::to_string(partition) + R"(,"owners":[")" + owner_1 + R"(",")" +
         owner_2 + R"("],"consuming":)" + (consuming ? "true" : "false") + R"(,"applied":)" +
         std::to_string(applied) + R"(,"log_first":1,"log_last":)" + std::to_string(last) +
         R"(,"lag":)" + std::to_string(last - applied) + "}";
}

std::string StatusJson(const std::string& node, const std::vector<std::string>& members,
                       const std::vector<std::string>& partitions) {
  auto join = [](const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : ",") + part;
    return out;
  };
  return R"({"node":")" + node + R"(","cluster":"prod","members":[)" + join(members) +
         R"(],"partitions":[)" + join(partitions) + "]}";
}

std::string StatusOfA(const std::string& a, const std::string& b, const std::string& c) {
  return StatusJson("node-a",
                    {Member("node-a", a, true, 180), Member("node-b", b, true, 420),
                     Member("node-c", c, false, 12500)},
                    {Partition(0, "node-a", "node-b", true, 48211, 48211),
                     Partition(1, "node-b", "node-c", false, 0, 47980),
                     Partition(2, "node-c", "node-a", true, 48102, 48190),
                     Partition(3, "node-a", "node-b", true, 47655, 47655)});
}

// node-b could not read the bounds of partition 2's log (which it does not own).
std::string StatusOfB(const std::string& a, const std::string& b, const std::string& c) {
  return StatusJson("node-b",
                    {Member("node-a", a, true, 190), Member("node-b", b, true, 400),
                     Member("node-c", c, false, 12510)},
                    {Partition(0, "node-a", "node-b", true, 48150, 48211),
                     Partition(1, "node-b", "node-c", true, 47980, 47980),
                     R"({"partition":2,"owners":["node-c","node-a"],"consuming":false,"applied":0,)"
                     R"("log_error":"IO error: timeout"})",
                     Partition(3, "node-a", "node-b", true, 47655, 47655)});
}

const std::vector<std::string> kPublishBounds = {
    "0.0001", "0.0002", "0.0004", "0.0008", "0.0016", "0.0032", "0.0064", "0.0128",
    "0.0256", "0.0512", "0.1024", "0.2048", "0.4096", "0.8192", "1.6384", "3.2768"};
const std::vector<std::string> kFanoutBounds = {
    "0.0005", "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064",
    "0.128",  "0.256", "0.512", "1.024", "2.048", "4.096", "8.192", "16.384"};

// Cumulative counts up to the bounds, then the +Inf bucket.
std::string Histogram(const std::string& name, const std::vector<std::string>& bounds,
                      const std::vector<int>& cumulative, const std::string& sum) {
  std::string out = "# HELP " + name + " Seconds.\n# TYPE " + name + " histogram\n";
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const int count = cumulative[std::min(i, cumulative.size() - 1)];
    out += name + "_bucket{le=\"" + (i < bounds.size() ? bounds[i] : "+Inf") + "\"} " +
           std::to_string(count) + "\n";
  }
  out += name + "_sum " + sum + "\n" + name + "_count " + std::to_string(cumulative.back()) + "\n";
  return out;
}

struct NodeNumbers {
  std::vector<int> publish;  // cumulative; the last value repeats up to +Inf
  std::string publish_sum;
  int messages;
  int64_t bytes;
  int failures;
  std::vector<int> fanout;
  std::string fanout_sum;
  int refused, timeout, error;
  int applied;
  std::vector<int> lag;  // per partition 0..3
  int consumed;
};

std::string Metrics(const NodeNumbers& n) {
  std::string out =
      "# HELP ingot_http_requests_total Requests.\n# TYPE ingot_http_requests_total counter\n"
      "ingot_http_requests_total{path=\"/write\",code=\"204\"} 1e+06\n\n";
  out += Histogram("ingot_cluster_publish_seconds", kPublishBounds, n.publish, n.publish_sum);
  out += "# TYPE ingot_cluster_published_messages_total counter\n";
  out += "ingot_cluster_published_messages_total " + std::to_string(n.messages) + "\n";
  out += "ingot_cluster_published_bytes_total " + std::to_string(n.bytes) + "\n";
  out += "ingot_cluster_publish_failures_total " + std::to_string(n.failures) + "\n";
  out += Histogram("ingot_cluster_query_fanout_seconds", kFanoutBounds, n.fanout, n.fanout_sum);
  out += "ingot_cluster_query_remote_errors_total{reason=\"refused\"} " +
         std::to_string(n.refused) + "\n" +
         "ingot_cluster_query_remote_errors_total{reason=\"timeout\"} " +
         std::to_string(n.timeout) + "\n" +
         "ingot_cluster_query_remote_errors_total{reason=\"error\"} " + std::to_string(n.error) +
         "\n" + "ingot_cluster_applied_messages_total " + std::to_string(n.applied) + "\n";
  for (size_t p = 0; p < n.lag.size(); ++p) {
    out += "ingot_cluster_consumer_lag_messages{partition=\"" + std::to_string(p) + "\"} " +
           std::to_string(n.lag[p]) + "\n";
  }
  out += "ingot_cluster_partitions_consumed " + std::to_string(n.consumed) + "\n" +
         "ingot_cluster_nodes_live 2\n";
  return out;
}

const NodeNumbers kNodeA = {{0, 0, 12, 210, 880, 1310, 1460, 1502, 1515, 1519, 1520},
                            "3.1",
                            9120,
                            734003200,
                            0,
                            {0, 3, 40, 130, 200, 228, 236, 239, 240},
                            "1.42",
                            0,
                            2,
                            0,
                            24410,
                            {0, 0, 88, 0},
                            3};
const NodeNumbers kNodeB = {{0, 0, 5, 150, 700, 1120, 1200, 1230, 1238, 1240},
                            "2.4",
                            7430,
                            598736896,
                            1,
                            {0, 1, 10, 30, 48, 55, 60},
                            "0.31",
                            0,
                            0,
                            0,
                            47630,
                            {61, 0, 0, 0},
                            3};

// --- Prometheus text ---

TEST(ClusterMetricsTextTest, ParsesNamesLabelsValuesAndSkipsComments) {
  const std::string text =
      "# HELP x_total A counter.\n"
      "# TYPE x_total counter\n"
      "\n"
      "x_total 12\r\n"
      "  y{a=\"1\", b=\"q\\\"uo\\\\te\\n\",} 2.5e-3 1700000000000\n"
      "z{le=\"+Inf\"} +Inf\n"
      "n NaN\n"
      "m{} -Inf\n";
  std::vector<PromSample> samples;
  ASSERT_TRUE(ParsePrometheusText(text, &samples).ok());
  ASSERT_EQ(samples.size(), 5u);
  EXPECT_EQ(samples[0].name, "x_total");
  EXPECT_EQ(samples[0].value, 12);
  EXPECT_TRUE(samples[0].labels.empty());
  EXPECT_EQ(samples[1].name, "y");
  EXPECT_DOUBLE_EQ(samples[1].value, 0.0025);
  ASSERT_EQ(samples[1].labels.size(), 2u);
  EXPECT_EQ(*samples[1].Label("a"), "1");
  EXPECT_EQ(*samples[1].Label("b"), "q\"uo\\te\n");
  EXPECT_EQ(samples[1].Label("c"), nullptr);
  EXPECT_EQ(*samples[2].Label("le"), "+Inf");
  EXPECT_TRUE(std::isinf(samples[2].value) && samples[2].value > 0);
  EXPECT_TRUE(std::isnan(samples[3].value));
  EXPECT_TRUE(std::isinf(samples[4].value) && samples[4].value < 0);
}

TEST(ClusterMetricsTextTest, MalformedLineNamesTheLine) {
  std::vector<PromSample> samples;
  const Status status = ParsePrometheusText("ok 1\nbad{a=\"1\" 2\n", &samples);
  EXPECT_TRUE(status.IsCorruption());
  EXPECT_NE(status.ToString().find("line 2"), std::string::npos) << status.ToString();
  EXPECT_TRUE(ParsePrometheusText("novalue\n", &samples).IsCorruption());
  EXPECT_TRUE(ParsePrometheusText("v abc\n", &samples).IsCorruption());
}

TEST(ClusterMetricsTextTest, HistogramSumsLabelSetsByBound) {
  const std::string text =
      "h_bucket{shard=\"0\",le=\"0.1\"} 1\n"
      "h_bucket{shard=\"1\",le=\"0.1\"} 2\n"
      "h_bucket{shard=\"0\",le=\"+Inf\"} 4\n"
      "h_bucket{le=\"+Inf\",shard=\"1\"} 6\n"
      "h_sum{shard=\"0\"} 0.5\n"
      "h_sum{shard=\"1\"} 1.5\n"
      "h_count{shard=\"0\"} 4\n"
      "h_count{shard=\"1\"} 6\n"
      "hh_bucket{le=\"0.1\"} 100\n";
  std::vector<PromSample> samples;
  ASSERT_TRUE(ParsePrometheusText(text, &samples).ok());
  const PromHistogram h = HistogramOf(samples, "h");
  ASSERT_EQ(h.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(h.buckets[0].first, 0.1);
  EXPECT_EQ(h.buckets[0].second, 3);
  EXPECT_TRUE(std::isinf(h.buckets[1].first));
  EXPECT_EQ(h.buckets[1].second, 10);
  EXPECT_EQ(h.sum, 2);
  EXPECT_EQ(h.count, 10);
  EXPECT_FALSE(HistogramOf(samples, "missing").present());
}

TEST(ClusterMetricsTextTest, ClusterMetricsOfANode) {
  ClusterMetrics m;
  ASSERT_TRUE(ParseClusterMetrics(Metrics(kNodeA), &m).ok());
  EXPECT_TRUE(m.found);
  ASSERT_EQ(m.publish_seconds.buckets.size(), 17u);
  EXPECT_DOUBLE_EQ(m.publish_seconds.buckets[0].first, 0.0001);
  EXPECT_DOUBLE_EQ(m.publish_seconds.buckets[15].first, 3.2768);
  EXPECT_EQ(m.publish_seconds.buckets[16].second, 1520);
  EXPECT_EQ(m.publish_seconds.count, 1520);
  EXPECT_DOUBLE_EQ(m.publish_seconds.sum, 3.1);
  EXPECT_EQ(m.published_messages, 9120);
  EXPECT_EQ(m.published_bytes, 734003200);
  EXPECT_EQ(m.publish_failures, 0);
  EXPECT_EQ(m.fanout_seconds.count, 240);
  EXPECT_EQ(m.remote_errors,
            (std::map<std::string, double>{{"error", 0}, {"refused", 0}, {"timeout", 2}}));
  EXPECT_EQ(m.total_remote_errors(), 2);
  EXPECT_EQ(m.applied_messages, 24410);
  EXPECT_EQ(m.consumer_lag, (std::map<uint32_t, double>{{0, 0}, {1, 0}, {2, 88}, {3, 0}}));
  EXPECT_EQ(m.total_lag(), 88);
  EXPECT_EQ(m.partitions_consumed, 3);
  EXPECT_EQ(m.nodes_live, 2);

  ClusterMetrics standalone;
  ASSERT_TRUE(ParseClusterMetrics("ingot_http_requests_total 3\n", &standalone).ok());
  EXPECT_FALSE(standalone.found);
  EXPECT_FALSE(standalone.publish_seconds.present());
}

// --- quantiles ---

PromHistogram Buckets(std::vector<std::pair<double, double>> buckets) {
  PromHistogram h;
  h.buckets = std::move(buckets);
  h.count = h.buckets.back().second;
  return h;
}

TEST(HistogramQuantileTest, InterpolatesWithinTheBucketLikePrometheus) {
  const double inf = INFINITY;
  const PromHistogram h = Buckets({{0.001, 10}, {0.002, 60}, {0.004, 90}, {0.008, 99}, {inf, 100}});
  // rank 5 in [0, 0.001] holding 10: 0.001 * 5/10.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.05, h), 0.0005);
  // rank 50: 40 of the 50 in (0.001, 0.002].
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, h), 0.0018);
  // rank 90: the top of (0.002, 0.004].
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.9, h), 0.004);
  // rank 99: all 9 of (0.004, 0.008].
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.99, h), 0.008);
  EXPECT_FALSE(QuantileAboveLastBound(0.99, h));
  // rank 99.5 is in the +Inf bucket: the highest finite bound.
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.995, h), 0.008);
  EXPECT_TRUE(QuantileAboveLastBound(0.995, h));
  EXPECT_DOUBLE_EQ(HistogramQuantile(0, h), 0);
  EXPECT_TRUE(std::isinf(HistogramQuantile(1.5, h)));
  EXPECT_TRUE(std::isinf(HistogramQuantile(-0.5, h)));
}

TEST(HistogramQuantileTest, NodeHistograms) {
  ClusterMetrics m;
  ASSERT_TRUE(ParseClusterMetrics(Metrics(kNodeA), &m).ok());
  // rank 760: 550 of the 670 in (0.0008, 0.0016].
  EXPECT_NEAR(HistogramQuantile(0.5, m.publish_seconds), 0.0008 + 0.0008 * 550 / 670, 1e-12);
  // rank 1504.8: 2.8 of the 13 in (0.0128, 0.0256].
  EXPECT_NEAR(HistogramQuantile(0.99, m.publish_seconds), 0.0128 + 0.0128 * 2.8 / 13, 1e-12);
  // rank 120: 80 of the 90 in (0.002, 0.004].
  EXPECT_NEAR(HistogramQuantile(0.5, m.fanout_seconds), 0.002 + 0.002 * 80 / 90, 1e-12);
  // rank 237.6: 1.6 of the 3 in (0.032, 0.064].
  EXPECT_NEAR(HistogramQuantile(0.99, m.fanout_seconds), 0.032 + 0.032 * 1.6 / 3, 1e-12);
}

TEST(HistogramQuantileTest, UndefinedWithoutObservationsOrInfBucket) {
  const double inf = INFINITY;
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, Buckets({{0.1, 0}, {inf, 0}}))));
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, Buckets({{0.1, 1}, {0.2, 2}}))));
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, Buckets({{inf, 5}}))));
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, PromHistogram())));
  EXPECT_FALSE(QuantileAboveLastBound(0.5, PromHistogram()));
}

TEST(HistogramQuantileTest, NonMonotonicCountsAreEvenedOut) {
  const double inf = INFINITY;
  // The 0.2 bucket read lower than the 0.1 one: treated as 4, so rank 5 falls in (0.2, +Inf].
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, Buckets({{0.1, 4}, {0.2, 3}, {0.4, 8}, {inf, 10}})),
                   0.2 + 0.2 * 1 / 4);
}

// --- deltas ---

TEST(ClusterDeltaTest, HistogramAndCountersOfTheInterval) {
  NodeNumbers later = kNodeA;
  later.publish = {0, 0, 12, 210, 880, 1310, 1460, 1502, 1515, 1519, 1520};
  // 100 more requests: 20 in (0.0008, 0.0016], 80 in (0.0016, 0.0032].
  for (size_t i = 4; i < later.publish.size(); ++i) later.publish[i] += i == 4 ? 20 : 100;
  later.publish_sum = "3.35";
  later.messages += 600;
  later.bytes += 48'000'000;
  later.failures = 3;
  later.timeout = 5;
  later.applied += 1000;
  later.lag = {7, 0, 0, 0};
  ClusterMetrics before, now;
  ASSERT_TRUE(ParseClusterMetrics(Metrics(kNodeA), &before).ok());
  ASSERT_TRUE(ParseClusterMetrics(Metrics(later), &now).ok());
  const ClusterMetrics d = MetricsDelta(now, before);
  EXPECT_EQ(d.publish_seconds.count, 100);
  EXPECT_NEAR(d.publish_seconds.sum, 0.25, 1e-9);
  EXPECT_EQ(d.publish_seconds.buckets[3].second, 0);
  EXPECT_EQ(d.publish_seconds.buckets[4].second, 20);
  EXPECT_EQ(d.publish_seconds.buckets[5].second, 100);
  EXPECT_EQ(d.publish_seconds.buckets[16].second, 100);
  // Of the interval alone: rank 50 is 30 of the 80 in (0.0016, 0.0032].
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, d.publish_seconds), 0.0016 + 0.0016 * 30 / 80);
  // Since start it would be in (0.0008, 0.0016].
  EXPECT_LT(HistogramQuantile(0.5, now.publish_seconds), 0.0016);
  EXPECT_EQ(d.published_messages, 600);
  EXPECT_EQ(d.published_bytes, 48'000'000);
  EXPECT_EQ(d.publish_failures, 3);
  EXPECT_EQ(d.remote_errors.at("timeout"), 3);
  EXPECT_EQ(d.applied_messages, 1000);
  EXPECT_EQ(d.fanout_seconds.count, 0);
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, d.fanout_seconds)));
  // Gauges are not subtracted.
  EXPECT_EQ(d.total_lag(), 7);
  EXPECT_EQ(d.partitions_consumed, 3);
}

TEST(ClusterDeltaTest, ARestartedNodeCountsFromZero) {
  const double inf = INFINITY;
  const PromHistogram before = Buckets({{0.1, 50}, {inf, 60}});
  const PromHistogram after_restart = Buckets({{0.1, 3}, {inf, 4}});
  const PromHistogram d = HistogramDelta(after_restart, before);
  EXPECT_EQ(d.count, 4);
  EXPECT_EQ(d.buckets[0].second, 3);
  // A histogram that first appears in the interval counts whole.
  EXPECT_EQ(HistogramDelta(after_restart, PromHistogram()).count, 4);

  ClusterMetrics m_before, m_now;
  m_before.published_messages = 1000;
  m_now.published_messages = 40;
  EXPECT_EQ(MetricsDelta(m_now, m_before).published_messages, 40);
}

// --- status JSON ---

TEST(ClusterStatusTest, ParsesMembersAndPartitions) {
  ClusterStatus status;
  ASSERT_TRUE(
      ParseClusterStatus(StatusOfB("10.0.0.1:8086", "10.0.0.2:8086", "10.0.0.3:8086"), &status)
          .ok());
  EXPECT_EQ(status.node, "node-b");
  EXPECT_EQ(status.cluster, "prod");
  ASSERT_EQ(status.members.size(), 3u);
  EXPECT_EQ(status.members[2].id, "node-c");
  EXPECT_EQ(status.members[2].http, "10.0.0.3:8086");
  EXPECT_FALSE(status.members[2].live);
  EXPECT_TRUE(status.members[2].owns_partitions);
  EXPECT_EQ(status.members[2].lease_age_ms, 12510);
  ASSERT_EQ(status.partitions.size(), 4u);
  const PartitionStatus& p0 = status.partitions[0];
  EXPECT_EQ(p0.owners, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_TRUE(p0.consuming);
  EXPECT_EQ(p0.applied, 48150u);
  EXPECT_TRUE(p0.has_bounds);
  EXPECT_EQ(p0.log_first, 1u);
  EXPECT_EQ(p0.log_last, 48211u);
  EXPECT_EQ(p0.lag, 61u);
  const PartitionStatus* p2 = status.Partition(2);
  ASSERT_NE(p2, nullptr);
  EXPECT_FALSE(p2->has_bounds);
  EXPECT_EQ(p2->log_error, "IO error: timeout");
  EXPECT_EQ(status.Partition(9), nullptr);
  EXPECT_EQ(status.partitions_consumed(), 3u);
}

TEST(ClusterStatusTest, RejectsWhatIsNotAStatus) {
  ClusterStatus status;
  EXPECT_TRUE(ParseClusterStatus("<html>", &status).IsCorruption());
  EXPECT_TRUE(ParseClusterStatus("[]", &status).IsCorruption());
  EXPECT_TRUE(ParseClusterStatus(R"({"node":"a"})", &status).IsCorruption());
  EXPECT_TRUE(ParseClusterStatus(R"({"node":"a","members":[{"id":3}],"partitions":[]})", &status)
                  .IsCorruption());
}

// --- rendering ---

NodeReport OkNode(const std::string& url, const std::string& status, const NodeNumbers& numbers) {
  NodeReport node;
  node.url = url;
  node.state = NodeState::kOk;
  EXPECT_TRUE(ParseClusterStatus(status, &node.status).ok());
  node.member_id = node.status.node;
  node.has_metrics = ParseClusterMetrics(Metrics(numbers), &node.metrics).ok();
  return node;
}

// node-a and node-b answer, node-c (listed, lease expired) does not.
ClusterReport ThreeNodes() {
  const std::string a = "10.0.0.1:8086", b = "10.0.0.2:8086", c = "10.0.0.3:8086";
  ClusterReport report;
  report.nodes.push_back(OkNode("http://" + a, StatusOfA(a, b, c), kNodeA));
  report.nodes.push_back(OkNode("http://" + b, StatusOfB(a, b, c), kNodeB));
  NodeReport unreachable;
  unreachable.url = "http://" + c;
  unreachable.member_id = "node-c";
  unreachable.state = NodeState::kUnreachable;
  unreachable.error = "connect: Connection refused";
  report.nodes.push_back(unreachable);
  return report;
}

TEST(ClusterReportFormatTest, UnreachableNodeIsReportedEverywhereItAppears) {
  const std::string text = FormatClusterReport(ThreeNodes());
  // Members: node-c consumes nothing we know of.
  EXPECT_NE(text.find("cluster prod: 3 members, 4 partitions; seen by node-a "
                      "(http://10.0.0.1:8086)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  node-a  10.0.0.1:8086  yes   yes        0.2 s                    3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  node-c  10.0.0.3:8086  no    yes       12.5 s          unreachable\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("          1          1     47980  node-b  yes          47980    0\n"
                      "                                  node-c  unreachable\n"),
            std::string::npos)
      << text;
  // Partitions: each owner's own applied position and lag; node-c's rows say it did not answer.
  EXPECT_NE(text.find("          0          1     48211  node-a  yes          48211    0\n"
                      "                                  node-b  yes          48150   61\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("                                  node-c  unreachable\n"), std::string::npos)
      << text;
  // Nodes: the publish and fan-out quantiles, then the one that did not answer.
  EXPECT_NE(text.find("  node-a      1.46 ms  15.56 ms      1520      9120  734.0         0"
                      "      3.78 ms  49.07 ms        240              2    24410   88\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  node-c  unreachable: connect: Connection refused "
                      "(http://10.0.0.3:8086)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  node-a remote errors: timeout 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("numbers since each node started"), std::string::npos) << text;
}

TEST(ClusterReportFormatTest, AnOwnerWithoutTheLogsBounds) {
  ClusterReport report = ThreeNodes();
  PartitionStatus& p1 = report.nodes[1].status.partitions[1];
  p1.has_bounds = false;
  p1.log_error = "IO error: timeout";
  const std::string text = FormatClusterReport(report);
  EXPECT_NE(text.find("          1          1     47980  node-b  yes          47980    -\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  node-b: cannot read the log's bounds: IO error: timeout\n"),
            std::string::npos)
      << text;
  const nlohmann::json json = nlohmann::json::parse(ClusterReportJson(report));
  EXPECT_TRUE(json["partitions"][1]["owners"][0]["lag"].is_null());
  EXPECT_EQ(json["partitions"][1]["owners"][0]["applied"], 47980);
}

TEST(ClusterReportFormatTest, NothingAnswered) {
  ClusterReport report;
  NodeReport down;
  down.url = "http://127.0.0.1:9";
  down.state = NodeState::kUnreachable;
  down.error = "timeout: read: The socket was timed out";
  report.nodes.push_back(down);
  NodeReport standalone;
  standalone.url = "http://127.0.0.1:8086";
  standalone.state = NodeState::kNotClustered;
  report.nodes.push_back(standalone);
  EXPECT_FALSE(report.AllOk());
  const std::string text = FormatClusterReport(report);
  EXPECT_EQ(text,
            "no node answered in cluster mode\n"
            "numbers since each node started\n"
            "\n"
            "nodes (publish: a write's wait for the log; fan-out: one selector's query; lag: "
            "messages not applied)\n"
            "  http://127.0.0.1:9     unreachable: timeout: read: The socket was timed out\n"
            "  http://127.0.0.1:8086  not in cluster mode: GET /internal/cluster/status answered "
            "404: ingotd runs without [cluster]\n");
  const nlohmann::json json = nlohmann::json::parse(ClusterReportJson(report));
  EXPECT_TRUE(json["cluster"].is_null());
  EXPECT_EQ(json["nodes"][0]["state"], "unreachable");
  EXPECT_EQ(json["nodes"][0]["error"], "timeout: read: The socket was timed out");
  EXPECT_EQ(json["nodes"][1]["state"], "not_clustered");
}

TEST(ClusterReportFormatTest, WatchShowsRatesOfTheInterval) {
  ClusterReport before = ThreeNodes();
  before.unix_time_s = 1'714'564'800;
  before.nodes[0].scraped_at_s = 100;
  before.nodes[1].scraped_at_s = 100;
  NodeNumbers later = kNodeA;
  later.messages += 600;
  later.bytes += 50'000'000;
  for (size_t i = 4; i < later.publish.size(); ++i) later.publish[i] += i == 4 ? 20 : 100;
  ClusterReport now = ThreeNodes();
  now.unix_time_s = before.unix_time_s + 2;
  ASSERT_TRUE(ParseClusterMetrics(Metrics(later), &now.nodes[0].metrics).ok());
  now.nodes[0].scraped_at_s = 102;
  now.nodes[1].scraped_at_s = 102;
  ApplyDeltas(before, &now);
  EXPECT_DOUBLE_EQ(now.interval_s, 2);
  EXPECT_DOUBLE_EQ(now.nodes[0].interval_s, 2);
  const std::string text = FormatClusterReport(now);
  EXPECT_NE(text.find("2024-05-01T12:00:02Z, the last 2.0 s"), std::string::npos) << text;
  // 100 requests, 600 messages and 50 MB in 2 s; of the interval's observations, p50 is 30 of the
  // 80 in (1.6, 3.2] ms, p99 79 of them; no fan-out and no remote errors in it.
  EXPECT_NE(text.find("  node-a      2.20 ms  3.18 ms     50    300  25.00         0            -"
                      "    -      0              0          0   88\n"),
            std::string::npos)
      << text;
  const nlohmann::json json = nlohmann::json::parse(ClusterReportJson(now));
  EXPECT_EQ(json["interval_s"], 2.0);
  EXPECT_EQ(json["nodes"][0]["publish"]["requests"], 100);
  EXPECT_EQ(json["nodes"][0]["publish"]["messages"], 600);
  EXPECT_DOUBLE_EQ(json["nodes"][0]["publish"]["p50_s"].get<double>(), 0.0016 + 0.0016 * 30 / 80);
  EXPECT_TRUE(json["nodes"][0]["fanout"]["p50_s"].is_null());
}

TEST(ClusterReportJsonTest, SameNumbersAsTheText) {
  const nlohmann::json json = nlohmann::json::parse(ClusterReportJson(ThreeNodes()));
  EXPECT_EQ(json["cluster"], "prod");
  EXPECT_EQ(json["seen_by"], "node-a");
  EXPECT_TRUE(json["interval_s"].is_null());
  ASSERT_EQ(json["members"].size(), 3u);
  EXPECT_EQ(json["members"][0]["partitions_consumed"], 3);
  EXPECT_TRUE(json["members"][2]["partitions_consumed"].is_null());
  const nlohmann::json& p0 = json["partitions"][0];
  EXPECT_EQ(p0["log_last"], 48211);
  EXPECT_EQ(p0["owners"][1]["id"], "node-b");
  EXPECT_EQ(p0["owners"][1]["applied"], 48150);
  EXPECT_EQ(p0["owners"][1]["lag"], 61);
  EXPECT_EQ(json["partitions"][1]["owners"][1]["reported"], false);
  const nlohmann::json& a = json["nodes"][0];
  EXPECT_EQ(a["state"], "ok");
  EXPECT_EQ(a["publish"]["requests"], 1520);
  EXPECT_NEAR(a["publish"]["p99_s"].get<double>(), 0.0128 + 0.0128 * 2.8 / 13, 1e-12);
  EXPECT_EQ(a["publish"]["bytes"], 734003200);
  EXPECT_EQ(a["fanout"]["remote_errors"]["timeout"], 2);
  EXPECT_EQ(a["consumer_lag_messages"], 88);
  EXPECT_EQ(json["nodes"][2]["id"], "node-c");
  EXPECT_EQ(json["nodes"][2]["state"], "unreachable");
}

// --- ScrapeCluster against local servers ---

// Answers GET requests from a table of canned (status, body) by path.
class CannedServer {
 public:
  CannedServer() : acceptor_(ioc_) {
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(ioc_, Accept(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~CannedServer() {
    ioc_.stop();
    thread_.join();
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void Set(const std::string& path, unsigned status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_[path] = {status, std::move(body)};
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
      asio::co_spawn(ioc_, Serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> Serve(tcp::socket socket) {
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    for (;;) {
      http::request<http::string_body> request;
      co_await http::async_read(socket, buffer, request,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      http::response<http::string_body> response;
      response.version(11);
      response.keep_alive(true);
      {
        std::lock_guard<std::mutex> lock(mu_);
        const auto it = answers_.find(std::string(request.target()));
        response.result(it == answers_.end() ? 404 : it->second.first);
        if (it != answers_.end()) response.body() = it->second.second;
      }
      response.prepare_payload();
      co_await http::async_write(socket, response, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
    }
  }

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, std::pair<unsigned, std::string>> answers_;  // guarded by mu_
};

// A loopback port that nothing listens on.
std::string ClosedAddress() {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const uint16_t port = acceptor.local_endpoint().port();
  acceptor.close();
  return "127.0.0.1:" + std::to_string(port);
}

constexpr int64_t kTimeoutNs = 5'000'000'000;

// The first line of `text` that starts with `prefix`, or "".
std::string LineStarting(const std::string& text, const std::string& prefix) {
  const size_t begin = text.find("\n" + prefix);
  if (begin == std::string::npos) return "";
  return text.substr(begin + 1, text.find('\n', begin + 1) - begin - 1);
}

TEST(ScrapeClusterTest, FindsTheMembersOfOneNode) {
  CannedServer a, b;
  const std::string c = ClosedAddress();
  a.Set("/internal/cluster/status", 200, StatusOfA(a.address(), b.address(), c));
  a.Set("/metrics", 200, Metrics(kNodeA));
  b.Set("/internal/cluster/status", 200, StatusOfB(a.address(), b.address(), c));
  b.Set("/metrics", 200, Metrics(kNodeB));

  ClusterReport report;
  ASSERT_TRUE(ScrapeCluster({"http://" + b.address() + "/"}, kTimeoutNs, &report).ok());
  // In the member list's order, whichever node was asked first.
  ASSERT_EQ(report.nodes.size(), 3u);
  EXPECT_EQ(report.nodes[0].url, "http://" + a.address());
  EXPECT_EQ(report.nodes[0].state, NodeState::kOk);
  EXPECT_EQ(report.nodes[0].status.node, "node-a");
  EXPECT_TRUE(report.nodes[0].has_metrics);
  EXPECT_EQ(report.nodes[0].metrics.published_messages, 9120);
  EXPECT_EQ(report.nodes[1].url, "http://" + b.address());
  EXPECT_EQ(report.nodes[1].status.node, "node-b");
  EXPECT_EQ(report.nodes[1].metrics.publish_failures, 1);
  EXPECT_EQ(report.nodes[2].member_id, "node-c");
  EXPECT_EQ(report.nodes[2].state, NodeState::kUnreachable);
  EXPECT_NE(report.nodes[2].error.find("connect"), std::string::npos) << report.nodes[2].error;
  EXPECT_FALSE(report.AllOk());
  // The node asked is the one whose view is shown.
  EXPECT_EQ(report.View()->status.node, "node-b");
  EXPECT_TRUE(report.nodes[1].asked);
  const std::string text = FormatClusterReport(report);
  EXPECT_NE(text.find("  node-c  unreachable: connect: "), std::string::npos) << text;

  // The second scrape of a watch: node-a published 600 more messages meanwhile.
  NodeNumbers later = kNodeA;
  later.messages += 600;
  a.Set("/metrics", 200, Metrics(later));
  ClusterReport next;
  ASSERT_TRUE(ScrapeCluster({"http://" + b.address()}, kTimeoutNs, &next).ok());
  ClusterReport since_start = next;
  ApplyDeltas(report, &next);
  EXPECT_GT(next.nodes[0].interval_s, 0);
  EXPECT_EQ(next.nodes[0].metrics.published_messages, 600);
  EXPECT_EQ(next.nodes[1].metrics.published_messages, 0);
  EXPECT_EQ(since_start.nodes[0].metrics.published_messages, 9720);
}

TEST(ScrapeClusterTest, SeveralUrlsAreScrapedAsGiven) {
  CannedServer a, standalone;
  const std::string c = ClosedAddress();
  a.Set("/internal/cluster/status", 200, StatusOfA(a.address(), "127.0.0.1:1", c));
  a.Set("/metrics", 200, Metrics(kNodeA));
  standalone.Set("/metrics", 200, "ingot_http_requests_total 3\n");
  CannedServer broken;
  broken.Set("/internal/cluster/status", 200, "{\"node\":");
  CannedServer unauthorized;
  unauthorized.Set("/internal/cluster/status", 401, "unauthorized");

  ClusterReport report;
  ASSERT_TRUE(
      ScrapeCluster({"http://" + standalone.address(), "http://" + a.address(), "http://" + c,
                     "http://" + broken.address(), "http://" + unauthorized.address()},
                    kTimeoutNs, &report)
          .ok());
  ASSERT_EQ(report.nodes.size(), 5u);
  EXPECT_EQ(report.nodes[0].state, NodeState::kNotClustered);
  EXPECT_EQ(report.nodes[1].state, NodeState::kOk);
  EXPECT_EQ(report.nodes[2].state, NodeState::kUnreachable);
  EXPECT_EQ(report.nodes[3].state, NodeState::kError);
  EXPECT_EQ(report.nodes[4].state, NodeState::kError);
  EXPECT_NE(report.nodes[4].error.find("http_401"), std::string::npos) << report.nodes[4].error;
  // No discovery with several URLs: node-b (at port 1) is not asked.
  EXPECT_EQ(report.View(), &report.nodes[1]);
  const std::string text = FormatClusterReport(report);
  EXPECT_NE(text.find("  http://" + standalone.address() +
                      "  not in cluster mode: GET /internal/cluster/status answered 404"),
            std::string::npos)
      << text;
  const std::string member_b = LineStarting(text, "  node-b  127.0.0.1:1 ");
  EXPECT_TRUE(member_b.ends_with(" not scraped")) << text;
}

TEST(ScrapeClusterTest, RejectsUrlsThatAreNotHttp) {
  ClusterReport report;
  EXPECT_TRUE(ScrapeCluster({"tcp://127.0.0.1:8089"}, kTimeoutNs, &report).IsInvalidArgument());
  EXPECT_TRUE(ScrapeCluster({"127.0.0.1:8086"}, kTimeoutNs, &report).IsInvalidArgument());
  EXPECT_TRUE(ScrapeCluster({}, kTimeoutNs, &report).IsInvalidArgument());
}

}  // namespace
}  // namespace ingot::bench
