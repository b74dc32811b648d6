// Prometheus' PromQL test scripts as a test: every eval case of every script must pass, except
// native-histogram cases (skipped) and the named exceptions of conformance.cc. One test per
// script, so a failure names the file; each failing case is listed with its first difference.
// The scripts live outside the repository (../shared/promql-tests or $INGOT_PROMQL_TESTS): without
// them the tests skip.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/logging.h"
#include "tests/promql/conformance.h"

namespace ingot::promqltest {
namespace {

class PromqlConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(PromqlConformance, EveryCasePassesOrIsANamedException) {
  const std::vector<std::string> files = ListScripts(DefaultScriptDir());
  const std::string file = DefaultScriptDir() + "/" + GetParam();
  if (files.empty()) GTEST_SKIP() << "no PromQL test scripts in " << DefaultScriptDir();
  LogOptions log;
  log.level = "warn";
  (void)SetupLogging(log);
  Script script;
  const Status st = ParseScriptFile(file, &script);
  if (st.IsIOError()) GTEST_SKIP() << file << " is not there";
  ASSERT_TRUE(st.ok()) << st.ToString();
  ScriptReport report;
  RunScript(script, &report);
  std::size_t excepted = 0;
  for (const CaseResult& c : report.cases) {
    if (c.outcome != Outcome::kFailed) continue;
    if (FindException(report.name, c) != nullptr) {
      ++excepted;
      continue;
    }
    ADD_FAILURE() << report.name << ":" << c.line << ": " << c.expr << "\n    " << c.reason;
  }
  // An exception that no longer fails should leave the list.
  for (const KnownException& e : KnownExceptions()) {
    if (e.file != report.name) continue;
    bool failed = false;
    for (const CaseResult& c : report.cases) {
      failed |= c.outcome == Outcome::kFailed && c.expr == e.expr;
    }
    EXPECT_TRUE(failed) << e.expr << " in " << e.file << " passes now: remove its exception";
  }
  EXPECT_GT(report.passed(), 0u);
  std::printf("%s: %zu passed, %zu failed (named exceptions), %zu skipped\n", report.name.c_str(),
              report.passed(), excepted, report.skipped());
}

INSTANTIATE_TEST_SUITE_P(Scripts, PromqlConformance,
                         ::testing::Values("aggregators.test", "at_modifier.test", "collision.test",
                                           "functions.test", "histograms.test", "literals.test",
                                           "name_label_dropping.test", "operators.test",
                                           "range_queries.test", "selectors.test", "staleness.test",
                                           "subquery.test"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           return name;
                         });

}  // namespace
}  // namespace ingot::promqltest
