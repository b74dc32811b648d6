// PromQL's function kernels: extrapolated rates with counter resets, regression, smoothing, the
// *_over_time family with NaN and compensated sums, histogram and sample quantiles, value
// functions with Go's clamp and logarithm semantics, and the calendar functions. Expected values
// are worked out by hand from Prometheus' formulas in the comments.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <optional>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "codec/simd/kernels.h"
#include "query/promql_functions.h"

namespace ingot::promql {
namespace {

constexpr std::int64_t kMs = 1000 * 1000;
constexpr std::int64_t kSecond = 1000 * kMs;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Whole milliseconds, as Prometheus' timestamps are.
std::int64_t Sec(double s) { return std::llround(s * 1000) * kMs; }

struct Sample {
  std::int64_t ts;
  double value;
};

// Range function `name` over `samples` in the window (start_ns, end_ns]; nullopt for no value.
std::optional<double> Range(std::string_view name, const std::vector<Sample>& samples,
                            std::int64_t start_ns, std::int64_t end_ns,
                            std::vector<double> args = {},
                            std::int64_t eval_ns = kEvalAtWindowEnd) {
  const RangeFunction fn = FindRangeFunction(name);
  EXPECT_NE(fn, nullptr) << name;
  if (fn == nullptr) return std::nullopt;
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  for (const Sample& s : samples) {
    ts.push_back(s.ts);
    values.push_back(s.value);
  }
  Window w{ts, values, start_ns, end_ns};
  w.eval_ns = eval_ns;
  double out = 0;
  if (!fn(w, args, &out)) return std::nullopt;
  return out;
}

// Samples every `step_s` seconds from `first_s` on, with the given values.
std::vector<Sample> Every(double first_s, double step_s, std::vector<double> values) {
  std::vector<Sample> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    out.push_back({Sec(first_s + step_s * static_cast<double>(i)), values[i]});
  }
  return out;
}

double Value(std::string_view name, double v, std::vector<double> args = {}) {
  const ValueFunction fn = FindValueFunction(name);
  EXPECT_NE(fn, nullptr) << name;
  return fn == nullptr ? kNaN : fn(v, args);
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Runs `body` at every vector level this CPU has (the query's kernels follow the codec's active
// level), then restores the detected one: each level must give the same bits.
template <class Body>
void AtEveryLevel(Body body) {
  using codec::simd::IsaLevel;
  const IsaLevel detected = codec::simd::DetectIsa();
  for (const IsaLevel level : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!codec::simd::ForceIsa(level)) continue;
    SCOPED_TRACE(codec::simd::IsaName(level));
    body();
  }
  codec::simd::ForceIsa(detected);
}

// ---------------------------------------------------------------------------------------------
// Lookup

TEST(PromqlFunctions, LookupKnowsEveryNameAndNothingElse) {
  for (std::string_view name : {"rate",
                                "irate",
                                "increase",
                                "delta",
                                "idelta",
                                "deriv",
                                "predict_linear",
                                "resets",
                                "changes",
                                "double_exponential_smoothing",
                                "avg_over_time",
                                "min_over_time",
                                "max_over_time",
                                "sum_over_time",
                                "count_over_time",
                                "stddev_over_time",
                                "stdvar_over_time",
                                "last_over_time",
                                "first_over_time",
                                "present_over_time",
                                "quantile_over_time",
                                "mad_over_time",
                                "ts_of_first_over_time",
                                "ts_of_last_over_time",
                                "ts_of_min_over_time",
                                "ts_of_max_over_time"}) {
    EXPECT_NE(FindRangeFunction(name), nullptr) << name;
    EXPECT_EQ(FindValueFunction(name), nullptr) << name;
  }
  for (std::string_view name :
       {"abs",         "ceil",        "floor",         "exp",   "ln",    "log2",
        "log10",       "sqrt",        "sgn",           "round", "clamp", "clamp_min",
        "clamp_max",   "deg",         "rad",           "sin",   "cos",   "tan",
        "asin",        "acos",        "atan",          "sinh",  "cosh",  "tanh",
        "asinh",       "acosh",       "atanh",         "year",  "month", "day_of_month",
        "day_of_year", "day_of_week", "days_in_month", "hour",  "minute"}) {
    EXPECT_NE(FindValueFunction(name), nullptr) << name;
    EXPECT_EQ(FindRangeFunction(name), nullptr) << name;
  }
  EXPECT_EQ(FindRangeFunction("absent_over_time"), nullptr);
  EXPECT_EQ(FindRangeFunction("Rate"), nullptr);
  EXPECT_EQ(FindValueFunction("time"), nullptr);
  EXPECT_EQ(FindValueFunction(""), nullptr);
}

// ---------------------------------------------------------------------------------------------
// rate, increase, delta

TEST(PromqlFunctions, RateExtrapolatesToBothBoundaries) {
  // Window (0s, 60s], samples at 5, 15, ..., 55 s: raw increase 150 - 100 = 50 over 50 s,
  // average interval 10 s, threshold 11 s. Both gaps (5 s) are under it: extrapolate all the way,
  // factor (50 + 5 + 5) / 50 = 1.2. The zero point (50 * 100/50 = 100 s back) is farther away.
  const auto samples = Every(5, 10, {100, 110, 120, 130, 140, 150});
  EXPECT_DOUBLE_EQ(*Range("increase", samples, 0, Sec(60)), 60);
  EXPECT_DOUBLE_EQ(*Range("rate", samples, 0, Sec(60)), 1);
  EXPECT_DOUBLE_EQ(*Range("delta", samples, 0, Sec(60)), 60);
}

TEST(PromqlFunctions, RateAddsTheValueBeforeEachCounterReset) {
  // 100 110 120 | 5 15 25: raw 25 - 100 = -75, plus 120 lost at the reset = 45; factor 1.2.
  const auto samples = Every(5, 10, {100, 110, 120, 5, 15, 25});
  EXPECT_DOUBLE_EQ(*Range("increase", samples, 0, Sec(60)), 54);
  EXPECT_DOUBLE_EQ(*Range("rate", samples, 0, Sec(60)), 0.9);
  // delta is for gauges: no reset handling, -75 * 1.2.
  EXPECT_DOUBLE_EQ(*Range("delta", samples, 0, Sec(60)), -90);
  // Two resets in a row: 10 | 4 | 2 8 -> 8 - 10 + 10 + 4 = 12.
  const auto twice = Every(5, 10, {10, 4, 2, 8});
  // sampled 30 s, average 10 s; gaps 5 s and 60 - 35 = 25 s (>= 11: half an interval, 5 s).
  // Zero point 30 * 10/12 = 25 s back, farther than 5 s. factor (30 + 5 + 5) / 30.
  EXPECT_DOUBLE_EQ(*Range("increase", twice, 0, Sec(60)), 12.0 * 40 / 30);
}

TEST(PromqlFunctions, CounterIsNotExtrapolatedBelowZero) {
  // Window (0s, 60s], samples at 20..60 s: 1 11 21 31 41. Raw 40 over 40 s, average 10 s. The
  // start gap is 20 s >= 11 s, so only half an interval (5 s) would be added, but the counter
  // would reach zero 40 * 1/40 = 1 s before the first sample: stop there. The end gap is 0.
  const auto samples = Every(20, 10, {1, 11, 21, 31, 41});
  EXPECT_DOUBLE_EQ(*Range("increase", samples, 0, Sec(60)), 41);  // 40 * (40 + 1 + 0) / 40
  EXPECT_DOUBLE_EQ(*Range("rate", samples, 0, Sec(60)), 41.0 / 60);
  // delta has no such floor: 40 * (40 + 5 + 0) / 40.
  EXPECT_DOUBLE_EQ(*Range("delta", samples, 0, Sec(60)), 45);
  // A first value of 0 pins the start to the first sample.
  const auto from_zero = Every(2, 2, {0, 2, 4});
  // Raw 4 over 4 s, average 2 s, threshold 2.2 s; start gap 2 s (< 2.2: extrapolate fully, but
  // the zero point is 0 s away), end gap 54 s (half an interval, 1 s): 4 * (4 + 0 + 1) / 4.
  EXPECT_DOUBLE_EQ(*Range("increase", from_zero, 0, Sec(60)), 5);
  // For delta the full start gap counts: 4 * (4 + 2 + 1) / 4.
  EXPECT_DOUBLE_EQ(*Range("delta", from_zero, 0, Sec(60)), 7);
  // A negative first value (not a proper counter) skips the zero-point rule.
  const auto negative = Every(20, 10, {-1, 9, 19, 29, 39});
  EXPECT_DOUBLE_EQ(*Range("increase", negative, 0, Sec(60)), 45);
}

TEST(PromqlFunctions, ExtrapolationThresholdIsElevenTenthsOfTheAverageInterval) {
  // Samples at 10 and 20 s in (0s, 30s] -> gaps of 10 s against an average of 10 s: full
  // extrapolation, (10 + 10 + 10) / 10 = 3.
  EXPECT_DOUBLE_EQ(*Range("delta", Every(10, 10, {0, 1}), 0, Sec(30)), 3);
  // A start gap of 10.999 s is still under 11 s: extrapolated fully, (10 + 10.999 + 0) / 10.
  EXPECT_DOUBLE_EQ(*Range("delta", Every(10.999, 10, {0, 1}), 0, Sec(20.999)), 2.0999);
  // Exactly 11 s is not: half an interval instead, (10 + 5 + 0) / 10.
  EXPECT_DOUBLE_EQ(*Range("delta", Every(11, 10, {0, 1}), 0, Sec(21)), 1.5);
}

TEST(PromqlFunctions, RateNeedsTwoSamples) {
  EXPECT_FALSE(Range("rate", {{Sec(10), 5}}, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("increase", {{Sec(10), 5}}, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("delta", {{Sec(10), 5}}, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("irate", {{Sec(10), 5}}, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("idelta", {{Sec(10), 5}}, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("deriv", {{Sec(10), 5}}, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("predict_linear", {{Sec(10), 5}}, 0, Sec(60), {1}).has_value());
}

TEST(PromqlFunctions, SamplesAtOneInstantAreNotExtrapolated) {
  // Two samples at one timestamp (a subquery's points can coincide): no interval to extrapolate
  // from, so the raw change; irate and idelta have no interval to divide by.
  const std::vector<Sample> same = {{Sec(10), 1}, {Sec(10), 4}};
  EXPECT_EQ(*Range("delta", same, 0, Sec(60)), 3);
  EXPECT_DOUBLE_EQ(*Range("rate", same, 0, Sec(60)), 3.0 / 60);
  EXPECT_FALSE(Range("irate", same, 0, Sec(60)).has_value());
  EXPECT_FALSE(Range("idelta", same, 0, Sec(60)).has_value());
}

TEST(PromqlFunctions, RateDividesByTheRangeNotTheSampledInterval) {
  // A 90 s range at a Unix time: sampled 60 s, gaps 15 s each (< 22 s, and the zero point is
  // 100 s back): 60 * (60 + 15 + 15) / 60 = 90, per second 90 / 90.
  const std::int64_t end = Sec(1'700'000'090);
  const std::int64_t start = end - 90 * kSecond;
  const auto samples = Every(1'700'000'015, 20, {100, 120, 140, 160});
  EXPECT_DOUBLE_EQ(*Range("rate", samples, start, end), 1);
  EXPECT_DOUBLE_EQ(*Range("increase", samples, start, end), 90);
}

// ---------------------------------------------------------------------------------------------
// irate, idelta

TEST(PromqlFunctions, IrateUsesTheLastTwoSamples) {
  const auto rising = Every(10, 10, {0, 100, 110, 130});
  EXPECT_DOUBLE_EQ(*Range("irate", rising, 0, Sec(60)), 2);  // (130 - 110) / 10 s
  EXPECT_DOUBLE_EQ(*Range("idelta", rising, 0, Sec(60)), 20);
  // After a reset irate takes the new value as the increase; idelta just subtracts.
  const auto reset = Every(10, 10, {100, 110, 5});
  EXPECT_DOUBLE_EQ(*Range("irate", reset, 0, Sec(60)), 0.5);
  EXPECT_DOUBLE_EQ(*Range("idelta", reset, 0, Sec(60)), -105);
  // A NaN compares false, so it is no reset: NaN - 110.
  EXPECT_TRUE(std::isnan(*Range("irate", Every(10, 10, {110, kNaN}), 0, Sec(60))));
  // Irregular spacing: 250 ms between the last two.
  const std::vector<Sample> close = {{Sec(1), 1}, {Sec(2), 2}, {Sec(2.25), 3}};
  EXPECT_DOUBLE_EQ(*Range("irate", close, 0, Sec(60)), 4);
}

// ---------------------------------------------------------------------------------------------
// deriv, predict_linear

TEST(PromqlFunctions, DerivIsTheLeastSquaresSlope) {
  // At a 2023 Unix time, where seconds squared would lose precision without the shift to the
  // first sample: 1 3 5 7 every 10 s -> 0.2 per second.
  const auto line = Every(1'700'000'000, 10, {1, 3, 5, 7});
  EXPECT_DOUBLE_EQ(*Range("deriv", line, Sec(1'699'999'990), Sec(1'700'000'030)), 0.2);
  // Noisy: x = 0 10 20 30, y = 1 4 5 8; x mean 15, y mean 4.5, Sxy = (-15)(-3.5) + (-5)(-0.5) +
  // 5(0.5) + 15(3.5) = 110, Sxx = 500 -> 0.22.
  const auto noisy = Every(1'700'000'000, 10, {1, 4, 5, 8});
  EXPECT_DOUBLE_EQ(*Range("deriv", noisy, Sec(1'699'999'990), Sec(1'700'000'030)), 0.22);
  // A constant series has slope 0 exactly, an infinite constant none (NaN).
  EXPECT_EQ(*Range("deriv", Every(1'700'000'000, 7, {0.1, 0.1, 0.1}), 0, Sec(1'800'000'000)), 0);
  EXPECT_TRUE(std::isnan(*Range("deriv", Every(10, 10, {kInf, kInf}), 0, Sec(60))));
}

TEST(PromqlFunctions, PredictLinearCountsFromTheEvaluationTime) {
  // y = 1 + 0.2 (t - 100 s): samples at 100..130 s, window (90s, 130s].
  const auto line = Every(100, 10, {1, 3, 5, 7});
  // Evaluated at the window's end (130 s, y = 7): 60 s later y = 7 + 12.
  EXPECT_DOUBLE_EQ(*Range("predict_linear", line, Sec(90), Sec(130), {60}), 19);
  EXPECT_DOUBLE_EQ(*Range("predict_linear", line, Sec(90), Sec(130), {0}), 7);
  // With `offset 1h` the window ends an hour before the evaluation: Prometheus predicts from the
  // evaluation time, y(130 s + 3600 s + 60 s) = 7 + 0.2 * 3660.
  EXPECT_DOUBLE_EQ(*Range("predict_linear", line, Sec(90), Sec(130), {60}, Sec(3730)), 739);
  EXPECT_FALSE(Range("predict_linear", line, Sec(90), Sec(130)).has_value());  // no argument
}

// ---------------------------------------------------------------------------------------------
// resets, changes

TEST(PromqlFunctions, ResetsAndChangesWithNaN) {
  // 5 -> 3 is a reset, 3 -> NaN and NaN -> 1 compare false, 1 -> 4 no, 4 -> 2 a reset.
  EXPECT_EQ(*Range("resets", Every(1, 1, {5, 3, kNaN, 1, 4, 2}), 0, Sec(60)), 2);
  // 1 -> 1 no, 1 -> NaN yes, NaN -> NaN no, NaN -> 2 yes, 2 -> 2 no, 2 -> 3 yes.
  EXPECT_EQ(*Range("changes", Every(1, 1, {1, 1, kNaN, kNaN, 2, 2, 3}), 0, Sec(60)), 3);
  // One sample: zero of either, but a value.
  EXPECT_EQ(*Range("resets", {{Sec(1), 7}}, 0, Sec(60)), 0);
  EXPECT_EQ(*Range("changes", {{Sec(1), 7}}, 0, Sec(60)), 0);
}

// ---------------------------------------------------------------------------------------------
// double_exponential_smoothing

TEST(PromqlFunctions, DoubleExponentialSmoothing) {
  // sf = tf = 0.5 over 1 2 4: s = 1, b = 2 - 1 = 1.
  //   i=1: s = 0.5*2 + 0.5*(1 + 1) = 2 (the first trend is used as is)
  //   i=2: b = 0.5*(2 - 1) + 0.5*1 = 1; s = 0.5*4 + 0.5*(2 + 1) = 3.5
  EXPECT_DOUBLE_EQ(
      *Range("double_exponential_smoothing", Every(1, 1, {1, 2, 4}), 0, Sec(10), {0.5, 0.5}), 3.5);
  // sf = 0.8, tf = 0.1 over 0 10 10: s = 0, b = 10.
  //   i=1: s = 8 + 0.2*(0 + 10) = 10
  //   i=2: b = 0.1*(10 - 0) + 0.9*10 = 10; s = 8 + 0.2*(10 + 10) = 12
  EXPECT_DOUBLE_EQ(
      *Range("double_exponential_smoothing", Every(1, 1, {0, 10, 10}), 0, Sec(10), {0.8, 0.1}), 12);
  EXPECT_FALSE(Range("double_exponential_smoothing", {{Sec(1), 1}}, 0, Sec(10), {0.5, 0.5}));
  EXPECT_FALSE(Range("double_exponential_smoothing", Every(1, 1, {1, 2}), 0, Sec(10), {1, 0.5}));
  EXPECT_FALSE(Range("double_exponential_smoothing", Every(1, 1, {1, 2}), 0, Sec(10), {0.5, 0}));
}

TEST(PromqlFunctions, SmoothingFactorsAsPrometheusChecksThem) {
  EXPECT_TRUE(ValidSmoothingFactors(0.5, 0.5));
  EXPECT_TRUE(ValidSmoothingFactors(0.001, 0.999));
  EXPECT_FALSE(ValidSmoothingFactors(0, 0.5));
  EXPECT_FALSE(ValidSmoothingFactors(1, 0.5));
  EXPECT_FALSE(ValidSmoothingFactors(0.5, 0));
  EXPECT_FALSE(ValidSmoothingFactors(0.5, 1));
  EXPECT_FALSE(ValidSmoothingFactors(-kInf, 0.5));
  // `sf <= 0 || sf >= 1` is false for NaN: Prometheus lets it through.
  EXPECT_TRUE(ValidSmoothingFactors(kNaN, 0.5));
  EXPECT_TRUE(ValidSmoothingFactors(0.5, kNaN));
  EXPECT_TRUE(std::isnan(
      *Range("double_exponential_smoothing", Every(1, 1, {1, 2}), 0, Sec(10), {kNaN, 0.5})));
}

// ---------------------------------------------------------------------------------------------
// *_over_time

TEST(PromqlFunctions, SumAndAvgOverTimeAreCompensated) {
  // Naively 1 + 1e100 + 1 - 1e100 is 0; the compensation keeps both ones.
  const auto values = Every(1, 1, {1, 1e100, 1, -1e100});
  EXPECT_EQ(*Range("sum_over_time", values, 0, Sec(10)), 2);
  EXPECT_EQ(*Range("avg_over_time", values, 0, Sec(10)), 0.5);
  // 0.1 ten times is 0.9999999999999999 naively.
  std::vector<double> tenths(10, 0.1);
  double naive = 0;
  for (const double x : tenths) naive += x;
  ASSERT_NE(naive, 1.0);
  EXPECT_EQ(*Range("sum_over_time", Every(1, 1, tenths), 0, Sec(20)), 1.0);
  EXPECT_DOUBLE_EQ(*Range("avg_over_time", Every(1, 1, tenths), 0, Sec(20)), 0.1);
  EXPECT_EQ(*Range("avg_over_time", {{Sec(1), 42}}, 0, Sec(20)), 42);
}

TEST(PromqlFunctions, AvgOverTimeSurvivesOverflowingSums) {
  // The sum 3e308 overflows; the running mean does not.
  const double avg = *Range("avg_over_time", Every(1, 1, {1e308, 1e308, 1e308}), 0, Sec(10));
  EXPECT_TRUE(std::isfinite(avg));
  EXPECT_NEAR(avg, 1e308, 1e293);
  // Mixed signs past the overflow: (1.5e308 + 1.5e308 - 1e308) / 3.
  const double mixed = *Range("avg_over_time", Every(1, 1, {1.5e308, 1.5e308, -1e308}), 0, Sec(10));
  EXPECT_NEAR(mixed, 2.0 / 3 * 1e308, 1e293);
  // A true infinity stays infinite.
  EXPECT_EQ(*Range("avg_over_time", Every(1, 1, {1, kInf, 2}), 0, Sec(10)), kInf);
  EXPECT_EQ(*Range("sum_over_time", Every(1, 1, {1, kInf, 2}), 0, Sec(10)), kInf);
  EXPECT_TRUE(std::isnan(*Range("sum_over_time", Every(1, 1, {kInf, -kInf}), 0, Sec(10))));
}

TEST(PromqlFunctions, StddevAndStdvarOverTime) {
  // 2 4 4 4 5 5 7 9: mean 5, squared deviations 9 1 1 1 0 0 4 16 -> 32 / 8 = 4.
  const auto values = Every(1, 1, {2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(*Range("stdvar_over_time", values, 0, Sec(10)), 4);
  EXPECT_DOUBLE_EQ(*Range("stddev_over_time", values, 0, Sec(10)), 2);
  // Shifted by 1e9 the variance is the same (the naive sum-of-squares formula loses it).
  const auto shifted = Every(1, 1, {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16});
  EXPECT_DOUBLE_EQ(*Range("stdvar_over_time", shifted, 0, Sec(10)), 22.5);
  EXPECT_EQ(*Range("stddev_over_time", {{Sec(1), 3}}, 0, Sec(10)), 0);
  EXPECT_TRUE(std::isnan(*Range("stddev_over_time", Every(1, 1, {1, kNaN}), 0, Sec(10))));
}

TEST(PromqlFunctions, MinAndMaxOverTimeSkipNaN) {
  const auto values = Every(1, 1, {kNaN, 3, 1, kNaN});
  EXPECT_EQ(*Range("min_over_time", values, 0, Sec(10)), 1);
  EXPECT_EQ(*Range("max_over_time", values, 0, Sec(10)), 3);
  EXPECT_EQ(*Range("min_over_time", Every(1, 1, {1, kNaN}), 0, Sec(10)), 1);
  EXPECT_EQ(*Range("max_over_time", Every(1, 1, {kNaN, -kInf}), 0, Sec(10)), -kInf);
  EXPECT_TRUE(std::isnan(*Range("min_over_time", Every(1, 1, {kNaN, kNaN}), 0, Sec(10))));
  EXPECT_TRUE(std::isnan(*Range("max_over_time", {{Sec(1), kNaN}}, 0, Sec(10))));
}

TEST(PromqlFunctions, SimpleOverTimeFunctions) {
  const auto values = Every(1, 1, {4, kNaN, 6});
  EXPECT_EQ(*Range("count_over_time", values, 0, Sec(10)), 3);
  EXPECT_EQ(*Range("present_over_time", values, 0, Sec(10)), 1);
  EXPECT_EQ(*Range("first_over_time", values, 0, Sec(10)), 4);
  EXPECT_EQ(*Range("last_over_time", values, 0, Sec(10)), 6);
}

TEST(PromqlFunctions, TimestampsOverTimeInSeconds) {
  // Whole milliseconds give exactly Prometheus' float64(ms) / 1000; float64(ns) / 1e9 would be
  // 1700144272.5089998 here, since the nanoseconds are rounded before dividing.
  const std::int64_t ms = 1'700'144'272'509;
  ASSERT_NE(static_cast<double>(ms * kMs) / 1e9, static_cast<double>(ms) / 1000);
  const std::vector<Sample> samples = {{ms * kMs, 3}, {(ms + 1000) * kMs, 1}};
  EXPECT_EQ(*Range("ts_of_first_over_time", samples, 0, (ms + 2000) * kMs),
            static_cast<double>(ms) / 1000);
  EXPECT_EQ(*Range("ts_of_last_over_time", samples, 0, (ms + 2000) * kMs),
            static_cast<double>(ms + 1000) / 1000);
  // Nanosecond timestamps keep their fraction.
  EXPECT_DOUBLE_EQ(*Range("ts_of_last_over_time", {{kSecond + 1500, 0}}, 0, Sec(10)), 1.0000015);
  // Ties: the last occurrence of the minimum and of the maximum.
  const auto ties = Every(1, 1, {3, 5, 1, 5, 1, 2});
  EXPECT_EQ(*Range("ts_of_max_over_time", ties, 0, Sec(10)), 4);
  EXPECT_EQ(*Range("ts_of_min_over_time", ties, 0, Sec(10)), 5);
  // NaN is passed over; all NaN gives the last sample's time.
  EXPECT_EQ(*Range("ts_of_max_over_time", Every(1, 1, {kNaN, 2, kNaN}), 0, Sec(10)), 2);
  EXPECT_EQ(*Range("ts_of_min_over_time", Every(1, 1, {kNaN, kNaN}), 0, Sec(10)), 2);
}

TEST(PromqlFunctions, QuantileOverTimeInterpolates) {
  const auto values = Every(1, 1, {40, 10, 30, 20});  // sorted: 10 20 30 40
  // rank = q * (n - 1): 0.5 -> 1.5, halfway between 20 and 30; 0.9 -> 2.7: 30*0.3 + 40*0.7.
  EXPECT_DOUBLE_EQ(*Range("quantile_over_time", values, 0, Sec(10), {0.5}), 25);
  EXPECT_DOUBLE_EQ(*Range("quantile_over_time", values, 0, Sec(10), {0.9}), 37);
  EXPECT_EQ(*Range("quantile_over_time", values, 0, Sec(10), {0}), 10);
  EXPECT_EQ(*Range("quantile_over_time", values, 0, Sec(10), {1}), 40);
  EXPECT_EQ(*Range("quantile_over_time", values, 0, Sec(10), {-0.1}), -kInf);
  EXPECT_EQ(*Range("quantile_over_time", values, 0, Sec(10), {1.1}), kInf);
  EXPECT_TRUE(std::isnan(*Range("quantile_over_time", values, 0, Sec(10), {kNaN})));
  EXPECT_FALSE(Range("quantile_over_time", values, 0, Sec(10)).has_value());
  // NaN sorts first: NaN 1 2.
  const auto with_nan = Every(1, 1, {2, kNaN, 1});
  EXPECT_TRUE(std::isnan(*Range("quantile_over_time", with_nan, 0, Sec(10), {0})));
  EXPECT_EQ(*Range("quantile_over_time", with_nan, 0, Sec(10), {0.5}), 1);
  EXPECT_EQ(*Range("quantile_over_time", with_nan, 0, Sec(10), {1}), 2);
}

TEST(PromqlFunctions, MadOverTime) {
  // Median 2; absolute deviations 1 1 0 0 2 4 7 -> median 1.
  EXPECT_EQ(*Range("mad_over_time", Every(1, 1, {1, 1, 2, 2, 4, 6, 9}), 0, Sec(10)), 1);
  // Even count: median (2 + 4) / 2 = 3; deviations 2 1 1 5 -> sorted 1 1 2 5, median 1.5.
  EXPECT_EQ(*Range("mad_over_time", Every(1, 1, {1, 2, 4, 8}), 0, Sec(10)), 1.5);
  EXPECT_EQ(*Range("mad_over_time", {{Sec(1), 5}}, 0, Sec(10)), 0);
  // A NaN makes the median undefined: NaN, although sorting NaN first would give 0.5 here.
  EXPECT_TRUE(std::isnan(*Range("mad_over_time", Every(1, 1, {1, 2, kNaN, 4}), 0, Sec(10))));
  EXPECT_TRUE(std::isnan(*Range("mad_over_time", {{Sec(1), kNaN}}, 0, Sec(10))));
}

TEST(PromqlFunctions, SortingFunctionsLeaveTheWindowAlone) {
  // The scratch copy is sorted, not the caller's columns; a large window then a small one reuse
  // the buffer.
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1000, 1000);
  for (int i = 0; i < 1000; ++i) {
    ts.push_back(Sec(i + 1));
    values.push_back(dist(rng));
  }
  const std::vector<double> before = values;
  const RangeFunction quantile = FindRangeFunction("quantile_over_time");
  const RangeFunction mad = FindRangeFunction("mad_over_time");
  const double q = 0.5;
  double out = 0;
  ASSERT_TRUE(quantile(Window{ts, values, 0, Sec(2000)}, std::span(&q, 1), &out));
  ASSERT_TRUE(mad(Window{ts, values, 0, Sec(2000)}, {}, &out));
  EXPECT_EQ(values, before);
  const std::vector<std::int64_t> small_ts = {Sec(1), Sec(2), Sec(3)};
  const std::vector<double> small = {3, 1, 2};
  ASSERT_TRUE(quantile(Window{small_ts, small, 0, Sec(10)}, std::span(&q, 1), &out));
  EXPECT_EQ(out, 2);
  EXPECT_EQ(small, (std::vector<double>{3, 1, 2}));
}

// ---------------------------------------------------------------------------------------------
// histogram_quantile

double Hq(double q, std::vector<Bucket> buckets, bool* forced = nullptr) {
  bool ignored;
  return BucketQuantile(q, buckets, forced != nullptr ? forced : &ignored);
}

TEST(PromqlFunctions, BucketQuantileInterpolatesWithinTheBucket) {
  // Cumulative: <=0.1: 10, <=0.5: 30, <=1: 40, +Inf: 50 (given out of order).
  const std::vector<Bucket> b = {{1, 40}, {kInf, 50}, {0.1, 10}, {0.5, 30}};
  bool forced = true;
  // q 0.5: rank 25 falls in (0.1, 0.5] holding 20, 15 of them below: 0.1 + 0.4 * 15/20.
  EXPECT_DOUBLE_EQ(Hq(0.5, b, &forced), 0.4);
  EXPECT_FALSE(forced);
  // q 0.1: rank 5 in the lowest bucket, which starts at 0 since its bound is positive.
  EXPECT_DOUBLE_EQ(Hq(0.1, b), 0.05);
  // rank 30 exactly at a bucket's count: its upper bound.
  EXPECT_DOUBLE_EQ(Hq(0.6, b), 0.5);
  EXPECT_EQ(Hq(0, b), 0);
  // q 0.9: rank 45 is past the 40 of le=1, in the +Inf bucket: the highest finite bound.
  EXPECT_EQ(Hq(0.9, b), 1);
  EXPECT_EQ(Hq(1, b), 1);
}

TEST(PromqlFunctions, BucketQuantileLowestBucketAtOrBelowZero) {
  // The lowest bound is <= 0: no lower bound to interpolate from, so that bound is the answer.
  const std::vector<Bucket> b = {{-1, 10}, {0, 20}, {kInf, 20}};
  EXPECT_EQ(Hq(0.25, b), -1);
  // The second bucket interpolates from -1: rank 15 -> -1 + 1 * 5/10.
  EXPECT_DOUBLE_EQ(Hq(0.75, b), -0.5);
}

TEST(PromqlFunctions, BucketQuantileSpecialCases) {
  const std::vector<Bucket> good = {{1, 1}, {kInf, 2}};
  EXPECT_EQ(Hq(-0.5, good), -kInf);
  EXPECT_EQ(Hq(1.5, good), kInf);
  EXPECT_TRUE(std::isnan(Hq(kNaN, good)));
  // The q checks come first, even without buckets.
  EXPECT_EQ(Hq(-1, {}), -kInf);
  EXPECT_TRUE(std::isnan(Hq(0.5, {})));
  // No +Inf bucket.
  EXPECT_TRUE(std::isnan(Hq(0.5, {{1, 1}, {2, 2}})));
  EXPECT_TRUE(std::isnan(Hq(0.5, {{1, 1}, {-kInf, 2}})));
  // Only +Inf (two of them merge into one).
  EXPECT_TRUE(std::isnan(Hq(0.5, {{kInf, 5}})));
  EXPECT_TRUE(std::isnan(Hq(0.5, {{kInf, 5}, {kInf, 1}})));
  // No observations.
  EXPECT_TRUE(std::isnan(Hq(0.5, {{1, 0}, {kInf, 0}})));
  // A NaN bound sorts past +Inf, so the group has no +Inf on top.
  EXPECT_TRUE(std::isnan(Hq(0.5, {{1, 1}, {kNaN, 1}, {kInf, 2}})));
}

TEST(PromqlFunctions, BucketQuantileMergesEqualBounds) {
  // le="1" and le="1.0" are one bucket with both counts: 1: 20, 2: 30, +Inf: 40. q 0.5, rank 20
  // -> le=1 exactly: 0 + 1 * 20/20 = 1. (Either half alone would put rank 20 in (1, 2].)
  EXPECT_EQ(Hq(0.5, {{1, 10}, {2, 30}, {1, 10}, {kInf, 40}}), 1);
}

TEST(PromqlFunctions, BucketQuantileForcesMonotonicCounts) {
  // le=2 has fewer than le=1: raised to 10. rank 0.8 * 15 = 12 -> (2, 3] holding 5, 2 below:
  // 2 + 1 * 2/5.
  bool forced = false;
  EXPECT_DOUBLE_EQ(Hq(0.8, {{1, 10}, {2, 8}, {3, 15}, {kInf, 15}}, &forced), 2.4);
  EXPECT_TRUE(forced);
  // 4 2 8 8 becomes 4 4 8 8: rank 6 in (2, 3] holding 4, 2 below: 2 + 1 * 2/4. (Interpolating
  // from the dip would give 2 + 4/6.)
  forced = false;
  EXPECT_DOUBLE_EQ(Hq(0.75, {{1, 4}, {2, 2}, {3, 8}, {kInf, 8}}, &forced), 2.5);
  EXPECT_TRUE(forced);
  // A relative difference below 1e-12 is floating-point noise: levelled silently. rank 15 in
  // (2, 3] holding 10, 5 below: 2.5.
  forced = true;
  const double almost_ten = 10 * (1 - 1e-15);
  ASSERT_LT(almost_ten, 10);
  EXPECT_DOUBLE_EQ(Hq(0.75, {{1, 10}, {2, almost_ten}, {3, 20}, {kInf, 20}}, &forced), 2.5);
  EXPECT_FALSE(forced);
  // 1e-11 is no longer noise.
  EXPECT_DOUBLE_EQ(Hq(0.75, {{1, 10}, {2, 10 * (1 - 1e-11)}, {3, 20}, {kInf, 20}}, &forced), 2.5);
  EXPECT_TRUE(forced);
  // The flag may be null.
  std::vector<Bucket> buckets = {{1, 10}, {2, 8}, {3, 15}, {kInf, 15}};
  EXPECT_DOUBLE_EQ(BucketQuantile(0.8, buckets, nullptr), 2.4);
}

// ---------------------------------------------------------------------------------------------
// quantile, Kahan

// ---------------------------------------------------------------------------------------------
// histogram_fraction

double Hf(double lower, double upper, std::vector<Bucket> buckets) {
  return BucketFraction(lower, upper, buckets);
}

// Cumulative 1, 3, 6 and 100 at le 1, 2, 3 and +Inf: the lowest bucket starts at 0.
const std::vector<Bucket> kPositive = {{1, 1}, {2, 3}, {3, 6}, {kInf, 100}};
// Cumulative 10, 12, 15 and 100 at le -3, -2, -1 and +Inf: the lowest bucket starts at -Inf.
const std::vector<Bucket> kNegative = {{-3, 10}, {-2, 12}, {-1, 15}, {kInf, 100}};

TEST(PromqlFunctions, BucketFractionInterpolatesWithinBuckets) {
  // [0, 1] whole (1) and half of (1, 2] (2 * 0.5 = 1): 2 of 100.
  EXPECT_DOUBLE_EQ(Hf(0, 1.5, kPositive), 0.02);
  // Half of [0, 1] (0.5) and (1, 2] whole (2).
  EXPECT_DOUBLE_EQ(Hf(0.5, 2, kPositive), 0.025);
  // Bounds on bucket bounds take whole buckets: (1, 2] and (2, 3] hold 2 + 3.
  EXPECT_DOUBLE_EQ(Hf(1, 3, kPositive), 0.05);
  // Fractional bounds: 0.8 of [0, 0.5] holding 2.5 (2) and half of (0.5, 1] holding 5 (2.5).
  EXPECT_DOUBLE_EQ(Hf(0.1, 0.75, {{0.5, 2.5}, {1, 7.5}, {kInf, 100}}), 0.045);
  // A range across zero: (-1, 0] and (0, 1] hold 5 each.
  EXPECT_DOUBLE_EQ(Hf(-1, 1, {{-2, 5}, {-1, 10}, {0, 15}, {1, 20}, {kInf, 100}}), 0.1);

  // 0, 10, 20, 30 and 30 at le 0, 2, 4, 6 and +Inf.
  const std::vector<Bucket> even = {{0, 0}, {2, 10}, {4, 20}, {6, 30}, {kInf, 30}};
  EXPECT_DOUBLE_EQ(Hf(0, 4, even), 2.0 / 3);
  EXPECT_EQ(Hf(0, 6, even), 1);
  // 20 below 3.5 in (2, 4]: 10 + 10 * 0.75 of 30.
  EXPECT_DOUBLE_EQ(Hf(0, 3.5, even), 17.5 / 30);
  // A histogram_quantile of 0.6 there is 3.6; the fraction below it is 0.6 again.
  EXPECT_DOUBLE_EQ(Hq(0.6, even), 3.6);
  EXPECT_DOUBLE_EQ(Hf(-kInf, 3.6, even), 0.6);

  // le 0 first: its lower bound is -Inf, but it is empty and 0.2 is a bound: 70 of 110.
  EXPECT_DOUBLE_EQ(Hf(0, 0.2, {{0, 0}, {0.1, 50}, {0.2, 70}, {1, 110}, {kInf, 110}}), 7.0 / 11);
  // Nothing between 0 and 0.2 in (-0.1, 0.3], which holds no observations.
  EXPECT_EQ(Hf(0, 0.2, {{-0.25, 0}, {-0.2, 10}, {-0.1, 20}, {0.3, 20}, {kInf, 20}}), 0);
}

TEST(PromqlFunctions, BucketFractionInfiniteBuckets) {
  // Nothing is interpolated in the +Inf bucket: 4..5 has nothing, 2..5 only (2, 3] (3).
  EXPECT_EQ(Hf(4, 5, kPositive), 0);
  EXPECT_DOUBLE_EQ(Hf(2, 5, kPositive), 0.03);
  EXPECT_DOUBLE_EQ(Hf(2, 3.5, kPositive), 0.03);
  // An upper bound of +Inf takes the whole +Inf bucket: 100 - 6.
  EXPECT_DOUBLE_EQ(Hf(400, kInf, kPositive), 0.94);
  EXPECT_EQ(Hf(-kInf, kInf, kPositive), 1);
  EXPECT_EQ(Hf(-kInf, kInf, kNegative), 1);
  // With negative buckets the lowest one is (-Inf, -3]: a bound inside it counts all of it as
  // below, so -4..-2 is (-3, -2] alone (2).
  EXPECT_DOUBLE_EQ(Hf(-4, -2, kNegative), 0.02);
  EXPECT_EQ(Hf(-5, -4, kNegative), 0);
  EXPECT_DOUBLE_EQ(Hf(-kInf, -4, kNegative), 0.1);
  // From -Inf: 10 + 2 + half of (-2, -1] holding 3.
  EXPECT_DOUBLE_EQ(Hf(-kInf, -1.5, kNegative), 0.135);
  // 0..1 is inside (-1, +Inf].
  EXPECT_EQ(Hf(0, 1, kNegative), 0);
  // A single +Inf bucket starts at 0 and interpolates nothing.
  EXPECT_EQ(Hf(0, 1, {{kInf, 100}}), 0);
  EXPECT_EQ(Hf(-1, kInf, {{kInf, 100}}), 1);
}

TEST(PromqlFunctions, BucketFractionEmptyRanges) {
  EXPECT_EQ(Hf(2, 2, kPositive), 0);
  EXPECT_EQ(Hf(3, 2, kPositive), 0);
  EXPECT_EQ(Hf(kInf, -kInf, kPositive), 0);
  // Entirely below or above the buckets (the +Inf bucket interpolates nothing).
  const std::vector<Bucket> b = {{1, 1}, {2, 3}, {kInf, 10}};
  EXPECT_EQ(Hf(-10, -5, b), 0);
  EXPECT_EQ(Hf(5, 10, b), 0);
}

TEST(PromqlFunctions, BucketFractionSpecialCases) {
  EXPECT_TRUE(std::isnan(Hf(kNaN, 1, {{1, 1}, {kInf, 100}})));
  EXPECT_TRUE(std::isnan(Hf(0, kNaN, {{1, 1}, {kInf, 100}})));
  EXPECT_TRUE(std::isnan(Hf(kNaN, kNaN, {{1, 1}, {kInf, 100}})));
  // No observations, even for an empty range.
  EXPECT_TRUE(std::isnan(Hf(0, 5, {{1, 0}, {2, 0}, {3, 0}, {kInf, 0}})));
  EXPECT_TRUE(std::isnan(Hf(2, 2, {{1, 0}, {kInf, 0}})));
  // No +Inf bucket, no buckets, a NaN bound past +Inf.
  EXPECT_TRUE(std::isnan(Hf(0, 1, {{1, 1}, {2, 2}})));
  EXPECT_TRUE(std::isnan(Hf(0, 1, {})));
  EXPECT_TRUE(std::isnan(Hf(0, 1, {{1, 1}, {kNaN, 1}, {kInf, 2}})));
}

TEST(PromqlFunctions, BucketFractionSortsMergesAndForcesMonotonicCounts) {
  // Out of order, as the label groups come: the same as kPositive.
  EXPECT_DOUBLE_EQ(Hf(0, 1.5, {{kInf, 100}, {2, 3}, {3, 6}, {1, 1}}), 0.02);
  // le="1" and le="1.0" add up: 1: 20, 2: 30, +Inf: 40; half of [0, 1] is 10 of 40.
  EXPECT_DOUBLE_EQ(Hf(0, 0.5, {{1, 10}, {2, 30}, {1, 10}, {kInf, 40}}), 0.25);
  // le=2 below le=1 is raised to 10: (1, 2] holds nothing, (2, 3] holds 5 of 15.
  EXPECT_EQ(Hf(1, 2, {{1, 10}, {2, 8}, {3, 15}, {kInf, 15}}), 0);
  EXPECT_DOUBLE_EQ(Hf(1, 3, {{1, 10}, {2, 8}, {3, 15}, {kInf, 15}}), 1.0 / 3);
  // The buckets are rearranged in place: sorted, merged ones first.
  std::vector<Bucket> buckets = {{kInf, 40}, {1, 10}, {2, 30}, {1, 10}};
  EXPECT_DOUBLE_EQ(BucketFraction(0, 2, buckets), 0.75);
  EXPECT_EQ(buckets[0].upper_bound, 1);
  EXPECT_EQ(buckets[0].count, 20);
  EXPECT_EQ(buckets[1].upper_bound, 2);
  EXPECT_EQ(buckets[2].upper_bound, kInf);
}

TEST(PromqlFunctions, QuantileOfValues) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(Quantile(0.5, v), 3);
  EXPECT_EQ(v, (std::vector<double>{1, 2, 3, 4, 5}));  // sorted in place
  EXPECT_DOUBLE_EQ(Quantile(0.1, v), 1.4);             // rank 0.4: 1*0.6 + 2*0.4
  EXPECT_DOUBLE_EQ(Quantile(0.95, v), 4.8);            // rank 3.8: 4*0.2 + 5*0.8
  std::vector<double> one = {7};
  EXPECT_EQ(Quantile(0.3, one), 7);
  std::vector<double> none;
  EXPECT_TRUE(std::isnan(Quantile(0.5, none)));
  EXPECT_EQ(Quantile(-1, v), -kInf);
  EXPECT_EQ(Quantile(2, v), kInf);
  EXPECT_TRUE(std::isnan(Quantile(kNaN, v)));
  // An infinity next to the rank: Inf * 0 is NaN, as in Prometheus' weighted sum.
  std::vector<double> inf = {1, kInf};
  EXPECT_TRUE(std::isnan(Quantile(0, inf)));
  EXPECT_EQ(Quantile(0.5, inf), kInf);
}

TEST(PromqlFunctions, KahanSumIncKeepsTheLowBits) {
  // 1e16 + 1 rounds back to 1e16 (ties to even); four ones are lost naively.
  double naive = 1e16;
  double sum = 1e16;
  double c = 0;
  for (int i = 0; i < 4; ++i) {
    naive += 1;
    sum = KahanSumInc(1, sum, &c);
  }
  EXPECT_EQ(naive, 1e16);
  EXPECT_EQ(sum + c, 1e16 + 4);
  // The larger operand may come second (Neumaier's case, where plain Kahan loses the 1).
  sum = 1;
  c = 0;
  for (const double x : {1e100, 1.0, -1e100}) sum = KahanSumInc(x, sum, &c);
  EXPECT_EQ(sum, 0);
  EXPECT_EQ(c, 2);
  // An infinite sum clears the compensation.
  c = 0.5;
  EXPECT_EQ(KahanSumInc(kInf, 1, &c), kInf);
  EXPECT_EQ(c, 0);
}

// ---------------------------------------------------------------------------------------------
// Value functions

TEST(PromqlFunctions, RoundHalfUpToNearest) {
  EXPECT_EQ(Value("round", 2.5), 3);
  EXPECT_EQ(Value("round", -2.5), -2);
  EXPECT_EQ(Value("round", -2.6), -3);
  EXPECT_EQ(Value("round", 1.25, {0.1}), 1.3);  // floor(12.5 + 0.5) / 10
  EXPECT_EQ(Value("round", 12, {5}), 10);       // floor(2.4 + 0.5) / 0.2
  EXPECT_DOUBLE_EQ(Value("round", 13, {5}), 15);
  EXPECT_TRUE(std::isnan(Value("round", kNaN)));
  EXPECT_EQ(Value("round", kInf), kInf);
}

TEST(PromqlFunctions, ClampFollowsGoMinMax) {
  EXPECT_EQ(Value("clamp", 5, {0, 3}), 3);
  EXPECT_EQ(Value("clamp", -5, {0, 3}), 0);
  EXPECT_EQ(Value("clamp", 2, {0, 3}), 2);
  EXPECT_EQ(Value("clamp_min", -5, {0}), 0);
  EXPECT_EQ(Value("clamp_max", 5, {3}), 3);
  // NaN stays NaN (Go's Min/Max propagate it)...
  EXPECT_TRUE(std::isnan(Value("clamp", kNaN, {0, 3})));
  EXPECT_TRUE(std::isnan(Value("clamp_min", kNaN, {0})));
  EXPECT_TRUE(std::isnan(Value("clamp_max", kNaN, {3})));
  // ...except against an infinity in the function's own direction, which wins over NaN.
  EXPECT_EQ(Value("clamp_min", kNaN, {kInf}), kInf);
  EXPECT_EQ(Value("clamp_max", kNaN, {-kInf}), -kInf);
  // A NaN bound makes everything NaN.
  EXPECT_TRUE(std::isnan(Value("clamp_min", 1, {kNaN})));
  // Go orders -0 below +0: clamp_min(-0, 0) is +0.
  EXPECT_FALSE(std::signbit(Value("clamp_min", -0.0, {0.0})));
  EXPECT_TRUE(std::signbit(Value("clamp_max", 0.0, {-0.0})));
  EXPECT_TRUE(ClampDropsAll(3, 1));
  EXPECT_FALSE(ClampDropsAll(1, 1));
  EXPECT_FALSE(ClampDropsAll(kNaN, 1));
}

TEST(PromqlFunctions, ArithmeticValueFunctions) {
  EXPECT_EQ(Value("abs", -3), 3);
  EXPECT_EQ(Value("ceil", 1.2), 2);
  EXPECT_EQ(Value("floor", -1.2), -2);
  EXPECT_EQ(Value("sqrt", 16), 4);
  EXPECT_TRUE(std::isnan(Value("sqrt", -1)));
  EXPECT_EQ(Value("exp", 0), 1);
  EXPECT_EQ(Value("ln", 1), 0);
  EXPECT_EQ(Value("ln", 0), -kInf);
  EXPECT_TRUE(std::isnan(Value("ln", -1)));
  EXPECT_EQ(Value("sgn", -3), -1);
  EXPECT_EQ(Value("sgn", 0.5), 1);
  EXPECT_TRUE(SameBits(Value("sgn", -0.0), -0.0));
  EXPECT_TRUE(std::isnan(Value("sgn", kNaN)));
  EXPECT_EQ(Value("deg", std::numbers::pi), 180);
  EXPECT_EQ(Value("rad", 180), std::numbers::pi);
  EXPECT_EQ(Value("sin", 0), 0);
  EXPECT_EQ(Value("cos", 0), 1);
  EXPECT_DOUBLE_EQ(Value("atan", 1), std::numbers::pi / 4);
  EXPECT_TRUE(std::isnan(Value("acos", 2)));
  EXPECT_DOUBLE_EQ(Value("cosh", 0), 1);
  EXPECT_EQ(Value("atanh", 1), kInf);
}

TEST(PromqlFunctions, LogarithmsRoundAsGoDoes) {
  // Go's Log10 is ln(x) * log10(e), one ulp off the C library's log10 for 3.
  EXPECT_TRUE(SameBits(Value("log10", 3), 0.4771212547196625));
  EXPECT_NE(Value("log10", 3), std::log10(3.0));
  EXPECT_EQ(Value("log10", 1000), 3);
  // Go's Log2 is ln(mantissa) * log2(e) + exponent, exact at powers of two.
  EXPECT_TRUE(SameBits(Value("log2", 3), 1.5849625007211563));
  EXPECT_EQ(Value("log2", 1024), 10);
  EXPECT_EQ(Value("log2", 0.125), -3);
  EXPECT_EQ(Value("log2", 0), -kInf);
  EXPECT_EQ(Value("log2", kInf), kInf);
  EXPECT_TRUE(std::isnan(Value("log2", -2)));
  EXPECT_TRUE(std::isnan(Value("log10", -kInf)));
  EXPECT_DOUBLE_EQ(Value("log2", 5e-324), -1074);  // subnormal
}

// ---------------------------------------------------------------------------------------------
// Time functions

struct Civil {
  double year, month, day_of_month, day_of_year, day_of_week, days_in_month, hour, minute;
};

Civil CivilOf(double unix_seconds) {
  return {Value("year", unix_seconds),         Value("month", unix_seconds),
          Value("day_of_month", unix_seconds), Value("day_of_year", unix_seconds),
          Value("day_of_week", unix_seconds),  Value("days_in_month", unix_seconds),
          Value("hour", unix_seconds),         Value("minute", unix_seconds)};
}

void ExpectCivil(double unix_seconds, Civil want) {
  const Civil got = CivilOf(unix_seconds);
  EXPECT_EQ(got.year, want.year) << unix_seconds;
  EXPECT_EQ(got.month, want.month) << unix_seconds;
  EXPECT_EQ(got.day_of_month, want.day_of_month) << unix_seconds;
  EXPECT_EQ(got.day_of_year, want.day_of_year) << unix_seconds;
  EXPECT_EQ(got.day_of_week, want.day_of_week) << unix_seconds;
  EXPECT_EQ(got.days_in_month, want.days_in_month) << unix_seconds;
  EXPECT_EQ(got.hour, want.hour) << unix_seconds;
  EXPECT_EQ(got.minute, want.minute) << unix_seconds;
}

TEST(PromqlFunctions, TimeFunctionsOnKnownDates) {
  // 2024-02-29 12:34:56 UTC, a Thursday, day 31 + 29 of a leap year.
  ExpectCivil(1709210096, {2024, 2, 29, 60, 4, 29, 12, 34});
  // The epoch, a Thursday.
  ExpectCivil(0, {1970, 1, 1, 1, 4, 31, 0, 0});
  // One second earlier: 1969-12-31 23:59:59, a Wednesday.
  ExpectCivil(-1, {1969, 12, 31, 365, 3, 31, 23, 59});
  // Fractions truncate toward zero as Go's int64(v): -0.5 is 0, -1.5 is -1.
  ExpectCivil(-0.5, {1970, 1, 1, 1, 4, 31, 0, 0});
  ExpectCivil(-1.5, {1969, 12, 31, 365, 3, 31, 23, 59});
  ExpectCivil(59.9, {1970, 1, 1, 1, 4, 31, 0, 0});
  // 2000-12-31 23:59 (a Sunday): day 366 of a leap century year.
  ExpectCivil(978307140, {2000, 12, 31, 366, 0, 31, 23, 59});
  // 1900-02-10 (a Saturday): 1900 is not a leap year.
  ExpectCivil(-2205532800, {1900, 2, 10, 41, 6, 28, 0, 0});
  // 2023-02-01 and 2100-02-01: 28 days; 2400-02-01: 29.
  EXPECT_EQ(Value("days_in_month", 1675209600), 28);
  EXPECT_EQ(Value("days_in_month", 4105123200), 28);
  EXPECT_EQ(Value("days_in_month", 13572144000), 29);
}

TEST(PromqlFunctions, TimeFunctionsOutsideTheCalendar) {
  for (const double v : {kNaN, kInf, -kInf, 9.3e18, -9.3e18, 1e300}) {
    const Civil c = CivilOf(v);
    EXPECT_TRUE(std::isnan(c.year)) << v;
    EXPECT_TRUE(std::isnan(c.minute)) << v;
    EXPECT_TRUE(std::isnan(c.days_in_month)) << v;
  }
  // Far outside std::chrono's years but still a date, in Gregorian years of 31556952 s on
  // average: 10^12 s after the epoch is in year 1970 + 31688.7, 10^17 s in 1970 + 3168873850.7.
  EXPECT_EQ(Value("year", 1e12), 33658);
  EXPECT_EQ(Value("year", 1e17), 3168875820);
  EXPECT_GT(Value("year", 8.9e18), 2.8e11);
  EXPECT_LT(Value("year", -8.9e18), -2.8e11);
}

TEST(PromqlFunctions, TimeFunctionsAgreeWithChrono) {
  using namespace std::chrono;
  std::mt19937_64 rng(42);
  // Years -9999 .. 9999 or so, well inside chrono's range.
  std::uniform_int_distribution<std::int64_t> dist(-377'705'116'800, 253'402'300'799);
  for (int i = 0; i < 20000; ++i) {
    const std::int64_t s = dist(rng);
    const sys_seconds tp{seconds{s}};
    const sys_days day = floor<days>(tp);
    const year_month_day ymd{day};
    const hh_mm_ss hms{tp - day};
    const year_month_day_last last{ymd.year(), month_day_last{ymd.month()}};
    const auto yday = (day - sys_days{ymd.year() / January / 1}).count() + 1;
    ExpectCivil(
        static_cast<double>(s),
        {static_cast<double>(static_cast<int>(ymd.year())),
         static_cast<double>(static_cast<unsigned>(ymd.month())),
         static_cast<double>(static_cast<unsigned>(ymd.day())), static_cast<double>(yday),
         static_cast<double>(weekday{day}.c_encoding()),
         static_cast<double>(static_cast<unsigned>(last.day())),
         static_cast<double>(hms.hours().count()), static_cast<double>(hms.minutes().count())});
    if (HasFailure()) break;
  }
}

// ---------------------------------------------------------------------------------------------
// Batched kernels agree with the per-window ones bit for bit

// Random counters (with resets, equal values, jittered and sub-millisecond timestamps, or on a
// 10 s grid) over sliding windows, then over windows in random order (which the window cursor
// must find by search): every step's batched rate, increase and delta equals the
// RangeFunction's on the window found independently by binary search, at every vector level.
TEST(PromqlFunctions, BatchedRatesEqualPerWindowBitForBit) {
  AtEveryLevel([] {
    std::mt19937_64 rng(7);
    // Ends in time order take the merge path (the range query's case), with and without counter
    // resets in the series; shuffled ends take the general loop. On the grid, 20 s steps and a
    // 100 s range put both edges of every window exactly on sample times (the dashboards' case:
    // the sample at the start is out, the one at the end in); 37 s steps and a 95 s range put
    // them between samples; the same grid across the epoch has negative sample times and window
    // edges.
    // A step per sample is the strided loop's other constant stride.
    enum class Times {
      kWholeMs,
      kSubMs,
      kGridOnSamples,
      kGridBetween,
      kGridAcrossEpoch,
      kGridEverySample
    };
    for (const Times times :
         {Times::kWholeMs, Times::kSubMs, Times::kGridOnSamples, Times::kGridBetween,
          Times::kGridAcrossEpoch, Times::kGridEverySample}) {
      const bool grid = times != Times::kWholeMs && times != Times::kSubMs;
      for (const bool shuffled : {false, true}) {
        for (const bool resets : {true, false}) {
          for (const std::string_view name : {"rate", "increase", "delta"}) {
            const BatchRangeFunction batch = FindBatchRangeFunction(name);
            const RangeFunction one = FindRangeFunction(name);
            ASSERT_NE(batch, nullptr) << name;
            std::vector<std::int64_t> ts;
            std::vector<double> vs;
            std::int64_t t =
                times == Times::kGridAcrossEpoch ? -15'003 * kSecond : 1'704'067'200 * kSecond;
            double v = 0;
            for (int k = 0; k < 3000; ++k) {
              t += 10 * kSecond;
              if (!grid) t += static_cast<std::int64_t>(rng() % 5000) * kMs;
              if (times == Times::kSubMs) t += static_cast<std::int64_t>(rng() % kMs);
              const std::uint64_t r = rng() % 100;
              v = r < 3 && resets ? static_cast<double>(rng() % 10)
                                  : v + static_cast<double>(r % 7) * 0.25;
              if (r == 50 && resets) v = -v;  // negative values for delta's sake
              // A counter from zero: the first whole window's rate stops at its zero point.
              if (k == 0 && times == Times::kGridAcrossEpoch) v = 0;
              ts.push_back(t);
              vs.push_back(v);
            }
            const bool on_samples = times == Times::kGridOnSamples;
            const std::int64_t range = (on_samples ? 100 : 95) * kSecond;
            // Steps a whole number of samples apart (20 s, 30 s) take the strided loop.
            const std::int64_t step = (on_samples                         ? 20
                                       : times == Times::kGridAcrossEpoch ? 30
                                       : times == Times::kGridEverySample ? 10
                                                                          : 37) *
                                      kSecond;
            std::vector<std::int64_t> ends;
            // Across the epoch the first window starts 3 s before the first sample: its
            // position rounds down to the sample before it, which does not exist.
            const std::int64_t first_end = times == Times::kGridAcrossEpoch
                                               ? ts.front() + range - 3 * kSecond
                                               : ts.front() - 60 * kSecond;
            for (std::int64_t end = first_end; end < ts.back() + 60 * kSecond; end += step) {
              ends.push_back(end);
            }
            if (shuffled) std::shuffle(ends.begin(), ends.end(), rng);
            BatchScratch scratch;
            std::vector<double> out(ends.size(), -1);
            std::vector<std::uint8_t> present(ends.size(), 9);
            batch(ts, vs, ends, range, &scratch, out.data(), present.data());
            std::size_t values = 0;
            for (std::size_t i = 0; i < ends.size(); ++i) {
              const std::int64_t start = ends[i] - range;
              const auto a = static_cast<std::size_t>(
                  std::upper_bound(ts.begin(), ts.end(), start) - ts.begin());
              const auto b = static_cast<std::size_t>(
                  std::upper_bound(ts.begin(), ts.end(), ends[i]) - ts.begin());
              double want = 0;
              const bool has = b > a && one(Window{std::span(ts).subspan(a, b - a),
                                                   std::span(vs).subspan(a, b - a), start, ends[i]},
                                            {}, &want);
              ASSERT_EQ(present[i] != 0, has) << name << " step " << i;
              if (!has) continue;
              ++values;
              EXPECT_TRUE(SameBits(out[i], want))
                  << name << " step " << i << ": " << out[i] << " vs " << want;
            }
            EXPECT_GT(values, ends.size() * 9 / 10) << name;
          }
        }
      }
    }
  });
}

// Two samples further apart than int64 holds and steps on a grid: the batched rates do not
// compute the grid from a wrapped interval (undefined behaviour, which UBSan reports) and agree
// with the per-window ones.
TEST(PromqlFunctions, BatchedRatesOverSamplesFurtherApartThanInt64) {
  const std::vector<std::int64_t> ts = {-(std::int64_t{3} << 61), std::int64_t{3} << 61};
  const std::vector<double> vs = {1, 5};
  // A range whose durations are exact in a double: the grid path's condition.
  const std::int64_t range = 90 * kSecond;
  std::vector<std::int64_t> ends;
  for (std::int64_t k = 0; k < 4; ++k) ends.push_back(ts[1] + k * kSecond);
  for (const std::string_view name : {"rate", "increase", "delta"}) {
    const BatchRangeFunction batch = FindBatchRangeFunction(name);
    const RangeFunction one = FindRangeFunction(name);
    BatchScratch scratch;
    std::vector<double> out(ends.size(), -1);
    std::vector<std::uint8_t> present(ends.size(), 9);
    batch(ts, vs, ends, range, &scratch, out.data(), present.data());
    for (std::size_t i = 0; i < ends.size(); ++i) {
      const std::int64_t start = ends[i] - range;
      const auto a =
          static_cast<std::size_t>(std::upper_bound(ts.begin(), ts.end(), start) - ts.begin());
      const auto b =
          static_cast<std::size_t>(std::upper_bound(ts.begin(), ts.end(), ends[i]) - ts.begin());
      double want = 0;
      const bool has = b > a && one(Window{std::span(ts).subspan(a, b - a),
                                           std::span(vs).subspan(a, b - a), start, ends[i]},
                                    {}, &want);
      ASSERT_EQ(present[i] != 0, has) << name << " step " << i;
      if (has) {
        EXPECT_TRUE(SameBits(out[i], want)) << name << " step " << i;
      }
    }
  }
}

// The sum aggregation's column fold equals KahanSumInc step by step, first values (-0.0 among
// them), infinities and NaN included, at every vector level.
TEST(PromqlFunctions, KahanSumColumnEqualsKahanSumInc) {
  AtEveryLevel([] {
    std::mt19937_64 rng(11);
    const std::size_t n = 301;
    const double specials[] = {-0.0, 0.0, kInf, -kInf, kNaN, 1e308, -1e308, 1e-300};
    std::vector<double> sum(n, -0.0), c(n, 0.0), want_sum(n), want_c(n, 0.0);
    std::vector<bool> seen(n, false);
    for (int series = 0; series < 40; ++series) {
      std::vector<double> v(n);
      std::vector<std::uint8_t> present(n);
      for (std::size_t i = 0; i < n; ++i) {
        present[i] = rng() % 4 != 0;
        v[i] = rng() % 16 == 0
                   ? specials[rng() % 8]
                   : static_cast<double>(static_cast<std::int64_t>(rng() % 2001) - 1000) / 7.0;
        if (!present[i]) continue;
        if (!seen[i]) {
          want_sum[i] = v[i];
          seen[i] = true;
        } else {
          want_sum[i] = KahanSumInc(v[i], want_sum[i], &want_c[i]);
        }
      }
      KahanSumColumn(v.data(), present.data(), n, sum.data(), c.data());
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!seen[i]) continue;
      EXPECT_TRUE(SameBits(sum[i], want_sum[i]) || (std::isnan(sum[i]) && std::isnan(want_sum[i])))
          << i << ": " << sum[i] << " vs " << want_sum[i];
      // The total is sum + c (the sum alone when infinite).
      const double got = std::isinf(sum[i]) ? sum[i] : sum[i] + c[i];
      const double expect = std::isinf(want_sum[i]) ? want_sum[i] : want_sum[i] + want_c[i];
      EXPECT_TRUE(SameBits(got, expect) || (std::isnan(got) && std::isnan(expect)))
          << i << ": " << got << " vs " << expect;
    }
  });
}

}  // namespace
}  // namespace ingot::promql
