// The deterministic workload shared by the crash writer process and the crash tests: batch `b`
// holds kPointsPerBatch points spread over kSeries float series (plus one integer series), with
// timestamps that only grow from batch to batch and arrive out of order within a batch, plus
// kBackfillPerSeriesPerBatch backfill points per series whose timestamps only shrink from batch to
// batch: older than everything the series holds, they are late points once it has sealed a chunk.
// Every series is created the way ingest creates it: its definition is logged with its first
// points.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "chunk/series_key.h"

namespace ingot::testing {

inline constexpr int kCrashSeries = 8;
inline constexpr int kPointsPerSeriesPerBatch = 8;
inline constexpr int kBackfillPerSeriesPerBatch = 2;

struct WorkloadPoint {
  int series;  // 0..kCrashSeries-1 float, kCrashSeries = the integer series
  std::int64_t ts_ns;
  double value;
};

inline std::string WorkloadKey(int series) {
  std::string key;
  std::string host(1, 'h');
  host.append(std::to_string(series));
  const TagView tags[] = {{"host", host}};
  BuildSeriesKey("crash", tags, series == kCrashSeries ? "count" : "v", &key);
  return key;
}

// Batch `b` also creates one new series, ChurnKey(b), with a single point ChurnPoint(b): new
// series arrive all the time, as they do under Kubernetes churn.
inline std::string ChurnKey(std::int64_t batch) {
  std::string key;
  std::string pod(1, 'p');
  pod.append(std::to_string(batch));
  const TagView tags[] = {{"pod", pod}};
  BuildSeriesKey("churn", tags, "v", &key);
  return key;
}
inline std::int64_t ChurnTs(std::int64_t batch) { return batch * 1'000'000; }
inline double ChurnValue(std::int64_t batch) { return static_cast<double>(batch) + 0.25; }

inline std::uint64_t Mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

inline double WorkloadValue(std::uint64_t seed, int series, std::int64_t ts) {
  const std::uint64_t h = Mix(seed ^ Mix(static_cast<std::uint64_t>(ts) + series));
  return series == kCrashSeries
             ? static_cast<double>(static_cast<std::int64_t>(h % 100000))
             : static_cast<double>(static_cast<std::int64_t>(h % 20001) - 10000) / 100.0;
}

inline void WorkloadBatch(std::uint64_t seed, std::int64_t batch, std::vector<WorkloadPoint>* out) {
  out->clear();
  for (int s = 0; s <= kCrashSeries; ++s) {
    for (int j = kPointsPerSeriesPerBatch - 1; j >= 0; --j) {  // newest first: out of order
      const std::int64_t ts = (batch * kPointsPerSeriesPerBatch + j) * 1'000'000 - 5'000'000'000;
      out->push_back({s, ts, WorkloadValue(seed, s, ts)});
    }
    for (int j = 0; j < kBackfillPerSeriesPerBatch; ++j) {
      const std::int64_t ts =
          -1'000'000'000'000 - (batch * kBackfillPerSeriesPerBatch + j) * 1'000'000;
      out->push_back({s, ts, WorkloadValue(seed, s, ts)});
    }
  }
}

}  // namespace ingot::testing
