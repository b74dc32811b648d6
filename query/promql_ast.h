// The syntax tree of a PromQL expression (Prometheus 3.x, float samples), as built by
// query/promql_parser.h and walked by the query engine.
//
//   rate(http_requests_total{job="api"}[5m] offset 1m) > bool on (instance) group_left up
//
// Every node knows its kind, its value type (scalar, instant vector, range vector or string) and
// the byte range of the query text it came from. Nodes own their children (`std::unique_ptr`);
// `As<T>()` is the checked downcast. Parentheses are kept as ParenExpr nodes so that the printer
// writes the text back without adding or dropping any.
//
// Times and durations are in nanoseconds and, as in Prometheus, whole milliseconds.
//
// Thread safety: a finished tree is immutable and may be read from several threads at once.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "query/selector.h"

namespace ingot::promql {

enum class ValueType : std::uint8_t {
  kNone,  // only for an unknown function while the tree is incomplete
  kScalar,
  kVector,  // instant vector
  kMatrix,  // range vector
  kString,
};

// "scalar", "instant vector", "range vector", "string" (the names Prometheus' messages use).
std::string_view ValueTypeName(ValueType type);

// Byte offsets into the query text, [start, end).
struct PositionRange {
  std::uint32_t start = 0;
  std::uint32_t end = 0;
};

enum class NodeKind : std::uint8_t {
  kNumberLiteral,
  kStringLiteral,
  kVectorSelector,
  kMatrixSelector,
  kSubquery,
  kUnary,
  kBinary,
  kAggregate,
  kCall,
  kParen,
};

struct Expr {
  explicit Expr(NodeKind k, ValueType t) : kind(k), type(t) {}
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;

  template <typename T>
  const T& As() const {
    assert(kind == T::kKind);
    return static_cast<const T&>(*this);
  }
  template <typename T>
  T& As() {
    assert(kind == T::kKind);
    return static_cast<T&>(*this);
  }

  const NodeKind kind;
  ValueType type;
  PositionRange pos;
  // Nodes on the longest path down to a leaf, this one included. Everything that walks a tree
  // recurses, so the parser bounds it (kMaxDepth in query/promql_parser.h).
  int height = 1;
};

struct NumberLiteral final : Expr {
  static constexpr NodeKind kKind = NodeKind::kNumberLiteral;
  NumberLiteral() : Expr(kKind, ValueType::kScalar) {}
  double value = 0;
};

struct StringLiteral final : Expr {
  static constexpr NodeKind kKind = NodeKind::kStringLiteral;
  StringLiteral() : Expr(kKind, ValueType::kString) {}
  std::string value;  // unquoted
};

enum class AtModifier : std::uint8_t { kNone, kTimestamp, kStart, kEnd };

// `offset` and `@` of a selector or subquery.
struct TimeModifiers {
  std::int64_t offset_ns = 0;  // positive looks back in time; 0 = none
  AtModifier at = AtModifier::kNone;
  std::int64_t at_ns = 0;  // Unix time for AtModifier::kTimestamp
};

struct VectorSelector final : Expr {
  static constexpr NodeKind kKind = NodeKind::kVectorSelector;
  VectorSelector() : Expr(kKind, ValueType::kVector) {}
  // The name written before the braces, if any. It is also selector.matchers[0] (a `__name__`
  // equality), so that matching needs only the matchers.
  std::string metric_name;
  Selector selector;
  TimeModifiers time;
  // Set for the label-only selector that is info()'s second argument, which may match "".
  bool bypass_empty_matcher_check = false;
};

// `vector_selector[range]`. The selector's `time` holds the offset and @ written after the range.
struct MatrixSelector final : Expr {
  static constexpr NodeKind kKind = NodeKind::kMatrixSelector;
  MatrixSelector() : Expr(kKind, ValueType::kMatrix) {}
  std::unique_ptr<VectorSelector> vector;
  std::int64_t range_ns = 0;
};

// `expr[range:step]`; step_ns 0 means the query's default step (`expr[range:]`).
struct Subquery final : Expr {
  static constexpr NodeKind kKind = NodeKind::kSubquery;
  Subquery() : Expr(kKind, ValueType::kMatrix) {}
  std::unique_ptr<Expr> expr;
  std::int64_t range_ns = 0;
  std::int64_t step_ns = 0;
  TimeModifiers time;
};

enum class BinaryOp : std::uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kAtan2,
  kEql,  // ==
  kNeq,
  kGtr,
  kLss,
  kGte,
  kLte,
  kAnd,
  kOr,
  kUnless,
};

// "+", "==", "and", "atan2", ...
std::string_view BinaryOpName(BinaryOp op);
bool IsComparison(BinaryOp op);
bool IsSetOperator(BinaryOp op);

// `-x` or `+x` (a sign on a number literal is folded into the literal instead).
struct UnaryExpr final : Expr {
  static constexpr NodeKind kKind = NodeKind::kUnary;
  UnaryExpr() : Expr(kKind, ValueType::kNone) {}
  BinaryOp op = BinaryOp::kSub;  // kAdd or kSub
  std::unique_ptr<Expr> expr;
};

enum class Cardinality : std::uint8_t { kOneToOne, kManyToOne, kOneToMany, kManyToMany };

struct VectorMatching {
  Cardinality card = Cardinality::kOneToOne;  // set operators: always kManyToMany
  bool on = false;                            // on (...) rather than ignoring (...)
  std::vector<std::string> matching_labels;
  std::vector<std::string> include;  // group_left (...) / group_right (...)
};

struct BinaryExpr final : Expr {
  static constexpr NodeKind kKind = NodeKind::kBinary;
  BinaryExpr() : Expr(kKind, ValueType::kNone) {}
  BinaryOp op = BinaryOp::kAdd;
  std::unique_ptr<Expr> lhs;
  std::unique_ptr<Expr> rhs;
  bool return_bool = false;
  // Meaningful when both sides are instant vectors; left at its defaults otherwise.
  VectorMatching matching;
  std::uint32_t op_pos = 0;  // byte offset of the operator, for messages
};

enum class AggregateOp : std::uint8_t {
  kSum,
  kAvg,
  kCount,
  kMin,
  kMax,
  kGroup,
  kStddev,
  kStdvar,
  kTopk,
  kBottomk,
  kCountValues,
  kQuantile,
  kLimitk,
  kLimitRatio,
};

std::string_view AggregateOpName(AggregateOp op);  // "sum", "count_values", ...
// topk, bottomk, quantile, count_values, limitk and limit_ratio take a parameter first.
bool TakesParameter(AggregateOp op);

struct AggregateExpr final : Expr {
  static constexpr NodeKind kKind = NodeKind::kAggregate;
  AggregateExpr() : Expr(kKind, ValueType::kVector) {}
  AggregateOp op = AggregateOp::kSum;
  std::unique_ptr<Expr> expr;
  std::unique_ptr<Expr> param;  // null unless TakesParameter(op)
  std::vector<std::string> grouping;
  bool without = false;
};

// A function of the language: its argument types and result type. With `variadic` 0 the call
// takes exactly arg_types; otherwise it may leave out the last one, and repeat it up to
// `variadic` more times (-1: without limit).
struct Function {
  std::string_view name;
  std::array<ValueType, 5> arg_types{};
  int num_args = 0;  // used entries of arg_types
  int variadic = 0;
  ValueType return_type = ValueType::kVector;
  bool experimental = false;  // behind --enable-feature=promql-experimental-functions upstream

  std::span<const ValueType> args() const {
    return {arg_types.data(), static_cast<std::size_t>(num_args)};
  }
};

// The function table (sorted by name), and a lookup in it (names are case-sensitive). The
// returned pointers stay valid for the life of the program.
std::span<const Function> Functions();
const Function* FindFunction(std::string_view name);

struct Call final : Expr {
  static constexpr NodeKind kKind = NodeKind::kCall;
  Call() : Expr(kKind, ValueType::kNone) {}
  const Function* func = nullptr;
  std::vector<std::unique_ptr<Expr>> args;
};

struct ParenExpr final : Expr {
  static constexpr NodeKind kKind = NodeKind::kParen;
  ParenExpr() : Expr(kKind, ValueType::kNone) {}
  std::unique_ptr<Expr> expr;
};

// Writes `expr` as canonical PromQL: single spaces around binary operators, lower-case keywords,
// matchers sorted, numbers in their shortest exact form, durations as "1h30m", strings in double
// quotes with Go escapes. Parsing the text gives back an equal tree (printed the same).
// REQUIRES: the tree is complete (as the parser returns it) and at most kMaxDepth high.
// (Defined with the parser, in query/promql_parser.cc, as are the names and the function table.)
void AppendExpr(const Expr& expr, std::string* out);
std::string ToString(const Expr& expr);

}  // namespace ingot::promql
