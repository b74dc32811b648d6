#include "bench/ingot_bench/histogram.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "bench/ingot_bench/report.h"

namespace ingot::bench {
namespace {

TEST(LogLinearHistogramTest, EmptyReportsZero) {
  LogLinearHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
}

TEST(LogLinearHistogramTest, SmallValuesAreExact) {
  LogLinearHistogram h;
  for (uint64_t v = 0; v < 100; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(0.5), 49u);
  EXPECT_EQ(h.Percentile(0.99), 98u);
  EXPECT_EQ(h.Percentile(1.0), 99u);
  EXPECT_EQ(h.Percentile(0.0), 0u);
  EXPECT_DOUBLE_EQ(h.mean(), 49.5);
}

TEST(LogLinearHistogramTest, PercentilesWithinOnePercent) {
  LogLinearHistogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v * 37);
  const struct {
    double q;
    double expected;
  } cases[] = {{0.5, 50000 * 37.0}, {0.99, 99000 * 37.0}, {0.999, 99900 * 37.0}};
  for (const auto& c : cases) {
    EXPECT_NEAR(static_cast<double>(h.Percentile(c.q)), c.expected, c.expected * 0.01) << c.q;
  }
  EXPECT_EQ(h.min(), 37u);
  EXPECT_EQ(h.max(), 3700000u);
}

TEST(LogLinearHistogramTest, BucketsTileTheRange) {
  for (size_t b = 0; b + 1 < 128 * 20; ++b) {
    ASSERT_EQ(LogLinearHistogram::BucketLow(b) + LogLinearHistogram::BucketWidth(b),
              LogLinearHistogram::BucketLow(b + 1))
        << b;
    ASSERT_EQ(LogLinearHistogram::BucketOf(LogLinearHistogram::BucketLow(b)), b);
  }
  EXPECT_LT(LogLinearHistogram::BucketOf(UINT64_MAX), 128u * 58u);
}

TEST(LogLinearHistogramTest, MergeEqualsRecordingEverything) {
  std::mt19937_64 rng(7);
  LogLinearHistogram all, a, b;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t v = rng() % 5'000'000;
    all.Record(v);
    (i % 3 == 0 ? a : b).Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double q : {0.1, 0.5, 0.9, 0.99, 0.999}) EXPECT_EQ(a.Percentile(q), all.Percentile(q));
}

TEST(SamplePercentileTest, NearestRank) {
  EXPECT_EQ(SamplePercentile({}, 0.5), 0);
  EXPECT_EQ(SamplePercentile({5, 1, 4, 2, 3}, 0.5), 3);
  EXPECT_EQ(SamplePercentile({5, 1, 4, 2, 3}, 0.99), 5);
  EXPECT_EQ(SamplePercentile({5, 1, 4, 2, 3}, 0.0), 1);
}

}  // namespace
}  // namespace ingot::bench
