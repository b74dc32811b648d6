// End to end on the real ingotd: line protocol over TCP, then every query endpoint and export
// format over real HTTP, compared exactly (binary bit-exact, text in shortest round-trip form).
#include <bit>
#include <charconv>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "config/url_encoding.h"
#include "query/binary_export.h"
#include "query/text_format.h"
#include "tests/e2e/node_process.h"

namespace ingot {
namespace {

using testing::HttpGet;
using testing::HttpPost;

constexpr std::int64_t kSec = 1'000'000'000;
constexpr std::int64_t kT0 = 1'700'000'000 * kSec;
constexpr int kPoints = 2500;  // two sealed chunks and an open head per series

// The value text sent for point i of host h (decimals, negatives, large and tiny numbers).
std::string ValueText(int h, int i) {
  switch (i % 5) {
    case 0: return std::to_string(i % 100) + "." + std::to_string(h + 1);
    case 1: return "-" + std::to_string(i) + ".25";
    case 2: return "1e-" + std::to_string(7 + i % 3);
    case 3: return "123456789.125";
    default: return std::to_string(i * 3);
  }
}

double Parse(const std::string& text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

class QueryE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_unique<testing::NodeProcess>(dir_.path());
    ASSERT_TRUE(node_->ok()) << node_->log();
    std::string lines;
    for (int i = 0; i < kPoints; ++i) {
      for (int h = 0; h < 2; ++h) {
        lines += "cpu,host=h" + std::to_string(h) + " usage=" + ValueText(h, i) +
                 ",count=" + std::to_string(i) + "i " + std::to_string(kT0 + i * kSec) + "\n";
      }
    }
    ASSERT_TRUE(testing::TcpSend(node_->tcp_port(), lines));
    // Ingest is asynchronous: wait until every value is countable (the load tester's check).
    const std::string count = "/api/v1/query?query=" +
                              UrlEncode(R"(sum(count_over_time({__name__=~"cpu_.*"}[3000s])))") +
                              "&time=" + std::to_string(kT0 / kSec + kPoints);
    const std::string want = "\"" + std::to_string(4 * kPoints) + "\"";
    for (int attempt = 0; attempt < 200; ++attempt) {
      last_ = HttpGet(node_->http_port(), count);
      if (last_.status == 200 && last_.body.find(want) != std::string::npos) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "points not queryable: " << last_.status << " " << last_.body;
  }

  std::string Get(const std::string& target, int status = 200) {
    const auto r = HttpGet(node_->http_port(), target);
    EXPECT_EQ(r.status, status) << target << ": " << r.body << r.error;
    return r.body;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::NodeProcess> node_;
  testing::HttpResult last_;
};

TEST_F(QueryE2eTest, ExportFormatsReadBackExactly) {
  std::string json_want, csv_want = "series,timestamp,value\n";
  for (int h = 0; h < 2; ++h) {
    std::string values, timestamps;
    for (int i = 0; i < kPoints; ++i) {
      std::string v, ms;
      AppendDouble(Parse(ValueText(h, i)), &v);
      AppendMillis(kT0 + i * kSec, &ms);
      values += (i ? "," : "") + v;
      timestamps += (i ? "," : "") + ms;
      csv_want += "\"cpu_usage{host=\"\"h" + std::to_string(h) + "\"\"}\"," + ms + "," + v + "\n";
    }
    json_want += "{\"metric\":{\"__name__\":\"cpu_usage\",\"host\":\"h" + std::to_string(h) +
                 "\"},\"values\":[" + values + "],\"timestamps\":[" + timestamps + "]}\n";
  }
  EXPECT_EQ(Get("/api/v1/export?match[]=cpu_usage"), json_want);
  EXPECT_EQ(Get("/api/v1/export?match[]=cpu_usage&format=csv"), csv_want);
  std::vector<ExportedSeries> series;
  ASSERT_TRUE(
      ParseBinaryExport(Get("/api/v1/export?match[]=cpu_usage&format=binary"), &series).ok());
  ASSERT_EQ(series.size(), 2u);
  for (int h = 0; h < 2; ++h) {
    EXPECT_EQ(series[h].metric_json,
              "{\"__name__\":\"cpu_usage\",\"host\":\"h" + std::to_string(h) + "\"}");
    ASSERT_EQ(series[h].ts_ns.size(), static_cast<std::size_t>(kPoints));
    for (int i = 0; i < kPoints; ++i) {
      ASSERT_EQ(series[h].ts_ns[i], kT0 + i * kSec);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(series[h].values[i]),
                std::bit_cast<std::uint64_t>(Parse(ValueText(h, i))))
          << "host " << h << " point " << i;
    }
  }
  // A range inside the sealed chunks and across the boundary into the head.
  ASSERT_TRUE(ParseBinaryExport(Get("/api/v1/export?match[]=" + UrlEncode("cpu_count{host=\"h1\"}") +
                                    "&format=binary&start=1700002000&end=1700002100"),
                                &series)
                  .ok());
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].values.size(), 101u);
  EXPECT_EQ(series[0].values.front(), 2000);
  EXPECT_EQ(series[0].values.back(), 2100);
}

TEST_F(QueryE2eTest, PrometheusApiReadsBack) {
  const std::string t = std::to_string(kT0 / kSec + 2499);
  EXPECT_EQ(Get("/api/v1/query?query=" + UrlEncode(R"(cpu_count{host="h0"})") + "&time=" + t),
            "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":"
            "{\"__name__\":\"cpu_count\",\"host\":\"h0\"},\"value\":[" +
                t + ",\"2499\"]}]}}\n");
  // Counts 0..2499 step 1/s: the average over (t-1000s, t] is the mean of the last 1000.
  EXPECT_EQ(Get("/api/v1/query?query=" + UrlEncode("avg by (host) (avg_over_time(cpu_count[1000s]))") +
                "&time=" + t),
            "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
            "{\"metric\":{\"host\":\"h0\"},\"value\":[" + t + ",\"1999.5\"]},"
            "{\"metric\":{\"host\":\"h1\"},\"value\":[" + t + ",\"1999.5\"]}]}}\n");
  EXPECT_EQ(Get("/api/v1/query_range?query=" + UrlEncode("sum(max_over_time(cpu_count[1000s]))") +
                "&start=1700001000&end=1700002000&step=500"),
            "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":"
            "{},\"values\":[[1700001000,\"2000\"],[1700001500,\"3000\"],[1700002000,\"4000\"]]}]}}"
            "\n");
  const auto form = HttpPost(node_->http_port(), "/api/v1/query", "query=1%2B1&time=10",
                             "application/x-www-form-urlencoded");
  EXPECT_EQ(form.body,
            "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[10,\"2\"]}}\n");
  EXPECT_EQ(Get("/api/v1/series?match[]=" + UrlEncode(R"({__name__=~"cpu_.*",host="h1"})")),
            "{\"status\":\"success\",\"data\":[{\"__name__\":\"cpu_usage\",\"host\":\"h1\"},"
            "{\"__name__\":\"cpu_count\",\"host\":\"h1\"}]}\n");
  EXPECT_EQ(Get("/api/v1/labels"), "{\"status\":\"success\",\"data\":[\"__name__\",\"host\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/__name__/values"),
            "{\"status\":\"success\",\"data\":[\"cpu_count\",\"cpu_usage\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/host/values"),
            "{\"status\":\"success\",\"data\":[\"h0\",\"h1\"]}\n");
  EXPECT_NE(Get("/api/v1/status/buildinfo").find("\"version\""), std::string::npos);
  EXPECT_NE(Get("/metrics").find("ingot_queries_total{endpoint=\"query\"}"), std::string::npos);
  EXPECT_EQ(Get("/health"), "{\"status\":\"ok\"}\n");
  EXPECT_NE(Get("/api/v1/query_range?query=up&start=1&end=2", 400).find("\\\"step\\\""),
            std::string::npos);
}

}  // namespace
}  // namespace ingot
