// The Prometheus-compatible endpoints against a real Storage, through the router (no sockets):
// every expression kind against hand-computed values, error shapes, limits.
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chunk/series_reader.h"
#include "config/version.h"
#include "query/promql_engine.h"
#include "query/promql_parser.h"
#include "query/series_catalog.h"
#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using testing::kSec;
using testing::kT0;
using testing::Points;
using testing::Response;

class QueryApiTest : public testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    Points a, b, mem;
    for (int i = 0; i < 10; ++i) {
      a.emplace_back(kT0 + i * 10 * kSec, i);
      b.emplace_back(kT0 + i * 10 * kSec, 10 * i);
      mem.emplace_back(kT0 + i * 10 * kSec, 100);
    }
    Add("cpu", {{"host", "a"}}, "usage", a);
    Add("cpu", {{"host", "b"}}, "usage", b);
    Add("mem", {{"host", "a"}}, "free", mem);
    Add("req", {{"host", "a"}}, "total",
        {{kT0, 0},
         {kT0 + 10 * kSec, 10},
         {kT0 + 20 * kSec, 20},
         {kT0 + 30 * kSec, 5},
         {kT0 + 40 * kSec, 15}});
  }

  Response Query(const std::string& q, std::int64_t t_s) {
    return Get("/api/v1/query?query=" + UrlEncode(q) + "&time=" + std::to_string(t_s));
  }
  std::string Ok(const std::string& result_type, const std::string& result) {
    return "{\"status\":\"success\",\"data\":{\"resultType\":\"" + result_type +
           "\",\"result\":" + result + "}}\n";
  }
  static void ExpectError(const Response& r, int status, const std::string& type,
                          const std::string& message_part) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.body.rfind("{\"status\":\"error\",\"errorType\":\"" + type + "\",\"error\":", 0),
              0u)
        << r.body;
    EXPECT_NE(r.body.find(message_part), std::string::npos) << r.body;
  }
};

TEST_F(QueryApiTest, NumberLiteralsAndScalarArithmetic) {
  EXPECT_EQ(Query("1+1", 1700000000).body, Ok("scalar", "[1700000000,\"2\"]"));
  EXPECT_EQ(Query("2 * 3 ^ 2", 1700000000).body, Ok("scalar", "[1700000000,\"18\"]"));
  EXPECT_EQ(Query("-2 ^ 2", 1700000000).body, Ok("scalar", "[1700000000,\"-4\"]"));
  EXPECT_EQ(Query("(7 % 4) / 2 - 0.5", 1700000000).body, Ok("scalar", "[1700000000,\"1\"]"));
  EXPECT_EQ(Query("1/0", 1700000000).body, Ok("scalar", "[1700000000,\"+Inf\"]"));
  EXPECT_EQ(Query("0/0", 1700000000).body, Ok("scalar", "[1700000000,\"NaN\"]"));
  // Grafana's connection test, as a POST form.
  const Response r = Post("/api/v1/query", "query=1%2B1&time=1700000000.5");
  EXPECT_EQ(r.body, Ok("scalar", "[1700000000.5,\"2\"]"));
}

TEST_F(QueryApiTest, InstantSelectorUsesLookback) {
  EXPECT_EQ(
      Query("cpu_usage", 1700000095).body,
      Ok("vector", R"([{"metric":{"__name__":"cpu_usage","host":"a"},"value":[1700000095,"9"]},)"
                   R"({"metric":{"__name__":"cpu_usage","host":"b"},"value":[1700000095,"90"]}])"));
  // 5 minutes after the last point nothing is left in (t - 5m, t].
  EXPECT_EQ(Query("cpu_usage", 1700000390).body, Ok("vector", "[]"));
  EXPECT_EQ(Query("cpu_usage", 1700000389).body.find("\"9\"") != std::string::npos, true);
  // Before the first point.
  EXPECT_EQ(Query("cpu_usage", 1699999999).body, Ok("vector", "[]"));
  EXPECT_EQ(
      Query(R"({__name__=~"cpu_.*", host!="b"})", 1700000005).body,
      Ok("vector", R"([{"metric":{"__name__":"cpu_usage","host":"a"},"value":[1700000005,"0"]}])"));
  EXPECT_EQ(Query("no_such_metric", 1700000005).body, Ok("vector", "[]"));
}

TEST_F(QueryApiTest, OverTimeFunctions) {
  // Window (t0+60, t0+90] holds 7, 8, 9.
  const std::string sel = R"(cpu_usage{host="a"}[30s])";
  auto value = [&](const std::string& f) { return Query(f + "(" + sel + ")", 1700000090).body; };
  auto expect = [&](const std::string& v) {
    return Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000090,")" + v + "\"]}]");
  };
  EXPECT_EQ(value("avg_over_time"), expect("8"));
  EXPECT_EQ(value("sum_over_time"), expect("24"));
  EXPECT_EQ(value("min_over_time"), expect("7"));
  EXPECT_EQ(value("max_over_time"), expect("9"));
  EXPECT_EQ(value("count_over_time"), expect("3"));
  // last_over_time keeps the metric name, as in Prometheus 3.
  EXPECT_EQ(
      value("last_over_time"),
      Ok("vector", R"([{"metric":{"__name__":"cpu_usage","host":"a"},"value":[1700000090,"9"]}])"));
  // The window is open on the left: a 100 s range at t0+90 holds all 10 points, at t0+100 nine.
  EXPECT_EQ(Query(R"(count_over_time(cpu_usage{host="a"}[100s]))", 1700000090).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000090,"10"]}])"));
  EXPECT_EQ(Query(R"(count_over_time(cpu_usage{host="a"}[100s]))", 1700000100).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000100,"9"]}])"));
  // An empty window yields no sample.
  EXPECT_EQ(Query(R"(avg_over_time(cpu_usage{host="a"}[5s]))", 1700000095).body,
            Ok("vector", "[]"));
}

TEST_F(QueryApiTest, RateAndIncreaseExtrapolateLikePrometheus) {
  // Samples 0, 10, 20, 5 (reset), 15 at t0..t0+40: the raw increase is 15 + 20 = 35.
  EXPECT_EQ(Query("increase(req_total[50s])", 1700000040).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000040,"35"]}])"));
  // Prometheus 3 multiplies by one factor, (40 s sampled / 40 s) / 50 s = 0.02, and 35 * 0.02 is
  // 0.7000000000000001 in doubles.
  EXPECT_EQ(Query("rate(req_total[50s])", 1700000040).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000040,"0.7000000000000001"]}])"));
  // 5 s to the window end extrapolate (< 1.1 x the 10 s gap); the start extrapolates to zero.
  EXPECT_EQ(Query("increase(req_total[50s])", 1700000045).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000045,"39.375"]}])"));
  EXPECT_EQ(Query("rate(req_total[50s])", 1700000045).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000045,"0.7875"]}])"));
  // One sample is not enough for a rate.
  EXPECT_EQ(Query("rate(req_total[10s])", 1700000040).body, Ok("vector", "[]"));
}

TEST_F(QueryApiTest, Aggregations) {
  const std::int64_t t = 1700000090;
  EXPECT_EQ(Query("sum(cpu_usage)", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"99"]}])"));
  EXPECT_EQ(Query("avg(cpu_usage)", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"49.5"]}])"));
  EXPECT_EQ(Query("min(cpu_usage)", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"9"]}])"));
  EXPECT_EQ(Query("max(cpu_usage)", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"90"]}])"));
  EXPECT_EQ(Query("count(cpu_usage)", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"2"]}])"));
  EXPECT_EQ(Query("sum by (host) (cpu_usage)", t).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000090,"9"]},)"
                         R"({"metric":{"host":"b"},"value":[1700000090,"90"]}])"));
  EXPECT_EQ(Query("sum(cpu_usage) by (host)", t).body, Query("sum by (host) (cpu_usage)", t).body);
  EXPECT_EQ(Query(R"(sum without (host) ({__name__=~"cpu_usage|mem_free"}))", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"199"]}])"));
  EXPECT_EQ(Query(R"(sum by (__name__) ({host="a"}))", t).body,
            Ok("vector", R"([{"metric":{"__name__":"cpu_usage"},"value":[1700000090,"9"]},)"
                         R"({"metric":{"__name__":"mem_free"},"value":[1700000090,"100"]},)"
                         R"({"metric":{"__name__":"req_total"},"value":[1700000090,"15"]}])"));
  // The load tester's completeness check.
  EXPECT_EQ(Query(R"(sum(count_over_time({__name__=~"cpu_.*"}[1000s])))", t).body,
            Ok("vector", R"([{"metric":{},"value":[1700000090,"20"]}])"));
  EXPECT_EQ(Query("sum(cpu_usage{host=\"zzz\"})", t).body, Ok("vector", "[]"));
}

TEST_F(QueryApiTest, VectorScalarArithmeticDropsTheName) {
  EXPECT_EQ(Query("cpu_usage * 2", 1700000090).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000090,"18"]},)"
                         R"({"metric":{"host":"b"},"value":[1700000090,"180"]}])"));
  EXPECT_EQ(Query("100 - cpu_usage{host=\"b\"}", 1700000090).body,
            Ok("vector", R"([{"metric":{"host":"b"},"value":[1700000090,"10"]}])"));
  // Between two vectors, series pair up by their labels without the name.
  EXPECT_EQ(Query("cpu_usage + cpu_usage", 1700000090).body,
            Ok("vector", R"([{"metric":{"host":"a"},"value":[1700000090,"18"]},)"
                         R"({"metric":{"host":"b"},"value":[1700000090,"180"]}])"));
}

TEST_F(QueryApiTest, QueryRangeMatrix) {
  const Response r =
      Get("/api/v1/query_range?query=" + UrlEncode(R"(avg_over_time(cpu_usage{host="a"}[30s]))") +
          "&start=1700000030&end=1700000090&step=30s");
  EXPECT_EQ(r.body, Ok("matrix", R"([{"metric":{"host":"a"},"values":[[1700000030,"2"],)"
                                 R"([1700000060,"5"],[1700000090,"8"]]}])"));
  // Steps without a sample are left out; RFC 3339 times, POST form and plain-second steps work.
  const Response s =
      Post("/api/v1/query_range", "query=" + UrlEncode(R"(cpu_usage{host="a"})") +
                                      "&start=2023-11-14T22:13:10Z&end=1700000020&step=10");
  EXPECT_EQ(s.body, Ok("matrix", R"([{"metric":{"__name__":"cpu_usage","host":"a"},"values":[)"
                                 R"([1700000000,"0"],[1700000010,"1"],[1700000020,"2"]]}])"));
  EXPECT_EQ(Get("/api/v1/query_range?query=1%2B1&start=1700000000&end=1700000010&step=5").body,
            Ok("matrix", R"([{"metric":{},"values":[[1700000000,"2"],[1700000005,"2"],)"
                         R"([1700000010,"2"]]}])"));
}

TEST_F(QueryApiTest, ParameterErrorsNameTheParameter) {
  ExpectError(Get("/api/v1/query"), 400, "bad_data", R"(invalid parameter \"query\": missing)");
  ExpectError(Get("/api/v1/query?query=up&time=yesterday"), 400, "bad_data",
              R"(invalid parameter \"time\")");
  ExpectError(Get("/api/v1/query?query=" + UrlEncode("sum(")), 400, "bad_data",
              R"(invalid parameter \"query\": 1:5: parse error: unclosed left parenthesis)");
  ExpectError(Get("/api/v1/query?query=" + UrlEncode("foo(bar)")), 400, "bad_data",
              R"(unknown function with name \"foo\")");
  const std::string q = "/api/v1/query_range?query=up";
  ExpectError(Get(q + "&end=2&step=1"), 400, "bad_data", R"(invalid parameter \"start\")");
  ExpectError(Get(q + "&start=1&step=1"), 400, "bad_data", R"(invalid parameter \"end\")");
  ExpectError(Get(q + "&start=1&end=2"), 400, "bad_data", R"(invalid parameter \"step\")");
  ExpectError(Get(q + "&start=2&end=1&step=1"), 400, "bad_data",
              "end timestamp must not be before start time");
  ExpectError(Get(q + "&start=1&end=2&step=0"), 400, "bad_data", "zero or negative");
  ExpectError(Get(q + "&start=1&end=2&step=-5"), 400, "bad_data", R"(invalid parameter \"step\")");
  ExpectError(Get(q + "&start=1&end=2&step=1x"), 400, "bad_data", "unknown unit");
  ExpectError(Get(q + "&start=0&end=11001&step=1"), 400, "bad_data",
              "exceeded maximum resolution of 11,000 points");
  EXPECT_EQ(Get(q + "&start=0&end=11000&step=1").status, 200);
  // Spans wider than INT64_MAX nanoseconds are counted without overflow, and times and
  // durations that could overflow once combined are refused.
  ExpectError(Get(q + "&start=-4611686000&end=4611686000&step=1"), 400, "bad_data",
              "exceeded maximum resolution");
  ExpectError(Get(q + "&start=-9000000000&end=9000000000&step=1"), 400, "bad_data",
              R"(invalid parameter \"start\": time \"-9000000000\" is out of range)");
  ExpectError(Get(q + "&start=0&end=9223372036&step=1"), 400, "bad_data",
              R"(invalid parameter \"end\")");
  ExpectError(Get(q + "&start=0&end=1&step=200y"), 400, "bad_data", "146 years at most");
  ExpectError(Get("/api/v1/query?time=1&query=" + UrlEncode("rate(m[200y])")), 400, "bad_data",
              "146 years at most");
  std::string deep = "/api/v1/query?query=";
  deep.append(20'000, '-').append("1");
  ExpectError(Get(deep), 400, "bad_data", "expression nested more than 512 levels deep");
  std::string big = "/api/v1/query?query=";
  big.append(100'000, '(').append("1").append(100'000, ')');
  ExpectError(Get(big), 400, "bad_data", "exceeds the limit of 131072 bytes");
  ExpectError(Get("/api/v1/series"), 400, "bad_data", "no match[] parameter provided");
  ExpectError(Get("/api/v1/series?match[]=" + UrlEncode("{a=~\".*\"}")), 400, "bad_data",
              R"(invalid parameter \"match[]\")");
  ExpectError(Get("/api/v1/label/host"), 404, "not_found", "/api/v1/label/<name>/values");
  EXPECT_EQ(Get("/api/v1/nothing").status, 404);
  EXPECT_EQ(
      testing::RunRequest(*router_, HttpRequest(http::verb::delete_, "/api/v1/query", 11)).status,
      405);
}

TEST_F(QueryApiTest, LimitsAre422) {
  QueryOptions options;
  options.max_points = 5;
  Configure(options);
  ExpectError(Get("/api/v1/query_range?query=cpu_usage&start=1700000000&end=1700000090&step=10"),
              422, "execution", "query.max_points = 5");
  EXPECT_EQ(
      Get("/api/v1/query_range?query=cpu_usage&start=1700000000&end=1700000010&step=10").status,
      200);
  ExpectError(Get("/api/v1/export?match[]=cpu_usage"), 422, "execution",
              "about 20 points, more than query.max_points = 5");
  options.max_points = 1000;
  options.max_series = 1;
  Configure(options);
  ExpectError(Get("/api/v1/query?query=cpu_usage&time=1700000000"), 422, "execution",
              "query.max_series");
  ExpectError(Get("/api/v1/export?match[]=cpu_usage"), 422, "execution", "query.max_series");
  EXPECT_EQ(Get("/api/v1/export?match[]=mem_free").status, 200);
}

// What a hostile or careless client sends is stopped by a limit with a clear answer, never by
// running out of memory: a subquery with a tiny step over a long range, a huge topk parameter, a
// regex matching every series, a query past its deadline.
TEST_F(QueryApiTest, HostileQueriesHitLimits) {
  QueryOptions options;
  options.max_points = 100'000;
  options.max_series = 3;
  Configure(options);
  const std::string at = "&time=1700000090";
  ExpectError(Get("/api/v1/query?query=" + UrlEncode("max_over_time(cpu_usage[30d:1ms])") + at),
              422, "execution", "query.max_points = 100000");
  // topk with a parameter far beyond the series count returns them all; one past int64 is an
  // error, as in Prometheus.
  const Response top = Get("/api/v1/query?query=" + UrlEncode("topk(1e15, cpu_usage)") + at);
  EXPECT_EQ(top.status, 200) << top.body;
  EXPECT_NE(top.body.find(R"("host":"b")"), std::string::npos) << top.body;
  ExpectError(Get("/api/v1/query?query=" + UrlEncode("topk(1e300, cpu_usage)") + at), 422,
              "execution", "Scalar value 1e+300 overflows int64");
  ExpectError(Get("/api/v1/query?query=" + UrlEncode(R"({__name__=~".+"})") + at), 422, "execution",
              "query.max_series");
  // A deadline already past stops the evaluation between series.
  options.max_series = 100'000;
  Configure(options);
  ExpectError(Get("/api/v1/query?timeout=0.000000001&query=" +
                  UrlEncode("sum(count_over_time(cpu_usage[1000s:1s]))") + at),
              422, "execution", "timed out");
  ExpectError(Get("/api/v1/query?timeout=never&query=1"), 400, "bad_data",
              R"(invalid parameter \"timeout\")");
}

TEST_F(QueryApiTest, ConcurrencyCapIs503) {
  QueryOptions options;
  options.max_concurrent = 1;
  Configure(options);
  // A streamed export holds its slot until the body is complete.
  HttpReply pending;
  router_->Handle(testing::MakeGet("/api/v1/export?match[]=cpu_usage"), pending);
  ASSERT_TRUE(pending.stream);
  ExpectError(Get("/api/v1/query?query=1"), 503, "unavailable", "query.max_concurrent");
  pending.stream = nullptr;
  EXPECT_EQ(Get("/api/v1/query?query=1").status, 200);
  EXPECT_EQ(Get("/api/v1/query?query=1").status, 200);
}

TEST_F(QueryApiTest, SeriesLabelsAndValues) {
  EXPECT_EQ(Get("/api/v1/series?match[]=cpu_usage").body,
            R"({"status":"success","data":[{"__name__":"cpu_usage","host":"a"},)"
            R"({"__name__":"cpu_usage","host":"b"}]})"
            "\n");
  EXPECT_EQ(Post("/api/v1/series", "match[]=mem_free&match[]=" + UrlEncode("{host=\"a\"}")).body,
            R"({"status":"success","data":[{"__name__":"cpu_usage","host":"a"},)"
            R"({"__name__":"mem_free","host":"a"},{"__name__":"req_total","host":"a"}]})"
            "\n");
  EXPECT_EQ(Get("/api/v1/labels").body,
            "{\"status\":\"success\",\"data\":[\"__name__\",\"host\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/__name__/values").body,
            "{\"status\":\"success\",\"data\":[\"cpu_usage\",\"mem_free\",\"req_total\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/host/values").body,
            "{\"status\":\"success\",\"data\":[\"a\",\"b\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/host/values?match[]=mem_free").body,
            "{\"status\":\"success\",\"data\":[\"a\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/nope/values").body, "{\"status\":\"success\",\"data\":[]}\n");
  const Response info = Get("/api/v1/status/buildinfo");
  EXPECT_EQ(info.status, 200);
  EXPECT_NE(info.body.find("\"version\":"), std::string::npos);
  // The build's own version, as CMake's project version defines it for every module.
  EXPECT_STRNE(kVersion, "0.0.0");
  EXPECT_NE(info.body.find(std::string("\"ingotVersion\":\"") + kVersion + "\""), std::string::npos)
      << info.body;
}

// start/end limit series, label names and label values to series with points in the window
// (chunks count by their time span, as Prometheus counts blocks), with or without match[].
// A staleness marker (the NaN Prometheus writes when a series disappears) as the newest sample in
// the lookback ends the series there; before it, the last real value answers.
TEST_F(QueryApiTest, StalenessMarkerEndsASeriesLookback) {
  const double stale = std::bit_cast<double>(std::uint64_t{0x7ff0000000000002});
  Add("gone", {{"k", "v"}}, "x", {{kT0 + 1000 * kSec, 7}, {kT0 + 1010 * kSec, stale}});
  const std::int64_t t0 = kT0 / kSec;
  EXPECT_EQ(Query("gone_x", t0 + 1005).body,
            Ok("vector", R"([{"metric":{"__name__":"gone_x","k":"v"},"value":[)" +
                             std::to_string(t0 + 1005) + R"(,"7"]}])"));
  EXPECT_EQ(Query("gone_x", t0 + 1020).body, Ok("vector", "[]"));
  // A NaN that is not the marker is a value like any other.
  Add("gone", {{"k", "nan"}}, "x", {{kT0 + 1000 * kSec, std::nan("")}});
  EXPECT_NE(Query("gone_x{k=\"nan\"}", t0 + 1020).body.find("\"NaN\""), std::string::npos);
}

TEST_F(QueryApiTest, CatalogEndpointsHonourStartAndEnd) {
  const std::int64_t old_t = kT0 - 10 * 86400 * kSec;  // ten days before every other series
  Add("win", {{"era", "old"}, {"only_old", "x"}}, "v", {{old_t, 1}, {old_t + 10 * kSec, 2}});
  Add("win", {{"era", "new"}}, "v", {{kT0 + 3600 * kSec, 3}});
  const std::string old_window =
      "start=" + std::to_string(old_t / kSec - 60) + "&end=" + std::to_string(old_t / kSec + 60);
  EXPECT_EQ(Get("/api/v1/series?match[]=win_v&" + old_window).body,
            R"({"status":"success","data":[{"__name__":"win_v","era":"old","only_old":"x"}]})"
            "\n");
  EXPECT_EQ(Get("/api/v1/series?match[]=win_v").body,
            R"({"status":"success","data":[{"__name__":"win_v","era":"old","only_old":"x"},)"
            R"({"__name__":"win_v","era":"new"}]})"
            "\n");
  // Without match[]: every series, in the window.
  EXPECT_EQ(Get("/api/v1/labels?" + old_window).body,
            "{\"status\":\"success\",\"data\":[\"__name__\",\"era\",\"only_old\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/era/values?" + old_window).body,
            "{\"status\":\"success\",\"data\":[\"old\"]}\n");
  EXPECT_EQ(Get("/api/v1/label/era/values?match[]=win_v&start=" +
                std::to_string(kT0 / kSec + 3000) + "&end=" + std::to_string(kT0 / kSec + 4000))
                .body,
            "{\"status\":\"success\",\"data\":[\"new\"]}\n");
  // A window with no points at all, and a window the wrong way round.
  EXPECT_EQ(Get("/api/v1/label/era/values?start=1&end=2").body,
            "{\"status\":\"success\",\"data\":[]}\n");
  const Response bad = Get("/api/v1/labels?start=20&end=10");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("end timestamp must not be before start time"), std::string::npos);
  EXPECT_EQ(Get("/api/v1/series?match[]=win_v&start=yesterday").status, 400);
}

// Without match[], a window looks at every series: query.max_series bounds selectors, not the
// catalog (Grafana sends start/end with every label request).
TEST_F(QueryApiTest, CatalogWindowWithoutMatchIsNotBoundedByMaxSeries) {
  QueryOptions options = query_options_;
  options.max_series = 2;
  Configure(options);
  const std::string window =
      "start=" + std::to_string(kT0 / kSec - 60) + "&end=" + std::to_string(kT0 / kSec + 3600);
  const Response labels = Get("/api/v1/labels?" + window);
  EXPECT_EQ(labels.status, 200) << labels.body;
  EXPECT_EQ(labels.body, "{\"status\":\"success\",\"data\":[\"__name__\",\"host\"]}\n");
  const Response names = Get("/api/v1/label/__name__/values?" + window);
  EXPECT_EQ(names.body,
            "{\"status\":\"success\",\"data\":[\"cpu_usage\",\"mem_free\",\"req_total\"]}\n");
  // A selector that matches more than max_series still does not.
  EXPECT_EQ(Get("/api/v1/series?match[]=" + UrlEncode("{__name__=~\".+\"}") + "&" + window).status,
            422);
}

// The endpoints Grafana and Prometheus' clients call about data Ingot does not keep answer as
// Prometheus answers without such data.
TEST_F(QueryApiTest, PrometheusStatusEndpointsAnswerLikePrometheus) {
  auto data_of = [&](const std::string& target) {
    const Response r = Get(target);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    return r.body;
  };
  EXPECT_EQ(data_of("/api/v1/metadata"), "{\"status\":\"success\",\"data\":{}}\n");
  EXPECT_EQ(data_of("/api/v1/query_exemplars?query=cpu_usage&start=1&end=2"),
            "{\"status\":\"success\",\"data\":[]}\n");
  EXPECT_EQ(data_of("/api/v1/rules"), "{\"status\":\"success\",\"data\":{\"groups\":[]}}\n");
  EXPECT_EQ(data_of("/api/v1/alerts"), "{\"status\":\"success\",\"data\":{\"alerts\":[]}}\n");
  EXPECT_NE(data_of("/api/v1/targets").find("\"activeTargets\":[]"), std::string::npos);
  EXPECT_NE(data_of("/api/v1/status/config").find("\"yaml\":\"\""), std::string::npos);
  const std::string runtime = data_of("/api/v1/status/runtimeinfo");
  EXPECT_NE(runtime.find("\"startTime\":\"20"), std::string::npos) << runtime;
  EXPECT_NE(runtime.find("\"storageRetention\":\"0s\""), std::string::npos) << runtime;
  const std::string flags = data_of("/api/v1/status/flags");
  EXPECT_NE(flags.find("\"query.lookback-delta\":\"5m\""), std::string::npos) << flags;
  EXPECT_NE(flags.find("\"query.timeout\":\"30s\""), std::string::npos) << flags;
  // The query of an exemplar request is checked as a query is.
  const Response missing = Get("/api/v1/query_exemplars");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("bad_data"), std::string::npos);
  EXPECT_EQ(Get("/api/v1/query_exemplars?query=sum(").status, 400);
  EXPECT_NE(data_of("/api/v1/status/buildinfo").find("\"version\":\"3.0.0\""), std::string::npos);
}

TEST_F(QueryApiTest, TsdbStatusRanksSeriesAsPrometheusAnswers) {
  for (int i = 0; i < 5; ++i)
    Add("pod", {{"id", std::to_string(i)}, {"host", "c"}}, "up", {{kT0, 1}});
  const Response r = Get("/api/v1/status/tsdb?limit=2");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.body;
  EXPECT_EQ(j["status"], "success");
  const auto& d = j["data"];
  EXPECT_EQ(d["headStats"]["numSeries"], 9);
  EXPECT_EQ(d["totalSeries"], 9);
  ASSERT_EQ(d["seriesCountByMetricName"].size(), 2u);
  EXPECT_EQ(d["seriesCountByMetricName"][0]["name"], "pod_up");
  EXPECT_EQ(d["seriesCountByMetricName"][0]["value"], 5);
  EXPECT_EQ(d["seriesCountByMetricName"][1]["name"], "cpu_usage");
  EXPECT_EQ(d["labelValueCountByLabelName"][0]["name"], "id");
  EXPECT_EQ(d["labelValueCountByLabelName"][0]["value"], 5);
  EXPECT_EQ(d["seriesCountByLabelValuePair"][0]["name"], "host=c");
  EXPECT_EQ(d["seriesCountByLabelValuePair"][0]["value"], 5);
  EXPECT_EQ(d["seriesCountByLabelName"][0]["name"], "__name__");
  EXPECT_EQ(d["seriesCountByLabelName"][0]["value"], 9);
  EXPECT_TRUE(d["memoryInBytesByLabelName"].is_array());
  // VictoriaMetrics' parameter name works too; bad values name the parameter.
  EXPECT_EQ(Get("/api/v1/status/tsdb?topN=1").status, 200);
  const Response bad = Get("/api/v1/status/tsdb?limit=0");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find(R"(invalid parameter \"limit\")"), std::string::npos) << bad.body;
  EXPECT_EQ(Get("/api/v1/status/tsdb?topN=x").status, 400);
}

// The window functions, sliding over points read across sealed chunks and the head, must equal a
// naive evaluation over the decoded points.
class WindowPropertyTest : public testing::QueryFixture {};

TEST_F(WindowPropertyTest, MatchesNaiveEvaluationAcrossChunkBoundaries) {
  std::mt19937_64 rng(7);
  Points points;
  std::int64_t t = kT0;
  for (int i = 0; i < 5000; ++i) {
    t += (1 + static_cast<std::int64_t>(rng() % 3)) * kSec;
    points.emplace_back(t, static_cast<double>(static_cast<int>(rng() % 2001) - 1000));
  }
  const SeriesId sid = Add("w", {}, "v", points);
  SeriesCatalog catalog(storage_->index());
  SeriesReader reader(*storage_);
  std::vector<std::int64_t> all_ts;
  std::vector<double> all_values;
  ASSERT_TRUE(
      storage_->ReadSeries(sid, points.front().first, points.back().first, &all_ts, &all_values)
          .ok());
  ASSERT_EQ(all_ts.size(), points.size());
  const char* functions[] = {"count_over_time", "sum_over_time", "avg_over_time",
                             "min_over_time",   "max_over_time", "last_over_time"};
  for (int round = 0; round < 60; ++round) {
    const std::int64_t range = (1 + static_cast<std::int64_t>(rng() % 4000)) * kSec;
    const std::int64_t step = (1 + static_cast<std::int64_t>(rng() % 3000)) * kSec;
    const std::int64_t start =
        points.front().first - 500 * kSec + static_cast<std::int64_t>(rng() % 12000) * kSec;
    const std::int64_t end = start + static_cast<std::int64_t>(rng() % 40) * step;
    promql::QueryParams params;
    params.start_ns = start;
    params.end_ns = end;
    params.step_ns = step;
    for (const char* f : functions) {
      std::unique_ptr<promql::Expr> expr;
      const std::string text = std::string(f) + "(w_v[" + std::to_string(range / kSec) + "s])";
      ASSERT_TRUE(promql::Parse(text, &expr).ok());
      promql::QueryResult result;
      ASSERT_TRUE(promql::Evaluate(*expr, params, catalog, reader, &result).ok()) << text;
      for (std::size_t i = 0; i < params.steps(); ++i) {
        const std::int64_t at = start + static_cast<std::int64_t>(i) * step;
        double count = 0, sum = 0, mn = INFINITY, mx = -INFINITY, last = 0;
        for (std::size_t k = 0; k < all_ts.size(); ++k) {
          if (all_ts[k] <= at - range || all_ts[k] > at) continue;
          ++count;
          sum += all_values[k];
          mn = std::min(mn, all_values[k]);
          mx = std::max(mx, all_values[k]);
          last = all_values[k];
        }
        const bool present = !result.series.empty() && result.series[0].present[i];
        ASSERT_EQ(present, count > 0) << text << " step " << i;
        if (!present) continue;
        const double got = result.series[0].values[i];
        const std::string fn = f;
        const double want = fn == "count_over_time" ? count
                            : fn == "sum_over_time" ? sum
                            : fn == "avg_over_time" ? sum / count
                            : fn == "min_over_time" ? mn
                            : fn == "max_over_time" ? mx
                                                    : last;
        // Sums are compensated (Kahan), so they may differ from the naive sum in the last bits.
        ASSERT_NEAR(got, want, std::abs(want) * 1e-12 + 1e-9)
            << text << " start " << start << " step " << step << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace ingot

namespace ingot {
namespace {

// Every series' result in a selection of many (spread over the work pool's threads) must be exactly
// what evaluating it alone gives.
TEST_F(QueryApiTest, ManySeriesEvaluateInParallelExactlyAsAlone) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> step(-100, 100);
  constexpr int kSeries = 150;  // several blocks of the work pool
  for (int h = 0; h < kSeries; ++h) {
    Points points;
    double v = 50;
    for (int i = 0; i < 2500; ++i) {  // two sealed chunks plus an open head
      v += step(rng) / 100.0;
      points.emplace_back(kT0 + i * 10 * kSec, v);
    }
    std::string host = "h";
    host += std::to_string(100 + h);
    Add("many", {{"host", host}}, "v", points);
  }
  const std::string range = "&start=1700000000&end=1700025000&step=3600";
  const Response all =
      Get("/api/v1/query_range?query=" + UrlEncode("avg_over_time(many_v[1h])") + range);
  ASSERT_EQ(all.status, 200) << all.body;
  std::size_t series_in_all = 0;
  for (std::size_t p = all.body.find("\"metric\""); p != std::string::npos;
       p = all.body.find("\"metric\"", p + 1)) {
    ++series_in_all;
  }
  EXPECT_EQ(series_in_all, static_cast<std::size_t>(kSeries));
  const std::string prefix =
      "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[";
  for (int h = 0; h < kSeries; ++h) {
    std::string q = "avg_over_time(many_v{host=\"h";
    q += std::to_string(100 + h);
    q += "\"}[1h])";
    const Response one = Get("/api/v1/query_range?query=" + UrlEncode(q) + range);
    ASSERT_EQ(one.status, 200) << one.body;
    ASSERT_EQ(one.body.rfind(prefix, 0), 0u) << one.body;
    const std::string series_json =
        one.body.substr(prefix.size(), one.body.size() - prefix.size() - 4);  // drop "]}}\n"
    EXPECT_NE(all.body.find(series_json), std::string::npos) << series_json;
  }
}

// topk and bottomk rank by value and break ties by label set, whatever order the series were
// written (and so selected) in; groups come out in the order of their label-least member.
TEST_F(QueryApiTest, TopkAndBottomkBreakTiesByLabelsWhateverTheWriteOrder) {
  struct Series {
    std::string grp, host;
    double value;
  };
  std::vector<Series> all;
  for (int h = 0; h < 40; ++h) {
    Series s{"g", "h", (h * 7) % 4 * 1.5};
    s.grp += std::to_string(h % 3);
    s.host += std::to_string(10 + h);
    all.push_back(s);
  }
  std::mt19937_64 rng(5);
  std::shuffle(all.begin(), all.end(), rng);
  for (const Series& s : all) Add("tie", {{"grp", s.grp}, {"host", s.host}}, "v", {{kT0, s.value}});
  // The expected order, computed here from the definition: (group by its least labels), then
  // value (descending for topk), then labels (grp, host).
  auto expect = [&](bool top, bool grouped, std::size_t k) {
    std::vector<Series> sorted = all;
    std::sort(sorted.begin(), sorted.end(), [&](const Series& x, const Series& y) {
      if (grouped && x.grp != y.grp) return x.grp < y.grp;
      if (x.value != y.value) return top ? x.value > y.value : x.value < y.value;
      return std::tie(x.grp, x.host) < std::tie(y.grp, y.host);
    });
    std::vector<std::string> hosts;
    std::map<std::string, std::size_t> taken;
    for (const Series& s : sorted) {
      if (taken[grouped ? s.grp : ""]++ < k) hosts.push_back(s.host);
    }
    return hosts;
  };
  auto hosts_of = [](const std::string& body) {
    std::vector<std::string> hosts;
    for (std::size_t p = body.find("\"host\":\""); p != std::string::npos;
         p = body.find("\"host\":\"", p + 1)) {
      const std::size_t from = p + 8;
      hosts.push_back(body.substr(from, body.find('"', from) - from));
    }
    return hosts;
  };
  const std::int64_t at = kT0 / kSec;
  struct Case {
    const char* query;
    bool top, grouped;
    std::size_t k;
  };
  for (const Case& c :
       {Case{"topk(7, tie_v)", true, false, 7}, Case{"bottomk(6, tie_v)", false, false, 6},
        Case{"topk by (grp) (4, tie_v)", true, true, 4},
        Case{"bottomk by (grp) (3, tie_v)", false, true, 3}}) {
    const Response r = Query(c.query, at);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(hosts_of(r.body), expect(c.top, c.grouped, c.k)) << c.query << ": " << r.body;
  }
}

// sum(rate(x[1m])) folds the rates block by block as they are computed, so the query holds one
// block of 64 series' columns instead of all of them: the same answer as the fold over every
// column (`* 1` keeps the whole vector), within a max_points that the latter exceeds.
TEST_F(QueryApiTest, AggregationsOverRangeFunctionsHoldOneBlockOfColumns) {
  for (int h = 0; h < 150; ++h) {
    Points points;
    for (int i = 0; i < 200; ++i) points.emplace_back(kT0 + i * 10 * kSec, (h + 1) * i * 0.5);
    std::string host = "h";
    host += std::to_string(100 + h);
    Add("blocks", {{"host", host}, {"parity", h % 2 == 0 ? "even" : "odd"}}, "v", points);
  }
  // 100 steps: 150 series x 100 = 15,000 column points held when all columns are kept.
  const std::string range = "&start=1700000600&end=1700001590&step=10";
  auto get = [&](const std::string& q) {
    return Get("/api/v1/query_range?query=" + UrlEncode(q) + range);
  };
  for (const char* op : {"sum", "avg", "max", "count", "stddev"}) {
    const std::string folded = std::string(op) + " by (parity) (rate(blocks_v[1m]))";
    const std::string whole = std::string(op) + " by (parity) (rate(blocks_v[1m]) * 1)";
    QueryOptions options;
    options.max_points = 100'000;
    Configure(options);
    const Response a = get(folded);
    const Response b = get(whole);
    ASSERT_EQ(a.status, 200) << a.body;
    ASSERT_EQ(b.status, 200) << b.body;
    EXPECT_EQ(a.body, b.body) << op;
    options.max_points = 9'000;
    Configure(options);
    const Response small = get(folded);
    EXPECT_EQ(small.status, 200) << op << ": " << small.body;
    EXPECT_EQ(small.body, a.body) << op;
    ExpectError(get(whole), 422, "execution", "query.max_points = 9000");
  }
}

// A long range's aggregation is folded in step ranges on the work pool: at every step it must
// equal the instant query at that time (one step, folded in one piece), digit for digit.
TEST_F(QueryApiTest, LongRangeAggregationsEqualInstantQueriesAtEveryStep) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> step(-100, 100);
  for (int h = 0; h < 80; ++h) {
    Points points;
    double v = 50;
    for (int i = 0; i < 2500; ++i) {
      v += step(rng) / 100.0;
      points.emplace_back(kT0 + i * 10 * kSec, v);
    }
    std::string host = "h";
    host += std::to_string(100 + h);
    Add("agg", {{"host", host}, {"dc", h % 3 == 0 ? "a" : "b"}}, "v", points);
  }
  // 1700000000 + 30 s steps: 834 steps, more than three of the fold's pieces.
  const std::string range = "&start=1700000000&end=1700025000&step=30";
  for (const std::string op : {"sum", "avg", "min", "max", "stddev", "count"}) {
    std::string q = op;
    q += " by (dc) (agg_v)";
    const Response all = Get("/api/v1/query_range?query=" + UrlEncode(q) + range);
    ASSERT_EQ(all.status, 200) << all.body;
    for (int k = 0; k < 12; ++k) {
      const long t = 1700000000L + 30L * static_cast<long>(rng() % 834);
      const Response one =
          Get("/api/v1/query?query=" + UrlEncode(q) + "&time=" + std::to_string(t));
      ASSERT_EQ(one.status, 200) << one.body;
      // Each group's instant sample, as the range result writes it: [t,"value"].
      for (const std::string dc : {"a", "b"}) {
        std::string group = "{\"dc\":\"";
        group += dc;
        group += "\"}";
        const std::size_t at = one.body.find(group);
        ASSERT_NE(at, std::string::npos) << one.body;
        const std::size_t from = one.body.find("\"value\":[", at);
        ASSERT_NE(from, std::string::npos) << one.body;
        const std::size_t open = from + 9;
        const std::size_t close = one.body.find(']', open);
        const std::string sample = one.body.substr(open, close - open + 1);
        const std::size_t series = all.body.find(group);
        ASSERT_NE(series, std::string::npos) << all.body.substr(0, 200);
        const std::size_t end = all.body.find("]]", series);
        EXPECT_NE(all.body.substr(series, end - series + 2).find(sample), std::string::npos)
            << op << " " << dc << " at " << t << ": " << sample;
      }
    }
  }
}

}  // namespace
}  // namespace ingot
