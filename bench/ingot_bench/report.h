// The results of a run and how they are printed: a human-readable report on stdout and the same
// numbers as JSON for --json.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/ingot_bench/histogram.h"

namespace ingot::bench {

struct VerifyReport {
  bool requested = false;
  bool complete = false;         // the server answered a count >= the values sent
  uint64_t expected_values = 0;
  uint64_t counted_values = 0;   // last count the server answered
  double queryable_after_s = 0;  // from the start of sending to the answer that confirmed it
  uint32_t polls = 0;
  std::string last_error;
};

struct IngestReport {
  std::string target;
  uint32_t connections = 0;
  double send_seconds = 0;  // from the first batch to the last acknowledged one
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t values = 0;
  // Series of host names this run sent first (--new-series-ratio): new-series lines times fields.
  uint64_t new_series = 0;
  uint64_t batches = 0;
  // Throughput of values per whole second of the run.
  std::vector<double> per_second_values;
  std::map<std::string, uint64_t> errors;  // by kind
  std::string first_error;                 // kind and detail of the first failure
  bool has_write_latency = false;          // HTTP targets
  LogLinearHistogram write_latency_us;
  VerifyReport verify;

  double mean_values_per_s() const { return send_seconds > 0 ? values / send_seconds : 0; }
  double new_series_per_s() const { return send_seconds > 0 ? new_series / send_seconds : 0; }
  // New series per second from the start of sending until all were queryable; 0 unless verified.
  double queryable_new_series_per_s() const {
    return verify.complete && verify.queryable_after_s > 0 ? new_series / verify.queryable_after_s
                                                           : 0;
  }
  uint64_t error_count() const;
};

struct QueryWorkloadReport {
  std::string name;         // q1, q2, q3, rate, ...
  std::string description;  // what it asks for
  std::string query;        // the PromQL expression or series selector (q1: of its first query)
  std::string request;      // path and query string of its first request
  uint32_t concurrency = 0;
  double seconds = 0;
  uint64_t queries = 0;
  uint64_t response_bytes = 0;
  std::map<std::string, uint64_t> errors;
  std::string first_error;
  LogLinearHistogram latency_us;

  double queries_per_s() const { return seconds > 0 ? queries / seconds : 0; }
};

// Nearest-rank percentile of a sample; 0 when empty.
double SamplePercentile(std::vector<double> samples, double q);

std::string FormatIngestReport(const IngestReport& report);
std::string IngestReportJson(const IngestReport& report);
std::string FormatQueryReport(const std::vector<QueryWorkloadReport>& reports);
std::string QueryReportJson(const std::vector<QueryWorkloadReport>& reports);
// One row per target: values, send rate, time until queryable, errors (and new series when any
// run sent some).
std::string FormatCompareTable(const std::vector<IngestReport>& reports);
std::string CompareReportJson(const std::vector<IngestReport>& reports);

// "1.23M", "456k", "789".
std::string HumanCount(double value);

}  // namespace ingot::bench
