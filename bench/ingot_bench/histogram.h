// LogLinearHistogram: a fixed-size, mergeable histogram of non-negative integers (latencies in
// microseconds, throughputs).
//
// Values below 128 have a bucket each; above, every power of two is split into 128 equal buckets,
// so a reported percentile is within 1% of a recorded value. Two histograms merge by adding counts,
// which lets every connection record without sharing and the report combine them afterwards.
//
// Thread safety: none; one histogram per thread, Merge() after joining.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ingot::bench {

class LogLinearHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr uint64_t kSubBuckets = uint64_t{1} << kSubBucketBits;

  LogLinearHistogram();

  void Record(uint64_t value);
  void Merge(const LogLinearHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }

  // The value at quantile q in [0, 1] (nearest rank): the midpoint of the bucket holding that rank,
  // clamped to [min, max]. 0 when empty.
  uint64_t Percentile(double q) const;

  // Bucket arithmetic, exposed for tests.
  static size_t BucketOf(uint64_t value);
  static uint64_t BucketLow(size_t bucket);
  static uint64_t BucketWidth(size_t bucket);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace ingot::bench
