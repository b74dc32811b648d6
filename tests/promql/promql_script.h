// PromqlScript: Prometheus' PromQL test scripts (promql/promqltest/testdata/*.test) parsed into
// commands, read the way Prometheus' promqltest reads them:
//
//   load 5m                                   clear
//     metric{a="b"} 0+10x5 _ stale 3          eval instant at 50m sum by (a) (metric)
//   load_with_nhcb 1m                           {a="b"} 10
//     ...                                     eval range from 0 to 10m step 5m metric
//                                               metric{a="b"} 0 _ 20
//
// Lines are trimmed; a line starting with `#` counts as blank, and a blank line ends a load or an
// eval block. A value sequence item is a number (`Inf`, `-Inf`, `NaN` included), `_` (no sample
// at that step), `stale` (a staleness marker), `a+bxN` / `a-bxN` (N+1 samples a, a+b, ...,
// accumulated by repeated addition as Prometheus does), `axN` (N+1 copies), `_xN` (N empty steps)
// or a native histogram `{{...}}` (optionally `{{...}}xN`, `{{...}}+{{...}}xN`), which is kept
// only as a placeholder: a float-only store cannot load it.
//
// An eval case is marked native_histogram when `{{` appears in its expectations, or when its
// expression may select a metric that the loads since the last `clear` gave native histogram
// samples (histogram items, or the base name `x` of `x_bucket`/`x_count`/`x_sum` series under
// load_with_nhcb): it names the metric outside a string, has a string equal to the name, or has a
// `__name__` matcher (`=~`, `!=`, `!~`) that selects it. Such cases are reported as skipped.
//
// Thread safety: free functions over caller data; reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/status.h"

namespace ingot::promqltest {

// A label set sorted by name, `__name__` included; labels with empty values are left out (in
// Prometheus an empty value is the same as no label).
using LabelSet = std::vector<std::pair<std::string, std::string>>;

// Prometheus' staleness marker: a NaN with this exact bit pattern.
inline constexpr std::uint64_t kStaleNaNBits = 0x7ff0000000000002ull;
double StaleNaN();
bool IsStaleNaN(double v);

// One step of a value sequence.
struct SequenceValue {
  enum class Kind : std::uint8_t { kFloat, kOmitted, kHistogram };
  Kind kind = Kind::kFloat;
  double value = 0;  // kFloat (a `stale` item is StaleNaN())
};

struct SeriesDef {
  LabelSet labels;
  std::vector<SequenceValue> values;  // values[i] is at t = i * interval
  int line = 0;                       // 1-based
};

struct LoadCommand {
  std::int64_t interval_ns = 0;
  bool with_nhcb = false;  // load_with_nhcb: loaded as a plain load
  std::vector<SeriesDef> series;
};

enum class EvalKind { kInstant, kRange };

// An expected error or annotation text: any text, exactly this one, or one matching a regular
// expression anywhere (RE2 syntax, unanchored, as Go's MatchString).
struct MessageMatch {
  enum class Kind : std::uint8_t { kAny, kExact, kRegex };
  Kind kind = Kind::kAny;
  std::string text;

  bool Matches(std::string_view message) const;
};

struct ExpectedSeries {
  LabelSet labels;
  std::vector<SequenceValue> values;  // one for an instant vector; one per step for a range
  int position = 0;                   // 1-based order among the expectations (eval_ordered)
  int line = 0;
};

struct EvalCase {
  int line = 0;  // of the eval command, 1-based
  EvalKind kind = EvalKind::kInstant;
  std::string expr;
  // Instant: start_ns == end_ns == the evaluation time (the end of an expected range vector).
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t step_ns = 0;  // range only

  bool fail = false;     // eval_fail or `expect fail`
  bool ordered = false;  // eval_ordered or `expect ordered`
  bool warn = false;     // eval_warn or `expect warn`
  bool info = false;     // eval_info or `expect info`
  bool no_warn = false;
  bool no_info = false;
  MessageMatch fail_message;           // meaningful when fail
  std::vector<MessageMatch> warnings;  // `expect warn ...` lines
  std::vector<MessageMatch> infos;     // `expect info ...` lines

  std::optional<double> expected_scalar;       // a bare number line
  std::optional<std::string> expected_string;  // `expect string "..."`
  // `expect range vector from <t0> to <t1> step <s>`: an instant query returning a range vector;
  // the expected series' values are at t0, t0 + s, ... up to t1.
  bool expect_range_vector = false;
  std::int64_t range_vector_start_ns = 0;
  std::int64_t range_vector_step_ns = 0;
  std::vector<ExpectedSeries> expected;  // one per label set (a repeated one replaces)

  bool native_histogram = false;
};

struct Command {
  enum class Kind : std::uint8_t { kLoad, kClear, kEval };
  Kind kind = Kind::kClear;
  int line = 0;
  LoadCommand load;  // kLoad
  EvalCase eval;     // kEval
};

struct Script {
  std::string name;  // the file name, for reports
  std::vector<Command> commands;

  std::size_t eval_count() const;
};

// Parses a whole script. InvalidArgument "<name>:<line>: <problem>" for the first bad line.
Status ParseScript(std::string_view text, std::string_view name, Script* out);
// Reads and parses a file (its base name becomes Script::name). IOError if unreadable.
Status ParseScriptFile(const std::string& path, Script* out);

// Expands one value sequence ("0+10x3 _ stale _x2 Inf"), appending to `*out`.
Status ParseSequence(std::string_view text, std::vector<SequenceValue>* out);
// Parses `metric{label="value", ...} <sequence>` (name and braces each optional).
Status ParseSeriesLine(std::string_view text, LabelSet* labels, std::vector<SequenceValue>* values);
// A number as Go's strconv would read a bare expectation: decimal, exponent, hex integer,
// `Inf`/`+Inf`/`-Inf`/`NaN` in any case. The whole text must be the number.
bool ParseNumber(std::string_view text, double* out);

// `name{a="b", c="d"}` (or `{a="b"}` without a name), label values escaped as Go strings.
std::string FormatLabels(const LabelSet& labels);
// Go's formatting of special values ("NaN", "+Inf", "-Inf"), otherwise the shortest round trip.
std::string FormatValue(double v);

}  // namespace ingot::promqltest
