// Verification that a server has made every sent value queryable, through the Prometheus-style
// query API that Ingot and VictoriaMetrics both serve:
//   GET <url>/api/v1/query?query=sum(count_over_time(<selector>[<R>s]))&time=<t>&nocache=1
// with t just after the last timestamp and R covering the first one. `nocache=1` keeps
// VictoriaMetrics from answering from its rollup cache a count it computed before all data arrived;
// servers that do not know the parameter ignore it.
//
// Thread safety: pure functions, and WaitUntilQueryable runs on the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "bench/ingot_bench/cli_values.h"
#include "bench/ingot_bench/report.h"
#include "config/status.h"
#include "config/url_encoding.h"

namespace ingot::bench {

inline constexpr std::string_view kDefaultVerifySelector = R"({__name__=~"cpu_.*"})";

// The request target (path and query) of the count query for timestamps [first_ts_ns, last_ts_ns].
std::string CountQueryTarget(std::string_view base_path, std::string_view selector,
                             int64_t first_ts_ns, int64_t last_ts_ns);

// Reads data.result[0].value[1] of a Prometheus query answer as a number; an empty result is 0.
Status ParsePrometheusScalar(std::string_view json, double* value);

struct VerifyOptions {
  std::string selector = std::string(kDefaultVerifySelector);
  int64_t first_ts_ns = 0;
  int64_t last_ts_ns = 0;
  uint64_t expected_values = 0;
  int64_t timeout_ns = 300'000'000'000;  // give up after this long past the end of sending
  int64_t request_timeout_ns = 30'000'000'000;
};

// Polls `url` until it counts at least expected_values (or the timeout passes, or the server
// rejects the query with a 4xx other than 408 and 429, which asking again would not change) and
// fills *report;
// it pauses between polls as long as the last one took (10..100 ms), so the cadence adds little to
// the reported time and polling does not starve a server that is still ingesting;
// queryable_after_s is measured from `send_start`.
void WaitUntilQueryable(const Target& url, const VerifyOptions& options,
                        std::chrono::steady_clock::time_point send_start, VerifyReport* report);

}  // namespace ingot::bench
