// RunIngest: sends a workload over N connections, paced or unlimited, bounded by a value count
// and/or a duration, while a progress meter samples the counters once per second; then optionally
// waits until the server has made every value queryable.
//
// Connections split the hosts of the generated workload (connection c owns a contiguous range),
// so each series arrives in time order on one connection; a replayed file is dealt out by batch.
//
// Thread safety: RunIngest may be called from one thread at a time (it installs a SIGINT handler).
#pragma once

#include <cstdint>
#include <string>

#include "bench/ingot_bench/cpu_workload.h"
#include "bench/ingot_bench/report.h"
#include "bench/ingot_bench/verify.h"
#include "config/status.h"

namespace ingot::bench {

inline constexpr std::string_view kFormatLineProtocol = "lp";
inline constexpr std::string_view kFormatRemoteWrite = "prometheus-remote-write";

struct IngestOptions {
  std::string target = "tcp://127.0.0.1:8089";
  uint32_t connections = 1;
  // Generated workloads: deal batches to the connections in turn (every series over every
  // connection) instead of splitting the hosts among them. Files are always dealt in turn.
  bool round_robin = false;
  double rate_values_per_s = 0;  // 0: unlimited
  int64_t duration_ns = 0;       // 0: until the values are sent
  uint64_t values = 1'000'000;   // 0: until the duration ends; rounded down to whole lines
  CpuWorkloadOptions workload;   // total_lines is derived from `values`
  std::string file;              // replay this line-protocol file instead of generating
  size_t batch_lines = 5000;
  // "lp" (line protocol, as the target's scheme says) or "prometheus-remote-write" (snappy protobuf
  // WriteRequests to an http:// remote-write URL, encoded before the clock starts).
  std::string format = "lp";
  uint32_t rw_series_per_request = 500;  // remote write: series per request
  uint32_t rw_samples_per_series = 1;    // remote write: consecutive samples of each series
  std::string db = "bench";
  int64_t timeout_ns = 30'000'000'000;
  bool quiet = false;
  std::string verify_url;  // empty: no verification
  int64_t verify_timeout_ns = 300'000'000'000;
  std::string verify_selector = std::string(kDefaultVerifySelector);
};

// Checks the options that flags alone cannot (bounds, URL syntax, combinations).
Status ValidateIngestOptions(const IngestOptions& options);

// Runs one ingest. Returns an error only when the run could not start (bad target, unreadable
// file); send failures and an incomplete verification are in the report.
Status RunIngest(const IngestOptions& options, IngestReport* report);

// The [first, last] timestamps of the generated workload for these options.
// REQUIRES: options.values > 0.
void GeneratedTimeRange(const IngestOptions& options, int64_t* first_ts_ns, int64_t* last_ts_ns);

}  // namespace ingot::bench
