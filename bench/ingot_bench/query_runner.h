// RunQueries: concurrent queries against the Prometheus/VictoriaMetrics-style HTTP API.
//
// Over the cpu workload of `ingot-bench ingest` ("all"), each over [start, end]:
//   q1  one series    GET /api/v1/export?match[]=cpu_usage_user{hostname="host_<k>"}
//   q2  one field of every host
//                     GET /api/v1/export?match[]=cpu_usage_user
//   q3  hourly average per host
//                     GET /api/v1/query_range?query=avg_over_time(cpu_usage_user[1h])&step=3600
// q1 walks through the hosts so that successive queries read different series.
//
// Dashboard panels over the data of `ingot-bench dashboard-data` ("dashboard"): instant queries
// (GET /api/v1/query?query=...&time=<end>) and one range query, see kDashboardQueries.
//
// Every /api/v1/query and /api/v1/query_range request carries nocache=1, which keeps
// VictoriaMetrics from answering from its rollup result cache (the computation is measured, not
// the cache); other servers ignore the parameter.
//
// Thread safety: RunQueries runs `concurrency` threads of its own and returns after joining them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/ingot_bench/report.h"
#include "config/status.h"

namespace ingot::bench {

// A dashboard panel: a PromQL expression, evaluated at the end of the range (instant) or over the
// day before it at 60 s steps (range).
struct DashboardQuery {
  std::string_view name;
  std::string_view expr;
  bool range;
};
inline constexpr int64_t kDashboardRangeNs = 86'400'000'000'000;
inline constexpr int64_t kDashboardStepS = 60;
inline constexpr DashboardQuery kDashboardQueries[] = {
    {"rate", "rate(http_requests_total[5m])", false},
    {"sum-rate", "sum by (job) (rate(http_requests_total[5m]))", false},
    {"hist-quantile",
     "histogram_quantile(0.9, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))",
     false},
    {"topk", "topk(5, rate(http_requests_total[5m]))", false},
    {"ratio",
     "sum(rate(http_requests_total{code=\"500\"}[5m])) / sum(rate(http_requests_total[5m]))",
     false},
    {"range-1d", "sum by (job) (rate(http_requests_total[5m]))", true},
};

struct QueryOptions {
  std::string target = "http://127.0.0.1:8086";
  std::vector<std::string> workloads = {"q1", "q2", "q3"};
  uint32_t concurrency = 1;
  // A workload ends after `duration_ns` or after `iterations` queries (over all connections),
  // whichever comes first; 0 turns either limit off, and one of them must be set.
  int64_t duration_ns = 10'000'000'000;
  uint64_t iterations = 0;
  // Queries per connection before a workload's clock starts; not in the report.
  uint32_t warmup = 0;
  int64_t start_ns = 0;  // query range, inclusive; instant queries are evaluated at end_ns
  int64_t end_ns = 0;
  uint32_t hosts = 100;  // q1 picks host_<k % hosts>
  int64_t timeout_ns = 60'000'000'000;
  bool quiet = false;
};

// "q1", "q2", "q3" or a name of kDashboardQueries; anything else is InvalidArgument.
Status CheckWorkloadName(const std::string& name);

// A comma list of workload names, where "all" stands for q1,q2,q3 and "dashboard" for every
// kDashboardQueries name, in that order. Unknown names and an empty list are InvalidArgument.
Status ExpandWorkloads(std::string_view list, std::vector<std::string>* workloads);

// The query a workload sends: the PromQL expression, or the series selector of q1 (for host_<k>)
// and q2.
std::string WorkloadQuery(const std::string& workload, uint64_t k, const QueryOptions& options);

// The request target of the k-th query of `workload` below `base_path`.
std::string QueryRequestTarget(const std::string& workload, uint64_t k,
                               const std::string& base_path, const QueryOptions& options);

Status RunQueries(const QueryOptions& options, std::vector<QueryWorkloadReport>* reports);

}  // namespace ingot::bench
