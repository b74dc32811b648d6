#include "query/promql_functions.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <numbers>

#include "codec/simd/kernels.h"

// The vector kernels of this file are compiled for AVX-512 (eight lanes of doubles), AVX2 (four)
// and the baseline (SSE2's two) from one loop each, and each call picks one by Lanes(). Every
// variant does the same operations in the same order (no contraction into FMAs: the file is
// built with -ffp-contract=off), so results are the same bits at every level.
#define INGOT_QUERY_AVX512 gnu::target("avx2,avx512f,avx512vl,avx512bw,avx512dq")

namespace ingot::promql {
namespace {

// The codec's active level (CPU detection, lowered by INGOT_ISA or codec::simd::ForceIsa): one
// switch sets the vector width of the whole node. A plain check rather than an ifunc, which
// sanitizer runtimes do not survive.
using codec::simd::IsaLevel;
IsaLevel Lanes() { return codec::simd::ActiveKernels().level; }

// Calls a kernel's variant for Lanes() with `args`.
template <class Avx512, class Avx2, class Baseline, class... Args>
decltype(auto) ByLanes(Avx512 avx512, Avx2 avx2, Baseline baseline, Args&&... args) {
  switch (Lanes()) {
    case IsaLevel::kAvx512:
      return avx512(std::forward<Args>(args)...);
    case IsaLevel::kAvx2:
      return avx2(std::forward<Args>(args)...);
    default:
      return baseline(std::forward<Args>(args)...);
  }
}

constexpr std::int64_t kNsPerMilli = 1000 * 1000;
constexpr std::int64_t kNsPerSecond = 1000 * kNsPerMilli;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Time in seconds

// A Go time.Duration's Seconds(): whole seconds plus the fraction, each converted on its own.
double DurationSeconds(std::int64_t ns) {
  return static_cast<double>(ns / kNsPerSecond) + static_cast<double>(ns % kNsPerSecond) / 1e9;
}

// Seconds of a timestamp or of a difference of two. Prometheus holds milliseconds and divides by
// 1000. Below 2^53 nanoseconds (104 days) the count converts to a double exactly and one
// correctly rounded division by 1e9 gives the nearest double to the true number of seconds: for
// whole milliseconds that is the very value of Prometheus' ms / 1000 (the same real number,
// rounded once), so results agree bit for bit with Prometheus on millisecond data. Beyond, whole
// milliseconds are divided as Prometheus divides them (float64(ns) / 1e9 would round the count
// first), anything else as a Go Duration's Seconds().
constexpr std::int64_t kExactInDouble = std::int64_t{1} << 53;
double Seconds(std::int64_t ns) {
  if (ns > -kExactInDouble && ns < kExactInDouble) return static_cast<double>(ns) / 1e9;
  if (ns % kNsPerMilli == 0) return static_cast<double>(ns / kNsPerMilli) / 1000.0;
  return DurationSeconds(ns);
}

// ---------------------------------------------------------------------------------------------
// Range functions

// rate, increase and delta: Prometheus' extrapolatedRate. The raw change between the first and
// the last sample (plus, for counters, the value before every reset) is stretched towards the
// window's boundaries: all the way to a boundary when the gap to it is under 1.1 average sample
// intervals (the series presumably goes on), otherwise by half an interval (it presumably starts
// or ends inside the window). A counter is not stretched back past the time it would have been
// zero.
bool ExtrapolatedRate(const Window& w, bool is_counter, bool is_rate, double* out) {
  const std::size_t n = w.values.size();
  if (n < 2) return false;
  const std::span<const double> v = w.values;
  double result = v[n - 1] - v[0];
  if (is_counter) {
    for (std::size_t i = 1; i < n; ++i) {
      if (v[i] < v[i - 1]) result += v[i - 1];
    }
  }
  const std::int64_t first_ts = w.ts.front();
  const std::int64_t last_ts = w.ts.back();
  double to_start = Seconds(first_ts - w.start_ns);
  double to_end = Seconds(w.end_ns - last_ts);
  const double sampled = Seconds(last_ts - first_ts);
  const double average_interval = sampled / static_cast<double>(n - 1);
  const double threshold = average_interval * 1.1;
  if (to_start >= threshold) to_start = average_interval / 2;
  if (is_counter && result > 0 && v[0] >= 0) {
    const double to_zero = sampled * (v[0] / result);
    if (to_zero < to_start) to_start = to_zero;
  }
  if (to_end >= threshold) to_end = average_interval / 2;
  // Equal first and last timestamps (never in a series, but possible in a subquery's input when
  // steps coincide) would divide by zero; Prometheus then keeps the raw change.
  double factor = sampled != 0 ? (sampled + to_start + to_end) / sampled : 1.0;
  if (is_rate) factor /= DurationSeconds(w.end_ns - w.start_ns);
  *out = result * factor;
  return true;
}

// ExtrapolatedRate over every step of one series, in two passes. Pass one gathers each window's
// raw change (resets summed in sample order, as above, and only for windows that hold one), its
// first value, its sample count and its three durations; pass two is the branch-free arithmetic,
// the same operations in the same order as ExtrapolatedRate, so that it runs in vector registers
// rather than as one long chain of divisions per window.
//

struct RateSteps {
  const double* change;
  const double* first;
  const double* sampled;
  const double* to_start;
  const double* to_end;
  const double* intervals;
  const double* window;  // nullptr: every window is `window0` seconds long
  double window0;
  double unit;  // what durations are divided by to get seconds: 1e9 or 1
  std::size_t steps;
};

template <bool kCounter, bool kRate, bool kOneWindow>
[[gnu::always_inline]] inline void ExtrapolateStepsAs(const RateSteps& in,
                                                      double* __restrict out) {
  const double* __restrict change = in.change;
  const double* __restrict first = in.first;
  const double* __restrict sampled_raw = in.sampled;
  const double* __restrict start_raw = in.to_start;
  const double* __restrict end_raw = in.to_end;
  const double* __restrict intervals = in.intervals;
  const double* __restrict window = in.window;
  const double unit = in.unit;
  for (std::size_t i = 0; i < in.steps; ++i) {
    const double result = change[i];
    const double to_start_raw = start_raw[i] / unit;
    const double to_end_raw = end_raw[i] / unit;
    const double sampled = sampled_raw[i] / unit;
    const double average_interval = sampled / intervals[i];
    const double threshold = average_interval * 1.1;
    const double half = average_interval / 2;
    double to_start = to_start_raw >= threshold ? half : to_start_raw;
    if constexpr (kCounter) {
      const double to_zero = sampled * (first[i] / result);
      const bool applies = (result > 0) & (first[i] >= 0) & (to_zero < to_start);
      to_start = applies ? to_zero : to_start;
    }
    const double to_end = to_end_raw >= threshold ? half : to_end_raw;
    const double stretched = (sampled + to_start + to_end) / sampled;
    double factor = sampled != 0 ? stretched : 1.0;
    if constexpr (kRate) factor /= kOneWindow ? in.window0 : window[i];
    out[i] = result * factor;
  }
}

template <bool kCounter, bool kRate>
[[gnu::always_inline]] inline void ExtrapolateSteps(const RateSteps& in, double* __restrict out) {
  if (in.window == nullptr) {
    ExtrapolateStepsAs<kCounter, kRate, true>(in, out);
  } else {
    ExtrapolateStepsAs<kCounter, kRate, false>(in, out);
  }
}

// Pass two compiled for AVX-512 (eight lanes), AVX2 (four) and the baseline (two), picked by
// Lanes().
template <bool kCounter, bool kRate>
[[INGOT_QUERY_AVX512]] void ExtrapolateStepsAvx512(const RateSteps& in, double* out) {
  ExtrapolateSteps<kCounter, kRate>(in, out);
}
template <bool kCounter, bool kRate>
[[gnu::target("avx2")]] void ExtrapolateStepsAvx2(const RateSteps& in, double* out) {
  ExtrapolateSteps<kCounter, kRate>(in, out);
}
template <bool kCounter, bool kRate>
void ExtrapolateStepsBaseline(const RateSteps& in, double* out) {
  ExtrapolateSteps<kCounter, kRate>(in, out);
}

// The samples lower than the one before (counter resets), appended to `reset_at` in order. Resets
// are rare: a vectorized test per 64 samples, and only a block with one is looked at again.
[[gnu::always_inline]] inline void FindResets(std::span<const double> vs,
                                              std::vector<std::uint32_t>* reset_at) {
  constexpr std::size_t kScan = 64;
  for (std::size_t base = 1; base < vs.size(); base += kScan) {
    const std::size_t to = std::min(vs.size(), base + kScan);
    double any = 0;  // a select of doubles: the form GCC vectorizes
    for (std::size_t k = base; k < to; ++k) any = vs[k] < vs[k - 1] ? 1.0 : any;
    if (any == 0) continue;
    for (std::size_t k = base; k < to; ++k) {
      if (vs[k] < vs[k - 1]) reset_at->push_back(static_cast<std::uint32_t>(k));
    }
  }
}
// Compiled like pass two (the scan was ~3% of a range query with SSE2's two lanes).
[[INGOT_QUERY_AVX512]] void FindResetsAvx512(std::span<const double> vs,
                                             std::vector<std::uint32_t>* reset_at) {
  FindResets(vs, reset_at);
}
[[gnu::target("avx2")]] void FindResetsAvx2(std::span<const double> vs,
                                            std::vector<std::uint32_t>* reset_at) {
  FindResets(vs, reset_at);
}
void FindResetsBaseline(std::span<const double> vs, std::vector<std::uint32_t>* reset_at) {
  FindResets(vs, reset_at);
}

// Pass one in the range query's common case, as one merge of the steps with the samples: steps
// in time order (both window edges only move forward), every window a whole range long, every
// duration exact in a double (below 2^53 ns). Without the per-step choices of the general loop
// it takes about a third less time per window. A step with fewer than two samples gets pass
// two's harmless inputs (and reads index 0). kResets: the series has counter resets (reset_at,
// ascending), added to the change of the windows that hold one, in sample order.
template <bool kResets>
void MergeWindows(std::span<const std::int64_t> ts, std::span<const double> vs,
                  std::span<const std::int64_t> ends, std::int64_t range_ns,
                  std::span<const std::uint32_t> reset_at, BatchScratch& s,
                  std::uint8_t* __restrict present) {
  const std::int64_t* __restrict t = ts.data();
  const double* __restrict v = vs.data();
  double* __restrict change = s.change.data();
  double* __restrict first = s.first.data();
  double* __restrict sampled = s.sampled.data();
  double* __restrict to_start = s.to_start.data();
  double* __restrict to_end = s.to_end.data();
  double* __restrict intervals = s.intervals.data();
  const std::size_t n = ts.size();
  std::size_t lo = 0, hi = 0, next_reset = 0;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const std::int64_t end = ends[i], start = end - range_ns;
    while (hi < n && t[hi] <= end) ++hi;
    while (lo < hi && t[lo] <= start) ++lo;
    const bool ok = hi >= lo + 2;
    const std::size_t a = ok ? lo : 0, last = ok ? hi - 1 : 0;
    double c = v[last] - v[a];
    if constexpr (kResets) {
      // The resets after the window's first sample and up to its last, in sample order: the
      // same additions as a test of every sample, without the samples that are not resets.
      while (next_reset < reset_at.size() && reset_at[next_reset] <= lo) ++next_reset;
      if (ok) {
        for (std::size_t r = next_reset; r < reset_at.size() && reset_at[r] <= last; ++r) {
          c += v[reset_at[r] - 1];
        }
      }
    }
    change[i] = ok ? c : 0;
    first[i] = ok ? v[a] : 0;
    sampled[i] = ok ? static_cast<double>(t[last] - t[a]) : 1;
    to_start[i] = ok ? static_cast<double>(t[a] - start) : 0;
    to_end[i] = ok ? static_cast<double>(end - t[last]) : 0;
    intervals[i] = ok ? static_cast<double>(hi - lo - 1) : 1;
    present[i] = ok;
  }
}

// Samples at one fixed interval (the series' chunks store regular timestamps): then the windows
// of a range query come in a few shapes only.
[[gnu::always_inline]] inline bool OnOneIntervalAs(std::span<const std::int64_t> ts) {
  if (ts.size() < 2) return false;
  // Unsigned: the samples may span more than int64 holds (their differences wrap, harmlessly).
  const auto at = [&](std::size_t i) { return static_cast<std::uint64_t>(ts[i]); };
  const std::uint64_t interval = at(1) - at(0);
  std::uint64_t off = 0;  // an OR of differences: the loop vectorizes
  for (std::size_t i = 1; i < ts.size(); ++i) off |= (at(i) - at(i - 1)) ^ interval;
  return off == 0;
}

// Steps in time order: an OR of comparisons rather than std::is_sorted's early exit, so that it
// vectorizes (the steps are the same for every series of a query, and nearly always in order).
[[gnu::always_inline]] inline bool AscendingAs(std::span<const std::int64_t> ends) {
  std::int64_t descends = 0;  // all ones where a step is earlier than the one before
  for (std::size_t i = 1; i < ends.size(); ++i) descends |= ends[i] < ends[i - 1] ? -1 : 0;
  return descends == 0;
}

// Both scans run once per series over all its samples and steps (together ~5% of a range query
// in SSE2's two lanes): compiled like pass two.
[[INGOT_QUERY_AVX512]] bool OnOneIntervalAvx512(std::span<const std::int64_t> ts) {
  return OnOneIntervalAs(ts);
}
[[gnu::target("avx2")]] bool OnOneIntervalAvx2(std::span<const std::int64_t> ts) {
  return OnOneIntervalAs(ts);
}
[[INGOT_QUERY_AVX512]] bool AscendingAvx512(std::span<const std::int64_t> ends) {
  return AscendingAs(ends);
}
[[gnu::target("avx2")]] bool AscendingAvx2(std::span<const std::int64_t> ends) {
  return AscendingAs(ends);
}
bool OnOneInterval(std::span<const std::int64_t> ts) {
  return ByLanes(OnOneIntervalAvx512, OnOneIntervalAvx2, OnOneIntervalAs, ts);
}
bool Ascending(std::span<const std::int64_t> ends) {
  return ByLanes(AscendingAvx512, AscendingAvx2, AscendingAs, ends);
}

// A window's shape, what pass two computes before the change comes in: the durations in seconds
// (to_start and to_end already cut to half an interval when they pass the threshold) and the
// factor without a counter's zero point. `key` is the three nanosecond figures it came from.
struct WindowShape {
  std::int64_t key[3] = {-1, -1, -1};  // intervals, to_start and to_end in ns
  double sampled = 1, to_start = 0, to_end = 0, factor = 1;
  // A counter's zero point is sampled * (first / change); it cannot fall before to_start when
  // first > change * zero_bound: that margin of a thousandth dwarfs every rounding of both
  // sides, so most windows skip the division (a counter's value is far above its change).
  double zero_bound = 0;
};

// The factor of pass two, the same operations in the same order.
template <bool kRate>
double StretchFactor(double sampled, double to_start, double to_end, double window) {
  const double stretched = (sampled + to_start + to_end) / sampled;
  double factor = sampled != 0 ? stretched : 1.0;
  if constexpr (kRate) factor /= window;
  return factor;
}

template <bool kRate>
void ComputeShape(std::int64_t intervals, std::int64_t sampled_ns, std::int64_t to_start_ns,
                  std::int64_t to_end_ns, double window, WindowShape* s) {
  constexpr double kUnit = 1e9;  // exact durations, as in pass two's fast path
  const double to_start_raw = static_cast<double>(to_start_ns) / kUnit;
  const double to_end_raw = static_cast<double>(to_end_ns) / kUnit;
  const double sampled = static_cast<double>(sampled_ns) / kUnit;
  const double average_interval = sampled / static_cast<double>(intervals);
  const double threshold = average_interval * 1.1;
  const double half = average_interval / 2;
  s->key[0] = intervals;
  s->key[1] = to_start_ns;
  s->key[2] = to_end_ns;
  s->sampled = sampled;
  s->to_start = to_start_raw >= threshold ? half : to_start_raw;
  s->to_end = to_end_raw >= threshold ? half : to_end_raw;
  s->factor = StretchFactor<kRate>(sampled, s->to_start, s->to_end, window);
  s->zero_bound = s->to_start / sampled * 1.001;
}

// A window's factor from its shape: a counter's extrapolation stops at its zero point when that
// falls after the window's start (pass two's operations, in its order).
template <bool kCounter, bool kRate>
double ShapedFactor(double first, double change, const WindowShape& shape, double window) {
  if constexpr (kCounter) {
    if (change > 0 && first >= 0 && !(first > change * shape.zero_bound)) {
      const double to_zero = shape.sampled * (first / change);
      if (to_zero < shape.to_start) {
        return StretchFactor<kRate>(shape.sampled, to_zero, shape.to_end, window);
      }
    }
  }
  return shape.factor;
}

// A window's edges found by walking: lo, the first sample after the window's start, and hi, the
// first after its end, both only move forward (steps in time order).
class WalkedEdges {
 public:
  WalkedEdges(std::span<const std::int64_t> ts, std::int64_t range_ns)
      : t_(ts.data()), n_(ts.size()), range_ns_(range_ns) {}
  void Next(std::int64_t end, std::size_t* lo, std::size_t* hi) {
    const std::int64_t start = end - range_ns_;
    while (hi_ < n_ && t_[hi_] <= end) ++hi_;
    while (lo_ < hi_ && t_[lo_] <= start) ++lo_;
    *lo = lo_;
    *hi = hi_;
  }

 private:
  const std::int64_t* t_;
  std::size_t n_;
  std::int64_t range_ns_;
  std::size_t lo_ = 0, hi_ = 0;
};

// The same edges computed, for samples at one interval I and steps at one interval S: sample j is
// at t0 + j * I, so the samples up to time x are floor((x - t0) / I) + 1 of them (clamped to
// 0..n), and that quotient moves by S / I per step, plus one when the remainder carries. No
// search and no branch on the data: the walk's two loops were the top of a range query's rates.
class GridEdges {
 public:
  // False when the edges cannot be computed so: fewer than two steps, steps or samples not at
  // one positive interval, or a distance from the first sample that int64 does not hold.
  static bool Applies(std::span<const std::int64_t> ts, std::span<const std::int64_t> ends,
                      std::int64_t range_ns) {
    if (ends.size() < 2 || ts.size() < 2) return false;
    std::int64_t interval = 0, step = 0;  // samples may lie further apart than int64 holds
    if (__builtin_sub_overflow(ts[1], ts[0], &interval) ||
        __builtin_sub_overflow(ends[1], ends[0], &step) || interval <= 0 || step <= 0 ||
        !OnOneInterval(ends)) {
      return false;
    }
    // The walk computes one step past the last: that distance must fit too.
    std::int64_t first = 0, last = 0, past = 0;
    return !__builtin_sub_overflow(ends.front() - range_ns, ts[0], &first) &&
           !__builtin_sub_overflow(ends.back(), ts[0], &last) &&
           !__builtin_add_overflow(last, step, &past) &&
           past < std::numeric_limits<std::int64_t>::max();
  }
  // The edges of the windows from step `from` on.
  GridEdges(std::span<const std::int64_t> ts, std::span<const std::int64_t> ends,
            std::int64_t range_ns, std::size_t from = 0)
      : interval_(ts[1] - ts[0]),
        n_(static_cast<std::int64_t>(ts.size())),
        step_q_((ends[1] - ends[0]) / interval_),
        step_r_((ends[1] - ends[0]) % interval_) {
    Split(ends[from] - ts[0], &end_q_, &end_r_);
    Split(ends[from] - range_ns - ts[0], &start_q_, &start_r_);
  }
  // With steps a whole number of intervals apart, every edge moves by that number, `stride`.
  bool Strided(std::int64_t* stride) const {
    *stride = step_q_;
    return step_r_ == 0;
  }
  // The unclamped index of the last sample at or before the step's end (-1: none), and before
  // or at its start.
  std::int64_t LastAtEnd() const { return end_q_; }
  std::int64_t LastAtStart() const { return start_q_; }
  void Next(std::int64_t /*end*/, std::size_t* lo, std::size_t* hi) {
    *hi = static_cast<std::size_t>(std::clamp<std::int64_t>(end_q_ + 1, 0, n_));
    *lo = static_cast<std::size_t>(std::clamp<std::int64_t>(start_q_ + 1, 0, n_));
    Advance(&end_q_, &end_r_);
    Advance(&start_q_, &start_r_);
  }

 private:
  // Floor division by the interval: remainder in [0, interval).
  void Split(std::int64_t distance, std::int64_t* q, std::int64_t* r) const {
    *q = distance / interval_;
    *r = distance % interval_;
    if (*r < 0) {
      *r += interval_;
      --*q;
    }
  }
  void Advance(std::int64_t* q, std::int64_t* r) const {
    *r += step_r_;
    const std::int64_t carry = *r >= interval_ ? 1 : 0;
    *r -= carry * interval_;
    *q += step_q_ + carry;
  }
  std::int64_t interval_, n_, step_q_, step_r_;
  std::int64_t end_q_ = 0, end_r_ = 0, start_q_ = 0, start_r_ = 0;
};

// Passes one and two in one, for samples on one interval (the fast path's conditions hold too):
// the windows' shapes repeat (a 5 min window over 30 s samples holds 10 of them, at the same
// offsets from its edges, step after step), so each window looks its shape up against the last
// one's and only the change and a counter's zero point are its own. No column is written. The
// results are pass two's bit for bit: a shape is computed by the same operations.
// Steps [from, to) only, with `edges` at step `from`.
template <bool kCounter, bool kRate, bool kResets, class Edges>
void RegularWindows(std::span<const std::int64_t> ts, std::span<const double> vs,
                    std::span<const std::int64_t> ends, std::int64_t range_ns,
                    std::span<const std::uint32_t> reset_at, double window, Edges edges,
                    std::size_t from, std::size_t to, double* out, std::uint8_t* present) {
  const std::int64_t* t = ts.data();
  const double* v = vs.data();
  WindowShape shape;
  std::size_t next_reset = 0;
  for (std::size_t i = from; i < to; ++i) {
    const std::int64_t end = ends[i], start = end - range_ns;
    std::size_t lo = 0, hi = 0;
    edges.Next(end, &lo, &hi);
    if constexpr (kResets) {
      while (next_reset < reset_at.size() && reset_at[next_reset] <= lo) ++next_reset;
    }
    if (hi < lo + 2) {
      out[i] = 0;
      present[i] = 0;
      continue;
    }
    const std::size_t a = lo, last = hi - 1;
    double result = v[last] - v[a];
    if constexpr (kResets) {
      for (std::size_t r = next_reset; r < reset_at.size() && reset_at[r] <= last; ++r) {
        result += v[reset_at[r] - 1];
      }
    }
    const auto intervals = static_cast<std::int64_t>(last - a);
    const std::int64_t to_start_ns = t[a] - start, to_end_ns = end - t[last];
    if (intervals != shape.key[0] || to_start_ns != shape.key[1] || to_end_ns != shape.key[2]) {
      ComputeShape<kRate>(intervals, t[last] - t[a], to_start_ns, to_end_ns, window, &shape);
    }
    out[i] = result * ShapedFactor<kCounter, kRate>(v[a], result, shape, window);
    present[i] = 1;
  }
}

template <bool kCounter, bool kRate, class Edges>
void RegularWindowsOf(std::span<const std::int64_t> ts, std::span<const double> vs,
                      std::span<const std::int64_t> ends, std::int64_t range_ns,
                      std::span<const std::uint32_t> reset_at, double window, Edges edges,
                      std::size_t from, std::size_t to, double* out, std::uint8_t* present) {
  if (reset_at.empty()) {
    RegularWindows<kCounter, kRate, false>(ts, vs, ends, range_ns, reset_at, window, edges, from,
                                           to, out, present);
  } else {
    RegularWindows<kCounter, kRate, true>(ts, vs, ends, range_ns, reset_at, window, edges, from, to,
                                          out, present);
  }
}

// The windows of one stride block: the change times the shared factor, and whether any of them
// needs more (a counter's zero point may fall inside it). A loop without branches, which
// vectorizes when the stride is a constant (kStride; 0: the stride argument).
template <bool kCounter, std::size_t kStride>
[[gnu::always_inline]] inline bool StrideBlockAs(const double* __restrict first_at,
                                                 const double* __restrict last_at,
                                                 std::size_t stride, std::size_t count,
                                                 const WindowShape& shape, double* __restrict out,
                                                 std::uint8_t* __restrict present) {
  if constexpr (kStride != 0) stride = kStride;
  const double factor = shape.factor, zero_bound = shape.zero_bound;
  std::int64_t more = 0;  // an OR of all-ones lanes: the form GCC vectorizes
  for (std::size_t j = 0; j < count; ++j) {
    const double first = first_at[j * stride], result = last_at[j * stride] - first;
    if constexpr (kCounter) {
      more |= result > 0 && first >= 0 && !(first > result * zero_bound) ? -1 : 0;
    }
    out[j] = result * factor;
  }
  std::memset(present, 1, count);
  return more != 0;
}
// Strides 1 and 2 (a dashboard's steps at one or two sample intervals) as constants.
template <bool kCounter>
[[gnu::always_inline]] inline bool StrideBlockOf(const double* first_at, const double* last_at,
                                                 std::size_t stride, std::size_t count,
                                                 const WindowShape& shape, double* out,
                                                 std::uint8_t* present) {
  switch (stride) {
    case 1:
      return StrideBlockAs<kCounter, 1>(first_at, last_at, 1, count, shape, out, present);
    case 2:
      return StrideBlockAs<kCounter, 2>(first_at, last_at, 2, count, shape, out, present);
    default:
      return StrideBlockAs<kCounter, 0>(first_at, last_at, stride, count, shape, out, present);
  }
}
template <bool kCounter>
[[INGOT_QUERY_AVX512]] bool StrideBlockAvx512(const double* first_at, const double* last_at,
                                              std::size_t stride, std::size_t count,
                                              const WindowShape& shape, double* out,
                                              std::uint8_t* present) {
  return StrideBlockOf<kCounter>(first_at, last_at, stride, count, shape, out, present);
}
template <bool kCounter>
[[gnu::target("avx2")]] bool StrideBlockAvx2(const double* first_at, const double* last_at,
                                             std::size_t stride, std::size_t count,
                                             const WindowShape& shape, double* out,
                                             std::uint8_t* present) {
  return StrideBlockOf<kCounter>(first_at, last_at, stride, count, shape, out, present);
}
template <bool kCounter>
bool StrideBlockBaseline(const double* first_at, const double* last_at, std::size_t stride,
                         std::size_t count, const WindowShape& shape, double* out,
                         std::uint8_t* present) {
  return StrideBlockAs<kCounter, 0>(first_at, last_at, stride, count, shape, out, present);
}

// Samples and steps on one grid (`edges` at the first step), steps a whole number `stride` of
// intervals apart (a dashboard's 60 s steps over 30 s samples): every window that the samples
// cover at both edges has the same shape, and its edges are stride samples after the previous
// window's. Those windows take a branch-free loop over the values, in blocks of kStrideBlock;
// in a block, the windows over a counter reset or with a possible zero point are redone with
// RegularWindows' body and the same shape, and the windows at the ends of the data take
// RegularWindows. The results are RegularWindows' bit for bit (the same operations on the same
// shape).
template <bool kCounter, bool kRate>
void StridedWindows(std::span<const std::int64_t> ts, std::span<const double> vs,
                    std::span<const std::int64_t> ends, std::int64_t range_ns,
                    std::span<const std::uint32_t> reset_at, double window,
                    const GridEdges& edges, std::int64_t stride, double* out,
                    std::uint8_t* present) {
  constexpr std::size_t kStrideBlock = 64;
  const std::size_t steps = ends.size();
  const auto n = static_cast<std::int64_t>(ts.size());
  // Window i holds samples [first0 + i * stride, last0 + i * stride]; whole when first0 + i *
  // stride >= 0 and last0 + i * stride < n.
  const std::int64_t first0 = edges.LastAtStart() + 1, last0 = edges.LastAtEnd();
  std::size_t begin = steps, end = steps;  // the whole windows
  if (last0 - first0 >= 1 && stride > 0) {
    const std::int64_t lo = first0 >= 0 ? 0 : (-first0 + stride - 1) / stride;
    const std::int64_t hi = last0 >= n ? 0 : (n - 1 - last0) / stride + 1;
    begin = static_cast<std::size_t>(std::min<std::int64_t>(lo, static_cast<std::int64_t>(steps)));
    end = static_cast<std::size_t>(std::clamp<std::int64_t>(hi, static_cast<std::int64_t>(begin),
                                                            static_cast<std::int64_t>(steps)));
  }
  auto regular = [&](std::size_t from, std::size_t to) {
    if (from < to) {
      RegularWindowsOf<kCounter, kRate>(ts, vs, ends, range_ns, reset_at, window,
                                        GridEdges(ts, ends, range_ns, from), from, to, out,
                                        present);
    }
  };
  regular(0, begin);
  if (begin < end) {
    const auto s = static_cast<std::size_t>(stride);
    const std::size_t a = static_cast<std::size_t>(first0) + begin * s,
                      last = a + static_cast<std::size_t>(last0 - first0);
    WindowShape shape;
    const std::int64_t start_ns = ends[begin] - range_ns;
    ComputeShape<kRate>(static_cast<std::int64_t>(last - a), ts[last] - ts[a], ts[a] - start_ns,
                        ends[begin] - ts[last], window, &shape);
    const std::size_t span = last - a;  // a window's last sample after its first
    const double* v = vs.data();
    std::size_t next_reset = 0;
    for (std::size_t from = begin; from < end; from += kStrideBlock) {
      const std::size_t count = std::min(kStrideBlock, end - from);
      const std::size_t block_a = a + (from - begin) * s;
      const std::size_t block_last = block_a + span + (count - 1) * s;
      const double* first_at = v + block_a;
      bool more = ByLanes(StrideBlockAvx512<kCounter>, StrideBlockAvx2<kCounter>,
                          StrideBlockBaseline<kCounter>, first_at, first_at + span, s, count, shape,
                          out + from, present + from);
      // A reset inside a window of the block: after its first sample, up to its last.
      while (next_reset < reset_at.size() && reset_at[next_reset] <= block_a) ++next_reset;
      more |= next_reset < reset_at.size() && reset_at[next_reset] <= block_last;
      if (!more) continue;
      // The block's windows that hold a reset or may reach a counter's zero point take
      // RegularWindows' body with the shared shape (the same operations): after a restart only
      // the windows over it and the few after it, not the whole block.
      std::size_t r = next_reset;
      for (std::size_t j = 0; j < count; ++j) {
        const std::size_t wa = block_a + j * s, wl = wa + span;
        while (r < reset_at.size() && reset_at[r] <= wa) ++r;
        const bool resets = r < reset_at.size() && reset_at[r] <= wl;
        const double first = v[wa];
        double result = v[wl] - first;
        if (!resets &&
            !(kCounter && result > 0 && first >= 0 && !(first > result * shape.zero_bound))) {
          continue;  // the loop's value stands
        }
        for (std::size_t q = r; q < reset_at.size() && reset_at[q] <= wl; ++q) {
          result += v[reset_at[q] - 1];
        }
        out[from + j] = result * ShapedFactor<kCounter, kRate>(first, result, shape, window);
      }
    }
  }
  regular(end, steps);
}

template <bool kCounter, bool kRate>
void ExtrapolatedRates(std::span<const std::int64_t> ts, std::span<const double> vs,
                       std::span<const std::int64_t> ends, std::int64_t range_ns,
                       BatchScratch* scratch, double* out, std::uint8_t* present) {
  const std::size_t steps = ends.size();
  BatchScratch& s = *scratch;
  // Counter resets are rare: scan for them 64 samples at a time (a vectorized test per block)
  // and note where they are; a window then tells from the next reset after its first sample
  // whether it holds one, and only then sums the values before its resets.
  s.reset_at.clear();
  if constexpr (kCounter) {
    ByLanes(FindResetsAvx512, FindResetsAvx2, FindResetsBaseline, vs, &s.reset_at);
  }
  const std::span<const std::uint32_t> reset_at = s.reset_at;
  std::size_t next_reset = 0;  // the first entry of reset_at after the previous window's start
  std::size_t previous_a = 0;
  // The change of window vs[a, last], counter resets included (in sample order, as above);
  // windows come in step order, so the next reset after a window's start is found by walking.
  auto change_of = [&](std::size_t a, std::size_t last) {
    double change = vs[last] - vs[a];
    if constexpr (kCounter) {
      if (reset_at.empty()) return change;
      if (a < previous_a) {
        next_reset = static_cast<std::size_t>(
            std::upper_bound(reset_at.begin(), reset_at.end(), a) - reset_at.begin());
      } else {
        while (next_reset < reset_at.size() && reset_at[next_reset] <= a) ++next_reset;
      }
      previous_a = a;
      for (std::size_t r = next_reset; r < reset_at.size() && reset_at[r] <= last; ++r) {
        change += vs[reset_at[r] - 1];
      }
    }
    return change;
  };
  // Every duration in a window is at most the window's span: below 2^53 ns (104 days) pass one
  // converts nanosecond differences to doubles exactly and pass two divides them by 1e9, which
  // is Seconds() bit for bit; otherwise pass one calls Seconds() itself and pass two divides by 1.
  // Steps in time order (as in every range query), and no window cut short at the int64 limits:
  // then every window spans range_ns and is exact when range_ns is.
  const bool ascending = Ascending(ends);
  const std::int64_t min_end = steps == 0  ? 0
                               : ascending ? ends[0]
                                           : *std::min_element(ends.begin(), ends.end());
  const bool whole =
      range_ns >= 0 && min_end >= std::numeric_limits<std::int64_t>::min() + range_ns;
  bool exact = whole && range_ns < kExactInDouble;
  if (!whole) {
    exact = true;
    for (std::size_t i = 0; i < steps; ++i) {
      exact &= ends[i] - SatSub(ends[i], range_ns) < kExactInDouble;
    }
  }
  const double window0 = DurationSeconds(range_ns);
  if (exact && whole && ascending && OnOneInterval(ts)) {
    std::int64_t stride = 0;
    if (!GridEdges::Applies(ts, ends, range_ns)) {
      RegularWindowsOf<kCounter, kRate>(ts, vs, ends, range_ns, reset_at, window0,
                                        WalkedEdges(ts, range_ns), 0, steps, out, present);
    } else if (const GridEdges grid(ts, ends, range_ns); grid.Strided(&stride)) {
      StridedWindows<kCounter, kRate>(ts, vs, ends, range_ns, reset_at, window0, grid, stride, out,
                                      present);
    } else {
      RegularWindowsOf<kCounter, kRate>(ts, vs, ends, range_ns, reset_at, window0, grid, 0, steps,
                                        out, present);
    }
    return;
  }
  for (auto* v :
       {&s.change, &s.first, &s.sampled, &s.to_start, &s.to_end, &s.intervals, &s.window}) {
    v->resize(steps);
  }
  RateSteps in{s.change.data(),   s.first.data(),  s.sampled.data(),  s.to_start.data(),
               s.to_end.data(),   s.intervals.data(), s.window.data(), window0,
               exact ? 1e9 : 1.0, steps};
  auto pass_two = [&] {
    ByLanes(ExtrapolateStepsAvx512<kCounter, kRate>, ExtrapolateStepsAvx2<kCounter, kRate>,
            ExtrapolateStepsBaseline<kCounter, kRate>, in, out);
  };
  if (exact && whole && ascending) {
    if (reset_at.empty()) {
      MergeWindows<false>(ts, vs, ends, range_ns, reset_at, s, present);
    } else {
      MergeWindows<true>(ts, vs, ends, range_ns, reset_at, s, present);
    }
    in.window = nullptr;  // every window is range_ns long
    pass_two();
    return;
  }
  WindowCursor cursor;
  for (std::size_t i = 0; i < steps; ++i) {
    const std::int64_t end = ends[i];
    const std::int64_t start = SatSub(end, range_ns);
    cursor.Move(ts, start, end);
    const std::size_t a = cursor.lo, b = cursor.hi;
    s.window[i] = end - start == range_ns ? window0 : DurationSeconds(end - start);
    if (b < a + 2) {
      // Fewer than two samples: no value. Harmless inputs keep pass two free of traps.
      present[i] = 0;
      s.change[i] = 0;
      s.first[i] = 0;
      s.sampled[i] = 1;
      s.to_start[i] = 0;
      s.to_end[i] = 0;
      s.intervals[i] = 1;
      continue;
    }
    present[i] = 1;
    const std::size_t last = b - 1;
    s.change[i] = change_of(a, last);
    s.first[i] = vs[a];
    s.intervals[i] = static_cast<double>(b - a - 1);
    if (exact) {
      s.sampled[i] = static_cast<double>(ts[last] - ts[a]);
      s.to_start[i] = static_cast<double>(ts[a] - start);
      s.to_end[i] = static_cast<double>(end - ts[last]);
    } else {
      s.sampled[i] = Seconds(ts[last] - ts[a]);
      s.to_start[i] = Seconds(ts[a] - start);
      s.to_end[i] = Seconds(end - ts[last]);
    }
  }
  pass_two();
}

bool Rate(const Window& w, std::span<const double>, double* out) {
  return ExtrapolatedRate(w, /*is_counter=*/true, /*is_rate=*/true, out);
}
bool Increase(const Window& w, std::span<const double>, double* out) {
  return ExtrapolatedRate(w, /*is_counter=*/true, /*is_rate=*/false, out);
}
bool Delta(const Window& w, std::span<const double>, double* out) {
  return ExtrapolatedRate(w, /*is_counter=*/false, /*is_rate=*/false, out);
}

// irate and idelta: the last two samples only. After a counter reset irate takes the new value
// as the increase (the counter restarted from zero); a NaN compares false and is subtracted.
bool InstantValue(const Window& w, bool is_rate, double* out) {
  const std::size_t n = w.values.size();
  if (n < 2) return false;
  const double prev = w.values[n - 2];
  const double last = w.values[n - 1];
  const std::int64_t interval_ns = w.ts[n - 1] - w.ts[n - 2];
  if (interval_ns == 0) return false;
  double result = last;
  if (!is_rate || !(last < prev)) result = last - prev;
  if (is_rate) result /= Seconds(interval_ns);
  *out = result;
  return true;
}

bool Irate(const Window& w, std::span<const double>, double* out) {
  return InstantValue(w, /*is_rate=*/true, out);
}
bool Idelta(const Window& w, std::span<const double>, double* out) {
  return InstantValue(w, /*is_rate=*/false, out);
}

struct Line {
  double slope;
  double intercept;  // the value at intercept_ns
};

// Least squares over (seconds since intercept_ns, value), the sums compensated. Measuring x from
// a time near the samples keeps x*x small enough to stay precise (Unix seconds squared would
// not). A constant series has slope 0 exactly (NaN when that constant is infinite), where the
// general formula could produce rounding noise.
Line LinearRegression(const Window& w, std::int64_t intercept_ns) {
  const std::span<const double> v = w.values;
  double n = 0;
  double sum_x = 0, c_x = 0;
  double sum_y = 0, c_y = 0;
  double sum_xy = 0, c_xy = 0;
  double sum_x2 = 0, c_x2 = 0;
  const double init_y = v[0];
  bool const_y = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (const_y && i > 0 && v[i] != init_y) const_y = false;
    n += 1.0;
    const double x = Seconds(w.ts[i] - intercept_ns);
    sum_x = KahanSumInc(x, sum_x, &c_x);
    sum_y = KahanSumInc(v[i], sum_y, &c_y);
    sum_xy = KahanSumInc(x * v[i], sum_xy, &c_xy);
    sum_x2 = KahanSumInc(x * x, sum_x2, &c_x2);
  }
  if (const_y) {
    if (std::isinf(init_y)) return {kNaN, kNaN};
    return {0, init_y};
  }
  sum_x += c_x;
  sum_y += c_y;
  sum_xy += c_xy;
  sum_x2 += c_x2;
  const double cov_xy = sum_xy - sum_x * sum_y / n;
  const double var_x = sum_x2 - sum_x * sum_x / n;
  const double slope = cov_xy / var_x;
  return {slope, sum_y / n - slope * sum_x / n};
}

bool Deriv(const Window& w, std::span<const double>, double* out) {
  if (w.values.size() < 2) return false;
  *out = LinearRegression(w, w.ts.front()).slope;
  return true;
}

bool PredictLinear(const Window& w, std::span<const double> args, double* out) {
  if (w.values.size() < 2 || args.empty()) return false;
  const std::int64_t eval_ns = w.eval_ns == kEvalAtWindowEnd ? w.end_ns : w.eval_ns;
  const Line line = LinearRegression(w, eval_ns);
  *out = line.slope * args[0] + line.intercept;
  return true;
}

bool Resets(const Window& w, std::span<const double>, double* out) {
  const std::span<const double> v = w.values;
  int resets = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) ++resets;
  }
  *out = resets;
  return true;
}

// A step to or from NaN is a change; NaN followed by NaN is not.
bool Changes(const Window& w, std::span<const double>, double* out) {
  const std::span<const double> v = w.values;
  int changes = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i] != v[i - 1] && !(std::isnan(v[i]) && std::isnan(v[i - 1]))) ++changes;
  }
  *out = changes;
  return true;
}

// Holt's linear smoothing as Prometheus runs it: the trend starts as the first difference and is
// first updated at the third sample; `s0` is 0 until then, but unused.
double TrendValue(std::size_t i, double tf, double s0, double s1, double b) {
  if (i == 0) return b;
  return tf * (s1 - s0) + (1 - tf) * b;
}

bool DoubleExponentialSmoothing(const Window& w, std::span<const double> args, double* out) {
  if (args.size() < 2 || !ValidSmoothingFactors(args[0], args[1])) return false;
  const std::span<const double> v = w.values;
  if (v.size() < 2) return false;
  const double sf = args[0];
  const double tf = args[1];
  double s0 = 0;
  double s1 = v[0];
  double b = v[1] - v[0];
  for (std::size_t i = 1; i < v.size(); ++i) {
    const double x = sf * v[i];
    b = TrendValue(i - 1, tf, s0, s1, b);
    const double y = (1 - sf) * (s1 + b);
    s0 = s1;
    s1 = x + y;
  }
  *out = s1;
  return true;
}

// Prometheus 3's mean: a compensated sum divided at the end (more accurate than a running mean
// on typical data), switching to a compensated running mean only if the sum would overflow.
bool AvgOverTime(const Window& w, std::span<const double>, double* out) {
  const std::span<const double> v = w.values;
  double sum = v[0];
  double count = 1;
  double mean = 0;
  double c = 0;
  bool incremental = false;
  for (std::size_t i = 1; i < v.size(); ++i) {
    count = static_cast<double>(i + 1);
    if (!incremental) {
      double new_c = c;
      const double new_sum = KahanSumInc(v[i], sum, &new_c);
      if (!std::isinf(new_sum)) {
        sum = new_sum;
        c = new_c;
        continue;
      }
      incremental = true;
      mean = sum / (count - 1);
      c /= count - 1;
    }
    const double q = (count - 1) / count;
    c *= q;
    mean = KahanSumInc(v[i] / count, q * mean, &c);
  }
  *out = incremental ? mean + c : sum / count + c / count;
  return true;
}

bool SumOverTime(const Window& w, std::span<const double>, double* out) {
  double sum = 0;
  double c = 0;
  for (const double x : w.values) sum = KahanSumInc(x, sum, &c);
  *out = std::isinf(sum) ? sum : sum + c;
  return true;
}

bool CountOverTime(const Window& w, std::span<const double>, double* out) {
  *out = static_cast<double>(w.values.size());
  return true;
}

// Welford's running variance with both running terms compensated, as Prometheus computes it.
double Variance(std::span<const double> v) {
  double count = 0;
  double mean = 0, c_mean = 0;
  double aux = 0, c_aux = 0;
  for (const double x : v) {
    count++;
    const double delta = x - (mean + c_mean);
    mean = KahanSumInc(delta / count, mean, &c_mean);
    aux = KahanSumInc(delta * (x - (mean + c_mean)), aux, &c_aux);
  }
  return (aux + c_aux) / count;
}

bool StdvarOverTime(const Window& w, std::span<const double>, double* out) {
  *out = Variance(w.values);
  return true;
}
bool StddevOverTime(const Window& w, std::span<const double>, double* out) {
  *out = std::sqrt(Variance(w.values));
  return true;
}

// min/max_over_time and ts_of_min/max_over_time: a NaN so far is replaced by whatever comes next,
// so NaN is the answer only when every sample is NaN. `Better(cur, best)` decides whether `cur`
// takes over; the ts_of_ variants use <= / >=, so the last of equal extremes gives the timestamp.
template <typename Better>
std::size_t ExtremeIndex(std::span<const double> v, Better better) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (better(v[i], v[best]) || std::isnan(v[best])) best = i;
  }
  return best;
}

bool MinOverTime(const Window& w, std::span<const double>, double* out) {
  *out = w.values[ExtremeIndex(w.values, [](double cur, double best) { return cur < best; })];
  return true;
}
bool MaxOverTime(const Window& w, std::span<const double>, double* out) {
  *out = w.values[ExtremeIndex(w.values, [](double cur, double best) { return cur > best; })];
  return true;
}
bool TsOfMinOverTime(const Window& w, std::span<const double>, double* out) {
  *out = Seconds(w.ts[ExtremeIndex(w.values, [](double cur, double best) { return cur <= best; })]);
  return true;
}
bool TsOfMaxOverTime(const Window& w, std::span<const double>, double* out) {
  *out = Seconds(w.ts[ExtremeIndex(w.values, [](double cur, double best) { return cur >= best; })]);
  return true;
}

bool LastOverTime(const Window& w, std::span<const double>, double* out) {
  *out = w.values.back();
  return true;
}
bool FirstOverTime(const Window& w, std::span<const double>, double* out) {
  *out = w.values.front();
  return true;
}
bool TsOfLastOverTime(const Window& w, std::span<const double>, double* out) {
  *out = Seconds(w.ts.back());
  return true;
}
bool TsOfFirstOverTime(const Window& w, std::span<const double>, double* out) {
  *out = Seconds(w.ts.front());
  return true;
}
bool PresentOverTime(const Window&, std::span<const double>, double* out) {
  *out = 1;
  return true;
}

// A copy of `values` to sort. The buffer is per thread and keeps its capacity, so the engine's
// per-window calls allocate only when a window is larger than every earlier one on the thread.
// Each call overwrites the previous copy.
std::span<double> ScratchCopy(std::span<const double> values) {
  thread_local std::vector<double> scratch;
  scratch.assign(values.begin(), values.end());
  return scratch;
}

// A q outside [0, 1] or NaN still yields a point (±Inf, NaN); Prometheus adds a warning.
bool QuantileOverTime(const Window& w, std::span<const double> args, double* out) {
  if (args.empty()) return false;
  *out = Quantile(args[0], ScratchCopy(w.values));
  return true;
}

// The median of the absolute deviations from the median. A NaN sample leaves the median undefined,
// so the answer is NaN (sorting would otherwise just move the NaN to one end).
bool MadOverTime(const Window& w, std::span<const double>, double* out) {
  for (const double x : w.values) {
    if (std::isnan(x)) {
      *out = kNaN;
      return true;
    }
  }
  const std::span<double> values = ScratchCopy(w.values);
  const double median = Quantile(0.5, values);
  for (double& x : values) x = std::fabs(x - median);
  *out = Quantile(0.5, values);
  return true;
}

struct NamedRangeFunction {
  std::string_view name;
  RangeFunction fn;
};

constexpr NamedRangeFunction kRangeFunctions[] = {
    {"rate", Rate},
    {"irate", Irate},
    {"increase", Increase},
    {"delta", Delta},
    {"idelta", Idelta},
    {"deriv", Deriv},
    {"predict_linear", PredictLinear},
    {"resets", Resets},
    {"changes", Changes},
    {"double_exponential_smoothing", DoubleExponentialSmoothing},
    {"avg_over_time", AvgOverTime},
    {"min_over_time", MinOverTime},
    {"max_over_time", MaxOverTime},
    {"sum_over_time", SumOverTime},
    {"count_over_time", CountOverTime},
    {"stddev_over_time", StddevOverTime},
    {"stdvar_over_time", StdvarOverTime},
    {"last_over_time", LastOverTime},
    {"first_over_time", FirstOverTime},
    {"present_over_time", PresentOverTime},
    {"quantile_over_time", QuantileOverTime},
    {"mad_over_time", MadOverTime},
    {"ts_of_first_over_time", TsOfFirstOverTime},
    {"ts_of_last_over_time", TsOfLastOverTime},
    {"ts_of_min_over_time", TsOfMinOverTime},
    {"ts_of_max_over_time", TsOfMaxOverTime},
};

// ---------------------------------------------------------------------------------------------
// Value functions

// Go's math.Max and math.Min, which clamp uses. Unlike std::fmax they return NaN for a NaN
// argument, except that an infinity in the function's direction wins even over NaN, and they
// order -0 below +0.
double GoMax(double x, double y) {
  if (x == kInf || y == kInf) return kInf;
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  if (x == 0 && x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

double GoMin(double x, double y) {
  if (x == -kInf || y == -kInf) return -kInf;
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  if (x == 0 && x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

double Clamp(double v, double min, double max) { return GoMax(min, GoMin(max, v)); }

// Rounds half up to a multiple of to_nearest. Multiplying by the inverse rather than dividing by
// to_nearest is Prometheus' choice (round(x, 0.1) is exact more often that way).
double Round(double v, std::span<const double> args) {
  const double to_nearest = args.empty() ? 1.0 : args[0];
  const double inverse = 1.0 / to_nearest;
  return std::floor(v * inverse + 0.5) / inverse;
}

double Sgn(double v, std::span<const double>) {
  if (v < 0) return -1;
  if (v > 0) return 1;
  return v;  // ±0 and NaN as they are
}

// The calendar fields of a Unix time, UTC. std::chrono::year_month_day would do the arithmetic,
// but its years stop at ±32767 and PromQL accepts any sample value as a time; this is the same
// days-to-civil algorithm (H. Hinnant's, which libstdc++'s <chrono> also uses) on 64-bit days.
struct CivilTime {
  std::int64_t year;
  int month;        // 1..12
  int day;          // 1..31
  int day_of_year;  // 1..366
  int day_of_week;  // 0 is Sunday
  int days_in_month;
  int hour;
  int minute;
};

// Beyond this many seconds Go's int64(v) and time.Unix stop being a calendar (see the header).
constexpr double kMaxCivilSeconds = 9e18;

bool IsLeapYear(std::int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

bool ToCivil(double v, CivilTime* out) {
  if (!(std::fabs(v) < kMaxCivilSeconds)) return false;  // NaN too
  const auto secs = static_cast<std::int64_t>(v);        // toward zero, as Go's int64(v)
  constexpr std::int64_t kSecondsPerDay = 86400;
  std::int64_t days = secs / kSecondsPerDay;
  std::int64_t second_of_day = secs % kSecondsPerDay;
  if (second_of_day < 0) {
    second_of_day += kSecondsPerDay;
    --days;
  }
  // Days since 0000-03-01, in 400-year eras of 146097 days; a year starting in March puts the
  // leap day last.
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t day_of_era = z - era * 146097;  // [0, 146096]
  const std::int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_march_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);  // [0, 365]
  const std::int64_t march_month = (5 * day_of_march_year + 2) / 153;          // 0 is March
  out->day = static_cast<int>(day_of_march_year - (153 * march_month + 2) / 5 + 1);
  out->month = static_cast<int>(march_month < 10 ? march_month + 3 : march_month - 9);
  out->year = year_of_era + era * 400 + (out->month <= 2 ? 1 : 0);

  static constexpr int kDaysBeforeMonth[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
  static constexpr int kDaysInMonth[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = IsLeapYear(out->year);
  out->day_of_year = kDaysBeforeMonth[out->month - 1] + out->day + (leap && out->month > 2 ? 1 : 0);
  out->days_in_month = kDaysInMonth[out->month - 1] + (leap && out->month == 2 ? 1 : 0);
  // 1970-01-01 was a Thursday.
  out->day_of_week = static_cast<int>(((days % 7) + 7 + 4) % 7);
  out->hour = static_cast<int>(second_of_day / 3600);
  out->minute = static_cast<int>(second_of_day % 3600 / 60);
  return true;
}

template <auto kField>
double TimeField(double v, std::span<const double>) {
  CivilTime t;
  if (!ToCivil(v, &t)) return kNaN;
  return static_cast<double>(t.*kField);
}

template <double (*kFn)(double)>
double Unary(double v, std::span<const double>) {
  return kFn(v);
}

double Abs(double v) { return std::fabs(v); }
double Ceil(double v) { return std::ceil(v); }
double Floor(double v) { return std::floor(v); }
double Exp(double v) { return std::exp(v); }
double Ln(double v) { return std::log(v); }
// Go's math.Log2 and Log10, which Prometheus calls, are not the C library's: Log2 scales the
// natural logarithm of the mantissa (exact for powers of two only) and Log10 scales the natural
// logarithm, which makes e.g. log10(3) 0.4771212547196625 there, one ulp above the C library's
// 0.47712125471966244. The same steps give the same answers.
double Log2(double v) {
  if (v == 0 || !std::isfinite(v)) return std::log(v) * std::numbers::log2e;  // ±0, ±Inf, NaN
  int exp;
  const double frac = std::frexp(v, &exp);
  if (frac == 0.5) return exp - 1;
  return std::log(frac) * std::numbers::log2e + exp;
}
double Log10(double v) { return std::log(v) * std::numbers::log10e; }
double Sqrt(double v) { return std::sqrt(v); }
double Sin(double v) { return std::sin(v); }
double Cos(double v) { return std::cos(v); }
double Tan(double v) { return std::tan(v); }
double Asin(double v) { return std::asin(v); }
double Acos(double v) { return std::acos(v); }
double Atan(double v) { return std::atan(v); }
double Sinh(double v) { return std::sinh(v); }
double Cosh(double v) { return std::cosh(v); }
double Tanh(double v) { return std::tanh(v); }
double Asinh(double v) { return std::asinh(v); }
double Acosh(double v) { return std::acosh(v); }
double Atanh(double v) { return std::atanh(v); }
// Multiply first, then divide, in Prometheus' order (v*π/180 is not v*(π/180) in floating point).
double Deg(double v) { return v * 180 / std::numbers::pi; }
double Rad(double v) { return v * std::numbers::pi / 180; }

double ClampBoth(double v, std::span<const double> args) {
  if (args.size() < 2) return kNaN;
  return Clamp(v, args[0], args[1]);
}
double ClampMin(double v, std::span<const double> args) {
  if (args.empty()) return kNaN;
  return Clamp(v, args[0], kInf);
}
double ClampMax(double v, std::span<const double> args) {
  if (args.empty()) return kNaN;
  return Clamp(v, -kInf, args[0]);
}

struct NamedValueFunction {
  std::string_view name;
  ValueFunction fn;
};

constexpr NamedValueFunction kValueFunctions[] = {
    {"abs", Unary<Abs>},
    {"ceil", Unary<Ceil>},
    {"floor", Unary<Floor>},
    {"exp", Unary<Exp>},
    {"ln", Unary<Ln>},
    {"log2", Unary<Log2>},
    {"log10", Unary<Log10>},
    {"sqrt", Unary<Sqrt>},
    {"sgn", Sgn},
    {"round", Round},
    {"clamp", ClampBoth},
    {"clamp_min", ClampMin},
    {"clamp_max", ClampMax},
    {"deg", Unary<Deg>},
    {"rad", Unary<Rad>},
    {"sin", Unary<Sin>},
    {"cos", Unary<Cos>},
    {"tan", Unary<Tan>},
    {"asin", Unary<Asin>},
    {"acos", Unary<Acos>},
    {"atan", Unary<Atan>},
    {"sinh", Unary<Sinh>},
    {"cosh", Unary<Cosh>},
    {"tanh", Unary<Tanh>},
    {"asinh", Unary<Asinh>},
    {"acosh", Unary<Acosh>},
    {"atanh", Unary<Atanh>},
    {"year", TimeField<&CivilTime::year>},
    {"month", TimeField<&CivilTime::month>},
    {"day_of_month", TimeField<&CivilTime::day>},
    {"day_of_year", TimeField<&CivilTime::day_of_year>},
    {"day_of_week", TimeField<&CivilTime::day_of_week>},
    {"days_in_month", TimeField<&CivilTime::days_in_month>},
    {"hour", TimeField<&CivilTime::hour>},
    {"minute", TimeField<&CivilTime::minute>},
};

// ---------------------------------------------------------------------------------------------
// Quantiles

// Prometheus' almost.Equal: a relative difference below epsilon (absolute, scaled to the smallest
// normal number, near zero); two NaNs are equal.
bool AlmostEqual(double a, double b, double epsilon) {
  constexpr double kMinNormal = std::numeric_limits<double>::min();
  if (std::isnan(a) && std::isnan(b)) return true;
  if (a == b) return true;
  const double abs_sum = std::fabs(a) + std::fabs(b);
  const double diff = std::fabs(a - b);
  if (a == 0 || b == 0 || abs_sum < kMinNormal) return diff < epsilon * kMinNormal;
  return diff / std::min(abs_sum, std::numeric_limits<double>::max()) < epsilon;
}

// Relative count differences below this are floating-point noise (sums of rates, say), not a
// histogram that really decreases: Prometheus' smallDeltaTolerance.
constexpr double kSmallDeltaTolerance = 1e-12;

// Makes the cumulative counts non-decreasing: a count almost equal to the last accepted one is
// set to it, whichever way it differs, and a count below it is raised to it (that one is
// reported). Returns whether a count had to be raised.
bool EnsureMonotonic(std::span<Bucket> buckets) {
  bool forced = false;
  double prev = buckets[0].count;
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    const double curr = buckets[i].count;
    if (curr == prev) continue;
    if (AlmostEqual(prev, curr, kSmallDeltaTolerance)) {
      buckets[i].count = prev;
      continue;
    }
    if (curr < prev) {
      buckets[i].count = prev;
      forced = true;
      continue;
    }
    prev = curr;
  }
  return forced;
}

// Go's sort.Search(n, pred): the first index in [0, n) where pred holds, probing as Go does so
// that even counts a NaN left unordered pick the same bucket.
template <typename Pred>
std::size_t GoSearch(std::size_t n, Pred pred) {
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (!pred(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Sorts classic buckets by upper bound and merges those with one bound (e.g. le="1" and
// le="1.0" are one bucket: their counts add up), in place. Returns the merged buckets, a prefix
// of `buckets`, or an empty span when there is no +Inf bucket on top (or no bucket at all).
std::span<Bucket> SortAndMergeBuckets(std::span<Bucket> buckets) {
  if (buckets.empty()) return {};
  // Prometheus does not expect NaN bounds (and its sort leaves them anywhere); here they sort
  // last, past +Inf, so a group with one has no +Inf bucket on top.
  std::sort(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) {
    if (std::isnan(a.upper_bound)) return false;
    return std::isnan(b.upper_bound) || a.upper_bound < b.upper_bound;
  });
  if (buckets.back().upper_bound != kInf) return {};
  std::size_t n = 0;
  for (std::size_t i = 1; i < buckets.size(); ++i) {
    if (buckets[i].upper_bound == buckets[n].upper_bound) {
      buckets[n].count += buckets[i].count;
    } else {
      buckets[++n] = buckets[i];
    }
  }
  return buckets.first(n + 1);
}

// The estimated cumulative count at v (not NaN) over sorted, merged, monotonic buckets, as
// Prometheus' BucketFraction places its bounds. The lowest bucket starts at 0 when its upper
// bound is positive and at -Inf otherwise. A v on a bucket bound gets that bucket's cumulative
// count; inside a bucket the count is interpolated linearly, except that a bucket of infinite
// width has nothing to interpolate: all of the lowest (-Inf) bucket counts as below v, none of
// the +Inf bucket does.
double CumulativeCountAt(double v, std::span<const Bucket> buckets) {
  double below = 0;  // the cumulative count up to the current bucket's lower bound
  double lower_bound = buckets.front().upper_bound > 0 ? 0 : -kInf;
  for (const Bucket& b : buckets) {
    if (lower_bound >= v) return below;
    if (b.upper_bound > v) {
      if (lower_bound == -kInf) return b.count;
      return below + (b.count - below) * (v - lower_bound) / (b.upper_bound - lower_bound);
    }
    below = b.count;
    lower_bound = b.upper_bound;
  }
  return buckets.back().count;  // v is +Inf
}

}  // namespace

RangeFunction FindRangeFunction(std::string_view name) {
  for (const NamedRangeFunction& f : kRangeFunctions) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

namespace {

// The select form GCC vectorizes on the baseline (a 64-bit compare of bits would need SSE4.1),
// compiled like pass two of the rate kernel.
[[gnu::always_inline]] inline bool AnyNaNLoop(std::span<const double> vs) {
  double nan = 0;
  for (const double v : vs) nan = v != v ? 1.0 : nan;
  return nan != 0;
}
[[INGOT_QUERY_AVX512]] bool AnyNaNAvx512(std::span<const double> vs) { return AnyNaNLoop(vs); }
[[gnu::target("avx2")]] bool AnyNaNAvx2(std::span<const double> vs) { return AnyNaNLoop(vs); }
bool AnyNaNBaseline(std::span<const double> vs) { return AnyNaNLoop(vs); }

}  // namespace

bool AnyNaN(std::span<const double> vs) {
  return ByLanes(AnyNaNAvx512, AnyNaNAvx2, AnyNaNBaseline, vs);
}

BatchRangeFunction FindBatchRangeFunction(std::string_view name) {
  if (name == "rate") return ExtrapolatedRates<true, true>;
  if (name == "increase") return ExtrapolatedRates<true, false>;
  if (name == "delta") return ExtrapolatedRates<false, false>;
  return nullptr;
}

ValueFunction FindValueFunction(std::string_view name) {
  for (const NamedValueFunction& f : kValueFunctions) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

double BucketQuantile(double q, std::span<Bucket> buckets, bool* forced_monotonic) {
  if (forced_monotonic != nullptr) *forced_monotonic = false;
  if (std::isnan(q)) return kNaN;
  if (q < 0) return -kInf;
  if (q > 1) return kInf;
  const std::span<Bucket> b = SortAndMergeBuckets(buckets);
  if (b.empty()) return kNaN;
  const bool forced = EnsureMonotonic(b);

  if (b.size() < 2) return kNaN;
  const double observations = b.back().count;
  if (observations == 0) return kNaN;
  double rank = q * observations;
  const std::size_t i = GoSearch(b.size() - 1, [&](std::size_t k) { return b[k].count >= rank; });
  if (forced_monotonic != nullptr) *forced_monotonic = forced;
  // In the +Inf bucket nothing bounds the quantile from above: the highest finite bound is the
  // best estimate.
  if (i == b.size() - 1) return b[b.size() - 2].upper_bound;
  // The lowest bucket has no lower bound either; Prometheus assumes 0 when the bucket's upper bound
  // is positive (typical for durations and sizes) and otherwise answers the upper bound.
  if (i == 0 && b[0].upper_bound <= 0) return b[0].upper_bound;
  double bucket_start = 0;
  const double bucket_end = b[i].upper_bound;
  double count = b[i].count;
  if (i > 0) {
    bucket_start = b[i - 1].upper_bound;
    count -= b[i - 1].count;
    rank -= b[i - 1].count;
  }
  return bucket_start + (bucket_end - bucket_start) * (rank / count);
}

double BucketFraction(double lower, double upper, std::span<Bucket> buckets) {
  const std::span<Bucket> b = SortAndMergeBuckets(buckets);
  if (b.empty()) return kNaN;
  EnsureMonotonic(b);
  const double observations = b.back().count;
  if (observations == 0 || std::isnan(lower) || std::isnan(upper)) return kNaN;
  if (lower >= upper) return 0;
  // Prometheus caps both ranks at the total count (a NaN rank stays NaN).
  double lower_rank = CumulativeCountAt(lower, b);
  double upper_rank = CumulativeCountAt(upper, b);
  if (lower_rank > observations) lower_rank = observations;
  if (upper_rank > observations) upper_rank = observations;
  return (upper_rank - lower_rank) / observations;
}

double Quantile(double q, std::span<double> values) {
  if (values.empty() || std::isnan(q)) return kNaN;
  if (q < 0) return -kInf;
  if (q > 1) return kInf;
  // NaN first, as Prometheus' sort of samples by value puts it.
  std::sort(values.begin(), values.end(), [](double a, double b) {
    if (std::isnan(a)) return !std::isnan(b);
    return a < b;
  });
  const double n = static_cast<double>(values.size());
  const double rank = q * (n - 1);
  const double lower = std::max(0.0, std::floor(rank));
  const double upper = std::min(n - 1, lower + 1);
  const double weight = rank - std::floor(rank);
  return values[static_cast<std::size_t>(lower)] * (1 - weight) +
         values[static_cast<std::size_t>(upper)] * weight;
}

double KahanSumInc(double inc, double sum, double* c) {
  const double t = sum + inc;
  if (std::isinf(t)) {
    *c = 0;
  } else if (std::fabs(sum) >= std::fabs(inc)) {
    // Neumaier's variant: the compensation recovers the low bits of the smaller operand.
    *c += (sum - t) + inc;
  } else {
    *c += (inc - t) + sum;
  }
  return t;
}

namespace {

[[gnu::always_inline]] inline void KahanSumColumnImpl(const double* __restrict v,
                                                      const std::uint8_t* __restrict present,
                                                      std::size_t n, double* __restrict sum,
                                                      double* __restrict c) {
  for (std::size_t i = 0; i < n; ++i) {
    const double s = sum[i], x = v[i], comp = c[i];
    const double t = s + x;
    const double low = std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    const double next_c = std::fabs(t) == kInf ? 0.0 : comp + low;
    const bool here = present[i] != 0;
    sum[i] = here ? t : s;
    c[i] = here ? next_c : comp;
  }
}

[[INGOT_QUERY_AVX512]] void KahanSumColumnAvx512(const double* v, const std::uint8_t* present,
                                                 std::size_t n, double* sum, double* c) {
  KahanSumColumnImpl(v, present, n, sum, c);
}
[[gnu::target("avx2")]] void KahanSumColumnAvx2(const double* v, const std::uint8_t* present,
                                                std::size_t n, double* sum, double* c) {
  KahanSumColumnImpl(v, present, n, sum, c);
}

}  // namespace

void KahanSumColumn(const double* v, const std::uint8_t* present, std::size_t n, double* sum,
                    double* c) {
  ByLanes(KahanSumColumnAvx512, KahanSumColumnAvx2, KahanSumColumnImpl, v, present, n, sum, c);
}

}  // namespace ingot::promql
