// The numeric kernels of PromQL's functions and aggregations, as Prometheus 3 computes them:
//
//   RangeFunction   rate, increase, delta, deriv, *_over_time, ... over one window of samples
//   ValueFunction   abs, round, clamp, ln, day_of_month, ... applied to one sample value
//   BucketQuantile  histogram_quantile over classic `le` buckets
//   Quantile        the quantile aggregation and quantile_over_time
//   KahanSum        compensated summation (sum, avg, sum_over_time, avg_over_time)
//
// The engine (query/promql_engine.h) selects series, slides windows over their decoded columns
// and calls these per window or per value; nothing here allocates except the thread-local scratch
// of quantile_over_time and mad_over_time (see RangeFunction). Times are nanoseconds; PromQL's
// results in seconds divide by 1e9.
//
// Thread safety: all functions are pure (the sorting scratch is per thread).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

namespace ingot::promql {

// Window::eval_ns when the engine leaves it unset: the evaluation time is taken to be end_ns.
inline constexpr std::int64_t kEvalAtWindowEnd = std::numeric_limits<std::int64_t>::min();

// The samples of one range-vector window, oldest first, staleness markers already removed.
// The window is (start_ns, end_ns]: end_ns is the evaluation time minus the selector's offset (or
// the `@` time minus offset), start_ns is end_ns minus the range.
struct Window {
  std::span<const std::int64_t> ts;
  std::span<const double> values;
  std::int64_t start_ns = 0;  // exclusive
  std::int64_t end_ns = 0;    // inclusive
  // The step's evaluation time, before offset and `@` move the window; only predict_linear reads
  // it. Prometheus predicts `t` seconds after the evaluation time, not after the window's end, so
  // `predict_linear(x[1h] offset 1d, 0)` extrapolates yesterday's trend to now. A step-invariant
  // `@` expression is evaluated once by Prometheus, at the query's start time: pass that.
  // kEvalAtWindowEnd means end_ns (right whenever there is no offset and no `@`).
  std::int64_t eval_ns = kEvalAtWindowEnd;
};

// One range function over one window. `args` are the function's scalar arguments at this step,
// in call order, without the range vector: quantile_over_time {q}, predict_linear {t seconds},
// double_exponential_smoothing {smoothing factor, trend factor}, nothing for the others.
// Returns false when the function has no value for this window (the series then has no point at
// this step), e.g. rate over fewer than two samples, or when an argument it needs is missing.
// Never called with an empty window. Results in seconds (rates, ts_of_*) are rounded exactly as
// Prometheus rounds its millisecond values whenever the timestamps are whole milliseconds.
//
// No allocation, except that quantile_over_time and mad_over_time sort a copy of the window's
// values in a thread-local buffer that keeps its capacity (it grows to the largest window seen
// on the thread and is then reused).
using RangeFunction = bool (*)(const Window& window, std::span<const double> args, double* out);

// The range function named `name` (rate, irate, increase, delta, idelta, deriv, predict_linear,
// resets, changes, double_exponential_smoothing, {avg,min,max,sum,count,stddev,stdvar,last,
// first,present,quantile,mad}_over_time, ts_of_{first,last,min,max}_over_time), or nullptr.
// absent_over_time is not one: the engine answers it from which series had samples.
RangeFunction FindRangeFunction(std::string_view name);

// The samples of a window sliding over a series' sorted timestamps, step after step: after
// Move(ts, start, end), ts[lo, hi) are the samples in (start, end]. Windows usually move forward
// by about the same distance each step, so each edge first tries the distance it moved last time
// (two predictable comparisons with regular samples, where a scan would end in a mispredicted
// branch); a window that moves back is found by binary search.
struct WindowCursor {
  std::size_t lo = 0, hi = 0;

  void Move(std::span<const std::int64_t> ts, std::int64_t start, std::int64_t end) {
    if (started_ && end >= end_) {
      const std::size_t new_hi = Advance(ts, hi, hi_moved_, end, ts.size());
      const std::size_t new_lo = Advance(ts, lo, lo_moved_, start, new_hi);
      hi_moved_ = new_hi - hi;
      lo_moved_ = new_lo - lo;
      hi = new_hi;
      lo = new_lo;
    } else {
      hi = static_cast<std::size_t>(std::upper_bound(ts.begin(), ts.end(), end) - ts.begin());
      lo = static_cast<std::size_t>(
          std::upper_bound(ts.begin(), ts.begin() + static_cast<std::ptrdiff_t>(hi), start) -
          ts.begin());
      hi_moved_ = lo_moved_ = 0;
    }
    hi = std::max(lo, hi);
    end_ = end;
    started_ = true;
  }

 private:
  // The first p >= pos with p == limit or ts[p] > bound, where ts[0, pos) <= bound already.
  static std::size_t Advance(std::span<const std::int64_t> ts, std::size_t pos, std::size_t guess,
                             std::int64_t bound, std::size_t limit) {
    const std::size_t p = std::min(pos + guess, limit);
    if ((p == pos || ts[p - 1] <= bound) && (p == limit || ts[p] > bound)) return p;
    while (pos < limit && ts[pos] <= bound) ++pos;
    return pos;
  }

  std::size_t lo_moved_ = 0, hi_moved_ = 0;
  std::int64_t end_ = 0;
  bool started_ = false;
};

// a - b, saturated at the int64 limits (window starts, offsets and lookbacks near them).
inline std::int64_t SatSub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) {
    return b > 0 ? std::numeric_limits<std::int64_t>::min()
                 : std::numeric_limits<std::int64_t>::max();
  }
  return r;
}

// The reusable buffers of a BatchRangeFunction (kept by the caller, one per thread, so that
// nothing is allocated per series once they have grown to the longest series and step count).
struct BatchScratch {
  std::vector<std::uint32_t> reset_at;  // the samples lower than the one before (counter resets)
  std::vector<double> change, first, sampled, to_start, to_end, intervals, window;
};

// A range function over the windows of one series at every step at once: step i's window is
// (SatSub(ends[i], range_ns), ends[i]] over the series' samples ts/vs. Writes out[i] and
// present[i] for every step, exactly as calling the RangeFunction of the same name on each
// window would (bit for bit), but with the arithmetic laid out step-major so that it runs in
// vector registers instead of one latency chain per window. rate, increase and delta have one;
// the others use their RangeFunction.
using BatchRangeFunction = void (*)(std::span<const std::int64_t> ts, std::span<const double> vs,
                                    std::span<const std::int64_t> ends, std::int64_t range_ns,
                                    BatchScratch* scratch, double* out, std::uint8_t* present);

// Whether any of `vs` is a NaN (staleness markers are NaNs), in vector registers.
bool AnyNaN(std::span<const double> vs);

// The batched form of range function `name`, or nullptr when it has none.
BatchRangeFunction FindBatchRangeFunction(std::string_view name);

// Whether double_exponential_smoothing's factors are acceptable; when they are not, Prometheus
// fails the query ("invalid smoothing factor. Expected: 0 < sf < 1, got: ...", likewise for the
// trend factor), which is the engine's job: it checks every step's factors, but only when the
// range vector has at least one series. Exactly Prometheus' test `sf <= 0 || sf >= 1`, so a
// NaN factor passes (and smooths everything to NaN). With invalid factors the range function
// itself returns false.
inline bool ValidSmoothingFactors(double sf, double tf) {
  return !(sf <= 0 || sf >= 1) && !(tf <= 0 || tf >= 1);
}

// One function of a sample value, with its scalar arguments at this step: round {to_nearest}
// (absent: 1), clamp {min, max}, clamp_min {min}, clamp_max {max}; none for the others.
// Time functions (day_of_month, day_of_week, day_of_year, days_in_month, hour, minute, month,
// year) read the value as Unix seconds (UTC), truncated toward zero as Go's int64(v) does, in the
// proleptic Gregorian calendar (day_of_week: 0 is Sunday). NaN, infinities and |v| >= 9e18 give
// NaN: Prometheus converts those with Go's int64(v), whose result depends on the CPU (amd64
// yields a date some 292 billion years ahead, arm64 saturates or gives 1970), so no answer would
// match it everywhere. Other functions give NaN for NaN, as Go's math package does.
using ValueFunction = double (*)(double value, std::span<const double> args);

// abs ceil floor exp ln log2 log10 sqrt sgn round clamp clamp_min clamp_max deg rad sin cos tan
// asin acos atan sinh cosh tanh asinh acosh atanh and the time functions above; nullptr otherwise.
// clamp with min > max has no value: the engine drops the sample (ClampDropsAll below).
ValueFunction FindValueFunction(std::string_view name);

// True when clamp(v, min, max) yields no samples at all (min > max), as in Prometheus.
inline bool ClampDropsAll(double min, double max) { return min > max; }

// A classic histogram bucket: cumulative count of observations <= upper_bound.
struct Bucket {
  double upper_bound = 0;
  double count = 0;
};

// histogram_quantile(q, buckets) for one label group, as Prometheus' bucketQuantile: sorts
// `buckets` by upper bound, needs a +Inf bucket (NaN otherwise), q < 0 is -Inf, q > 1 is +Inf,
// NaN q is NaN; buckets with equal bounds are merged, counts within a relative 1e-12 of the
// previous one are taken as equal to it (floating-point noise, silently) and counts that still
// decrease are fixed up to be monotonic (*forced_monotonic set, for Prometheus' info annotation;
// it may be null). Fewer than two buckets (after merging) or a total count of 0 give NaN.
// Rearranges `buckets` (sorted, merged buckets first); an empty span gives NaN.
double BucketQuantile(double q, std::span<Bucket> buckets, bool* forced_monotonic);

// histogram_fraction(lower, upper, buckets) for one label group of classic buckets, as Prometheus
// 3 estimates it: the share of observations between lower and upper, interpolating linearly
// inside a bucket (none inside a bucket of infinite width). Rearranges `buckets` as
// BucketQuantile does; needs a +Inf bucket (NaN otherwise); NaN bounds or a zero count give NaN.
double BucketFraction(double lower, double upper, std::span<Bucket> buckets);

// Prometheus' quantile of `values` (which it sorts in place, NaN first as Prometheus sorts):
// linear interpolation between the closest ranks; q < 0 is -Inf, q > 1 is +Inf, NaN q is NaN;
// empty is NaN.
double Quantile(double q, std::span<double> values);

// One step of Kahan-Babuska-Neumaier summation: returns the new sum, updates *c. The total is
// sum + *c. An infinite partial sum clears the compensation, as Prometheus' kahanSumInc does.
double KahanSumInc(double inc, double sum, double* c);

// The sum aggregation's fold of one series into its group: at every step i < n where present[i],
// sum[i] = KahanSumInc(v[i], sum[i], &c[i]), computed branch-free in vector registers. A group's
// state starts at sum -0.0 and c 0: adding the first value to -0.0 gives that value exactly
// (-0.0 included) with c staying 0, so no step needs to know whether it is the group's first.
void KahanSumColumn(const double* v, const std::uint8_t* present, std::size_t n, double* sum,
                    double* c);

}  // namespace ingot::promql
