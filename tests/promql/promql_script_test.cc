#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/promql/conformance.h"
#include "tests/promql/promql_script.h"

namespace ingot::promqltest {
namespace {

using Kind = SequenceValue::Kind;

std::vector<SequenceValue> Expand(std::string_view text) {
  std::vector<SequenceValue> out;
  Status st = ParseSequence(text, &out);
  EXPECT_TRUE(st.ok()) << text << ": " << st.ToString();
  return out;
}

std::vector<double> Floats(const std::vector<SequenceValue>& values) {
  std::vector<double> out;
  for (const SequenceValue& v : values) {
    EXPECT_EQ(v.kind, Kind::kFloat);
    out.push_back(v.value);
  }
  return out;
}

Script MustParse(std::string_view text) {
  Script script;
  Status st = ParseScript(text, "inline.test", &script);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return script;
}

std::vector<const EvalCase*> Evals(const Script& script) {
  std::vector<const EvalCase*> out;
  for (const Command& c : script.commands) {
    if (c.kind == Command::Kind::kEval) out.push_back(&c.eval);
  }
  return out;
}

// The scripts live beside the repository (../shared/promql-tests, or $INGOT_PROMQL_TESTS); a
// checkout without them skips the tests that read them, as the codec's dataset tests do.
#define REQUIRE_SCRIPTS()                                                      \
  if (!std::filesystem::is_directory(DefaultScriptDir())) {                    \
    GTEST_SKIP() << "PromQL test scripts not found at " << DefaultScriptDir(); \
  }

// The eval cases per file, as the scripts' README lists them.
TEST(PromqlScriptFiles, EveryScriptParsesWithTheListedNumberOfCases) {
  REQUIRE_SCRIPTS();
  const std::map<std::string, std::size_t> listed = {
      {"aggregators.test", 160},        {"at_modifier.test", 78}, {"collision.test", 2},
      {"functions.test", 431},          {"histograms.test", 185}, {"literals.test", 25},
      {"name_label_dropping.test", 30}, {"operators.test", 214},  {"range_queries.test", 18},
      {"selectors.test", 31},           {"staleness.test", 17},   {"subquery.test", 34}};
  const std::string dir = DefaultScriptDir();
  const std::vector<std::string> files = ListScripts(dir);
  ASSERT_EQ(files.size(), listed.size()) << "scripts in " << dir;
  for (const std::string& file : files) {
    Script script;
    Status st = ParseScriptFile(file, &script);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const auto it = listed.find(script.name);
    ASSERT_NE(it, listed.end()) << script.name << " is not in the README's table";
    EXPECT_EQ(script.eval_count(), it->second) << script.name;
  }
}

TEST(PromqlScriptFiles, NativeHistogramCasesAreMarked) {
  REQUIRE_SCRIPTS();
  Script script;
  ASSERT_TRUE(ParseScriptFile(DefaultScriptDir() + "/range_queries.test", &script).ok());
  std::size_t marked = 0;
  for (const EvalCase* c : Evals(script)) {
    if (!c->native_histogram) continue;
    ++marked;
    EXPECT_NE(c->expr.find("some_metric"), std::string::npos) << c->expr;
  }
  // The two cases selecting some_metric after a load gave it a histogram series.
  EXPECT_EQ(marked, 2u);
}

TEST(PromqlSequence, Expansions) {
  EXPECT_EQ(Floats(Expand("1+2x3")), (std::vector<double>{1, 3, 5, 7}));
  EXPECT_EQ(Floats(Expand("1-2x3")), (std::vector<double>{1, -1, -3, -5}));
  EXPECT_EQ(Floats(Expand("-1+1x2")), (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(Floats(Expand("5x2")), (std::vector<double>{5, 5, 5}));
  EXPECT_EQ(Floats(Expand("7+0x0")), (std::vector<double>{7}));
  EXPECT_EQ(Floats(Expand("1e3+1e-1x1")), (std::vector<double>{1000, 1000.1}));
  EXPECT_EQ(Floats(Expand("1.5 -2 .5 12.34e6")), (std::vector<double>{1.5, -2, 0.5, 12340000}));
  // Accumulated by addition, as Prometheus does: 0.1 + 0.1 + 0.1 is not 0.3.
  const std::vector<double> tenths = Floats(Expand("0+0.1x3"));
  ASSERT_EQ(tenths.size(), 4u);
  EXPECT_EQ(tenths[3], 0.1 + 0.1 + 0.1);
  // No hexadecimal in sequences: 0x2 is 0 three times.
  EXPECT_EQ(Floats(Expand("0x2")), (std::vector<double>{0, 0, 0}));
}

TEST(PromqlSequence, GapsSpecialsAndHistograms) {
  const std::vector<SequenceValue> v = Expand("1 _ _x3 stale Inf -Inf NaN +Inf");
  ASSERT_EQ(v.size(), 10u);
  EXPECT_EQ(v[0].value, 1);
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(v[i].kind, Kind::kOmitted) << i;
  EXPECT_TRUE(IsStaleNaN(v[5].value));
  EXPECT_FALSE(IsStaleNaN(std::nan("")));
  EXPECT_EQ(v[6].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[7].value, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(v[8].value) && !IsStaleNaN(v[8].value));
  EXPECT_EQ(v[9].value, std::numeric_limits<double>::infinity());

  const std::vector<SequenceValue> h =
      Expand("{{schema:0 sum:5 count:4 buckets:[1 2 1]}}x2 1 {{count:0}}+{{count:1}}x1");
  ASSERT_EQ(h.size(), 6u);
  for (int i : {0, 1, 2, 4, 5}) EXPECT_EQ(h[i].kind, Kind::kHistogram) << i;
  EXPECT_EQ(h[3].kind, Kind::kFloat);

  std::vector<SequenceValue> bad;
  for (std::string_view item : {"1+x3", "1x", "abc", "1+2xy", "{{count:1}", "--1", "_xz"}) {
    EXPECT_FALSE(ParseSequence(item, &bad).ok()) << item;
  }
}

TEST(PromqlSequence, SeriesLines) {
  LabelSet labels;
  std::vector<SequenceValue> values;
  ASSERT_TRUE(ParseSeriesLine(R"(metric{b="2", a='1', c=""}	0+1x2 _)", &labels, &values).ok());
  EXPECT_EQ(labels, (LabelSet{{"__name__", "metric"}, {"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(values.size(), 4u);

  ASSERT_TRUE(ParseSeriesLine(R"({__name__="m", x="a\"b\\c"} 1)", &labels, &values).ok());
  EXPECT_EQ(labels, (LabelSet{{"__name__", "m"}, {"x", "a\"b\\c"}}));
  ASSERT_TRUE(ParseSeriesLine(R"({"dotted.name", le="+Inf"} 1)", &labels, &values).ok());
  EXPECT_EQ(labels, (LabelSet{{"__name__", "dotted.name"}, {"le", "+Inf"}}));
  ASSERT_TRUE(ParseSeriesLine("{} 3", &labels, &values).ok());
  EXPECT_TRUE(labels.empty());
  ASSERT_TRUE(ParseSeriesLine(R"(m{job="a}b"} 2)", &labels, &values).ok());
  EXPECT_EQ(labels, (LabelSet{{"__name__", "m"}, {"job", "a}b"}}));

  EXPECT_FALSE(ParseSeriesLine(R"(m{a="1", a="2"} 1)", &labels, &values).ok());
  EXPECT_FALSE(ParseSeriesLine(R"(m{a="1" 1)", &labels, &values).ok());
  EXPECT_FALSE(ParseSeriesLine(R"(m{a=1} 1)", &labels, &values).ok());
  EXPECT_EQ(FormatLabels({{"__name__", "m"}}), "m");
  EXPECT_EQ(FormatLabels({}), "{}");
  EXPECT_EQ(FormatLabels({{"__name__", "m"}, {"a", "x\"y"}, {"b", "2"}}), R"(m{a="x\"y", b="2"})");
}

TEST(PromqlScript, CommandsAndModifiers) {
  const Script script = MustParse(R"(
# a comment
load 5m
  up{job="a"} 1+1x3
  up{job="b"} 0 _ stale

eval instant at 10m up
  up{job="a"} 3

eval_ordered instant at 1h30m sort(up)
  up{job="b"} 0
  up{job="a"} 1

eval range from 0 to 10m step 5m up{job="a"}
  expect no_warn
  up{job="a"} 1 2 _

clear

eval instant at 0 1 + 1
	2
eval_fail instant at 0 bad(up)
  expected_fail_message boom
eval instant at 0s missing
  expect fail msg: something broke
  expect warn regex: quantile .* NaN
  expect info

eval instant at 0 "Foo"
  expect string "Foo"

eval instant at 1m up[1m]
  expect range vector from 20s to 1m step 20s
  up{job="a"} 1 _ 3
)");
  ASSERT_EQ(script.commands.size(), 10u);
  EXPECT_EQ(script.commands[0].kind, Command::Kind::kLoad);
  const LoadCommand& load = script.commands[0].load;
  EXPECT_EQ(load.interval_ns, 300'000'000'000);
  ASSERT_EQ(load.series.size(), 2u);
  EXPECT_EQ(load.series[1].line, 5);
  EXPECT_EQ(script.commands[4].kind, Command::Kind::kClear);

  const std::vector<const EvalCase*> e = Evals(script);
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(e[0]->line, 7);
  EXPECT_EQ(e[0]->kind, EvalKind::kInstant);
  EXPECT_EQ(e[0]->start_ns, 600'000'000'000);
  EXPECT_EQ(e[0]->end_ns, 600'000'000'000);
  EXPECT_EQ(e[0]->expr, "up");
  ASSERT_EQ(e[0]->expected.size(), 1u);
  EXPECT_EQ(e[0]->expected[0].values[0].value, 3);

  EXPECT_TRUE(e[1]->ordered);
  EXPECT_EQ(e[1]->start_ns, 5'400'000'000'000);
  ASSERT_EQ(e[1]->expected.size(), 2u);
  EXPECT_EQ(e[1]->expected[1].position, 2);

  EXPECT_EQ(e[2]->kind, EvalKind::kRange);
  EXPECT_EQ(e[2]->end_ns, 600'000'000'000);
  EXPECT_EQ(e[2]->step_ns, 300'000'000'000);
  EXPECT_TRUE(e[2]->no_warn);
  ASSERT_EQ(e[2]->expected[0].values.size(), 3u);
  EXPECT_EQ(e[2]->expected[0].values[2].kind, Kind::kOmitted);

  ASSERT_TRUE(e[3]->expected_scalar.has_value());
  EXPECT_EQ(*e[3]->expected_scalar, 2);
  EXPECT_EQ(e[3]->expr, "1 + 1");

  EXPECT_TRUE(e[4]->fail);
  EXPECT_EQ(e[4]->fail_message.kind, MessageMatch::Kind::kExact);
  EXPECT_EQ(e[4]->fail_message.text, "boom");

  EXPECT_TRUE(e[5]->fail);
  EXPECT_TRUE(e[5]->fail_message.Matches("something broke"));
  EXPECT_FALSE(e[5]->fail_message.Matches("something else"));
  ASSERT_EQ(e[5]->warnings.size(), 1u);
  EXPECT_TRUE(e[5]->warnings[0].Matches("PromQL warning: quantile value is NaN (1:2)"));
  EXPECT_FALSE(e[5]->warnings[0].Matches("PromQL warning: other"));
  ASSERT_EQ(e[5]->infos.size(), 1u);
  EXPECT_TRUE(e[5]->infos[0].Matches("anything"));

  EXPECT_EQ(e[6]->expected_string, "Foo");

  EXPECT_TRUE(e[7]->expect_range_vector);
  EXPECT_EQ(e[7]->range_vector_start_ns, 20'000'000'000);
  EXPECT_EQ(e[7]->range_vector_step_ns, 20'000'000'000);
  EXPECT_EQ(e[7]->start_ns, 60'000'000'000);
  ASSERT_EQ(e[7]->expected.size(), 1u);
  EXPECT_EQ(e[7]->expected[0].values.size(), 3u);
}

TEST(PromqlScript, NativeHistogramFlag) {
  const Script script = MustParse(R"script(
load 1m
  hist {{schema:0 count:1 sum:1}}x2
  floats 1 2 3

load_with_nhcb 1m
  lat_bucket{le="1"} 1 2
  lat_bucket{le="+Inf"} 2 3

eval instant at 1m floats
  floats 2

eval instant at 1m sum(hist)
  {} 1

eval instant at 1m {__name__="hist"}

eval instant at 1m histogram_count(lat)

eval instant at 1m lat_bucket
  lat_bucket{le="1"} 2
  lat_bucket{le="+Inf"} 3

eval instant at 1m floats * 0
  {} {{count:0}}

eval instant at 1m count({__name__=~"h.*|x"})
  {} 2

eval instant at 1m count({__name__=~"lat_bucket|floats"})
  {} 3

eval instant at 1m label_replace(floats, "dst", "$1", "src", "(.*)")
  floats 2

clear

load 1m
  floats 1

eval instant at 1m hist
)script");
  const std::vector<const EvalCase*> e = Evals(script);
  ASSERT_EQ(e.size(), 10u);
  EXPECT_FALSE(e[0]->native_histogram);
  EXPECT_TRUE(e[1]->native_histogram);
  EXPECT_TRUE(e[2]->native_histogram);
  EXPECT_TRUE(e[3]->native_histogram);  // the converted histogram's base name
  EXPECT_FALSE(e[4]->native_histogram);
  EXPECT_TRUE(e[5]->native_histogram);  // histogram in the expectation
  EXPECT_TRUE(e[6]->native_histogram);  // a name regex selecting it
  EXPECT_FALSE(e[7]->native_histogram);
  EXPECT_FALSE(e[8]->native_histogram);  // a regex that is not a name matcher
  EXPECT_FALSE(e[9]->native_histogram);  // after clear
}

TEST(PromqlScript, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* where;
  };
  const Case cases[] = {
      {"load 1m\n  m 1\n\nbogus command\n", "bad.test:4:"},
      {"load\n", "bad.test:1:"},
      {"load 1m\n  m 1 2 zz\n", "bad.test:2:"},
      {"\n\neval instant 10m m\n", "bad.test:3:"},
      {"eval instant at 1m m\n  m 1 2\n", "bad.test:2:"},
      {"eval_ordered range from 0 to 1m step 1m m\n", "bad.test:1:"},
      {"eval range from 2m to 1m step 1m m\n", "bad.test:1:"},
      {"eval instant at 1m m\n  expect bogus\n", "bad.test:2:"},
      {"eval instant at 1m m\n  expect warn\n  expect no_warn\n", "bad.test:3:"},
      {"eval instant at 1m m\n  expect fail\n  expect fail\n", "bad.test:3:"},
      {"eval instant at xyz m\n", "bad.test:1:"},
  };
  for (const Case& c : cases) {
    Script script;
    Status st = ParseScript(c.text, "bad.test", &script);
    ASSERT_FALSE(st.ok()) << c.text;
    EXPECT_TRUE(st.message().starts_with(c.where)) << st.message();
  }
}

TEST(PromqlCompare, AlmostEqualIsPrometheusTolerance) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::nan("");
  EXPECT_TRUE(AlmostEqual(1, 1));
  EXPECT_TRUE(AlmostEqual(100, 100.00001));  // relative 5e-8
  EXPECT_TRUE(AlmostEqual(1e20, 1e20 * (1 + 1e-7)));
  EXPECT_FALSE(AlmostEqual(100, 100.001));  // relative 5e-6
  EXPECT_FALSE(AlmostEqual(1, 1.000003));
  EXPECT_TRUE(AlmostEqual(nan, nan));
  EXPECT_TRUE(AlmostEqual(nan, StaleNaN()));
  EXPECT_FALSE(AlmostEqual(nan, 1));
  EXPECT_FALSE(AlmostEqual(0, nan));
  EXPECT_TRUE(AlmostEqual(inf, inf));
  EXPECT_FALSE(AlmostEqual(inf, -inf));
  EXPECT_FALSE(AlmostEqual(inf, 1e308));
  EXPECT_TRUE(AlmostEqual(0, -0.0));
  // Against 0 only a difference below epsilon * the smallest normal double counts as equal.
  EXPECT_FALSE(AlmostEqual(0, 1e-300));
  EXPECT_TRUE(AlmostEqual(0, 1e-320));
  EXPECT_FALSE(AlmostEqual(-1, 1));
}

TEST(PromqlCompare, LabelOrderIsPrometheusOrder) {
  EXPECT_LT(CompareLabels({{"a", "1"}}, {{"a", "2"}}), 0);
  EXPECT_LT(CompareLabels({{"a", "1"}}, {{"a", "1"}, {"b", "1"}}), 0);
  EXPECT_GT(CompareLabels({{"b", "1"}}, {{"a", "9"}, {"b", "1"}}), 0);
  EXPECT_EQ(CompareLabels({{"a", "1"}}, {{"a", "1"}}), 0);
}

TEST(PromqlCompare, InstantVectorsMatchAsSetsUnlessOrdered) {
  Script script = MustParse(R"(
eval instant at 0 x
  x{a="1"} 1
  x{a="2"} 2
)");
  EvalCase c = *Evals(script)[0];
  promql::QueryResult result;
  result.series.push_back({{{"__name__", "x"}, {"a", "2"}}, {2.0000001}, {1}});
  result.series.push_back({{{"__name__", "x"}, {"a", "1"}}, {1}, {1}});
  result.series.push_back({{{"__name__", "x"}, {"a", "3"}}, {9}, {0}});  // no sample
  EXPECT_EQ(CompareResult(c, result), "");
  c.ordered = true;
  EXPECT_NE(CompareResult(c, result).find("position"), std::string::npos);
  c.ordered = false;
  result.series[0].values[0] = 2.1;
  EXPECT_EQ(CompareResult(c, result), R"(expected 2 for x{a="2"}, got 2.1)");
  result.series.pop_back();
  result.series.pop_back();
  result.series[0].values[0] = 2;
  EXPECT_EQ(CompareResult(c, result), R"(expected series x{a="1"} not found)");
  result.type = promql::ValueType::kScalar;
  result.scalar = {2};
  EXPECT_EQ(CompareResult(c, result), "expected a vector, got scalar 2");
}

TEST(PromqlCompare, RangeResultsComparePointsAndOrder) {
  Script script = MustParse(R"(
eval range from 0 to 2m step 1m x
  x{a="1"} 1 _ 3
  x{a="2"} 1x2
)");
  const EvalCase& c = *Evals(script)[0];
  promql::QueryResult result;
  result.series.push_back({{{"__name__", "x"}, {"a", "1"}}, {1, 0, 3}, {1, 0, 1}});
  result.series.push_back({{{"__name__", "x"}, {"a", "2"}}, {1, 1, 1}, {1, 1, 1}});
  EXPECT_EQ(CompareResult(c, result), "");
  std::swap(result.series[0], result.series[1]);
  EXPECT_NE(CompareResult(c, result).find("not sorted"), std::string::npos);
  std::swap(result.series[0], result.series[1]);
  result.series[0].present[1] = 1;
  EXPECT_NE(CompareResult(c, result).find("at t=60s got 0, expected none"), std::string::npos)
      << CompareResult(c, result);
}

// The runner against the real store and engine, on expressions the engine evaluates.
TEST(PromqlRunner, RunsCasesEndToEnd) {
  const Script script = MustParse(R"(
load 1m
  http_requests{job="api", instance="0"} 0+10x10
  http_requests{job="api", instance="1"} 0+20x10
  http_requests{job="db", instance="0"} 5+5x10

load 1s
  long_series 0+1x2500

eval instant at 10m http_requests{job="api"}
  http_requests{job="api", instance="0"} 100
  http_requests{job="api", instance="1"} 200

eval instant at 10m sum by (job) (http_requests)
  {job="db"} 55
  {job="api"} 300.0001

eval range from 0 to 2m step 1m sum(http_requests)
  {} 5 40 75

eval instant at 500s long_series
  long_series 500

eval instant at 2400s long_series
  long_series 2400

eval instant at 10m http_requests{job="db"}
  http_requests{job="db", instance="0"} 56

eval_fail instant at 10m http_requests

eval instant at 10m hist
  {} {{count:1}}

clear

eval instant at 10m http_requests
)");
  ScriptReport report;
  RunScript(script, &report);
  EXPECT_EQ(report.name, "inline.test");
  ASSERT_EQ(report.cases.size(), 9u);
  for (std::size_t i : {0, 1, 2, 3, 4, 8}) {
    EXPECT_EQ(report.cases[i].outcome, Outcome::kPassed)
        << report.cases[i].expr << ": " << report.cases[i].reason;
  }
  EXPECT_EQ(report.cases[5].outcome, Outcome::kFailed);
  EXPECT_EQ(report.cases[5].line, 27);
  EXPECT_EQ(report.cases[5].reason,
            R"(expected 56 for http_requests{instance="0", job="db"}, got 55)");
  EXPECT_EQ(report.cases[6].outcome, Outcome::kFailed);
  EXPECT_EQ(report.cases[6].reason, "expected an error, got none");
  EXPECT_EQ(report.cases[7].outcome, Outcome::kSkipped);
  EXPECT_EQ(report.passed(), 6u);
  EXPECT_EQ(report.failed(), 2u);
  EXPECT_EQ(report.skipped(), 1u);
}

}  // namespace
}  // namespace ingot::promqltest
