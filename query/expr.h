// Expr: the subset of PromQL that Ingot evaluates, parsed into a small tree.
//
//   expr     := additive
//   additive := multiplicative { ('+' | '-') multiplicative }
//   multiplicative := unary { ('*' | '/' | '%') unary }
//   unary    := ( '-' | '+' ) unary | power
//   power    := primary [ '^' unary ]
//   primary  := number | '(' expr ')' | selector | selector '[' duration ']'
//             | range_function '(' selector '[' duration ']' ')'
//             | aggregation [ by|without '(' labels ')' ] '(' expr ')' [ by|without '(' labels ')' ]
//
//   range_function := avg_over_time | min_over_time | max_over_time | sum_over_time
//                   | count_over_time | last_over_time | rate | increase
//   aggregation    := sum | avg | min | max | count
//
// Arithmetic works between numbers and between a vector and a number. Everything else of PromQL
// (other functions, vector matching, comparisons, offset, @, subqueries) is rejected with an
// InvalidArgument that names the unsupported construct.
//
// Thread safety: a parsed Expr is immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/status.h"
#include "query/selector.h"

namespace ingot {

enum class ExprKind { kNumber, kSelector, kRangeFunction, kAggregate, kBinary };

enum class RangeFunction { kAvg, kMin, kMax, kSum, kCount, kLast, kRate, kIncrease };
enum class AggregateOp { kSum, kAvg, kMin, kMax, kCount };

struct Expr {
  ExprKind kind = ExprKind::kNumber;
  double number = 0;                 // kNumber
  Selector selector;                 // kSelector
  std::string selector_text;         // kSelector, for messages
  std::int64_t range_ns = 0;         // kSelector: 0 = instant vector, else a range vector
  RangeFunction function = RangeFunction::kAvg;  // kRangeFunction (arg = the range selector)
  AggregateOp aggregate = AggregateOp::kSum;     // kAggregate
  bool without = false;                          // kAggregate: `without` instead of `by`
  std::vector<std::string> grouping;             // kAggregate
  char op = '+';                                 // kBinary: + - * / % ^
  std::unique_ptr<Expr> lhs;                     // kBinary, or the argument of a function
  std::unique_ptr<Expr> rhs;                     // kBinary
  int height = 1;  // nodes on the longest path down to a leaf (bounded by kMaxExprDepth)
};

// Bounds on what a client may send: evaluation and destruction recurse over the tree, so its
// height is bounded, and the text's size is bounded before any parsing.
inline constexpr int kMaxExprDepth = 512;
inline constexpr std::size_t kMaxExprBytes = 128 * 1024;

Status ParseExpr(std::string_view text, std::unique_ptr<Expr>* out);

const char* RangeFunctionName(RangeFunction f);

}  // namespace ingot
