// The PromQL engine: evaluates a parsed expression (query/promql_ast.h) over Ingot's storage at
// every step of [start, end] (an instant query is one step), with Prometheus 3's semantics for
// float samples.
//
// It evaluates a node for all steps at once, never one sample at a time:
//   - a selector is matched once per query; each matched series is read once for the whole range
//     (chunks decoded in bulk by SeriesReader) and turned into a per-step column with two
//     pointers sliding over the decoded points (an instant selector takes the newest sample in
//     (t - lookback, t], unless that sample is a staleness marker);
//   - a range function slides its window (t - range, t] over the same columns and calls one kernel
//     per window (query/promql_functions.h); series are read, reduced and released one at a time,
//     so `rate(x[5m])` over a million series holds one series' points, not all of them;
//   - a subquery evaluates its expression on its own step grid, whose columns then feed range
//     functions as a selector's points do;
//   - aggregations group series by a hashed label set once, then fold the columns step by step;
//     binary operators match series once by their matching labels and pair them per step;
//   - `__name__` is dropped lazily, as Prometheus 3 does: functions and operators mark the series
//     and the name is removed at the end, so label_replace can still read it. Two series left with
//     the same labels are an error ("vector cannot contain metrics with the same labelset").
//
// Limits: query.max_series per selector, max_samples on points held at once (series x steps of
// live intermediate results and the points read), and a deadline checked between series and
// steps: past it the evaluation stops with Status::Busy naming the limit.
//
// With QueryParams::fanout set, selectors take their series and points from it (the cluster's
// merged answer, query/series_fanout.h) instead of the catalog and the reader: each selector's
// series arrive with their points over the whole range it reads, and are held (and counted
// against max_samples) until the selector's evaluation is done. Everything after the selection
// is the same code.
//
// Thread safety: Evaluate may run concurrently on different readers (one SeriesReader each).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk/series_reader.h"
#include "config/status.h"
#include "query/promql_ast.h"
#include "query/series_catalog.h"

namespace ingot::promql {

// A series' labels sorted by name, `__name__` (the metric name) included.
using Labels = std::vector<std::pair<std::string, std::string>>;

class SeriesFanout;

struct QueryParams {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t step_ns = 1'000'000;  // > 0; ignored when start == end
  std::int64_t lookback_ns = 300'000'000'000;
  // The step of a subquery written without one (`x[1h:]`), Prometheus' evaluation interval.
  std::int64_t subquery_step_ns = 60'000'000'000;
  std::size_t max_series = 100'000;        // series one selector may match
  std::uint64_t max_samples = 50'000'000;  // points held at once
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // The query text, for the positions annotations name (may be empty).
  std::string_view query;
  // When set, where selectors get their series and points (the catalog and reader are then not
  // read); its warnings (a node that did not answer) become the result's. It is given the
  // deadline, and the reader's damage sink (damaged chunks on any node skipped into it when
  // set). Not owned; must outlive the evaluation.
  SeriesFanout* fanout = nullptr;

  std::size_t steps() const {
    return start_ns == end_ns ? 1 : static_cast<std::size_t>((end_ns - start_ns) / step_ns) + 1;
  }
};

// One series of an instant-vector result: a value per step where `present`.
struct SeriesResult {
  Labels labels;
  std::vector<double> values;
  std::vector<std::uint8_t> present;
};

// One series of a range-vector result (an instant query of `x[5m]` or of a subquery).
struct RangeSeriesResult {
  Labels labels;
  std::vector<std::int64_t> ts;
  std::vector<double> values;
};

struct QueryResult {
  ValueType type = ValueType::kVector;
  std::vector<double> scalar;             // kScalar: one per step
  std::vector<SeriesResult> series;       // kVector
  std::vector<RangeSeriesResult> ranges;  // kMatrix
  std::string string_value;               // kString
  // Sort order of `series` matters (sort(), topk(), ... in an instant query); otherwise a range
  // query's series are sorted by labels.
  bool ordered = false;
  // Prometheus' annotations, "PromQL warning: ... (line:column)" and "PromQL info: ...": what the
  // answer's "warnings" and "infos" carry.
  std::vector<std::string> warnings;
  std::vector<std::string> infos;
  // For `stats=all`: points read from storage, and the most points held at once.
  std::uint64_t samples_read = 0;
  std::uint64_t peak_samples = 0;
};

// Evaluates `expr` (as the parser returns it) at the steps of `params`. Errors: InvalidArgument
// for an expression that cannot be evaluated as asked (a range vector in a range query, a bad
// function argument), Busy for an execution error or a limit (HTTP 422), storage errors as they
// come (damaged chunks are skipped and reported through the reader's damage sink when set), and
// the fanout's errors when one is set.
Status Evaluate(const Expr& expr, const QueryParams& params, SeriesCatalog& catalog,
                SeriesReader& reader, QueryResult* out);

}  // namespace ingot::promql
