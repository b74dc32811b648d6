// Conformance: runs a parsed PromQL test script (promql_script.h) against Ingot's real storage and
// query engine and judges every eval case the way Prometheus' promqltest does.
//
// A script starts with an empty Storage in a fresh temporary directory; `clear` closes it and the
// next command opens another. A load writes its samples through the real write path (series
// resolved from their label sets, definitions logged with the points in the shard WAL, head
// buffers sealed into codec-encoded chunks at 1024 points), at their script times from Unix time
// 0: retention is off and late points have no age limit. Histogram samples are not written.
//
// An eval parses the expression with ParseExpr and evaluates it with Evaluate over a
// SeriesCatalog and SeriesReader, as the HTTP API does (same lookback and limits as the default
// QueryOptions; damaged chunks skipped and reported): an instant case is one step at its time, a
// range case steps from start to end. The comparison follows promqltest:
//   - float values are equal within a relative 1e-6 (AlmostEqual; NaN equals NaN);
//   - label sets are compared as sets; results are matched to expectations by labels, in any
//     order unless eval_ordered / `expect ordered`; a range result must also be sorted by labels;
//   - eval_fail / `expect fail` needs an error, matching the message or regex when one is given.
//     An expression that Ingot's parser rejects does not count as the expected failure: the
//     scripts' failing cases are valid PromQL that fails when evaluated;
//   - eval_warn / eval_info / `expect warn|info` need PromQL annotations, which Ingot does not
//     report, so they fail; `expect no_warn|no_info` hold;
//   - `expect string` and `expect range vector` need result types Ingot does not return.
// Cases marked native_histogram are skipped. A case passes only if everything matches; a failed
// case records the first difference found.
//
// Thread safety: RunScript may run concurrently for different scripts (each has its own store).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "query/promql_engine.h"
#include "tests/promql/promql_script.h"

namespace ingot::promqltest {

// promqltest's defaultEpsilon: the relative error allowed between sample values.
inline constexpr double kDefaultEpsilon = 1e-6;

// Prometheus' almost.Equal: true when both are NaN, when equal, or when they differ by less than
// epsilon times their magnitude (times the smallest normal double when either is 0 or both are
// tiny).
bool AlmostEqual(double a, double b, double epsilon = kDefaultEpsilon);

// Prometheus' labels.Compare: label by label (name, then value), a prefix sorts first.
int CompareLabels(const LabelSet& a, const LabelSet& b);

enum class Outcome : std::uint8_t { kPassed, kFailed, kSkipped };

struct CaseResult {
  int line = 0;
  std::string expr;
  Outcome outcome = Outcome::kFailed;
  std::string reason;  // the first difference (failed) or why it did not run (skipped)
};

struct ScriptReport {
  std::string name;
  std::vector<CaseResult> cases;  // one per eval case, in script order

  std::size_t passed() const { return Count(Outcome::kPassed); }
  std::size_t failed() const { return Count(Outcome::kFailed); }
  std::size_t skipped() const { return Count(Outcome::kSkipped); }
  std::size_t Count(Outcome outcome) const;
};

// Runs every command of `script` in order; `*report` gets one CaseResult per eval case. Storage
// failures are reported as failed cases naming the load.
void RunScript(const Script& script, ScriptReport* report);

// The first difference between what `c` expects and `result` (an evaluation of c.expr over c's
// times), or "" when they agree. Annotations and errors are judged by RunScript, not here.
std::string CompareResult(const EvalCase& c, const promql::QueryResult& result);

// A case Ingot is known not to pass, and why: the short list kept in conformance.cc.
struct KnownException {
  std::string_view file;  // script file name
  std::string_view expr;  // the case's expression, exactly as written
  std::string_view why;
};
std::span<const KnownException> KnownExceptions();
// The exception covering case `c` of script `file`, or nullptr.
const KnownException* FindException(std::string_view file, const CaseResult& c);

// Where the scripts are: $INGOT_PROMQL_TESTS when set, else ../shared/promql-tests beside the
// source tree.
std::string DefaultScriptDir();
// The *.test files of `path` sorted by name, or `path` itself when it is a file. Empty if none.
std::vector<std::string> ListScripts(const std::string& path);

}  // namespace ingot::promqltest
