// Parsing and formatting: numbers, times, durations, selectors and expressions.
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "query/selector.h"
#include "query/text_format.h"

namespace ingot {
namespace {

std::string D(double v) {
  std::string s;
  AppendDouble(v, &s);
  return s;
}

TEST(TextFormatTest, DoublesAsPrometheusWritesThem) {
  EXPECT_EQ(D(0), "0");
  EXPECT_EQ(D(-0.0), "-0");
  EXPECT_EQ(D(1), "1");
  EXPECT_EQ(D(-17), "-17");
  EXPECT_EQ(D(0.1), "0.1");
  EXPECT_EQ(D(58.2), "58.2");
  EXPECT_EQ(D(-3.25), "-3.25");
  EXPECT_EQ(D(100000), "100000");
  EXPECT_EQ(D(123456.789), "123456.789");
  EXPECT_EQ(D(0.30000000000000004), "0.30000000000000004");
  EXPECT_EQ(D(1e21), "1e+21");
  EXPECT_EQ(D(1e20), "100000000000000000000");
  EXPECT_EQ(D(1e-7), "1e-07");
  EXPECT_EQ(D(0.000001), "0.000001");
  EXPECT_EQ(D(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(D(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(D(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(D(9007199254740993.0), "9007199254740992");
}

// The fast path must agree with std::to_chars' shortest fixed text and round-trip bit-exactly.
TEST(TextFormatTest, DoublesRoundTripAndMatchToChars) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> decimals(0, 6);
  std::uniform_real_distribution<double> magnitude(-1e6, 1e6);
  for (int i = 0; i < 200000; ++i) {
    double v;
    if (i % 3 == 0) {
      v = std::bit_cast<double>(rng());
      if (!std::isfinite(v)) continue;
    } else {
      const double scale = std::pow(10.0, decimals(rng));
      v = std::round(magnitude(rng) * scale) / scale;
    }
    const std::string text = D(v);
    double back = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), back);
    ASSERT_EQ(r.ec, std::errc()) << text;
    ASSERT_EQ(std::bit_cast<std::uint64_t>(back), std::bit_cast<std::uint64_t>(v)) << text;
    const double a = std::fabs(v);
    if ((a >= 1e-6 && a < 1e21) || a == 0) {
      char buf[400];
      const auto end = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed).ptr;
      ASSERT_EQ(text, std::string(buf, end));
    }
  }
}

// The decimals hint only changes which candidate is tried first: with any hint carried over a
// sequence of mixed values the text is exactly the hint-free text.
TEST(TextFormatTest, DecimalsHintNeverChangesTheText) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> decimals(0, 6);
  std::uniform_int_distribution<int> run(1, 20);
  std::uniform_real_distribution<double> magnitude(-1e5, 1e5);
  int hint = 0;
  for (int i = 0; i < 20000;) {
    const double scale = std::pow(10.0, decimals(rng));
    for (int r = run(rng); r > 0; --r, ++i) {
      const double v = std::round(magnitude(rng) * scale) / scale;
      char with_hint[64], without[64];
      char* a_end = WriteDouble(v, with_hint, &hint);
      char* b_end = WriteDouble(v, without);
      ASSERT_EQ(std::string_view(with_hint, static_cast<std::size_t>(a_end - with_hint)),
                std::string_view(without, static_cast<std::size_t>(b_end - without)))
          << "hint " << hint;
    }
  }
}

TEST(TextFormatTest, TimestampsAndStrings) {
  std::string s;
  AppendMillis(1'700'000'000'123'000'000, &s);
  EXPECT_EQ(s, "1700000000123");
  s.clear();
  AppendMillis(1'700'000'000'123'456'000, &s);
  EXPECT_EQ(s, "1700000000123.456");
  s.clear();
  AppendMillis(-1'500'000, &s);
  EXPECT_EQ(s, "-1.5");
  s.clear();
  AppendSeconds(1'700'000'000'500'000'000, &s);
  EXPECT_EQ(s, "1700000000.5");
  s.clear();
  AppendSeconds(1'700'000'000'000'000'001, &s);
  EXPECT_EQ(s, "1700000000.000000001");
  s.clear();
  AppendJsonString("a\"b\\c\n\x01", &s);
  EXPECT_EQ(s, "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(TextFormatTest, ParseTime) {
  std::int64_t ns = 0;
  ASSERT_TRUE(ParseTimeNs("1700000000", &ns).ok());
  EXPECT_EQ(ns, 1'700'000'000'000'000'000);
  ASSERT_TRUE(ParseTimeNs("1700000000.123", &ns).ok());
  EXPECT_EQ(ns, 1'700'000'000'123'000'000);
  ASSERT_TRUE(ParseTimeNs("-1.5", &ns).ok());
  EXPECT_EQ(ns, -1'500'000'000);
  ASSERT_TRUE(ParseTimeNs("2023-11-14T22:13:20Z", &ns).ok());
  EXPECT_EQ(ns, 1'700'000'000'000'000'000);
  ASSERT_TRUE(ParseTimeNs("2023-11-14T22:13:20.25Z", &ns).ok());
  EXPECT_EQ(ns, 1'700'000'000'250'000'000);
  ASSERT_TRUE(ParseTimeNs("2023-11-15T00:13:20+02:00", &ns).ok());
  EXPECT_EQ(ns, 1'700'000'000'000'000'000);
  ASSERT_TRUE(ParseTimeNs("1970-01-01T00:00:00Z", &ns).ok());
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(ParseTimeNs("1.7e9", &ns).ok());
  EXPECT_EQ(ns, 1'700'000'000'000'000'000);
  for (const char* bad : {"", "abc", "2023-13-01T00:00:00Z", "2023-11-14T22:13:20", "2023-11-14",
                          "1e30", "12:00", "1700000000x"}) {
    EXPECT_TRUE(ParseTimeNs(bad, &ns).IsInvalidArgument()) << bad;
  }
}

TEST(TextFormatTest, ParseDuration) {
  std::int64_t ns = 0;
  const std::int64_t s = 1'000'000'000;
  struct Case {
    const char* text;
    std::int64_t ns;
  } cases[] = {{"30s", 30 * s},     {"5m", 300 * s},
               {"1h30m", 5400 * s}, {"250ms", s / 4},
               {"1.5", 3 * s / 2},  {"2d", 172800 * s},
               {"1w", 604800 * s},  {"1y", 365 * 86400 * s},
               {"3600", 3600 * s},  {"1m30s500ms", 90 * s + s / 2}};
  for (const Case& c : cases) {
    ASSERT_TRUE(ParseDurationNs(c.text, &ns).ok()) << c.text;
    EXPECT_EQ(ns, c.ns) << c.text;
  }
  for (const char* bad : {"", "5x", "-1", "0", "0s", "m", "1h-1m", "99999999999999999999s"}) {
    EXPECT_TRUE(ParseDurationNs(bad, &ns).IsInvalidArgument()) << bad;
  }
  EXPECT_TRUE(ParseDurationNs("0", &ns, /*allow_zero=*/true).ok());
  EXPECT_EQ(FormatDuration(5400 * s + s / 4), "1h30m250ms");
}

TEST(SelectorTest, AllMatcherKinds) {
  Selector sel;
  ASSERT_TRUE(ParseSelector(R"(cpu_usage{a="x", b!="y",c=~"h.*", d!~'z|w'})", &sel).ok());
  ASSERT_EQ(sel.matchers.size(), 5u);
  EXPECT_EQ(sel.matchers[0].name, "__name__");
  EXPECT_EQ(sel.matchers[0].value, "cpu_usage");
  EXPECT_EQ(sel.matchers[1].op, MatchOp::kEqual);
  EXPECT_EQ(sel.matchers[2].op, MatchOp::kNotEqual);
  EXPECT_EQ(sel.matchers[3].op, MatchOp::kRegexMatch);
  EXPECT_EQ(sel.matchers[4].op, MatchOp::kRegexNoMatch);
  EXPECT_TRUE(sel.matchers[3].Matches("host"));
  EXPECT_FALSE(sel.matchers[3].Matches("xhost"));  // anchored
  EXPECT_FALSE(sel.matchers[4].Matches("w"));
  EXPECT_TRUE(sel.matchers[4].Matches("zw"));
}

TEST(SelectorTest, RegexIsAnchoredAndDotMatchesNewline) {
  Selector sel;
  ASSERT_TRUE(ParseSelector(R"({hostname=~"host_1"})", &sel).ok());
  EXPECT_TRUE(sel.matchers[0].Matches("host_1"));
  EXPECT_FALSE(sel.matchers[0].Matches("host_10"));
  EXPECT_FALSE(sel.matchers[0].Matches("a_host_1"));
  ASSERT_TRUE(ParseSelector(R"({a=~"x.y"})", &sel).ok());
  EXPECT_TRUE(sel.matchers[0].Matches("x\ny"));
}

TEST(SelectorTest, EscapesAndQuoting) {
  Selector sel;
  ASSERT_TRUE(ParseSelector(R"({a="q\"\\\n\t\x41\u00e9\101", b='it\'s', c=`raw\n`})", &sel).ok());
  EXPECT_EQ(sel.matchers[0].value,
            "q\"\\\n\tA\xc3\xa9"
            "A");
  EXPECT_EQ(sel.matchers[1].value, "it's");
  EXPECT_EQ(sel.matchers[2].value, "raw\\n");
  ASSERT_TRUE(ParseSelector(R"({"cpu.usage", "host-name"="a"})", &sel).ok());
  EXPECT_EQ(sel.matchers[0].name, "__name__");
  EXPECT_EQ(sel.matchers[0].value, "cpu.usage");
  EXPECT_EQ(sel.matchers[1].name, "host-name");
  ASSERT_TRUE(ParseSelector("  up  ", &sel).ok());
  ASSERT_TRUE(ParseSelector("up{}", &sel).ok());
  ASSERT_TRUE(ParseSelector("up{a='b',}", &sel).ok());
  EXPECT_EQ(sel.matchers.size(), 2u);
}

TEST(SelectorTest, Errors) {
  Selector sel;
  struct Case {
    const char* text;
    const char* message_part;
  } cases[] = {
      {"", "expected a metric name"},
      {"{}", "at least one matcher"},
      {R"({a=~".*"})", "at least one matcher"},
      {R"({a!=""})", nullptr},
      {R"({a="x)", "unterminated string"},
      {R"({a=x})", "expected a quoted string"},
      {R"({a<"x"})", "expected one of"},
      {R"({a="x" b="y"})", "expected ',' or '}'"},
      {R"({a=~"("})", "invalid regular expression"},
      {R"({a="\q"})", "invalid escape"},
      {R"(up{a="b"} extra)", "unexpected text"},
      {R"({1a="b"})", "expected a label name"},
  };
  for (const Case& c : cases) {
    Status st = ParseSelector(c.text, &sel);
    if (c.message_part == nullptr) {
      EXPECT_TRUE(st.ok()) << c.text << ": " << st.ToString();
      continue;
    }
    ASSERT_TRUE(st.IsInvalidArgument()) << c.text;
    EXPECT_NE(st.message().find(c.message_part), std::string_view::npos)
        << c.text << " -> " << st.message();
  }
}

}  // namespace
}  // namespace ingot
