// Evaluator: computes an Expr at every step of [start, end] (an instant query is one step).
//
// Semantics follow Prometheus:
//   - an instant selector takes, per step t, the newest sample in (t - lookback, t];
//   - <agg>_over_time(sel[r]), rate and increase use the samples in (t - r, t]; rate and increase
//     extrapolate like Prometheus and handle counter resets; functions drop `__name__`;
//   - sum/avg/min/max/count by|without group by the kept labels (by(...) keeps only those;
//     without(...) drops them and `__name__`); empty groups yield no point at that step;
//   - arithmetic between numbers is a number; a vector with a number applies to every sample
//     and drops `__name__`.
//
// Each series is read once for the whole range (chunks decoded in bulk) and the windows slide
// over the decoded arrays with two pointers. count_over_time counts a chunk lying wholly inside
// a window from its header without decoding it; the other window functions decode only the
// values of such a chunk (no timestamps).
//
// Thread safety: not thread-safe; one evaluation per reader.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/status.h"
#include "query/expr.h"
#include "query/series_catalog.h"
#include "chunk/series_reader.h"

namespace ingot {

struct EvalParams {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t step_ns = 1;  // > 0
  std::int64_t lookback_ns = 300'000'000'000;
  std::size_t max_series = 100'000;
  std::uint64_t max_points = 50'000'000;  // series x steps of any intermediate result

  std::size_t steps() const {
    return static_cast<std::size_t>((end_ns - start_ns) / step_ns) + 1;
  }
};

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by name

struct SeriesResult {
  Labels labels;                // `__name__` included while the name is kept
  std::vector<double> values;   // one per step
  std::vector<std::uint8_t> present;  // 1 where the step has a value
};

struct EvalResult {
  bool is_scalar = false;
  std::vector<double> scalar;  // one per step when is_scalar
  std::vector<SeriesResult> series;
};

// Error kinds of an evaluation: InvalidArgument for a bad expression or parameter (HTTP 400),
// Busy when a limit (max_series, max_points) is exceeded (HTTP 422), others from storage.
Status Evaluate(const Expr& expr, const EvalParams& params, SeriesCatalog& catalog,
                SeriesReader& reader, EvalResult* out);

}  // namespace ingot
