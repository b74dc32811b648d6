// promql-conformance: runs Prometheus' PromQL test scripts against Ingot's storage and query
// engine (conformance.h) and prints, per script, how many eval cases passed, failed and were
// skipped. --verbose also prints every failing case with its first difference.
//
// Exit status: 0 after a run, whatever the cases' outcomes; 2 when a script cannot be read or
// parsed, or the folder holds no scripts.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/logging.h"
#include "tests/promql/conformance.h"
#include "tests/promql/promql_script.h"

namespace {

using ingot::promqltest::Outcome;
using ingot::promqltest::Script;
using ingot::promqltest::ScriptReport;

void PrintRow(const std::string& name, std::size_t cases, std::size_t passed, std::size_t failed,
              std::size_t skipped) {
  std::printf("%-28s %7zu %7zu %7zu %8zu\n", name.c_str(), cases, passed, failed, skipped);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Runs Prometheus' PromQL test scripts (*.test) against Ingot's storage and query engine "
      "and prints per-file case counts."};
  std::string path = ingot::promqltest::DefaultScriptDir();
  bool verbose = false;
  app.add_option("path", path,
                 "folder of *.test scripts, or one script (default: $INGOT_PROMQL_TESTS, else "
                 "../shared/promql-tests beside the source tree)")
      ->capture_default_str();
  app.add_flag("-v,--verbose", verbose, "print each failing case: file:line, expression, reason");
  CLI11_PARSE(app, argc, argv);

  ingot::LogOptions log;
  log.level = "warn";  // storage start-up and shutdown messages would bury the table
  (void)ingot::SetupLogging(log);

  const std::vector<std::string> files = ingot::promqltest::ListScripts(path);
  if (files.empty()) {
    std::fprintf(stderr, "no *.test scripts in %s\n", path.c_str());
    return 2;
  }
  int status = 0;
  std::vector<ScriptReport> reports;
  for (const std::string& file : files) {
    Script script;
    ingot::Status st = ingot::promqltest::ParseScriptFile(file, &script);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
      status = 2;
      continue;
    }
    ScriptReport report;
    ingot::promqltest::RunScript(script, &report);
    if (verbose) {
      for (const auto& c : report.cases) {
        if (c.outcome != Outcome::kFailed) continue;
        const auto* known = ingot::promqltest::FindException(report.name, c);
        std::printf("%s:%d: %s%s\n    %s\n", report.name.c_str(), c.line, c.expr.c_str(),
                    known != nullptr ? "  [named exception]" : "", c.reason.c_str());
      }
    }
    reports.push_back(std::move(report));
  }
  if (verbose) std::printf("\n");
  std::printf("%-28s %7s %7s %7s %8s\n", "file", "cases", "passed", "failed", "skipped");
  std::size_t cases = 0, passed = 0, failed = 0, skipped = 0;
  for (const ScriptReport& r : reports) {
    PrintRow(r.name, r.cases.size(), r.passed(), r.failed(), r.skipped());
    cases += r.cases.size();
    passed += r.passed();
    failed += r.failed();
    skipped += r.skipped();
  }
  PrintRow("total", cases, passed, failed, skipped);
  return status;
}
