// The PromQL parser: precedence, modifiers, matching, aggregations, literals, errors and limits,
// and every expression of Prometheus' own test scripts (../shared/promql-tests, or
// $INGOT_PROMQL_TESTS), each parsed, printed and parsed again.
#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "query/promql_ast.h"
#include "query/promql_parser.h"

namespace ingot::promql {
namespace {

constexpr std::int64_t kMs = 1000 * 1000;
constexpr std::int64_t kSecond = 1000 * kMs;
constexpr std::int64_t kMinute = 60 * kSecond;
constexpr std::int64_t kHour = 60 * kMinute;

// Concatenation by appending (GCC 12 warns falsely about `"literal" + std::string`).
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

std::unique_ptr<Expr> MustParse(std::string_view query) {
  std::unique_ptr<Expr> expr;
  const Status st = Parse(query, &expr);
  EXPECT_TRUE(st.ok()) << query << ": " << st.ToString();
  return expr;
}

// The message of the error for `query`, or "OK".
std::string Error(std::string_view query, const ParseOptions& options = {}) {
  std::unique_ptr<Expr> expr;
  const Status st = Parse(query, &expr, options);
  if (st.ok()) return "OK";
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(expr, nullptr);
  return std::string(st.message());
}

// Canonical text of `query`.
std::string Canon(std::string_view query) {
  const auto expr = MustParse(query);
  return expr ? ToString(*expr) : "<error>";
}

// The tree's shape as an S-expression: (+ 1 (* 2 3)), (neg x), [paren], (sum x), ...
std::string Tree(const Expr& e) {
  switch (e.kind) {
    case NodeKind::kNumberLiteral:
    case NodeKind::kStringLiteral:
    case NodeKind::kVectorSelector:
    case NodeKind::kMatrixSelector: return ToString(e);
    case NodeKind::kSubquery: {
      const auto& sub = e.As<Subquery>();
      return Cat("(subquery ", Tree(*sub.expr), ")");
    }
    case NodeKind::kUnary: {
      const auto& unary = e.As<UnaryExpr>();
      return Cat(unary.op == BinaryOp::kSub ? "(neg " : "(pos ", Tree(*unary.expr), ")");
    }
    case NodeKind::kBinary: {
      const auto& bin = e.As<BinaryExpr>();
      std::string out = "(";
      out.append(BinaryOpName(bin.op));
      if (bin.return_bool) out.append(" bool");
      out.append(" ").append(Tree(*bin.lhs)).append(" ").append(Tree(*bin.rhs)).append(")");
      return out;
    }
    case NodeKind::kAggregate: {
      const auto& agg = e.As<AggregateExpr>();
      std::string out = "(";
      out.append(AggregateOpName(agg.op));
      if (agg.param) out.append(" ").append(Tree(*agg.param));
      out.append(" ").append(Tree(*agg.expr)).append(")");
      return out;
    }
    case NodeKind::kCall: {
      const auto& call = e.As<Call>();
      std::string out = "(";
      out.append(call.func->name);
      for (const auto& arg : call.args) out.append(" ").append(Tree(*arg));
      out.append(")");
      return out;
    }
    case NodeKind::kParen: return Cat("[", Tree(*e.As<ParenExpr>().expr), "]");
  }
  return "?";
}

std::string Shape(std::string_view query) {
  const auto expr = MustParse(query);
  return expr ? Tree(*expr) : "<error>";
}

TEST(PromqlParserTest, ArithmeticPrecedenceAndAssociativity) {
  EXPECT_EQ(Shape("1 + 2 * 3"), "(+ 1 (* 2 3))");
  EXPECT_EQ(Shape("1 * 2 + 3"), "(+ (* 1 2) 3)");
  EXPECT_EQ(Shape("1 - 2 - 3"), "(- (- 1 2) 3)");
  EXPECT_EQ(Shape("8 / 4 / 2"), "(/ (/ 8 4) 2)");
  EXPECT_EQ(Shape("2 ^ 3 ^ 2"), "(^ 2 (^ 3 2))");
  EXPECT_EQ(Shape("a % b ^ c"), "(% a (^ b c))");
  EXPECT_EQ(Shape("x atan2 y * z"), "(* (atan2 x y) z)");
  EXPECT_EQ(Shape("x * y atan2 z"), "(atan2 (* x y) z)");
  EXPECT_EQ(Shape("(1 + 2) * 3"), "(* [(+ 1 2)] 3)");
  EXPECT_EQ(Shape("((1))"), "[[1]]");
}

TEST(PromqlParserTest, UnaryBindsLooserThanPowerAndFoldsIntoNumbers) {
  EXPECT_EQ(Shape("-2 ^ 2"), "(neg (^ 2 2))");  // -4, as in Prometheus
  EXPECT_EQ(Shape("-2 * 3"), "(* -2 3)");
  EXPECT_EQ(Shape("2 ^ -1"), "(^ 2 -1)");
  EXPECT_EQ(Shape("2 * -3 ^ 2"), "(* 2 (neg (^ 3 2)))");
  EXPECT_EQ(Shape("2 ^ -3 * 4"), "(* (^ 2 -3) 4)");
  EXPECT_EQ(Shape("-a ^ b"), "(neg (^ a b))");
  EXPECT_EQ(Shape("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(Shape("a - -b"), "(- a (neg b))");
  EXPECT_EQ(Shape("1 - -1"), "(- 1 -1)");
  EXPECT_EQ(Shape("- - 1"), "1");
  EXPECT_EQ(Shape("+1"), "1");
  EXPECT_EQ(Shape("+a"), "(pos a)");
  EXPECT_EQ(Shape("-(1)"), "(neg [1])");
  EXPECT_EQ(Shape("-x offset 5m"), "(neg x offset 5m)");
  EXPECT_EQ(Shape("-x @ 5"), "(neg x @ 5.000)");
  EXPECT_EQ(Shape("a + b offset 5m"), "(+ a b offset 5m)");
  EXPECT_EQ(Error("-x[5m:]"),
            "1:1: parse error: unary expression only allowed on expressions of type scalar or "
            "instant vector, got \"range vector\"");
  const auto e = MustParse("-2 ^ 2");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, ValueType::kScalar);
  EXPECT_EQ(e->pos.start, 0u);
  EXPECT_EQ(e->pos.end, 6u);
}

TEST(PromqlParserTest, ComparisonAndSetOperatorPrecedence) {
  EXPECT_EQ(Shape("a or b and c"), "(or a (and b c))");
  EXPECT_EQ(Shape("a and b or c"), "(or (and a b) c)");
  EXPECT_EQ(Shape("a and b unless c"), "(unless (and a b) c)");
  EXPECT_EQ(Shape("a unless b and c"), "(and (unless a b) c)");
  EXPECT_EQ(Shape("a + b > c * d"), "(> (+ a b) (* c d))");
  EXPECT_EQ(Shape("a > b == c"), "(== (> a b) c)");
  EXPECT_EQ(Shape("a == bool b or c"), "(or (== bool a b) c)");
  EXPECT_EQ(Shape("a > 1 and b < 2"), "(and (> a 1) (< b 2))");
  EXPECT_EQ(Shape("1 >= bool 2 != bool 3"), "(!= bool (>= bool 1 2) 3)");
}

TEST(PromqlParserTest, NumberLiterals) {
  auto value = [](std::string_view q) {
    const auto e = MustParse(q);
    if (!e || e->kind != NodeKind::kNumberLiteral) return -12345.0;
    return e->As<NumberLiteral>().value;
  };
  EXPECT_EQ(value("42"), 42);
  EXPECT_EQ(value("12.34e6"), 12340000);
  EXPECT_EQ(value("12.34e+6"), 12340000);
  EXPECT_EQ(value("12.34e-6"), 12.34e-6);
  EXPECT_EQ(value(".2"), 0.2);
  EXPECT_EQ(value("2."), 2);
  EXPECT_EQ(value("-0.2e-6"), -0.2e-6);
  EXPECT_EQ(value("0x1F"), 31);
  EXPECT_EQ(value("0X_ff"), 255);
  EXPECT_EQ(value("010"), 8);  // Go integer syntax: a leading 0 is octal
  EXPECT_EQ(value("09"), 9);   // ... unless it cannot be
  EXPECT_EQ(value("1_000"), 1000);
  EXPECT_EQ(value("1_000.000_5"), 1000.0005);
  EXPECT_EQ(value("1e-400"), 0);
  EXPECT_EQ(value("Inf"), INFINITY);
  EXPECT_EQ(value("+inF"), INFINITY);
  EXPECT_EQ(value("-inf"), -INFINITY);
  EXPECT_TRUE(std::isnan(value("NaN")));
  EXPECT_TRUE(std::isnan(value("nan")));
  // Durations stand for their seconds.
  EXPECT_EQ(value("1h"), 3600);
  EXPECT_EQ(value("1h30m"), 5400);
  EXPECT_EQ(value("-5m"), -300);
  EXPECT_EQ(value("1s500ms"), 1.5);
  EXPECT_EQ(Error("0x"), "1:1: parse error: error parsing number \"0x\": invalid syntax");
  EXPECT_EQ(Error("(1e)"), "1:2: parse error: error parsing number \"1e\": invalid syntax");
  EXPECT_EQ(Error("1e400"), "1:1: parse error: error parsing number \"1e400\": value out of range");
  // The lexer's verdicts and quoted text are Prometheus' own.
  EXPECT_EQ(Error("1_"), "1:1: parse error: bad number or duration syntax: \"1_\"");
  EXPECT_EQ(Error("1__0"), "1:1: parse error: bad number or duration syntax: \"1__\"");
  EXPECT_EQ(Error("0x1.5"), "1:1: parse error: bad number or duration syntax: \"0x1.\"");
  EXPECT_EQ(Error("12abc"), "1:1: parse error: bad number or duration syntax: \"12\"");
  EXPECT_EQ(Error("0deadbeef"), "1:1: parse error: bad number or duration syntax: \"0de\"");
  EXPECT_EQ(Error("100..4"), "1:1: parse error: bad number or duration syntax: \"100..\"");
  EXPECT_EQ(Error("1.5h"), "1:1: parse error: not a valid duration string: \"1.5h\"");
  EXPECT_EQ(Canon("1e21"), "1e+21");
  EXPECT_EQ(Canon("-Inf"), "-Inf");
  EXPECT_EQ(Canon("0.1 + 0x10"), "0.1 + 16");
}

TEST(PromqlParserTest, StringLiterals) {
  auto value = [](std::string_view q) {
    const auto e = MustParse(q);
    if (!e || e->kind != NodeKind::kStringLiteral) return std::string("<not a string>");
    return e->As<StringLiteral>().value;
  };
  EXPECT_EQ(value(R"("a\nb\t\"c\"")"), "a\nb\t\"c\"");
  EXPECT_EQ(value(R"('it\'s "x"')"), "it's \"x\"");
  EXPECT_EQ(value(R"(`raw\n"'`)"), "raw\\n\"'");
  EXPECT_EQ(value(R"("\x41\101\u00e9\U0001F600")"), "AA\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(value(R"("a\xc5z")"), "a\xC5z");
  EXPECT_EQ(value("\"caf\xC3\xA9\""), "caf\xC3\xA9");
  EXPECT_EQ(value("`multi\nline`"), "multi\nline");
  EXPECT_EQ(value(R"("")"), "");
  EXPECT_EQ(Canon(R"('it\'s')"), R"("it's")");
  EXPECT_EQ(Canon(R"("a\xc5z\x00\\")"), R"("a\xc5z\x00\\")");
  EXPECT_EQ(Canon("`tab\there`"), R"("tab\there")");
  EXPECT_EQ(Error(R"("abc)"), "1:1: parse error: unterminated quoted string");
  EXPECT_EQ(Error("\"a\nb\""), "1:1: parse error: unterminated quoted string");
  EXPECT_EQ(Error("`abc"), "1:1: parse error: unterminated raw string");
  EXPECT_EQ(Error(R"(x{a="\q"})"), "1:5: parse error: unknown escape sequence U+0071 'q'");
  EXPECT_EQ(Error(R"("\'")"), "1:1: parse error: unknown escape sequence U+0027 '''");
  EXPECT_EQ(Error(R"("\xZ1")"),
            "1:1: parse error: illegal character U+005A 'Z' in escape sequence");
  EXPECT_EQ(Error(R"("\uD800")"),
            "1:1: parse error: escape sequence is an invalid Unicode code point");
  EXPECT_EQ(Error(R"("\400")"),
            "1:1: parse error: escape sequence is an invalid Unicode code point");
  EXPECT_EQ(Error("\"\xff\""), "1:1: parse error: invalid UTF-8 rune");
  EXPECT_EQ(Error(R"("a" + 1)"),
            "1:1: parse error: binary expression must contain only scalar and "
            "instant vector types");
}

TEST(PromqlParserTest, Durations) {
  auto range = [](std::string_view q) -> std::int64_t {
    const auto e = MustParse(q);
    if (!e || e->kind != NodeKind::kMatrixSelector) return -1;
    return e->As<MatrixSelector>().range_ns;
  };
  EXPECT_EQ(range("x[5m]"), 5 * kMinute);
  EXPECT_EQ(range("x[1h30m]"), 90 * kMinute);
  EXPECT_EQ(range("x[1d]"), 24 * kHour);
  EXPECT_EQ(range("x[1w]"), 7 * 24 * kHour);
  EXPECT_EQ(range("x[1y]"), 365 * 24 * kHour);
  EXPECT_EQ(range("x[1y2w3d4h5m6s7ms]"),
            ((((365 + 14 + 3) * 24 + 4) * 60 + 5) * 60 + 6) * kSecond + 7 * kMs);
  EXPECT_EQ(range("x[100ms]"), 100 * kMs);
  EXPECT_EQ(range("x[100]"), 100 * kSecond);  // a number is seconds
  EXPECT_EQ(range("x[1.5]"), 1500 * kMs);
  EXPECT_EQ(range("x[0.0015]"), kMs);  // truncated to milliseconds
  EXPECT_EQ(range("x[0x10]"), 16 * kSecond);
  EXPECT_EQ(range("x[ 5m ]"), 5 * kMinute);
  EXPECT_EQ(Error("x[1.5h]"), "1:3: parse error: not a valid duration string: \"1.5h\"");
  EXPECT_EQ(Error("x[1m1h]"), "1:3: parse error: not a valid duration string: \"1m1h\"");
  EXPECT_EQ(Error("x[5m5m]"), "1:3: parse error: not a valid duration string: \"5m5m\"");
  EXPECT_EQ(Error("x[5x]"), "1:3: parse error: bad number or duration syntax: \"5\"");
  EXPECT_EQ(Error("x[5y1hs]"), "1:3: parse error: not a valid duration string: \"5y1hs\"");
  EXPECT_EQ(Error("x[5 m]"), "1:5: parse error: unexpected character: 'm', expected ':'");
  EXPECT_EQ(
      Error("x[-5m]"),
      "1:3: parse error: unexpected <op:-> in subquery selector, expected number or duration");
  EXPECT_EQ(Error("x[5m"), "1:5: parse error: unexpected end of input in duration expression");
  EXPECT_EQ(Error("x[0]"), "1:3: parse error: duration must be greater than 0");
  EXPECT_EQ(Error("x[0s:1m]"), "1:3: parse error: duration must be greater than 0");
  EXPECT_EQ(Error("x[0.0001]"), "1:3: parse error: duration must be greater than 0");
  EXPECT_EQ(Error("x[9.5e10]"), "1:3: parse error: duration out of range");
  EXPECT_EQ(Error("x offset 9.5e10"), "1:10: parse error: duration out of range");
  EXPECT_EQ(Error("x[200y]"),
            "1:3: parse error: cannot parse \"200y\" as a duration (too large: "
            "146 years at most)");
  EXPECT_EQ(Error("x[]"),
            "1:3: parse error: unexpected \"]\" in subquery selector, expected number or duration");
  EXPECT_EQ(Error("x[5m 1m]"),
            "1:6: parse error: unexpected duration \"1m\" in subquery or range, expected \":\" or "
            "\"]\"");
  EXPECT_EQ(Error("x[5m:1m:1m]"),
            "1:8: parse error: unexpected \":\" in subquery selector, expected \"]\"");
  EXPECT_EQ(Error("x[5m][5m]"), "1:6: parse error: ranges only allowed for vector selectors");
  EXPECT_EQ(Canon("x[100]"), "x[1m40s]");
  EXPECT_EQ(Canon("x[1w]"), "x[7d]");
  EXPECT_EQ(Canon("x[2m1s500ms:30s]"), "x[2m1s500ms:30s]");
}

TEST(PromqlParserTest, Selectors) {
  const auto e =
      MustParse(R"(http_requests{job="api", instance!="0", path=~"/a|/b", code!~"5.."})");
  ASSERT_TRUE(e);
  ASSERT_EQ(e->kind, NodeKind::kVectorSelector);
  const auto& vs = e->As<VectorSelector>();
  EXPECT_EQ(vs.metric_name, "http_requests");
  ASSERT_EQ(vs.selector.matchers.size(), 5u);
  EXPECT_EQ(vs.selector.matchers[0].name, "__name__");
  EXPECT_EQ(vs.selector.matchers[0].value, "http_requests");
  EXPECT_EQ(vs.selector.matchers[3].op, MatchOp::kRegexMatch);
  EXPECT_TRUE(vs.selector.matchers[3].Matches("/a"));
  EXPECT_FALSE(vs.selector.matchers[3].Matches("x/a"));  // anchored
  EXPECT_FALSE(vs.selector.matchers[4].Matches("503"));
  EXPECT_EQ(vs.type, ValueType::kVector);
  EXPECT_EQ(vs.pos.start, 0u);
  EXPECT_EQ(vs.pos.end, static_cast<std::uint32_t>(e->pos.end));
  EXPECT_EQ(ToString(*e), R"(http_requests{code!~"5..",instance!="0",job="api",path=~"/a|/b"})");

  EXPECT_EQ(Canon(R"({"metric.name"})"), R"({__name__="metric.name"})");
  EXPECT_EQ(Canon(R"({"metric.name", "label.name"="v", job='x'})"),
            R"({"label.name"="v",__name__="metric.name",job="x"})");
  EXPECT_EQ(Canon(R"(foo{a="b",})"), R"(foo{a="b"})");
  EXPECT_EQ(Canon("foo{}"), "foo");
  EXPECT_EQ(Canon("foo:bar:baz"), "foo:bar:baz");
  EXPECT_EQ(Canon(":x"), ":x");
  EXPECT_EQ(Canon("foo {a=\"b\" # the label\n , c=\"d\"}"), R"(foo{a="b",c="d"})");
  EXPECT_EQ(Canon(R"({__name__=~"a.*"})"), R"({__name__=~"a.*"})");
  EXPECT_EQ(Canon(R"({__name__="a", __name__="b"})"), R"({__name__="a",__name__="b"})");

  EXPECT_EQ(Error("{}"),
            "1:1: parse error: vector selector must contain at least one non-empty "
            "matcher");
  EXPECT_EQ(Error(R"({a=""})"),
            "1:1: parse error: vector selector must contain at least one "
            "non-empty matcher");
  EXPECT_EQ(Error(R"(x + {a=~".*"})"),
            "1:5: parse error: vector selector must contain at least "
            "one non-empty matcher");
  EXPECT_EQ(Error(R"({a!=""})"), "OK");
  EXPECT_EQ(Error(R"(foo{__name__="bar"})"),
            "1:1: parse error: metric name must not be set twice: \"foo\" or \"bar\"");
  EXPECT_EQ(Error(R"(foo{"bar"})"),
            "1:1: parse error: metric name must not be set twice: \"foo\" or \"bar\"");
  EXPECT_NE(Error(R"({a=~"("})").find("1:2: parse error: invalid regular expression"),
            std::string::npos);
  EXPECT_EQ(Error(R"(x{a="b")"), "1:8: parse error: unexpected end of input inside braces");
  EXPECT_EQ(Error(R"(x{a})"),
            "1:4: parse error: unexpected \"}\" in label matching, expected "
            "label matching operator");
  EXPECT_EQ(Error(R"(x{a=b})"),
            "1:5: parse error: unexpected identifier \"b\" in label matching, "
            "expected string");
  EXPECT_EQ(Error(R"(x{,})"),
            "1:3: parse error: unexpected \",\" in label matching, expected "
            "identifier or \"}\"");
  EXPECT_EQ(Error(R"(x{a="b" c="d"})"),
            "1:9: parse error: unexpected identifier \"c\" in label "
            "matching, expected \",\" or \"}\"");
  EXPECT_EQ(Error(R"(x{a:b="c"})"), "1:4: parse error: unexpected character inside braces: ':'");
  EXPECT_EQ(Error(R"(x{a=~"b"}{c="d"})"), "1:10: parse error: unexpected \"{\"");
  EXPECT_EQ(Error(R"(x{{a="b"}})"), "1:3: parse error: unexpected left brace '{'");
}

TEST(PromqlParserTest, OffsetAndAtModifiers) {
  {
    const auto e = MustParse("x offset 5m @ 100");
    ASSERT_TRUE(e);
    const auto& time = e->As<VectorSelector>().time;
    EXPECT_EQ(time.offset_ns, 5 * kMinute);
    EXPECT_EQ(time.at, AtModifier::kTimestamp);
    EXPECT_EQ(time.at_ns, 100 * kSecond);
    EXPECT_EQ(e->pos.end, 17u);
  }
  EXPECT_EQ(Canon("x offset 5m @ 100"), "x @ 100.000 offset 5m");
  EXPECT_EQ(Canon("x @ 100 offset 5m"), "x @ 100.000 offset 5m");
  EXPECT_EQ(Canon("x offset -5m"), "x offset -5m");
  EXPECT_EQ(Canon("x offset 50"), "x offset 50s");
  EXPECT_EQ(Canon("x offset -50"), "x offset -50s");
  EXPECT_EQ(Canon("x @ 1.234"), "x @ 1.234");
  EXPECT_EQ(Canon("x @ -5"), "x @ -5.000");
  EXPECT_EQ(Canon("x @ +5"), "x @ 5.000");
  EXPECT_EQ(Canon("x @ 1m40s"), "x @ 100.000");
  EXPECT_EQ(Canon("x @ start()"), "x @ start()");
  EXPECT_EQ(Canon("x @ END ( )"), "x @ end()");
  EXPECT_EQ(Canon("x[5m] offset 1m @ start()"), "x[5m] @ start() offset 1m");
  EXPECT_EQ(Canon("rate(x[5m] @ 3000)"), "rate(x[5m] @ 3000.000)");
  {
    const auto e = MustParse("x[5m] offset 1m");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->As<MatrixSelector>().vector->time.offset_ns, kMinute);
  }
  EXPECT_EQ(Error("x offset 5m offset 1m"),
            "1:1: parse error: offset may not be set multiple times");
  EXPECT_EQ(Error("x @ 1 @ 2"), "1:1: parse error: @ <timestamp> may not be set multiple times");
  EXPECT_EQ(Error("x @ start() @ 2"),
            "1:1: parse error: @ <timestamp> may not be set multiple times");
  EXPECT_EQ(Error("x offset 5m [5m]"),
            "1:13: parse error: no offset modifiers allowed before range");
  EXPECT_EQ(Error("x @ 5 [5m]"), "1:7: parse error: no @ modifiers allowed before range");
  EXPECT_EQ(Error("sum(x) offset 5m"),
            "1:1: parse error: offset modifier must be preceded by an instant vector selector or "
            "range vector selector or a subquery");
  EXPECT_EQ(Error("(x) @ 5"),
            "1:1: parse error: @ modifier must be preceded by an instant vector selector or range "
            "vector selector or a subquery");
  EXPECT_EQ(Error("x @ Inf"), "1:1: parse error: timestamp out of bounds for @ modifier: +Inf");
  EXPECT_EQ(Error("x @ -Inf"), "1:1: parse error: timestamp out of bounds for @ modifier: -Inf");
  EXPECT_EQ(Error("x @ NaN"), "1:1: parse error: timestamp out of bounds for @ modifier: NaN");
  EXPECT_EQ(Error("x @ 1e300"), Cat("1:1: parse error: timestamp out of bounds for @ modifier: ",
                                    std::to_string(1e300)));
  EXPECT_EQ(Error("x offset"),
            "1:9: parse error: unexpected end of input in offset, expected number or duration");
  EXPECT_EQ(Error("x offset +5m"),
            "1:10: parse error: unexpected <op:+> in offset, expected number or duration");
  EXPECT_EQ(Error("x @ foo"),
            "1:5: parse error: unexpected identifier \"foo\" in @, expected timestamp");
  EXPECT_EQ(Error("x @ start"),
            "1:10: parse error: unexpected end of input in @, expected timestamp");
}

TEST(PromqlParserTest, Subqueries) {
  const auto e = MustParse("rate(x[5m])[30m:1m] offset 1h @ end()");
  ASSERT_TRUE(e);
  ASSERT_EQ(e->kind, NodeKind::kSubquery);
  const auto& sub = e->As<Subquery>();
  EXPECT_EQ(sub.range_ns, 30 * kMinute);
  EXPECT_EQ(sub.step_ns, kMinute);
  EXPECT_EQ(sub.time.offset_ns, kHour);
  EXPECT_EQ(sub.time.at, AtModifier::kEnd);
  EXPECT_EQ(sub.type, ValueType::kMatrix);
  EXPECT_EQ(sub.expr->kind, NodeKind::kCall);
  EXPECT_EQ(ToString(*e), "rate(x[5m])[30m:1m] @ end() offset 1h");
  EXPECT_EQ(Canon("x[5m:]"), "x[5m:]");
  EXPECT_EQ(Canon("x offset 1m [10m:1m]"), "x offset 1m[10m:1m]");
  EXPECT_EQ(Canon("min_over_time(rate(x[1m])[5m:1s] offset 1m)[10m:]"),
            "min_over_time(rate(x[1m])[5m:1s] offset 1m)[10m:]");
  EXPECT_EQ(Canon("x[30:10]"), "x[30s:10s]");
  EXPECT_EQ(Canon("(a + b)[1h:5m]"), "(a + b)[1h:5m]");
  EXPECT_EQ(Error("x[5m][10m:1m]"),
            "1:1: parse error: subquery is only allowed on instant vector, got range vector "
            "instead");
  EXPECT_EQ(Error("\"a\"[1m:]"),
            "1:1: parse error: subquery is only allowed on instant vector, got string instead");
}

TEST(PromqlParserTest, VectorMatching) {
  {
    const auto e = MustParse("a * on(x, y) group_left(z) b");
    ASSERT_TRUE(e);
    const auto& bin = e->As<BinaryExpr>();
    EXPECT_TRUE(bin.matching.on);
    EXPECT_EQ(bin.matching.matching_labels, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(bin.matching.card, Cardinality::kManyToOne);
    EXPECT_EQ(bin.matching.include, (std::vector<std::string>{"z"}));
    EXPECT_EQ(ToString(*e), "a * on (x, y) group_left (z) b");
  }
  {
    const auto e = MustParse("a / ignoring(x) group_right b");
    ASSERT_TRUE(e);
    const auto& bin = e->As<BinaryExpr>();
    EXPECT_FALSE(bin.matching.on);
    EXPECT_EQ(bin.matching.card, Cardinality::kOneToMany);
    EXPECT_TRUE(bin.matching.include.empty());
    EXPECT_EQ(ToString(*e), "a / ignoring (x) group_right () b");
  }
  {
    const auto e = MustParse("a and b");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->As<BinaryExpr>().matching.card, Cardinality::kManyToMany);
  }
  {
    const auto e = MustParse("a > bool 1");
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->As<BinaryExpr>().return_bool);
    EXPECT_EQ(e->type, ValueType::kVector);
  }
  {
    const auto e = MustParse("1 > bool 2");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->type, ValueType::kScalar);
  }
  EXPECT_EQ(Canon("a + on() b"), "a + on () b");
  EXPECT_EQ(Canon("a + ignoring() b"), "a + b");
  EXPECT_EQ(Canon("a - on(x) group_left b"), "a - on (x) group_left () b");
  EXPECT_EQ(Canon("a > bool on(x) b"), "a > bool on (x) b");
  EXPECT_EQ(Canon("a or on(x) b"), "a or on (x) b");
  EXPECT_EQ(Canon("a * on(\"x.y\") group_left(\"z\") b"), "a * on (\"x.y\") group_left (z) b");
  EXPECT_EQ(Canon("a * on(x,) b"), "a * on (x) b");
  EXPECT_EQ(Canon("1 + on() a"), "1 + a");  // matching only applies between two vectors
  EXPECT_EQ(Error("a * group_left b"), "1:5: parse error: unexpected <group_left>");
  EXPECT_EQ(Error("a > on(x) bool b"), "1:11: parse error: unexpected <bool>");
  EXPECT_EQ(Error("a + on x b"),
            "1:8: parse error: unexpected identifier \"x\" in grouping opts, expected \"(\"");
  EXPECT_EQ(Error("a + on(x y) b"),
            "1:10: parse error: unexpected identifier \"y\" in grouping opts, expected \",\" or "
            "\")\"");
  EXPECT_EQ(Error("a + on(x:y) b"),
            "1:8: parse error: unexpected metric identifier \"x:y\" in grouping opts, expected "
            "label");
  EXPECT_EQ(Error("a and on(x) group_left b"),
            "1:1: parse error: no grouping allowed for \"and\" operation");
  EXPECT_EQ(Error("a * on(x) group_left(x) b"),
            "1:3: parse error: label \"x\" must not occur in ON and GROUP clause at once");
  EXPECT_EQ(Error("1 + on(x) a"),
            "1:1: parse error: vector matching only allowed between instant vectors");
  EXPECT_EQ(Error("1 and a"),
            "1:1: parse error: set operator \"and\" not allowed in binary scalar expression");
  EXPECT_EQ(Error("a + bool b"),
            "1:3: parse error: bool modifier can only be used on comparison operators");
  EXPECT_EQ(Error("1 > 2"), "1:3: parse error: comparisons between scalars must use BOOL modifier");
  EXPECT_EQ(
      Error("a[5m] + 1"),
      "1:1: parse error: binary expression must contain only scalar and instant vector types");
}

TEST(PromqlParserTest, Aggregations) {
  {
    const auto e = MustParse("sum by (a, b) (x)");
    ASSERT_TRUE(e);
    const auto& agg = e->As<AggregateExpr>();
    EXPECT_EQ(agg.op, AggregateOp::kSum);
    EXPECT_FALSE(agg.without);
    EXPECT_EQ(agg.grouping, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(agg.param, nullptr);
    EXPECT_EQ(agg.type, ValueType::kVector);
  }
  {
    const auto e = MustParse("topk without (a) (5, x)");
    ASSERT_TRUE(e);
    const auto& agg = e->As<AggregateExpr>();
    EXPECT_EQ(agg.op, AggregateOp::kTopk);
    EXPECT_TRUE(agg.without);
    ASSERT_NE(agg.param, nullptr);
    EXPECT_EQ(agg.param->As<NumberLiteral>().value, 5);
  }
  EXPECT_EQ(Canon("sum(x) by (a)"), "sum by (a) (x)");
  EXPECT_EQ(Canon("sum by (a) (x)"), "sum by (a) (x)");
  EXPECT_EQ(Canon("sum without () (x)"), "sum without () (x)");
  EXPECT_EQ(Canon("sum by () (x)"), "sum(x)");
  EXPECT_EQ(Canon("sum(x) by (a,)"), "sum by (a) (x)");
  EXPECT_EQ(Canon("avg(x)"), "avg(x)");
  EXPECT_EQ(Canon("count(x)"), "count(x)");
  EXPECT_EQ(Canon("min(x)"), "min(x)");
  EXPECT_EQ(Canon("max(x)"), "max(x)");
  EXPECT_EQ(Canon("group(x)"), "group(x)");
  EXPECT_EQ(Canon("stddev(x)"), "stddev(x)");
  EXPECT_EQ(Canon("stdvar(x)"), "stdvar(x)");
  EXPECT_EQ(Canon("bottomk by (a) (3, x)"), "bottomk by (a) (3, x)");
  EXPECT_EQ(Canon("quantile(0.9, x)"), "quantile(0.9, x)");
  EXPECT_EQ(Canon("count_values without (i) ('v', x)"), "count_values without (i) (\"v\", x)");
  EXPECT_EQ(Canon("limitk(2, x)"), "limitk(2, x)");
  EXPECT_EQ(Canon("limit_ratio(-0.5, x)"), "limit_ratio(-0.5, x)");
  EXPECT_EQ(Canon("quantile without(point)(0.8, x)"), "quantile without (point) (0.8, x)");
  EXPECT_EQ(Canon("topk(scalar(y), x)"), "topk(scalar(y), x)");
  EXPECT_EQ(Canon("sum by (on, by, sum, offset, bool, start, group_left) (x)"),
            "sum by (on, by, sum, offset, bool, start, group_left) (x)");
  EXPECT_EQ(Canon("sum by (\"foo.bar\", 'plain') (x)"), "sum by (\"foo.bar\", plain) (x)");
  EXPECT_EQ(Canon("sum(sum by (a) (x))"), "sum(sum by (a) (x))");
  // An aggregator keyword not followed by its arguments is a metric name.
  EXPECT_EQ(Shape("sum"), "sum");
  EXPECT_EQ(Shape("sum + count"), "(+ sum count)");
  EXPECT_EQ(Shape("topk{a=\"b\"}"), "topk{a=\"b\"}");

  EXPECT_EQ(Error("sum()"), "1:1: parse error: no arguments for aggregate expression provided");
  EXPECT_EQ(Error("topk(x)"),
            "1:1: parse error: wrong number of arguments for aggregate "
            "expression provided, expected 2, got 1");
  EXPECT_EQ(Error("sum(1, x)"),
            "1:1: parse error: wrong number of arguments for aggregate "
            "expression provided, expected 1, got 2");
  EXPECT_EQ(Error("sum(x[5m])"),
            "1:5: parse error: expected type instant vector in aggregation expression, got range "
            "vector");
  EXPECT_EQ(Error("sum(1)"),
            "1:5: parse error: expected type instant vector in aggregation expression, got scalar");
  EXPECT_EQ(Error("topk('a', x)"),
            "1:6: parse error: expected type scalar in aggregation parameter, got string");
  EXPECT_EQ(Error("count_values(5, x)"),
            "1:14: parse error: expected type string in aggregation parameter, got scalar");
  EXPECT_EQ(Error("sum by (a) (x) by (b)"), "1:16: parse error: unexpected <by>");
  EXPECT_EQ(Error("sum by a (x)"),
            "1:8: parse error: unexpected identifier \"a\" in grouping opts, expected \"(\"");
  EXPECT_EQ(Error("sum by (a) x"), "1:12: parse error: unexpected identifier \"x\" in aggregation");
  EXPECT_EQ(Error("sum by (nan) (x)"),
            "1:9: parse error: unexpected number \"nan\" in grouping opts, expected label");
  EXPECT_EQ(Error("sum(x,)"),
            "1:6: parse error: trailing commas not allowed in function call args");
}

TEST(PromqlParserTest, FunctionCallsAndTypes) {
  {
    const auto e = MustParse("label_replace(up, \"dst\", \"$1\", \"src\", \"(.*)\")");
    ASSERT_TRUE(e);
    const auto& call = e->As<Call>();
    EXPECT_EQ(call.func->name, "label_replace");
    EXPECT_EQ(call.args.size(), 5u);
    EXPECT_EQ(call.type, ValueType::kVector);
  }
  auto type = [](std::string_view q) {
    const auto e = MustParse(q);
    return e ? e->type : ValueType::kNone;
  };
  EXPECT_EQ(type("time()"), ValueType::kScalar);
  EXPECT_EQ(type("scalar(x)"), ValueType::kScalar);
  EXPECT_EQ(type("vector(1)"), ValueType::kVector);
  EXPECT_EQ(type("pi() * 2"), ValueType::kScalar);
  EXPECT_EQ(type("rate(x[5m])[10m:]"), ValueType::kMatrix);
  EXPECT_EQ(type("\"s\""), ValueType::kString);
  EXPECT_EQ(type("-(1)"), ValueType::kScalar);
  EXPECT_EQ(type("1 + x"), ValueType::kVector);
  EXPECT_EQ(Canon("histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))"),
            "histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))");
  EXPECT_EQ(Canon("clamp(x, 0, 1)"), "clamp(x, 0, 1)");
  EXPECT_EQ(Canon("round(x)"), "round(x)");
  EXPECT_EQ(Canon("round(x, 0.5)"), "round(x, 0.5)");
  EXPECT_EQ(Canon("label_join(x, 'd', ',', 'a', 'b', 'c')"),
            "label_join(x, \"d\", \",\", \"a\", \"b\", \"c\")");
  EXPECT_EQ(Canon("sort_by_label(x)"), "sort_by_label(x)");
  EXPECT_EQ(Canon("sort_by_label_desc(x, 'a', 'b')"), "sort_by_label_desc(x, \"a\", \"b\")");
  EXPECT_EQ(Canon("predict_linear(x[5m], 3600)"), "predict_linear(x[5m], 3600)");
  EXPECT_EQ(Canon("double_exponential_smoothing(x[5m], 0.5, 0.5)"),
            "double_exponential_smoothing(x[5m], 0.5, 0.5)");
  EXPECT_EQ(Canon("quantile_over_time(0.5, x[5m])"), "quantile_over_time(0.5, x[5m])");
  EXPECT_EQ(Canon("histogram_fraction(0, 4, x)"), "histogram_fraction(0, 4, x)");
  EXPECT_EQ(Canon("absent_over_time(nonexistent{job=\"x\"}[1h])"),
            "absent_over_time(nonexistent{job=\"x\"}[1h])");
  EXPECT_EQ(Canon("info(x, {k=~\".+\"})"), "info(x, {k=~\".+\"})");
  EXPECT_EQ(Canon("info(x, {k=~\".*\"})"), "info(x, {k=~\".*\"})");  // info's label selector
  EXPECT_EQ(Canon("start() + end() - range() / step()"), "start() + end() - range() / step()");
  EXPECT_EQ(Canon("min_of(3, max_of(1, 2))"), "min_of(3, max_of(1, 2))");
  EXPECT_EQ(Canon("day_of_week()"), "day_of_week()");
  EXPECT_EQ(Canon("rate ( x [5m] )"), "rate(x[5m])");

  EXPECT_EQ(Error("rate(x)"),
            "1:6: parse error: expected type range vector in call to function "
            "\"rate\", got instant vector");
  EXPECT_EQ(Error("abs(x[5m])"),
            "1:5: parse error: expected type instant vector in call to "
            "function \"abs\", got range vector");
  EXPECT_EQ(Error("vector(x)"),
            "1:8: parse error: expected type scalar in call to function "
            "\"vector\", got instant vector");
  EXPECT_EQ(Error("label_replace(x, 1, 'a', 'b', 'c')"),
            "1:18: parse error: expected type string in call to function \"label_replace\", got "
            "scalar");
  EXPECT_EQ(Error("label_join(x, 'a', 'b', 'c', 1)"),
            "1:30: parse error: expected type string in call to function \"label_join\", got "
            "scalar");
  EXPECT_EQ(Error("time(1)"),
            "1:1: parse error: expected 0 argument(s) in call to \"time\", got 1");
  EXPECT_EQ(Error("rate(x[1m], y[1m])"),
            "1:1: parse error: expected 1 argument(s) in call to \"rate\", got 2");
  EXPECT_EQ(Error("label_join(x, 'a')"),
            "1:1: parse error: expected at least 3 argument(s) in call to \"label_join\", got 2");
  EXPECT_EQ(Error("round(x, 1, 2)"),
            "1:1: parse error: expected at most 2 argument(s) in call to \"round\", got 3");
  EXPECT_EQ(Error("info(x, y)"),
            "1:9: parse error: expected label selectors only, got vector selector instead");
  EXPECT_EQ(Error("foo(x)"), "1:1: parse error: unknown function with name \"foo\"");
  EXPECT_EQ(Error("RATE(x[5m])"), "1:1: parse error: unknown function with name \"RATE\"");
  EXPECT_EQ(Error("holt_winters(x[5m], 0.5, 0.5)"),
            "1:1: parse error: unknown function with name \"holt_winters\"");
  EXPECT_EQ(Error("foo:bar(x)"), "1:8: parse error: unexpected \"(\"");
  EXPECT_EQ(Error("rate(x[5m],)"),
            "1:11: parse error: trailing commas not allowed in function call args");
  EXPECT_EQ(Error("rate(x[5m] y)"),
            "1:12: parse error: unexpected identifier \"y\", expected \",\" or \")\"");
  // The first problem in Prometheus' order: the argument count before the arguments.
  EXPECT_EQ(Error("rate(x, rate(y))"),
            "1:1: parse error: expected 1 argument(s) in call to \"rate\", got 2");
}

TEST(PromqlParserTest, ExperimentalFunctionsCanBeTurnedOff) {
  ParseOptions strict;
  strict.experimental_functions = false;
  EXPECT_EQ(Error("sort_by_label(x, 'a')", strict),
            "1:1: parse error: function \"sort_by_label\" is not enabled");
  EXPECT_EQ(Error("limitk(1, x)", strict),
            "1:1: parse error: limitk() is experimental and not enabled");
  EXPECT_EQ(Error("rate(x[5m])", strict), "OK");
  EXPECT_EQ(Error("limitk(1, x)"), "OK");
}

TEST(PromqlParserTest, KeywordsAreCaseInsensitiveNamesAreNot) {
  EXPECT_EQ(Canon("SUM BY (group) (http_requests{job=\"api-server\"})"),
            "sum by (group) (http_requests{job=\"api-server\"})");
  EXPECT_EQ(Canon("SUM(x) BY (Job)"), "sum by (Job) (x)");
  EXPECT_EQ(Canon("Count_Values WITHOUT (a) ('v', x)"), "count_values without (a) (\"v\", x)");
  EXPECT_EQ(Canon("x AND y OR z UNLESS w"), "x and y or z unless w");
  EXPECT_EQ(Canon("x Atan2 y"), "x atan2 y");
  EXPECT_EQ(Canon("x OFFSET 5m"), "x offset 5m");
  EXPECT_EQ(Canon("x > BOOL 1"), "x > bool 1");
  EXPECT_EQ(Canon("x * ON(a) GROUP_LEFT(b) y"), "x * on (a) group_left (b) y");
  EXPECT_EQ(Canon("x / IGNORING(a) Group_Right y"), "x / ignoring (a) group_right () y");
  EXPECT_EQ(Canon("x @ START()"), "x @ start()");
  EXPECT_EQ(Canon("INF + nAn"), "Inf + NaN");
  // Metric and label names keep their case.
  EXPECT_EQ(Canon("Foo{Bar=\"Baz\"}"), "Foo{Bar=\"Baz\"}");
  EXPECT_EQ(Canon("SUM"), "SUM");
  EXPECT_EQ(Canon("by + Offset + WITHOUT"), "by + Offset + WITHOUT");
  EXPECT_EQ(Canon("rate"), "rate");
}

TEST(PromqlParserTest, CommentsAndWhitespace) {
  EXPECT_EQ(Canon("sum(x) # the total\n + 1"), "sum(x) + 1");
  EXPECT_EQ(Canon("# leading comment\nx"), "x");
  EXPECT_EQ(Canon("\tsum\n(\r\nx\n)\n"), "sum(x)");
  EXPECT_EQ(Error(""), "1:1: parse error: no expression found in input");
  EXPECT_EQ(Error("   # only a comment"), "1:1: parse error: no expression found in input");
}

TEST(PromqlParserTest, SyntaxErrorsWithPositions) {
  EXPECT_EQ(Error("1 +"), "1:4: parse error: unexpected end of input");
  EXPECT_EQ(Error("(1"), "1:3: parse error: unclosed left parenthesis");
  EXPECT_EQ(Error("sum(x"), "1:6: parse error: unclosed left parenthesis");
  EXPECT_EQ(Error("1)"), "1:2: parse error: unexpected right parenthesis ')'");
  EXPECT_EQ(Error("x]"), "1:2: parse error: unexpected right bracket ']'");
  EXPECT_EQ(Error("x $ y"), "1:3: parse error: unexpected character: '$'");
  EXPECT_EQ(Error("x = y"), "1:3: parse error: unexpected \"=\"");
  EXPECT_EQ(Error("x =~ y"), "1:3: parse error: unexpected character after '=': '~'");
  EXPECT_EQ(Error("x ! y"), "1:3: parse error: unexpected character after '!': ' '");
  EXPECT_EQ(Error("x y"), "1:3: parse error: unexpected identifier \"y\"");
  EXPECT_EQ(Error("(1 2)"), "1:4: parse error: unexpected number \"2\", expected \")\"");
  EXPECT_EQ(Error("x + on"),
            "1:7: parse error: unexpected end of input in grouping opts, "
            "expected \"(\"");
  EXPECT_EQ(Error("bool"), "1:1: parse error: unexpected <bool>");
  EXPECT_EQ(Error("x + * y"), "1:5: parse error: unexpected <op:*>");
  EXPECT_EQ(Error("sum(x) by"),
            "1:10: parse error: unexpected end of input in grouping opts, expected \"(\"");
  EXPECT_EQ(Error("1 + 12345678901234 x"), "1:20: parse error: unexpected identifier \"x\"");
  EXPECT_EQ(Error("x + 12345678901234"), "OK");
  EXPECT_EQ(Error("x 12345678901234"), "1:3: parse error: unexpected number \"1234567890\"...");
  EXPECT_EQ(Error("x \xC3\xA9"), "1:3: parse error: unexpected character: '\xC3\xA9'");
  // Lines and columns count from 1, columns in bytes.
  EXPECT_EQ(Error("sum(\n  rate(x)\n)"),
            "2:8: parse error: expected type range vector in call to function \"rate\", got "
            "instant vector");
  EXPECT_EQ(Error("x +\n\n   \"s\""),
            "3:4: parse error: binary expression must contain only scalar and instant vector "
            "types");
}

TEST(PromqlParserTest, LimitsStopHostileInputWithoutCrashing) {
  auto repeat = [](std::string_view s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out.append(s);
    return out;
  };
  const std::string too_deep = "expression nested more than 512 levels deep";
  auto fails_deep = [&](const std::string& q) {
    const std::string e = Error(q);
    EXPECT_NE(e.find(too_deep), std::string::npos) << e.substr(0, 200);
  };
  fails_deep(Cat(repeat("(", 60000), "1", repeat(")", 60000)));
  fails_deep(Cat(repeat("-", 120000), "x"));
  fails_deep(Cat("1", repeat("^1", 60000)));
  fails_deep(Cat(repeat("1+", 60000), "1"));
  fails_deep(Cat(repeat("sum(", 20000), "x", repeat(")", 20000)));
  fails_deep(Cat(repeat("abs(", 20000), "x", repeat(")", 20000)));
  fails_deep(Cat("x", repeat("[1m:]", 20000)));
  fails_deep(Cat(repeat("x or ", 20000), "x"));
  // Just inside the limits.
  EXPECT_EQ(Error(Cat(repeat("(", 200), "1", repeat(")", 200))), "OK");
  EXPECT_EQ(Error(Cat(repeat("1+", 500), "1")), "OK");
  EXPECT_EQ(Error(Cat(repeat("abs(", 250), "x", repeat(")", 250))), "OK");
  const std::string big(kMaxQueryBytes + 1, ' ');
  EXPECT_EQ(Error(big), "query of 131073 bytes exceeds the limit of 131072 bytes");
}

// Everything that walks a tree recurses (parser, type checks, printer, destructor), bounded by
// kMaxDepth. The deepest inputs, accepted or just rejected, need about 200 KiB of stack in an
// optimized build; they must fit well inside 1 MiB. Sanitizers and unoptimized builds inflate
// stack frames several times over, so they get a thread's usual 8 MiB.
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
constexpr std::size_t kDeepParseStackBytes = 8 << 20;
#else
constexpr std::size_t kDeepParseStackBytes = 1 << 20;
#endif

TEST(PromqlParserTest, DeepestExpressionsFitInASmallStack) {
  struct Job {
    std::vector<std::string> queries;
    int accepted = 0;
    int rejected = 0;
  };
  Job job;
  for (const auto& [open, leaf, close] : std::vector<std::array<std::string, 3>>{
           {"(", "1", ")"},
           {"abs(", "x", ")"},
           {"sum(", "x", ")"},
           {"sum by (a) (-", "x", ")"},
           {"1 + (", "1", ")"},
           {"topk(1, ", "x", ")"},
           {"-", "x", ""},
           {"2 ^ ", "2", ""},
           {"(", "x", ")[1m:]"},
       }) {
    for (int n : {200, 255, 256, 300, 340, 400, 500, 510, 511, 512, 600}) {
      std::string q;
      for (int i = 0; i < n; ++i) q.append(open);
      q.append(leaf);
      for (int i = 0; i < n; ++i) q.append(close);
      job.queries.push_back(std::move(q));
    }
  }
  auto run = [](void* arg) -> void* {
    auto* j = static_cast<Job*>(arg);
    for (const std::string& q : j->queries) {
      std::unique_ptr<Expr> expr;
      if (Parse(q, &expr).ok()) {
        ++j->accepted;
        std::unique_ptr<Expr> again;
        if (!Parse(ToString(*expr), &again).ok()) --j->accepted;
      } else {
        ++j->rejected;
      }
    }
    return nullptr;
  };
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, kDeepParseStackBytes), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, run, &job), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  EXPECT_GT(job.accepted, 20);
  EXPECT_GT(job.rejected, 20);
  EXPECT_EQ(job.accepted + job.rejected, static_cast<int>(job.queries.size()));
}

TEST(PromqlParserTest, FunctionTable) {
  const auto functions = Functions();
  EXPECT_TRUE(std::is_sorted(functions.begin(), functions.end(),
                             [](const Function& a, const Function& b) { return a.name < b.name; }));
  EXPECT_GT(functions.size(), 80u);
  for (const Function& f : functions) {
    EXPECT_EQ(FindFunction(f.name), &f);
    EXPECT_GE(f.num_args, 0);
    EXPECT_LE(f.num_args, 5);
  }
  const Function* rate = FindFunction("rate");
  ASSERT_NE(rate, nullptr);
  ASSERT_EQ(rate->args().size(), 1u);
  EXPECT_EQ(rate->args()[0], ValueType::kMatrix);
  EXPECT_EQ(FindFunction("Rate"), nullptr);
  EXPECT_EQ(FindFunction("holt_winters"), nullptr);  // renamed in Prometheus 3
  EXPECT_EQ(ValueTypeName(ValueType::kMatrix), "range vector");
}

TEST(PromqlParserTest, RoundTrips) {
  const char* const kQueries[] = {
      ("sum by (job) (rate(http_requests_total{job=~\"api|web\"}[5m] offset 1m)) > bool on (job) "
       "group_left (team) max by (job, team) (owner)"),
      "-x ^ 2 * -3 - -(4)",
      "(a + b) / (c - d) % 3 atan2 e",
      "histogram_quantile(0.99, sum without (instance) (rate(x_bucket[1h:5m] @ end())))",
      "topk(3, sum by (a) (x)) unless bottomk(1, y)",
      "count_values(\"value\", x) or vector(time())",
      "x{a=\"\\\"quoted\\\"\",b=~'\\\\d+'} offset -1h30m",
      "label_replace(x, \"dst\", \"$1\", \"src\", \"(.*)\")",
      "{\"utf8.metric\", \"label with space\"=\"v\"}",
      "absent(nonexistent{job=\"myjob\",instance=~\".*\"})",
      "1e-07 + 1e+21 + -0 + NaN + -Inf + Inf",
      "foo @ 1.001 + rate(bar[5m] @ -5.5)",
      "sum(x)[5m:] offset 5m",
      "by + on(x) offset",
  };
  for (const char* q : kQueries) {
    const auto e = MustParse(q);
    ASSERT_TRUE(e) << q;
    const std::string once = ToString(*e);
    const auto again = MustParse(once);
    ASSERT_TRUE(again) << once;
    EXPECT_EQ(ToString(*again), once) << q;
    EXPECT_EQ(Tree(*again), Tree(*e)) << q;
  }
}

// --- Prometheus' test scripts -------------------------------------------------------------------

std::filesystem::path ScriptDir() {
  if (const char* env = std::getenv("INGOT_PROMQL_TESTS"); env != nullptr && *env != '\0') {
    return env;
  }
  // This file is tests/query/promql_parser_test.cc; the scripts are beside the repository.
  return (std::filesystem::path(__FILE__).parent_path() / "../../../shared/promql-tests")
      .lexically_normal();
}

struct EvalCase {
  std::string where;  // file:line
  std::string expr;
  bool may_fail = false;          // eval_fail or `expect fail`
  bool native_histogram = false;  // `{{` in the expression
  bool native_results = false;    // `{{` in the expected results
};

bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// The text after the first `n` whitespace-separated words of `line`.
std::string_view AfterWords(std::string_view line, int n) {
  std::size_t i = 0;
  for (int w = 0; w < n; ++w) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  }
  return TrimLeft(line.substr(std::min(i, line.size())));
}

std::vector<std::string_view> Words(std::string_view line, int n) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (static_cast<int>(words.size()) < n && i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

std::vector<EvalCase> ReadScript(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  std::vector<EvalCase> cases;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = TrimLeft(lines[i]);
    if (!StartsWith(line, "eval")) continue;
    const auto words = Words(line, 2);
    if (words.size() < 2) continue;
    EvalCase c;
    c.where = Cat(path.filename().string(), ":", std::to_string(i + 1));
    c.may_fail = words[0] == "eval_fail";
    if (words[1] == "instant") {
      c.expr = std::string(AfterWords(line, 4));  // eval instant at <time>
    } else if (words[1] == "range") {
      c.expr = std::string(AfterWords(line, 8));  // eval range from <t> to <t> step <s>
    } else {
      ADD_FAILURE() << c.where << ": unknown eval line: " << line;
      continue;
    }
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      const std::string& next = lines[j];
      if (next.empty() || (next[0] != ' ' && next[0] != '\t')) break;
      if (StartsWith(TrimLeft(next), "expect fail")) c.may_fail = true;
      if (next.find("{{") != std::string::npos) c.native_results = true;
    }
    c.native_histogram = c.expr.find("{{") != std::string::npos;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<EvalCase> ReadCorpus() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(ScriptDir(), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().extension() == ".test") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::vector<EvalCase> cases;
  for (const auto& f : files) {
    auto more = ReadScript(f);
    cases.insert(cases.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  }
  return cases;
}

TEST(PromqlCorpusTest, EveryScriptExpressionParsesAndRoundTrips) {
  const auto cases = ReadCorpus();
  if (cases.empty()) {
    GTEST_SKIP() << "no .test scripts in " << ScriptDir()
                 << " (set INGOT_PROMQL_TESTS or clone beside ../shared)";
  }
  int parsed = 0;
  int may_fail = 0;
  int may_fail_rejected = 0;
  int skipped = 0;
  int native_results = 0;
  for (const EvalCase& c : cases) {
    if (c.native_histogram) {
      ++skipped;
      continue;
    }
    if (c.may_fail) ++may_fail;
    std::unique_ptr<Expr> expr;
    const Status st = Parse(c.expr, &expr);
    if (!st.ok()) {
      EXPECT_TRUE(c.may_fail) << c.where << ": " << c.expr << "\n  " << st.ToString();
      if (c.may_fail) ++may_fail_rejected;
      continue;
    }
    ++parsed;
    if (c.native_results) ++native_results;
    const std::string once = ToString(*expr);
    std::unique_ptr<Expr> again;
    const Status st2 = Parse(once, &again);
    ASSERT_TRUE(st2.ok()) << c.where << ": " << c.expr << "\n  printed: " << once << "\n  "
                          << st2.ToString();
    EXPECT_EQ(ToString(*again), once) << c.where << ": " << c.expr;
    EXPECT_EQ(Tree(*again), Tree(*expr)) << c.where << ": " << c.expr;
  }
  // For information only: speed goals belong in benchmarks.
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    for (const EvalCase& c : cases) {
      std::unique_ptr<Expr> expr;
      (void)Parse(c.expr, &expr);
    }
  }
  const double ns = static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  std::printf(
      "[ corpus   ] %zu eval cases in %s: %d parsed (%d of them with native-histogram "
      "results), %d expected to fail (%d of them rejected by the parser), %d skipped (native "
      "histogram syntax in the expression); %.2f us per parse\n",
      cases.size(), ScriptDir().string().c_str(), parsed, native_results, may_fail,
      may_fail_rejected, skipped, ns / 1000.0 / kRounds / static_cast<double>(cases.size()));
  EXPECT_GT(parsed, 1000);
}

// Every prefix of every script expression, and random splices of them: the parser answers OK
// or InvalidArgument, never crashes, and what it accepts prints back to itself.
TEST(PromqlCorpusTest, TruncatedAndSplicedExpressionsNeverCrash) {
  const auto cases = ReadCorpus();
  if (cases.empty()) GTEST_SKIP() << "no .test scripts in " << ScriptDir();
  std::mt19937 rng(20240601);
  int accepted = 0;
  auto check = [&](const std::string& q) {
    std::unique_ptr<Expr> expr;
    const Status st = Parse(q, &expr);
    if (!st.ok()) {
      ASSERT_TRUE(st.IsInvalidArgument()) << q;
      ASSERT_NE(st.message().find("parse error"), std::string_view::npos) << st.message();
      return;
    }
    ++accepted;
    const std::string once = ToString(*expr);
    std::unique_ptr<Expr> again;
    ASSERT_TRUE(Parse(once, &again).ok()) << q << " printed as " << once;
    ASSERT_EQ(ToString(*again), once) << q;
  };
  for (const EvalCase& c : cases) {
    for (std::size_t n = 0; n < c.expr.size(); ++n) check(c.expr.substr(0, n));
  }
  std::uniform_int_distribution<std::size_t> pick(0, cases.size() - 1);
  for (int i = 0; i < 20000; ++i) {
    const std::string& a = cases[pick(rng)].expr;
    const std::string& b = cases[pick(rng)].expr;
    const std::size_t cut_a = std::uniform_int_distribution<std::size_t>(0, a.size())(rng);
    const std::size_t cut_b = std::uniform_int_distribution<std::size_t>(0, b.size())(rng);
    check(Cat(a.substr(0, cut_a), b.substr(cut_b)));
  }
  EXPECT_GT(accepted, 1000);
}

}  // namespace
}  // namespace ingot::promql
