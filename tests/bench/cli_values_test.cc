#include "bench/ingot_bench/cli_values.h"

#include <gtest/gtest.h>

#include "bench/ingot_bench/cpu_workload.h"
#include "bench/ingot_bench/http_connection.h"
#include "bench/ingot_bench/query_runner.h"
#include "bench/ingot_bench/verify.h"

namespace ingot::bench {
namespace {

TEST(ParseTargetTest, Kinds) {
  Target t;
  ASSERT_TRUE(ParseTarget("tcp://127.0.0.1:8089", &t).ok());
  EXPECT_EQ(t.kind, Target::Kind::kTcp);
  EXPECT_EQ(t.host, "127.0.0.1");
  EXPECT_EQ(t.port, 8089);
  ASSERT_TRUE(ParseTarget("http://localhost:8086/write", &t).ok());
  EXPECT_EQ(t.kind, Target::Kind::kHttp);
  EXPECT_EQ(t.path, "/write");
  ASSERT_TRUE(ParseTarget("http://[::1]:8428", &t).ok());
  EXPECT_EQ(t.host, "::1");
  EXPECT_EQ(t.path, "/");
  ASSERT_TRUE(ParseTarget("null", &t).ok());
  EXPECT_EQ(t.kind, Target::Kind::kNull);
  EXPECT_EQ(WriteRequestTarget(Target{Target::Kind::kHttp, "h", 1, "/write", ""}, "db1"),
            "/write?db=db1&precision=ns");
}

TEST(ParseTargetTest, Rejects) {
  Target t;
  for (const char* bad : {"udp://h:1", "tcp://h", "tcp://h:0", "tcp://h:70000", "tcp://:80",
                          "tcp://h:80/x", "http://[::1:80", "h:80", ""}) {
    EXPECT_TRUE(ParseTarget(bad, &t).IsInvalidArgument()) << bad;
  }
}

TEST(ParseDurationTest, Units) {
  int64_t ns = 0;
  ASSERT_TRUE(ParseDurationNs("10s", &ns).ok());
  EXPECT_EQ(ns, 10'000'000'000);
  ASSERT_TRUE(ParseDurationNs("250ms", &ns).ok());
  EXPECT_EQ(ns, 250'000'000);
  ASSERT_TRUE(ParseDurationNs("1.5m", &ns).ok());
  EXPECT_EQ(ns, 90'000'000'000);
  ASSERT_TRUE(ParseDurationNs("2h", &ns).ok());
  EXPECT_EQ(ns, 7'200'000'000'000);
  ASSERT_TRUE(ParseDurationNs("3", &ns).ok());
  EXPECT_EQ(ns, 3'000'000'000);
  for (const char* bad : {"", "s", "-1s", "10x", "abc", "1e30s"}) {
    EXPECT_FALSE(ParseDurationNs(bad, &ns).ok()) << bad;
  }
}

TEST(ParseTimeTest, Rfc3339AndNanoseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(ParseTimeNs("2024-01-01T00:00:00Z", &ns).ok());
  EXPECT_EQ(ns, kDefaultStartNs);
  ASSERT_TRUE(ParseTimeNs("2024-01-01T02:00:00.5+02:00", &ns).ok());
  EXPECT_EQ(ns, kDefaultStartNs + 500'000'000);
  ASSERT_TRUE(ParseTimeNs("1970-01-01T00:00:00Z", &ns).ok());
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(ParseTimeNs("1704067200000000000", &ns).ok());
  EXPECT_EQ(ns, kDefaultStartNs);
  for (const char* bad : {"2024-01-01", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00",
                          "2024-01-01T00:00:00Zx", "yesterday", "-5"}) {
    EXPECT_FALSE(ParseTimeNs(bad, &ns).ok()) << bad;
  }
}

TEST(FormatSecondsTest, MillisecondDecimals) {
  EXPECT_EQ(FormatSeconds(kDefaultStartNs), "1704067200.000");
  EXPECT_EQ(FormatSeconds(1'500'000'000), "1.500");
  EXPECT_EQ(FormatSeconds(1'000'999), "0.001");
}

TEST(SplitListTest, SkipsEmptyItems) {
  EXPECT_EQ(SplitList("a,b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitList("").empty());
}

TEST(VerifyQueryTest, CountQueryCoversTheRange) {
  const int64_t first = kDefaultStartNs;
  const int64_t last = kDefaultStartNs + 99'990'000'000'000;  // 9999 rows of 10 s
  const std::string target = CountQueryTarget("/", kDefaultVerifySelector, first, last);
  EXPECT_EQ(target,
            "/api/v1/query?query=sum%28count_over_time%28%7B__name__%3D~%22cpu_.%2A%22%7D%5B"
            "99992s%5D%29%29&time=1704167190.001&nocache=1");
}

TEST(VerifyQueryTest, ParsesPrometheusAnswers) {
  double v = -1;
  ASSERT_TRUE(ParsePrometheusScalar(
                  R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},)"
                  R"("value":[1704167190.001,"10000000"]}]}})",
                  &v)
                  .ok());
  EXPECT_EQ(v, 1e7);
  ASSERT_TRUE(ParsePrometheusScalar(
                  R"({"status": "success", "data": {"resultType": "vector", "result": [ ]}})", &v)
                  .ok());
  EXPECT_EQ(v, 0);
  EXPECT_FALSE(ParsePrometheusScalar(R"({"status":"error","error":"bad"})", &v).ok());
  EXPECT_FALSE(ParsePrometheusScalar("not json", &v).ok());
  EXPECT_FALSE(ParsePrometheusScalar(
                   R"({"status":"success","data":{"result":[{"value":[1,"x"]}]}})", &v)
                   .ok());
}

TEST(QueryTargetTest, Workloads) {
  QueryOptions options;
  options.start_ns = kDefaultStartNs;
  options.end_ns = kDefaultStartNs + 3'600'000'000'000;
  options.hosts = 10;
  EXPECT_EQ(QueryRequestTarget("q1", 13, "/", options),
            "/api/v1/export?match%5B%5D=cpu_usage_user%7Bhostname%3D%22host_3%22%7D"
            "&start=1704067200.000&end=1704070800.000");
  EXPECT_EQ(QueryRequestTarget("q2", 0, "", options),
            "/api/v1/export?match%5B%5D=cpu_usage_user&start=1704067200.000&end=1704070800.000");
  EXPECT_EQ(QueryRequestTarget("q3", 0, "/", options),
            "/api/v1/query_range?query=avg_over_time%28cpu_usage_user%5B1h%5D%29"
            "&start=1704067200.000&end=1704070800.000&step=3600&nocache=1");
  EXPECT_TRUE(CheckWorkloadName("q4").IsInvalidArgument());
}

}  // namespace
}  // namespace ingot::bench
