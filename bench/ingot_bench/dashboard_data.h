// DashboardData: the samples of the dashboard query workloads (query_runner.h), written in one of
// three formats so that Ingot, Prometheus and VictoriaMetrics are loaded with the same samples:
//
//   lp           line protocol for Ingot's /write (ns timestamps). Ingot names a series
//                <measurement>_<field>, so measurement http_requests with field total is the
//                PromQL series http_requests_total, and the tags are its labels:
//                  http_requests,code=200,instance=host-0000:9100,job=api total=8211
//                  1704067200000000000
//                  http_request_duration_seconds,instance=host-0000:9100,job=api,le=0.005 bucket=3
//                  ...
//   openmetrics  OpenMetrics text for `promtool tsdb create-blocks-from openmetrics` (timestamps in
//                seconds, "# EOF" at the end):
//                  http_requests_total{code="200",instance="host-0000:9100",job="api"} 8211
//                  1704067200
//   prometheus   Prometheus text with ms timestamps for VictoriaMetrics' /api/v1/import/prometheus:
//                  http_requests_total{code="200",instance="host-0000:9100",job="api"} 8211
//                  1704067200000
//
// The series:
//   http_requests_total{job, instance, code}: `counters` counters. Counter i belongs to instance
//     host-<i / 5> (4 digits, ":9100") and code kDashboardCodes[i % 5]; instance k is in job
//     kDashboardJobs[k % 5]. So 1,000 counters are 5 jobs x 40 instances x 5 codes. Each counts
//     requests at a per-instance rate (5..50/s) split over the codes (85% 200 ... 1% 500), with
//     +-50% noise per interval.
//   http_request_duration_seconds_bucket{job, instance, le}: `histogram_sets` histograms, set j on
//     instance host-<j> (same job as its counters), with the 10 finite bounds of kDashboardBuckets
//     and "+Inf": cumulative counts of 2..21 observations/s whose median latency (20..320 ms per
//     set) swings by +-50% over a day.
//   An instance restarts about once a day (a hash of seed, instance and row decides): all its
//   counters and buckets restart from 0, which PromQL's rate() reads as a counter reset.
// Rows are ordered by time (start_ns, start_ns + interval_ns, ...; duration_ns / interval_ns of
// them), each holding every counter and then every bucket. Values are integers, printed exactly,
// so the three formats carry the same numbers. Same options, same bytes.
//
// Thread safety: none; one generator per thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/ingot_bench/byte_buffer.h"
#include "bench/ingot_bench/cpu_workload.h"
#include "config/status.h"

namespace ingot::bench {

inline constexpr std::array<std::string_view, 5> kDashboardJobs = {"api", "web", "auth", "billing",
                                                                   "search"};
inline constexpr std::array<std::string_view, 5> kDashboardCodes = {"200", "201", "404", "429",
                                                                    "500"};
// The `le` values of a histogram, "+Inf" last.
inline constexpr std::array<std::string_view, 11> kDashboardBuckets = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "+Inf"};

enum class DashboardFormat { kLineProtocol, kOpenMetrics, kPrometheusText };

// "lp", "openmetrics" or "prometheus".
Status ParseDashboardFormat(std::string_view text, DashboardFormat* format);

struct DashboardDataOptions {
  uint32_t counters = 1000;
  uint32_t histogram_sets = 50;
  int64_t start_ns = kDefaultStartNs;
  int64_t interval_ns = 30'000'000'000;
  int64_t duration_ns = 86'400'000'000'000;  // rows = duration_ns / interval_ns
  uint64_t seed = 1;
};

// Start and interval must be whole milliseconds (the unit of Prometheus text), the interval > 0,
// at least one row and one series.
Status ValidateDashboardDataOptions(const DashboardDataOptions& options);

class DashboardData {
 public:
  // REQUIRES: ValidateDashboardDataOptions(options) is OK.
  DashboardData(const DashboardDataOptions& options, DashboardFormat format);

  // Appends what precedes the first row (OpenMetrics: the TYPE lines; else nothing).
  void AppendHeader(ByteBuffer& out) const;
  // Appends the next row of samples; false (and nothing appended) once every row is out.
  bool AppendRow(ByteBuffer& out);
  // Appends what follows the last row (OpenMetrics: "# EOF"; else nothing).
  void AppendFooter(ByteBuffer& out) const;

  uint64_t rows() const { return rows_; }
  uint64_t series() const { return counter_prefix_.size() + bucket_prefix_.size(); }
  uint64_t samples() const { return rows_ * series(); }
  int64_t first_ts_ns() const { return options_.start_ns; }
  int64_t last_ts_ns() const {
    return options_.start_ns + static_cast<int64_t>(rows_ - 1) * options_.interval_ns;
  }

 private:
  void AppendSample(ByteBuffer& out, const std::string& prefix, uint64_t value) const;

  DashboardDataOptions options_;
  DashboardFormat format_;
  uint64_t rows_;
  uint64_t row_ = 0;
  // Per series, the line up to the value: "http_requests,code=200,...,job=api total=" or
  // "http_requests_total{code=\"200\",...} ".
  std::vector<std::string> counter_prefix_;
  std::vector<std::string> bucket_prefix_;  // histogram_sets x kDashboardBuckets.size()
  std::vector<uint64_t> counter_value_;
  std::vector<uint64_t> bucket_value_;
  std::vector<double> counter_rate_per_s_;    // mean increase of each counter
  std::vector<double> histogram_rate_per_s_;  // observations per second of each set
  std::vector<double> histogram_median_s_;
  std::string ts_text_;  // " <timestamp>\n" of the current row
};

// Writes the whole data set to `path` ("-" = stdout) and fills the counts.
struct DashboardDataSummary {
  uint64_t series = 0;
  uint64_t samples = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;
  int64_t first_ts_ns = 0;
  int64_t last_ts_ns = 0;
};
Status WriteDashboardData(const DashboardDataOptions& options, DashboardFormat format,
                          const std::string& path, DashboardDataSummary* summary);
std::string DashboardDataSummaryJson(const DashboardDataSummary& summary);

}  // namespace ingot::bench
