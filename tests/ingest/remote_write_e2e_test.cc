// Prometheus remote write end to end through the real ingotd: requests encoded with the generated
// protobuf classes and libsnappy over real HTTP, the node killed (SIGKILL) right after the last
// 204, and the data directory reopened to check that every acknowledged sample was durable (the
// WAL under storage.wal_sync = always), bit for bit, staleness markers included.
#include <signal.h>

#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "chunk/series_key.h"
#include "ingest/remote_write_format.h"
#include "tests/e2e/node_process.h"
#include "tests/ingest/ingest_test_util.h"
#include "tests/ingest/remote_write_test_util.h"

namespace ingot::ingest {
namespace {

using ingot::testing::HttpGet;
using ingot::testing::HttpPost;
using ingot::testing::NodeProcess;
using ingot::testing::TempDir;
using testutil::AddSeries;
using testutil::Encode;
using testutil::ExpectedData;
using testutil::LabelList;
using testutil::MetricValue;
using testutil::StoredExactly;

std::string KeyOf(const LabelList& sorted_labels) {
  std::string_view name;
  std::vector<TagView> tags;
  for (const auto& [k, v] : sorted_labels) {
    if (k == "__name__") {
      name = v;
    } else {
      tags.emplace_back(k, v);
    }
  }
  std::string key;
  BuildLabelSetKey(name, tags, &key);
  return key;
}

TEST(RemoteWriteE2E, SigkillAfterAcknowledgedRemoteWriteLosesNothing) {
  TempDir dir;
  const std::string data_dir = dir.path() + "/data";
  ExpectedData expected;
  std::mt19937_64 rng(99);
  std::uint64_t samples_sent = 0;
  {
    NodeProcess node(data_dir, {"--set", "storage.wal_sync=always", "--set", "ingest.shards=2"});
    ASSERT_TRUE(node.ok()) << node.log();
    for (int batch = 0; batch < 5; ++batch) {
      prometheus::WriteRequest request;
      for (int s = 0; s < 40; ++s) {
        std::string instance = "host-";
        instance.append(std::to_string(s));
        const LabelList labels = {{"__name__", s % 2 ? "node_load1" : "node_cpu_seconds_total"},
                                  {"instance", instance},
                                  {"job", "node"}};
        std::vector<std::pair<std::int64_t, double>> samples;
        for (int i = 0; i < 25; ++i) {
          const std::int64_t ts_ms = 1'700'000'000'000 + (batch * 25 + i) * 15'000 + s;
          double v = std::bit_cast<double>(rng());
          if (i == 24 && s % 5 == 0) v = std::bit_cast<double>(remote_write::kStaleNaNBits);
          samples.emplace_back(ts_ms, v);
          expected.Add(KeyOf(labels), ValueType::kFloat, ts_ms * 1'000'000, v);
        }
        samples_sent += samples.size();
        AddSeries(&request, labels, samples);
      }
      const auto r = HttpPost(
          node.http_port(), "/api/v1/write", Encode(request), "application/x-protobuf",
          {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}});
      ASSERT_EQ(r.status, 204) << r.body << r.error;
    }
    const auto metrics = HttpGet(node.http_port(), "/metrics");
    EXPECT_EQ(MetricValue(metrics.body, "ingot_remote_write_requests_total"), 5);
    EXPECT_EQ(MetricValue(metrics.body, "ingot_remote_write_samples_total"),
              static_cast<double>(samples_sent));
    EXPECT_EQ(MetricValue(metrics.body, "ingot_remote_write_series_total"), 200);
    EXPECT_EQ(
        MetricValue(metrics.body, "ingot_remote_write_requests_rejected_total{reason=\"labels\"}"),
        0);
    // No clean shutdown: only the WAL (synced before each 204) has the data.
    EXPECT_EQ(node.Stop(SIGKILL), 128 + SIGKILL);
  }
  EXPECT_TRUE(StoredExactly(data_dir, expected));
}

}  // namespace
}  // namespace ingot::ingest
