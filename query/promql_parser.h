// PromQL parser: query text to the tree of query/promql_ast.h, with Prometheus 3.x syntax and
// type rules.
//
//   std::unique_ptr<promql::Expr> expr;
//   Status st = promql::Parse("sum by (job) (rate(http_requests_total[5m]))", &expr);
//
// A hand-written lexer feeds a precedence-climbing parser; the type checks run as a second pass
// over the finished tree, in the order Prometheus runs them, so that a query with several
// problems reports the same first one. Accepted, as in Prometheus:
//   - numbers: 1, 1.5, .5, 1e-3, 0x1f, 1_000, 010 (octal), Inf and NaN in any case; durations
//     where a number may stand (`1h` is 3600), and plain numbers of seconds where a duration may
//     stand (`x[100]`, `offset 50`);
//   - strings in "...", '...' (Go escapes) or `...` (raw);
//   - selectors with =, !=, =~, !~ (fully anchored RE2 regexes), quoted metric and label names
//     (`{"metric.name", "label.name"="v"}`), ranges `[5m]`, subqueries `[1h:5m]` and `[1h:]`,
//     `offset d` (negative too) and `@ t` / `@ start()` / `@ end()` in either order;
//   - unary + and -, binary operators with Prometheus' precedence (`^` right-associative and
//     tighter than a sign: -2^2 is -4), `bool`, on/ignoring, group_left/group_right;
//   - aggregations with by/without before or after the arguments, function calls type-checked
//     against the table in query/promql_ast.h, `#` comments to the end of a line;
//   - keywords in any case (`SUM BY (x)`, `AND`, `OFFSET`); function and label names as written.
// Not accepted: what Prometheus keeps behind feature flags besides its experimental functions,
// namely duration arithmetic (`x[5m+1m]`, `offset (1h*2)`, `[step()]`), the `anchored` and
// `smoothed` range modifiers and `fill` on binary operators; and `holt_winters`, which
// Prometheus 3 renamed double_exponential_smoothing.
//
// Errors are InvalidArgument with Prometheus' wording and position:
//   "1:6: parse error: expected type range vector in call to function \"rate\", got instant vector"
// (line and column count from 1; the column is in bytes).
//
// Bounds: the query is at most kMaxQueryBytes long, and the tree and the parser's recursion at
// most kMaxDepth deep, so hostile input cannot exhaust the stack (here, in the type checks, the
// printer or the destructors): the deepest inputs take about 200 KiB of stack in an optimized
// build (a sanitizer build several times that). Code that walks a tree recursively can rely on
// its height (Expr::height) being at most kMaxDepth.
//
// Thread safety: Parse is reentrant; the function table is immutable.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "config/status.h"
#include "query/promql_ast.h"

namespace ingot::promql {

inline constexpr int kMaxDepth = 512;
inline constexpr std::size_t kMaxQueryBytes = 128 * 1024;

struct ParseOptions {
  // Allows the functions and aggregations Prometheus marks experimental (limitk, limit_ratio,
  // sort_by_label, double_exponential_smoothing, info, ...). Prometheus leaves them off unless
  // asked; they are on here because its own test scripts use them.
  bool experimental_functions = true;
};

// Parses `query` into `*out`. On error `*out` is left untouched.
Status Parse(std::string_view query, std::unique_ptr<Expr>* out, const ParseOptions& options);
Status Parse(std::string_view query, std::unique_ptr<Expr>* out);

}  // namespace ingot::promql
