#include "bench/ingot_bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace ingot::bench {
namespace {

// Values below kSubBuckets map to themselves; 64-bit values reach exponent 63.
constexpr size_t kBuckets = LogLinearHistogram::kSubBuckets * (64 - 6);

}  // namespace

LogLinearHistogram::LogLinearHistogram() : counts_(kBuckets, 0) {}

size_t LogLinearHistogram::BucketOf(uint64_t value) {
  if (value < kSubBuckets) return static_cast<size_t>(value);
  const int exponent = 63 - std::countl_zero(value);  // >= kSubBucketBits
  const int shift = exponent - kSubBucketBits;
  const uint64_t sub = (value >> shift) & (kSubBuckets - 1);
  return static_cast<size_t>((static_cast<uint64_t>(shift) + 1) * kSubBuckets + sub);
}

uint64_t LogLinearHistogram::BucketLow(size_t bucket) {
  if (bucket < kSubBuckets) return bucket;
  const uint64_t shift = bucket / kSubBuckets - 1;
  const uint64_t sub = bucket % kSubBuckets;
  return (kSubBuckets + sub) << shift;
}

uint64_t LogLinearHistogram::BucketWidth(size_t bucket) {
  if (bucket < kSubBuckets) return 1;
  return uint64_t{1} << (bucket / kSubBuckets - 1);
}

void LogLinearHistogram::Record(uint64_t value) {
  ++counts_[BucketOf(value)];
  ++count_;
  sum_ += value;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void LogLinearHistogram::Merge(const LogLinearHistogram& other) {
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t LogLinearHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t mid = BucketLow(i) + (BucketWidth(i) - 1) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

}  // namespace ingot::bench
