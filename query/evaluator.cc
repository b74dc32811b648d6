#include "query/evaluator.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <future>
#include <limits>
#include <unordered_map>

namespace ingot {
namespace {

// Prometheus' staleness marker: the NaN a scraper writes when a series disappears.
constexpr std::uint64_t kStaleMarkerBits = 0x7ff0000000000002ull;
bool IsStaleMarker(double v) { return std::bit_cast<std::uint64_t>(v) == kStaleMarkerBits; }

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();

std::int64_t SaturatingSub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b > 0 ? kMinTs : kMaxTs;
  return r;
}
std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMaxTs : kMinTs;
  return r;
}

struct StepGrid {
  std::int64_t start;
  std::int64_t step;
  std::size_t n;

  std::int64_t At(std::size_t i) const { return start + static_cast<std::int64_t>(i) * step; }
  // The first step i with At(i) >= x, or n.
  std::size_t FirstAtOrAfter(std::int64_t x) const {
    if (x <= start) return 0;
    // x > start, so the difference fits in 64 unsigned bits.
    const std::uint64_t d = static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(start);
    const auto s = static_cast<std::uint64_t>(step);
    const std::uint64_t i = d / s + (d % s != 0);
    return i >= n ? n : static_cast<std::size_t>(i);
  }
};

Status TooManyPoints(std::uint64_t points, std::uint64_t limit) {
  return Status::Busy("the query needs about " + std::to_string(points) +
                      " points, more than query.max_points = " + std::to_string(limit));
}

Status CheckPoints(std::size_t series, const EvalParams& params) {
  const std::uint64_t points = static_cast<std::uint64_t>(series) * params.steps();
  if (points > params.max_points) return TooManyPoints(points, params.max_points);
  return Status::OK();
}

Labels LabelsOf(const SeriesInfo& info, bool keep_name) {
  Labels labels;
  labels.reserve(info.labels.size() + 1);
  if (keep_name) labels.emplace_back(std::string(kMetricNameLabel), info.name);
  for (const auto& label : info.labels) labels.push_back(label);
  std::sort(labels.begin(), labels.end());
  return labels;
}

void DropName(Labels* labels) {
  std::erase_if(*labels, [](const auto& l) { return l.first == kMetricNameLabel; });
}

// Prometheus' min/max: NaN is replaced by any other value.
inline double FoldMin(double acc, double v) { return (v < acc || std::isnan(acc)) ? v : acc; }
inline double FoldMax(double acc, double v) { return (v > acc || std::isnan(acc)) ? v : acc; }

// Four independent partial sums: a single accumulator waits on the adder's latency per value.
double SumOf(std::span<const double> v) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= v.size(); i += 4) {
    s0 += v[i];
    s1 += v[i + 1];
    s2 += v[i + 2];
    s3 += v[i + 3];
  }
  for (; i < v.size(); ++i) s0 += v[i];
  return (s0 + s1) + (s2 + s3);
}

// Prometheus' extrapolated rate/increase over the samples of one window (range_start, range_end].
double ExtrapolatedDelta(std::span<const std::int64_t> ts, std::span<const double> v,
                         std::int64_t range_start_ns, std::int64_t range_end_ns, double range_s,
                         bool is_rate) {
  const std::size_t n = ts.size();
  double result = v[n - 1] - v[0];
  for (std::size_t i = 1; i < n; ++i) {
    if (v[i] < v[i - 1]) result += v[i - 1];  // counter reset
  }
  double to_start_s = static_cast<double>(ts[0] - range_start_ns) / 1e9;
  const double to_end_s = static_cast<double>(range_end_ns - ts[n - 1]) / 1e9;
  const double sampled_s = static_cast<double>(ts[n - 1] - ts[0]) / 1e9;
  const double average_gap_s = sampled_s / static_cast<double>(n - 1);
  // A counter does not extrapolate below zero.
  if (result > 0 && v[0] >= 0) {
    const double to_zero_s = sampled_s * (v[0] / result);
    if (to_zero_s < to_start_s) to_start_s = to_zero_s;
  }
  const double threshold_s = average_gap_s * 1.1;
  double interval_s = sampled_s;
  interval_s += to_start_s < threshold_s ? to_start_s : average_gap_s / 2;
  interval_s += to_end_s < threshold_s ? to_end_s : average_gap_s / 2;
  result *= interval_s / sampled_s;
  if (is_rate) result /= range_s;
  return result;
}

class Evaluator {
 public:
  Evaluator(const EvalParams& params, SeriesCatalog& catalog, SeriesReader& reader)
      : params_(params),
        grid_{params.start_ns, params.step_ns, params.steps()},
        catalog_(catalog),
        reader_(reader) {}

  Status Eval(const Expr& e, EvalResult* out) {
    switch (e.kind) {
      case ExprKind::kNumber:
        out->is_scalar = true;
        out->scalar.assign(grid_.n, e.number);
        return Status::OK();
      case ExprKind::kSelector: return EvalSelector(e, out);
      case ExprKind::kRangeFunction: return EvalRangeFunction(e, out);
      case ExprKind::kAggregate: return EvalAggregate(e, out);
      case ExprKind::kBinary: return EvalBinary(e, out);
    }
    return Status::InvalidArgument("unknown expression kind");
  }

 private:
  Status Match(const Expr& sel, std::vector<SeriesRef>* series) {
    Status st = catalog_.Match(sel.selector, params_.max_series, series);
    if (!st.ok()) return st.WithContext(sel.selector_text);
    return CheckPoints(series->size(), params_);
  }

  Status EvalSelector(const Expr& e, EvalResult* out) {
    if (e.range_ns != 0) {
      return Status::InvalidArgument("range vector " + e.selector_text +
                                     "[...] is only supported as the argument of a function "
                                     "such as avg_over_time or rate");
    }
    std::vector<SeriesRef> series;
    INGOT_RETURN_IF_ERROR(Match(e, &series));
    return SelectorOver(series, out);
  }

  // Instant-vector values of `series` (matched by a selector without range).
  Status SelectorOver(std::span<const SeriesRef> series, EvalResult* out) {
    const std::int64_t lookback = params_.lookback_ns;
    for (const SeriesRef& info : series) {
      INGOT_RETURN_IF_ERROR(reader_.Read(
          info->sid, SaturatingAdd(SaturatingSub(params_.start_ns, lookback), 1), params_.end_ns));
      const auto ts = reader_.ts();
      const auto values = reader_.values();
      if (ts.empty()) continue;
      SeriesResult r;
      r.values.assign(grid_.n, 0.0);
      r.present.assign(grid_.n, 0);
      bool any = false;
      std::size_t next = 0;  // first point after the step
      for (std::size_t i = 0; i < grid_.n; ++i) {
        const std::int64_t t = grid_.At(i);
        while (next < ts.size() && ts[next] <= t) ++next;
        // A staleness marker as the newest sample ends the series there, as in Prometheus.
        if (next > 0 && ts[next - 1] > SaturatingSub(t, lookback) &&
            !IsStaleMarker(values[next - 1])) {
          r.values[i] = values[next - 1];
          r.present[i] = 1;
          any = true;
        }
      }
      if (!any) continue;
      r.labels = LabelsOf(*info, true);
      out->series.push_back(std::move(r));
    }
    return Status::OK();
  }

  Status EvalRangeFunction(const Expr& e, EvalResult* out) {
    std::vector<SeriesRef> series;
    INGOT_RETURN_IF_ERROR(Match(*e.lhs, &series));
    return RangeFunctionOn(e, series, out);
  }

  Status RangeFunctionOn(const Expr& e, std::span<const SeriesRef> series, EvalResult* out) {
    // Series are independent and decoding dominates: a large selection is split in two halves,
    // the second evaluated on a helper thread with its own reader, so a query uses two cores.
    constexpr std::size_t kParallelFrom = 16;
    if (series.size() < kParallelFrom) return RangeFunctionOver(e, series, reader_, &out->series);
    const std::size_t half = series.size() / 2;
    const std::span<const SeriesRef> all = series;
    SeriesReader side_reader(reader_.storage());
    std::vector<CorruptChunk> side_damage;
    if (reader_.damage_sink() != nullptr) side_reader.SkipDamage(&side_damage);
    std::vector<SeriesResult> side_results;
    auto side = std::async(std::launch::async, [&] {
      return RangeFunctionOver(e, all.subspan(half), side_reader, &side_results);
    });
    const Status first = RangeFunctionOver(e, all.first(half), reader_, &out->series);
    const Status second = side.get();
    INGOT_RETURN_IF_ERROR(first);
    INGOT_RETURN_IF_ERROR(second);
    for (SeriesResult& r : side_results) out->series.push_back(std::move(r));
    if (reader_.damage_sink() != nullptr) {
      reader_.damage_sink()->insert(reader_.damage_sink()->end(), side_damage.begin(),
                                    side_damage.end());
    }
    return Status::OK();
  }

  // Evaluates `e` (a range function over a selector) for `series` with `reader`, appending one
  // result per series with a value. Reads only shared state that is immutable during evaluation.
  Status RangeFunctionOver(const Expr& e, std::span<const SeriesRef> series,
                           SeriesReader& reader, std::vector<SeriesResult>* results) const {
    const Expr& sel = *e.lhs;
    const std::int64_t range = sel.range_ns;
    const double range_s = static_cast<double>(range) / 1e9;
    const RangeFunction f = e.function;
    const bool summarizable = f == RangeFunction::kCount || f == RangeFunction::kSum ||
                              f == RangeFunction::kAvg || f == RangeFunction::kMin ||
                              f == RangeFunction::kMax;
    const bool needs_values = f != RangeFunction::kCount;
    // Per-step contributions of the chunks taken whole (see ChunkFilter).
    std::vector<std::uint64_t> claimed_count;
    std::vector<double> claimed_sum, claimed_min, claimed_max;
    std::vector<double> chunk_values(kChunkCapacity);
    ChunkFilter filter;
    filter.claim = [&](const ChunkHeader& h) {
      // Claimable when no window boundary falls inside [min, max): every window then holds the
      // whole chunk or none of it.
      const std::int64_t a = h.min_ts_ns;
      const std::int64_t b = h.max_ts_ns;
      std::size_t i = grid_.FirstAtOrAfter(a);
      if (i < grid_.n && grid_.At(i) < b) return false;
      i = grid_.FirstAtOrAfter(SaturatingAdd(a, range));
      if (i < grid_.n && grid_.At(i) < SaturatingAdd(b, range)) return false;
      return true;
    };
    filter.take = [&](const ChunkView& view) -> Status {
      const std::int64_t a = view.header.min_ts_ns;
      const std::int64_t b = view.header.max_ts_ns;
      // Windows (t - range, t] holding [a, b]: b <= t < a + range.
      const std::size_t first = grid_.FirstAtOrAfter(b);
      const std::size_t last = grid_.FirstAtOrAfter(SaturatingAdd(a, range));
      if (first >= last) return Status::OK();
      const std::size_t n = view.count();
      double sum = 0, mn = 0, mx = 0;
      if (needs_values) {
        INGOT_RETURN_IF_ERROR(reader.DecodeValues(view, std::span(chunk_values).first(n)));
        mn = mx = chunk_values[0];
        for (std::size_t k = 0; k < n; ++k) {
          const double v = chunk_values[k];
          sum += v;
          mn = FoldMin(mn, v);
          mx = FoldMax(mx, v);
        }
      }
      for (std::size_t i = first; i < last; ++i) {
        if (needs_values) {
          if (claimed_count[i] == 0) {
            claimed_sum[i] = sum;
            claimed_min[i] = mn;
            claimed_max[i] = mx;
          } else {
            claimed_sum[i] += sum;
            claimed_min[i] = FoldMin(claimed_min[i], mn);
            claimed_max[i] = FoldMax(claimed_max[i], mx);
          }
        }
        claimed_count[i] += n;
      }
      return Status::OK();
    };
    for (const SeriesRef& info : series) {
      if (summarizable) {
        claimed_count.assign(grid_.n, 0);
        if (needs_values) {
          claimed_sum.assign(grid_.n, 0);
          claimed_min.assign(grid_.n, 0);
          claimed_max.assign(grid_.n, 0);
        }
      }
      INGOT_RETURN_IF_ERROR(reader.Read(
          info->sid, SaturatingAdd(SaturatingSub(params_.start_ns, range), 1), params_.end_ns,
          summarizable ? &filter : nullptr));
      const auto ts = reader.ts();
      const auto values = reader.values();
      SeriesResult r;
      r.values.assign(grid_.n, 0.0);
      r.present.assign(grid_.n, 0);
      bool any = false;
      std::size_t lo = 0, hi = 0;
      for (std::size_t i = 0; i < grid_.n; ++i) {
        const std::int64_t t = grid_.At(i);
        const std::int64_t window_start = SaturatingSub(t, range);
        // Binary searches from the previous bounds: windows usually hold many points.
        hi = static_cast<std::size_t>(
            std::upper_bound(ts.begin() + static_cast<std::ptrdiff_t>(hi), ts.end(), t) -
            ts.begin());
        lo = std::max(lo, static_cast<std::size_t>(
                              std::upper_bound(ts.begin() + static_cast<std::ptrdiff_t>(lo),
                                               ts.begin() + static_cast<std::ptrdiff_t>(hi),
                                               window_start) -
                              ts.begin()));
        const std::size_t points = hi - lo;
        const std::uint64_t extra = summarizable ? claimed_count[i] : 0;
        const std::uint64_t count = points + extra;
        double v = 0;
        bool has = count > 0;
        switch (f) {
          case RangeFunction::kCount: v = static_cast<double>(count); break;
          case RangeFunction::kSum:
          case RangeFunction::kAvg: {
            if (!has) break;
            double sum = (extra ? claimed_sum[i] : 0.0) + SumOf(values.subspan(lo, points));
            v = f == RangeFunction::kSum ? sum : sum / static_cast<double>(count);
            break;
          }
          case RangeFunction::kMin:
          case RangeFunction::kMax: {
            if (!has) break;
            const bool is_min = f == RangeFunction::kMin;
            double acc = extra ? (is_min ? claimed_min[i] : claimed_max[i]) : values[lo];
            for (std::size_t k = lo; k < hi; ++k) {
              acc = is_min ? FoldMin(acc, values[k]) : FoldMax(acc, values[k]);
            }
            v = acc;
            break;
          }
          case RangeFunction::kLast:
            if (has) v = values[hi - 1];
            break;
          case RangeFunction::kRate:
          case RangeFunction::kIncrease:
            has = points >= 2;
            if (has) {
              v = ExtrapolatedDelta(ts.subspan(lo, points), values.subspan(lo, points),
                                    window_start, t, range_s, f == RangeFunction::kRate);
            }
            break;
        }
        if (has) {
          r.values[i] = v;
          r.present[i] = 1;
          any = true;
        }
      }
      if (!any) continue;
      r.labels = LabelsOf(*info, false);
      results->push_back(std::move(r));
    }
    return Status::OK();
  }

  Status EvalAggregate(const Expr& e, EvalResult* out) {
    struct Group {
      Labels labels;
      std::vector<double> acc;
      std::vector<std::uint64_t> count;
    };
    std::vector<Group> groups;
    std::unordered_map<std::string, std::size_t> group_of;
    std::string key;
    auto grouped = [&](std::string_view name) {
      return std::find(e.grouping.begin(), e.grouping.end(), name) != e.grouping.end();
    };
    auto fold = [&](SeriesResult& s) {
      Labels kept;
      for (auto& label : s.labels) {
        const bool keep = e.without ? (!grouped(label.first) && label.first != kMetricNameLabel)
                                    : grouped(label.first);
        if (keep) kept.push_back(std::move(label));
      }
      key.clear();
      for (const auto& [k, v] : kept) {
        key += k;
        key.push_back('\xff');
        key += v;
        key.push_back('\xff');
      }
      auto [it, inserted] = group_of.try_emplace(key, groups.size());
      if (inserted) {
        groups.push_back({std::move(kept), std::vector<double>(grid_.n, 0.0),
                          std::vector<std::uint64_t>(grid_.n, 0)});
      }
      Group& g = groups[it->second];
      for (std::size_t i = 0; i < grid_.n; ++i) {
        if (!s.present[i]) continue;
        const double v = s.values[i];
        double& acc = g.acc[i];
        const bool first = g.count[i]++ == 0;
        switch (e.aggregate) {
          case AggregateOp::kSum:
          case AggregateOp::kAvg: acc = first ? v : acc + v; break;
          case AggregateOp::kMin: acc = first ? v : FoldMin(acc, v); break;
          case AggregateOp::kMax: acc = first ? v : FoldMax(acc, v); break;
          case AggregateOp::kCount: break;
        }
      }
    };
    const Expr& arg = *e.lhs;
    const Expr* leaf = arg.kind == ExprKind::kSelector && arg.range_ns == 0 ? &arg
                       : arg.kind == ExprKind::kRangeFunction             ? arg.lhs.get()
                                                                          : nullptr;
    if (leaf != nullptr) {
      // Over a selector or a range function, series are described, evaluated and folded a block
      // at a time: an aggregation over a million series holds one block of them, not all.
      std::vector<SeriesId> ids;
      Status st = catalog_.MatchIds(leaf->selector, params_.max_series, &ids);
      if (!st.ok()) return st.WithContext(leaf->selector_text);
      INGOT_RETURN_IF_ERROR(CheckPoints(ids.size(), params_));
      constexpr std::size_t kBlock = 8192;
      std::vector<SeriesRef> block;
      EvalResult inner;
      for (std::size_t from = 0; from < ids.size(); from += kBlock) {
        block.clear();
        for (std::size_t i = from; i < std::min(ids.size(), from + kBlock); ++i) {
          SeriesRef info;
          INGOT_RETURN_IF_ERROR(catalog_.Describe(ids[i], &info));
          block.push_back(std::move(info));
        }
        inner.series.clear();
        INGOT_RETURN_IF_ERROR(arg.kind == ExprKind::kSelector ? SelectorOver(block, &inner)
                                                              : RangeFunctionOn(arg, block, &inner));
        for (SeriesResult& s : inner.series) fold(s);
      }
    } else {
      EvalResult inner;
      INGOT_RETURN_IF_ERROR(Eval(arg, &inner));
      if (inner.is_scalar) {
        return Status::InvalidArgument("aggregation expects an instant vector, got a number");
      }
      for (SeriesResult& s : inner.series) fold(s);
    }
    for (Group& g : groups) {
      SeriesResult r;
      r.labels = std::move(g.labels);
      r.values.assign(grid_.n, 0.0);
      r.present.assign(grid_.n, 0);
      for (std::size_t i = 0; i < grid_.n; ++i) {
        if (g.count[i] == 0) continue;
        r.present[i] = 1;
        switch (e.aggregate) {
          case AggregateOp::kAvg: r.values[i] = g.acc[i] / static_cast<double>(g.count[i]); break;
          case AggregateOp::kCount: r.values[i] = static_cast<double>(g.count[i]); break;
          default: r.values[i] = g.acc[i];
        }
      }
      out->series.push_back(std::move(r));
    }
    return Status::OK();
  }

  static double Apply(char op, double a, double b) {
    switch (op) {
      case '+': return a + b;
      case '-': return a - b;
      case '*': return a * b;
      case '/': return a / b;
      case '%': return std::fmod(a, b);
      case '^': return std::pow(a, b);
    }
    return std::numeric_limits<double>::quiet_NaN();
  }

  Status EvalBinary(const Expr& e, EvalResult* out) {
    EvalResult lhs, rhs;
    INGOT_RETURN_IF_ERROR(Eval(*e.lhs, &lhs));
    INGOT_RETURN_IF_ERROR(Eval(*e.rhs, &rhs));
    if (lhs.is_scalar && rhs.is_scalar) {
      out->is_scalar = true;
      out->scalar.resize(grid_.n);
      for (std::size_t i = 0; i < grid_.n; ++i) {
        out->scalar[i] = Apply(e.op, lhs.scalar[i], rhs.scalar[i]);
      }
      return Status::OK();
    }
    if (!lhs.is_scalar && !rhs.is_scalar) {
      return Status::InvalidArgument(std::string("unsupported expression: operator ") + e.op +
                                     " between two vectors (only between a vector and a number "
                                     "or two numbers)");
    }
    const bool vector_left = !lhs.is_scalar;
    EvalResult& vec = vector_left ? lhs : rhs;
    const std::vector<double>& scalar = vector_left ? rhs.scalar : lhs.scalar;
    for (SeriesResult& s : vec.series) {
      for (std::size_t i = 0; i < grid_.n; ++i) {
        if (!s.present[i]) continue;
        s.values[i] = vector_left ? Apply(e.op, s.values[i], scalar[i])
                                  : Apply(e.op, scalar[i], s.values[i]);
      }
      DropName(&s.labels);
      out->series.push_back(std::move(s));
    }
    return Status::OK();
  }

  const EvalParams params_;
  const StepGrid grid_;
  SeriesCatalog& catalog_;
  SeriesReader& reader_;
};

}  // namespace

Status Evaluate(const Expr& expr, const EvalParams& params, SeriesCatalog& catalog,
                SeriesReader& reader, EvalResult* out) {
  out->is_scalar = false;
  out->scalar.clear();
  out->series.clear();
  if (params.step_ns <= 0 || params.end_ns < params.start_ns) {
    return Status::InvalidArgument("evaluation needs step > 0 and end >= start");
  }
  Evaluator evaluator(params, catalog, reader);
  INGOT_RETURN_IF_ERROR(evaluator.Eval(expr, out));
  std::sort(out->series.begin(), out->series.end(),
            [](const SeriesResult& a, const SeriesResult& b) { return a.labels < b.labels; });
  return Status::OK();
}

}  // namespace ingot
