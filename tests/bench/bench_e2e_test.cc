// End-to-end: the real ingot-bench binary against the real ingotd on ephemeral loopback ports.
// Bounded runs over TCP and HTTP /write must be confirmed by --verify with the exact number of
// values, the --json report must parse and agree with what was sent (and with what the node counts
// when asked directly), --rate must hold, the query workloads must run clean, and bad flags must
// exit 2.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

using nlohmann::json;

struct BenchResult {
  int exit_code = -1;  // 128+signal when killed, -1 when it could not run
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Runs ingot-bench with `args`, stdout and stderr to files in `dir`; kills it after `timeout`.
BenchResult RunBench(const TempDir& dir, const std::vector<std::string>& args,
                     std::chrono::seconds timeout = std::chrono::seconds(60)) {
  BenchResult result;
  const std::string out_path = dir.path() + "/bench.out";
  const std::string err_path = dir.path() + "/bench.err";
  std::vector<std::string> argv_storage = {INGOT_BENCH_PATH};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  if (pid < 0) return result;
  if (pid == 0) {
    const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out_fd < 0 || err_fd < 0) ::_exit(126);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    std::vector<char*> argv;
    for (std::string& arg : argv_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

std::string Describe(const BenchResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "\n--- stderr\n" +
         r.err;
}

std::string Local(const char* scheme, unsigned short port, const std::string& path = "") {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port) + path;
}

// Asks the node itself how many cpu_* samples it holds in [start_s, start_s + span_s].
uint64_t CountOnNode(unsigned short http_port, int64_t start_s, int64_t span_s) {
  const std::string target =
      "/api/v1/query?query=sum(count_over_time(%7B__name__%3D~%22cpu_.%2A%22%7D%5B" +
      std::to_string(span_s + 2) + "s%5D))&time=" + std::to_string(start_s + span_s + 1);
  const HttpResult answer = HttpGet(http_port, target);
  EXPECT_EQ(answer.status, 200) << answer.error << answer.body;
  const json body = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || body["data"]["result"].empty()) return 0;
  return std::stoull(body["data"]["result"][0]["value"][1].get<std::string>());
}

class BenchE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_unique<NodeProcess>(dir_.path() + "/data");
    ASSERT_TRUE(node_->ok()) << node_->log();
  }
  void TearDown() override {
    if (node_ && node_->ok()) {
      EXPECT_EQ(node_->Stop(SIGTERM), 0) << node_->log();
    }
  }

  json LoadJson(const std::string& path) {
    const std::string text = ReadFile(path);
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << text;
    return parsed;
  }

  TempDir dir_;
  std::unique_ptr<NodeProcess> node_;
};

// 2024-01-01T00:00:00Z, the generator's default start.
constexpr int64_t kDefaultStartS = 1704067200;

TEST_F(BenchE2e, TcpRunIsVerifiedExactlyAndJsonTotalsMatch) {
  const std::string report_path = dir_.path() + "/tcp.json";
  // 20 hosts x 1,000 rows x 10 fields, 10 s apart: 200,000 values over 9,990 s.
  const BenchResult run = RunBench(
      dir_, {"ingest", "--target", Local("tcp", node_->tcp_port()), "--points", "200000",
             "--hosts", "20", "--batch-lines", "3000", "--verify",
             Local("http", node_->http_port()), "--verify-timeout", "20s", "--json", report_path,
             "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run) << node_->log();
  EXPECT_NE(run.out.find("queryable     all 200000 values"), std::string::npos) << run.out;

  const json report = LoadJson(report_path);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["target"], Local("tcp", node_->tcp_port()));
  EXPECT_EQ(report["connections"], 1);
  EXPECT_EQ(report["values"], 200000);
  EXPECT_EQ(report["lines"], 20000);
  EXPECT_EQ(report["batches"], 7);  // ceil(20,000 / 3,000)
  EXPECT_GT(report["bytes"].get<uint64_t>(), 20000u * 100);
  EXPECT_TRUE(report["errors"].empty()) << report["errors"];
  EXPECT_TRUE(report["write_latency_us"].is_null());  // no answers over TCP
  const json& verify = report["verify"];
  EXPECT_EQ(verify["complete"], true);
  EXPECT_EQ(verify["expected_values"], 200000);
  EXPECT_EQ(verify["counted_values"], 200000);
  EXPECT_GE(verify["polls"].get<int>(), 1);
  EXPECT_GT(verify["queryable_after_s"].get<double>(), 0);

  // The node agrees when asked directly.
  EXPECT_EQ(CountOnNode(node_->http_port(), kDefaultStartS, 9990), 200000u);
}

TEST_F(BenchE2e, HttpWriteRunIsVerifiedExactlyAndJsonTotalsMatch) {
  const std::string report_path = dir_.path() + "/http.json";
  const BenchResult run = RunBench(
      dir_, {"ingest", "--target", Local("http", node_->http_port(), "/write"), "--points",
             "120000", "--hosts", "12", "--connections", "2", "--batch-lines", "1000",
             "--start", "2024-02-01T00:00:00Z", "--verify", Local("http", node_->http_port()),
             "--verify-timeout", "20s", "--json", report_path, "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run) << node_->log();

  const json report = LoadJson(report_path);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["connections"], 2);
  EXPECT_EQ(report["values"], 120000);
  EXPECT_EQ(report["lines"], 12000);
  // Each connection sends its 6 hosts' 6,000 lines in batches of 1,000.
  EXPECT_EQ(report["batches"], 12);
  EXPECT_TRUE(report["errors"].empty()) << report["errors"];
  const json& latency = report["write_latency_us"];
  ASSERT_TRUE(latency.is_object());
  EXPECT_EQ(latency["count"], 12);  // one answer per request, every one a 2xx
  EXPECT_LE(latency["p50"].get<uint64_t>(), latency["p99"].get<uint64_t>());
  EXPECT_LE(latency["p99"].get<uint64_t>(), latency["max"].get<uint64_t>());
  EXPECT_EQ(report["verify"]["complete"], true);
  EXPECT_EQ(report["verify"]["counted_values"], 120000);

  EXPECT_EQ(CountOnNode(node_->http_port(), 1706745600, 9990), 120000u);
}

TEST_F(BenchE2e, NewSeriesRunCreatesAsManySeriesAsItReports) {
  const std::string report_path = dir_.path() + "/new-series.json";
  // One field per line, every line a host never sent before: 5,000 lines, 5,000 new series.
  const BenchResult run = RunBench(
      dir_, {"ingest", "--target", Local("tcp", node_->tcp_port()), "--points", "5000",
             "--fields", "1", "--new-series-ratio", "1", "--connections", "2", "--batch-lines",
             "700", "--start", "2024-04-01T00:00:00Z", "--verify",
             Local("http", node_->http_port()), "--verify-timeout", "20s", "--json",
             report_path, "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run) << node_->log();
  EXPECT_NE(run.out.find("new series    5000"), std::string::npos) << run.out;

  const json report = LoadJson(report_path);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["values"], 5000);
  EXPECT_EQ(report["lines"], 5000);
  EXPECT_EQ(report["new_series"], 5000);
  EXPECT_GT(report["new_series_per_s"]["queryable"].get<double>(), 0);
  EXPECT_EQ(report["verify"]["counted_values"], 5000);

  // The node holds one cpu_usage_user series per line, each named n<line number>.
  const HttpResult answer = HttpGet(node_->http_port(), "/api/v1/series?match%5B%5D=cpu_usage_user");
  ASSERT_EQ(answer.status, 200) << answer.error << answer.body;
  const json series = json::parse(answer.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(series.is_object()) << answer.body.substr(0, 300);
  ASSERT_EQ(series["data"].size(), 5000u);
  std::vector<std::string> hosts;
  for (const json& labels : series["data"]) hosts.push_back(labels["hostname"].get<std::string>());
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts.front(), "n0000000000");
  EXPECT_EQ(hosts.back(), "n0000004999");
  EXPECT_EQ(std::unique(hosts.begin(), hosts.end()), hosts.end());
}

TEST_F(BenchE2e, RateHoldsWithinTenPercent) {
  const std::string report_path = dir_.path() + "/rate.json";
  constexpr double kRate = 40000;
  constexpr double kSeconds = 3;
  const BenchResult run = RunBench(
      dir_, {"ingest", "--target", Local("tcp", node_->tcp_port()), "--rate", "40000",
             "--duration", "3s", "--points", "0", "--hosts", "20", "--start",
             "2024-03-01T00:00:00Z", "--verify", Local("http", node_->http_port()),
             "--verify-timeout", "20s", "--json", report_path, "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run) << node_->log();
  const json report = LoadJson(report_path);
  ASSERT_TRUE(report.is_object());
  const auto values = report["values"].get<double>();
  EXPECT_GE(values, kRate * kSeconds * 0.9) << report.dump();
  EXPECT_LE(values, kRate * kSeconds * 1.1) << report.dump();
  const auto send_seconds = report["send_seconds"].get<double>();
  EXPECT_GE(send_seconds, kSeconds * 0.9);
  EXPECT_LE(send_seconds, kSeconds * 1.1 + 0.5);
  EXPECT_TRUE(report["errors"].empty()) << report["errors"];
  // A run cut short by its duration is verified exactly too.
  EXPECT_EQ(report["verify"]["complete"], true);
  EXPECT_EQ(report["verify"]["counted_values"].get<double>(), values);
}

TEST_F(BenchE2e, QueryWorkloadsRunCleanAgainstIngotd) {
  const BenchResult load = RunBench(
      dir_, {"ingest", "--target", Local("tcp", node_->tcp_port()), "--points", "100000",
             "--hosts", "10", "--verify", Local("http", node_->http_port()), "--verify-timeout",
             "20s", "--quiet"});
  ASSERT_EQ(load.exit_code, 0) << Describe(load);
  const std::string report_path = dir_.path() + "/query.json";
  const BenchResult run = RunBench(
      dir_, {"query", "--target", Local("http", node_->http_port()), "--workload", "all",
             "--duration", "300ms", "--points", "100000", "--hosts", "10", "--json", report_path,
             "--quiet"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run) << node_->log();
  const json report = LoadJson(report_path);
  ASSERT_TRUE(report.is_object()) << report.dump();
  const json& workloads = report["workloads"];
  ASSERT_EQ(workloads.size(), 3u) << report.dump();
  const char* const names[] = {"q1", "q2", "q3"};
  for (size_t i = 0; i < workloads.size(); ++i) {
    const json& workload = workloads[i];
    EXPECT_EQ(workload["name"], names[i]);
    EXPECT_GT(workload["queries"].get<uint64_t>(), 0u) << workload.dump();
    EXPECT_TRUE(workload["errors"].empty()) << workload.dump();
    EXPECT_GT(workload["response_bytes"].get<uint64_t>(), 0u) << workload.dump();
  }
}

TEST(BenchCli, BadFlagsExitTwoWithAMessage) {
  TempDir dir;
  const std::vector<std::vector<std::string>> bad = {
      {},                                                     // no command
      {"ingest", "--no-such-flag"},                           // unknown flag
      {"ingest", "--points", "many"},                         // not a number
      {"ingest", "--connections", "0"},                       // out of range
      {"ingest", "--target", "ftp://127.0.0.1:1"},            // unknown scheme
      {"ingest", "--duration", "3 parsecs"},                  // bad duration
      {"ingest", "--points", "0", "--duration", "0"},         // unbounded
      {"ingest", "--verify", "tcp://127.0.0.1:1"},            // verify needs HTTP
      {"ingest", "--fields", "11"},                           // at most 10 fields
      {"ingest", "--new-series-ratio", "1.5"},                // a share: 0..1
      {"query", "--workload", "q9", "--end", "1"},            // unknown workload
      {"compare", "--targets", "null,null", "--verify-urls", "http://127.0.0.1:1"},
  };
  for (const std::vector<std::string>& args : bad) {
    const BenchResult run = RunBench(dir, args, std::chrono::seconds(20));
    std::string joined;
    for (const std::string& arg : args) joined += arg + " ";
    EXPECT_EQ(run.exit_code, 2) << joined << Describe(run);
    EXPECT_FALSE(run.err.empty()) << joined;
  }
  const BenchResult help = RunBench(dir, {"ingest", "--help"});
  EXPECT_EQ(help.exit_code, 0) << Describe(help);
  EXPECT_NE(help.out.find("--rate"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--new-series-ratio"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace ingot::testing
