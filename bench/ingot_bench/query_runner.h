// RunQueries: concurrent range queries against the Prometheus/VictoriaMetrics-style HTTP API,
// for the three workloads of the query benchmarks, each over [start, end]:
//   q1  one series    GET /api/v1/export?match[]=cpu_usage_user{hostname="host_<k>"}
//   q2  one field of every host
//                     GET /api/v1/export?match[]=cpu_usage_user
//   q3  hourly average per host
//                     GET /api/v1/query_range?query=avg_over_time(cpu_usage_user[1h])&step=3600
// q1 walks through the hosts so that successive queries read different series.
//
// Thread safety: RunQueries runs `concurrency` threads of its own and returns after joining them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/ingot_bench/report.h"
#include "config/status.h"

namespace ingot::bench {

struct QueryOptions {
  std::string target = "http://127.0.0.1:8086";
  std::vector<std::string> workloads = {"q1", "q2", "q3"};
  uint32_t concurrency = 1;
  int64_t duration_ns = 10'000'000'000;  // per workload
  int64_t start_ns = 0;                  // query range, inclusive
  int64_t end_ns = 0;
  uint32_t hosts = 100;  // q1 picks host_<k % hosts>
  int64_t timeout_ns = 60'000'000'000;
  bool quiet = false;
};

// "q1", "q2", "q3"; anything else is InvalidArgument.
Status CheckWorkloadName(const std::string& name);

// The request target of the k-th query of `workload` below `base_path`.
std::string QueryRequestTarget(const std::string& workload, uint64_t k,
                               const std::string& base_path, const QueryOptions& options);

Status RunQueries(const QueryOptions& options, std::vector<QueryWorkloadReport>* reports);

}  // namespace ingot::bench
