#include "bench/ingot_bench/query_runner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/ingot_bench/cpu_workload.h"
#include "config/url_encoding.h"

namespace ingot::bench {
namespace {

// The day of dashboard-data at 30 s: the last sample is 23:59:30.
QueryOptions DashboardOptions() {
  QueryOptions options;
  options.start_ns = kDefaultStartNs;
  options.end_ns = kDefaultStartNs + 86'370'000'000'000;
  return options;
}

TEST(DashboardQueryTargetTest, InstantQueriesAtTheEnd) {
  const QueryOptions options = DashboardOptions();
  EXPECT_EQ(QueryRequestTarget("rate", 0, "/", options),
            "/api/v1/query?query=rate%28http_requests_total%5B5m%5D%29"
            "&time=1704153570.000&nocache=1");
  EXPECT_EQ(QueryRequestTarget("sum-rate", 7, "", options),
            "/api/v1/query?query=sum%20by%20%28job%29%20%28rate%28http_requests_total%5B5m%5D%29%29"
            "&time=1704153570.000&nocache=1");
  EXPECT_EQ(QueryRequestTarget("ratio", 0, "/prefix/", options),
            "/prefix/api/v1/query?query=sum%28rate%28http_requests_total%7Bcode%3D%22500%22%7D"
            "%5B5m%5D%29%29%20%2F%20sum%28rate%28http_requests_total%5B5m%5D%29%29"
            "&time=1704153570.000&nocache=1");
}

TEST(DashboardQueryTargetTest, RangeQueryCoversTheDayBeforeTheEnd) {
  const QueryOptions options = DashboardOptions();
  EXPECT_EQ(QueryRequestTarget("range-1d", 0, "/", options),
            "/api/v1/query_range?query=sum%20by%20%28job%29%20%28rate%28http_requests_total"
            "%5B5m%5D%29%29&start=1704067170.000&end=1704153570.000&step=60&nocache=1");
}

TEST(DashboardQueryTargetTest, EveryWorkloadSendsItsExpression) {
  const QueryOptions options = DashboardOptions();
  for (const DashboardQuery& query : kDashboardQueries) {
    const std::string name(query.name);
    ASSERT_TRUE(CheckWorkloadName(name).ok()) << name;
    EXPECT_EQ(WorkloadQuery(name, 3, options), query.expr);
    const std::string target = QueryRequestTarget(name, 3, "/", options);
    const std::string path = query.range ? "/api/v1/query_range?query=" : "/api/v1/query?query=";
    ASSERT_EQ(target.rfind(path, 0), 0u) << target;
    const size_t end = target.find('&');
    EXPECT_EQ(UrlDecode(target.substr(path.size(), end - path.size())), query.expr) << target;
  }
}

TEST(ExpandWorkloadsTest, GroupsAndLists) {
  std::vector<std::string> workloads;
  ASSERT_TRUE(ExpandWorkloads("all", &workloads).ok());
  EXPECT_EQ(workloads, (std::vector<std::string>{"q1", "q2", "q3"}));
  ASSERT_TRUE(ExpandWorkloads("dashboard", &workloads).ok());
  EXPECT_EQ(workloads, (std::vector<std::string>{"rate", "sum-rate", "hist-quantile", "topk",
                                                 "ratio", "range-1d"}));
  ASSERT_TRUE(ExpandWorkloads("q2,topk", &workloads).ok());
  EXPECT_EQ(workloads, (std::vector<std::string>{"q2", "topk"}));
  EXPECT_TRUE(ExpandWorkloads("rate,q9", &workloads).IsInvalidArgument());
  EXPECT_TRUE(ExpandWorkloads(",", &workloads).IsInvalidArgument());
}

}  // namespace
}  // namespace ingot::bench
