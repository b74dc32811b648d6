#include "query/expr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "query/depth_guard.h"
#include "query/text_format.h"

namespace ingot {
namespace {

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    const char y = (b[i] >= 'A' && b[i] <= 'Z') ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

constexpr std::string_view kSupported =
    "supported: number literals, selectors, avg|min|max|sum|count|last_over_time, rate, "
    "increase, sum|avg|min|max|count [by|without (labels)], and + - * / % ^ with a number";

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Status Parse(std::unique_ptr<Expr>* out) {
    if (text_.size() > kMaxExprBytes) {
      return Status::InvalidArgument("query of " + std::to_string(text_.size()) +
                                     " bytes exceeds the limit of " +
                                     std::to_string(kMaxExprBytes) + " bytes");
    }
    INGOT_RETURN_IF_ERROR(ParseAdditive(out));
    SkipSpace();
    if (pos_ != text_.size()) return Unexpected("end of expression");
    return Status::OK();
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {  // comment to end of line
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Status Unexpected(std::string_view expected) {
    std::string found = pos_ < text_.size()
                            ? "\"" + std::string(text_.substr(pos_, 20)) + "\""
                            : std::string("end of input");
    return Status::InvalidArgument("parse error at offset " + std::to_string(pos_) +
                                   ": expected " + std::string(expected) + ", found " + found);
  }

  Status Unsupported(std::string_view what) {
    return Status::InvalidArgument("unsupported expression: " + std::string(what) + " (" +
                                   std::string(kSupported) + ")");
  }

  std::string_view PeekIdent() {
    SkipSpace();
    std::size_t end = pos_;
    while (end < text_.size() && IsIdentChar(text_[end])) ++end;
    if (end == pos_ || !IsIdentStart(text_[pos_])) return {};
    return text_.substr(pos_, end - pos_);
  }

  // Every way of nesting (parentheses, signs, function arguments) passes through ParseAdditive or
  // ParseUnary, which hold a DepthGuard.
  Status TooDeep() {
    return Status::InvalidArgument("parse error at offset " + std::to_string(pos_) +
                                   ": expression nested deeper than " +
                                   std::to_string(kMaxExprDepth) + " levels");
  }

  Status CheckHeight(const Expr& e) {
    return e.height > kMaxExprDepth ? TooDeep() : Status::OK();
  }

  Status ParseAdditive(std::unique_ptr<Expr>* out) {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxExprDepth) return TooDeep();
    INGOT_RETURN_IF_ERROR(ParseMultiplicative(out));
    for (;;) {
      SkipSpace();
      if (pos_ >= text_.size()) return Status::OK();
      const char c = text_[pos_];
      if (c != '+' && c != '-') return CheckTrailingOperator();
      ++pos_;
      std::unique_ptr<Expr> rhs;
      INGOT_RETURN_IF_ERROR(ParseMultiplicative(&rhs));
      *out = MakeBinary(c, std::move(*out), std::move(rhs));
      INGOT_RETURN_IF_ERROR(CheckHeight(**out));
    }
  }

  Status ParseMultiplicative(std::unique_ptr<Expr>* out) {
    INGOT_RETURN_IF_ERROR(ParseUnary(out));
    for (;;) {
      SkipSpace();
      if (pos_ >= text_.size()) return Status::OK();
      const char c = text_[pos_];
      if (c != '*' && c != '/' && c != '%') return Status::OK();
      ++pos_;
      std::unique_ptr<Expr> rhs;
      INGOT_RETURN_IF_ERROR(ParseUnary(&rhs));
      *out = MakeBinary(c, std::move(*out), std::move(rhs));
      INGOT_RETURN_IF_ERROR(CheckHeight(**out));
    }
  }

  // '^' binds tighter than a sign and is right-associative: -2^2 is -(2^2), 2^-1 is 2^(-1).
  Status ParsePower(std::unique_ptr<Expr>* out) {
    INGOT_RETURN_IF_ERROR(ParsePrimary(out));
    if (Consume('^')) {
      std::unique_ptr<Expr> rhs;
      INGOT_RETURN_IF_ERROR(ParseUnary(&rhs));
      *out = MakeBinary('^', std::move(*out), std::move(rhs));
      INGOT_RETURN_IF_ERROR(CheckHeight(**out));
    }
    return Status::OK();
  }

  Status ParseUnary(std::unique_ptr<Expr>* out) {
    SkipSpace();
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) {
      const char sign = text_[pos_++];
      DepthGuard guard(&depth_);
      if (depth_ > kMaxExprDepth) return TooDeep();
      INGOT_RETURN_IF_ERROR(ParseUnary(out));
      if (sign == '+') return Status::OK();
      auto zero = std::make_unique<Expr>();
      zero->kind = ExprKind::kNumber;
      zero->number = 0;
      *out = MakeBinary('-', std::move(zero), std::move(*out));
      return CheckHeight(**out);
    }
    return ParsePower(out);
  }

  // Names the comparison and set operators so that the error says what is unsupported.
  Status CheckTrailingOperator() {
    const std::string_view rest = text_.substr(pos_);
    for (std::string_view op : {"==", "!=", ">=", "<=", ">", "<"}) {
      if (rest.starts_with(op)) return Unsupported("comparison operator " + std::string(op));
    }
    const std::string_view ident = PeekIdent();
    if (ident == "and" || ident == "or" || ident == "unless") {
      return Unsupported("set operator " + std::string(ident));
    }
    if (ident == "offset") return Unsupported("offset modifier");
    return Status::OK();
  }

  std::unique_ptr<Expr> MakeBinary(char op, std::unique_ptr<Expr> lhs, std::unique_ptr<Expr> rhs) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kBinary;
    e->op = op;
    e->height = 1 + std::max(lhs->height, rhs->height);
    e->lhs = std::move(lhs);
    e->rhs = std::move(rhs);
    return e;
  }

  Status ParseNumber(std::unique_ptr<Expr>* out) {
    double v = 0;
    const char* begin = text_.data() + pos_;
    const char* end = text_.data() + text_.size();
    std::from_chars_result r{};
    if (text_.substr(pos_).starts_with("0x") || text_.substr(pos_).starts_with("0X")) {
      std::uint64_t hex = 0;
      r = std::from_chars(begin + 2, end, hex, 16);
      v = static_cast<double>(hex);
    } else {
      r = std::from_chars(begin, end, v);
    }
    if (r.ec != std::errc()) return Unexpected("a number");
    pos_ = static_cast<std::size_t>(r.ptr - text_.data());
    if (pos_ < text_.size() && IsIdentStart(text_[pos_])) {
      return Unsupported("duration literal or malformed number at offset " +
                         std::to_string(pos_));
    }
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kNumber;
    e->number = v;
    *out = std::move(e);
    return Status::OK();
  }

  Status ParseGrouping(std::unique_ptr<Expr>& agg) {
    const std::string_view word = PeekIdent();
    if (word != "by" && word != "without") return Status::OK();
    pos_ += word.size();
    agg->without = word == "without";
    if (!Consume('(')) return Unexpected("'(' after " + std::string(word));
    agg->grouping.clear();
    if (Consume(')')) return Status::OK();
    for (;;) {
      SkipSpace();
      std::string label;
      if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
        INGOT_RETURN_IF_ERROR(ParseStringLiteral(text_, &pos_, &label));
      } else {
        const std::string_view name = PeekIdent();
        if (name.empty()) return Unexpected("a label name in " + std::string(word) + "(...)");
        pos_ += name.size();
        label.assign(name);
      }
      agg->grouping.push_back(std::move(label));
      if (Consume(',')) {
        if (Consume(')')) return Status::OK();
        continue;
      }
      if (Consume(')')) return Status::OK();
      return Unexpected("',' or ')' in " + std::string(word) + "(...)");
    }
  }

  Status ParseAggregation(AggregateOp op, std::string_view name, std::unique_ptr<Expr>* out) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kAggregate;
    e->aggregate = op;
    INGOT_RETURN_IF_ERROR(ParseGrouping(e));
    if (!Consume('(')) return Unexpected("'(' after " + std::string(name));
    INGOT_RETURN_IF_ERROR(ParseAdditive(&e->lhs));
    if (Consume(',')) return Unsupported(std::string(name) + " with a parameter");
    if (!Consume(')')) return Unexpected("')' closing " + std::string(name) + "(...)");
    if (e->grouping.empty() && !e->without) INGOT_RETURN_IF_ERROR(ParseGrouping(e));
    if (e->lhs->kind == ExprKind::kNumber ||
        (e->lhs->kind == ExprKind::kSelector && e->lhs->range_ns != 0)) {
      return Status::InvalidArgument("expected an instant vector inside " + std::string(name) +
                                     "(...)");
    }
    e->height = 1 + e->lhs->height;
    INGOT_RETURN_IF_ERROR(CheckHeight(*e));
    *out = std::move(e);
    return Status::OK();
  }

  Status ParseRangeFunction(RangeFunction f, std::string_view name, std::unique_ptr<Expr>* out) {
    if (!Consume('(')) return Unexpected("'(' after " + std::string(name));
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kRangeFunction;
    e->function = f;
    INGOT_RETURN_IF_ERROR(ParseAdditive(&e->lhs));
    if (e->lhs->kind != ExprKind::kSelector || e->lhs->range_ns == 0) {
      return Status::InvalidArgument(std::string(name) +
                                     "() expects a range vector selector like metric[5m]");
    }
    if (!Consume(')')) return Unexpected("')' closing " + std::string(name) + "(...)");
    e->height = 1 + e->lhs->height;
    *out = std::move(e);
    return Status::OK();
  }

  Status ParseSelectorExpr(std::unique_ptr<Expr>* out) {
    auto e = std::make_unique<Expr>();
    e->kind = ExprKind::kSelector;
    const std::size_t begin = pos_;
    INGOT_RETURN_IF_ERROR(ParseSelectorAt(text_, &pos_, &e->selector));
    e->selector_text.assign(text_.substr(begin, pos_ - begin));
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '[') {
      const std::size_t close = text_.find(']', pos_);
      if (close == std::string_view::npos) return Unexpected("']' closing the range");
      const std::string_view inside = text_.substr(pos_ + 1, close - pos_ - 1);
      if (inside.find(':') != std::string_view::npos) return Unsupported("subquery");
      std::string_view trimmed = inside;
      while (!trimmed.empty() && trimmed.front() == ' ') trimmed.remove_prefix(1);
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
      Status st = ParseDurationNs(trimmed, &e->range_ns);
      if (!st.ok()) return Status::InvalidArgument("range of " + e->selector_text + ": " +
                                                   std::string(st.message()));
      pos_ = close + 1;
    }
    const std::string_view next = PeekIdent();
    if (next == "offset") return Unsupported("offset modifier");
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '@') return Unsupported("@ modifier");
    *out = std::move(e);
    return Status::OK();
  }

  Status ParsePrimary(std::unique_ptr<Expr>* out) {
    SkipSpace();
    if (pos_ >= text_.size()) return Unexpected("an expression");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      INGOT_RETURN_IF_ERROR(ParseAdditive(out));
      if (!Consume(')')) return Unexpected("')'");
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '[') return Unsupported("subquery");
      return Status::OK();
    }
    if (IsDigit(c) || c == '.') return ParseNumber(out);
    if (c == '{') return ParseSelectorExpr(out);
    if (c == '"' || c == '\'' || c == '`') return Unsupported("string literal");
    const std::string_view ident = PeekIdent();
    if (ident.empty()) return Unexpected("an expression");
    if (EqualsIgnoreCase(ident, "inf") || EqualsIgnoreCase(ident, "nan")) {
      pos_ += ident.size();
      auto e = std::make_unique<Expr>();
      e->kind = ExprKind::kNumber;
      e->number = EqualsIgnoreCase(ident, "nan") ? std::numeric_limits<double>::quiet_NaN()
                                                 : std::numeric_limits<double>::infinity();
      *out = std::move(e);
      return Status::OK();
    }
    // What follows the identifier decides between a call and a metric name.
    std::size_t after = pos_ + ident.size();
    while (after < text_.size() && (text_[after] == ' ' || text_[after] == '\t' ||
                                    text_[after] == '\n' || text_[after] == '\r')) {
      ++after;
    }
    const bool call = after < text_.size() && text_[after] == '(';
    const std::string_view rest = text_.substr(after);
    const bool grouping_follows = rest.starts_with("by") || rest.starts_with("without");
    struct AggName {
      std::string_view name;
      AggregateOp op;
    };
    static constexpr AggName kAggs[] = {{"sum", AggregateOp::kSum},
                                        {"avg", AggregateOp::kAvg},
                                        {"min", AggregateOp::kMin},
                                        {"max", AggregateOp::kMax},
                                        {"count", AggregateOp::kCount}};
    for (const AggName& a : kAggs) {
      if (ident == a.name && (call || grouping_follows)) {
        pos_ += ident.size();
        return ParseAggregation(a.op, a.name, out);
      }
    }
    for (std::string_view other : {"stddev", "stdvar", "topk", "bottomk", "quantile",
                                   "count_values", "group", "limitk", "limit_ratio"}) {
      if (ident == other && (call || grouping_follows)) {
        return Unsupported("aggregation " + std::string(other));
      }
    }
    if (call) {
      struct FunctionName {
        std::string_view name;
        RangeFunction f;
      };
      static constexpr FunctionName kFunctions[] = {
          {"avg_over_time", RangeFunction::kAvg},     {"min_over_time", RangeFunction::kMin},
          {"max_over_time", RangeFunction::kMax},     {"sum_over_time", RangeFunction::kSum},
          {"count_over_time", RangeFunction::kCount}, {"last_over_time", RangeFunction::kLast},
          {"rate", RangeFunction::kRate},             {"increase", RangeFunction::kIncrease}};
      for (const FunctionName& f : kFunctions) {
        if (ident == f.name) {
          pos_ = after;
          return ParseRangeFunction(f.f, f.name, out);
        }
      }
      return Unsupported("function " + std::string(ident) + "()");
    }
    return ParseSelectorExpr(out);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

const char* RangeFunctionName(RangeFunction f) {
  switch (f) {
    case RangeFunction::kAvg: return "avg_over_time";
    case RangeFunction::kMin: return "min_over_time";
    case RangeFunction::kMax: return "max_over_time";
    case RangeFunction::kSum: return "sum_over_time";
    case RangeFunction::kCount: return "count_over_time";
    case RangeFunction::kLast: return "last_over_time";
    case RangeFunction::kRate: return "rate";
    case RangeFunction::kIncrease: return "increase";
  }
  return "?";
}

Status ParseExpr(std::string_view text, std::unique_ptr<Expr>* out) {
  Parser parser(text);
  std::unique_ptr<Expr> e;
  INGOT_RETURN_IF_ERROR(parser.Parse(&e));
  *out = std::move(e);
  return Status::OK();
}

}  // namespace ingot
