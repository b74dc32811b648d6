// Real client libraries against the real ingotd: QuestDB's Node.js client over TCP line protocol
// and the `influx` InfluxDB 1.x client over HTTP /write (scripts in tests/clients/). Each script
// prints what it handed to its library; after the node stops, the data directory is reopened and
// every value must read back identically (and nothing else may be there).
//
// The libraries are installed once per build tree by tests/clients/install.sh (a ctest fixture).
// Without Node.js these tests fail, by design: CI must run them.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "chunk/storage.h"
#include "tests/e2e/node_process.h"
#include "tests/ingest/ingest_test_util.h"

namespace ingot::ingest {
namespace {

using ingot::testing::HttpResult;
using ingot::testing::HttpGet;
using ingot::testing::NodeProcess;
using ingot::testing::TempDir;
using testutil::ExpectedData;
using testutil::MetricValue;
using testutil::StoredExactly;

const std::string kClientsDir = INGOT_CLIENTS_DIR;  // the scripts
const std::string kNpmDir = INGOT_NPM_DIR;          // where install.sh put node_modules

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Single-quotes `s` for /bin/sh.
std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Fails the test (with what to do about it) unless node and the installed libraries are present.
::testing::AssertionResult ClientsAvailable() {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    return ::testing::AssertionFailure()
           << "Node.js ('node') is not installed: the real-client tests need it "
              "(./dev deps installs nodejs and npm)";
  }
  for (const char* module : {"@questdb/nodejs-client", "influx"}) {
    if (!std::filesystem::exists(kNpmDir + "/node_modules/" + module + "/package.json")) {
      return ::testing::AssertionFailure()
             << "npm package '" << module << "' is not installed in " << kNpmDir
             << ": run tests/clients/install.sh " << kNpmDir
             << " (ctest runs it as the ingest_clients_install fixture)";
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs `node <script> <port> <rows>` with the `env` assignments ("K=V K2=V2"); its stdout (the
// record of what it sent) goes to `*record`.
::testing::AssertionResult RunWriter(const std::string& script, unsigned short port, int rows,
                                     const std::string& scratch, std::string* record,
                                     const std::string& env = "") {
  const std::string out = scratch + "/" + script + ".out";
  const std::string err = scratch + "/" + script + ".err";
  const std::string command = "cd " + ShellQuote(kClientsDir) + " && " + env + " NODE_PATH=" +
                              ShellQuote(kNpmDir + "/node_modules") + " node " + script + " " +
                              std::to_string(port) + " " + std::to_string(rows) + " > " +
                              ShellQuote(out) + " 2> " + ShellQuote(err);
  const int status = std::system(command.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return ::testing::AssertionFailure() << command << " failed (status " << status << "):\n"
                                         << ReadFile(err);
  }
  *record = ReadFile(out);
  return ::testing::AssertionSuccess();
}

// Turns the scripts' JSON records into the expectation; `*values` counts them.
::testing::AssertionResult ParseRecord(const std::string& text, ExpectedData* expected,
                                       std::size_t* values) {
  std::istringstream in(text);
  std::string line;
  *values = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return ::testing::AssertionFailure() << "not a record: " << line;
    testutil::TagList tags;
    for (const auto& [k, v] : j.at("tags").items()) tags.emplace_back(k, v.get<std::string>());
    const std::string type = j.at("type").get<std::string>();
    const std::string ts_text = j.at("ts").get<std::string>();
    const std::string value_text = j.at("value").get<std::string>();
    std::int64_t ts = 0;
    std::from_chars(ts_text.data(), ts_text.data() + ts_text.size(), ts);
    double value = 0;
    ValueType value_type = ValueType::kFloat;
    if (type == "float") {
      const auto r = std::from_chars(value_text.data(), value_text.data() + value_text.size(), value);
      if (r.ec != std::errc()) return ::testing::AssertionFailure() << "bad float: " << line;
    } else {
      std::int64_t i = 0;
      const auto r = std::from_chars(value_text.data(), value_text.data() + value_text.size(), i);
      if (r.ec != std::errc()) return ::testing::AssertionFailure() << "bad integer: " << line;
      value = static_cast<double>(i);
      value_type = type == "integer" ? ValueType::kInteger : ValueType::kBoolean;
    }
    expected->Add(testutil::SeriesKeyOf(j.at("m").get<std::string>(), std::move(tags),
                                        j.at("field").get<std::string>()),
                  value_type, ts, value);
    ++*values;
  }
  return ::testing::AssertionSuccess();
}

double Metric(unsigned short http_port, const std::string& sample) {
  return MetricValue(HttpGet(http_port, "/metrics").body, sample);
}

// Reads every series back through the node's query API (binary export: bit-exact values).
::testing::AssertionResult ExportedExactly(unsigned short http_port, const ExpectedData& expected) {
  const HttpResult r =
      HttpGet(http_port, "/api/v1/export?format=binary&match[]=%7B__name__%3D~%22.%2B%22%7D");
  if (r.status != 200) {
    return ::testing::AssertionFailure() << "export: HTTP " << r.status << " " << r.body << r.error;
  }
  return expected.MatchesExport(r.body);
}

// A real ingotd (2 shards) in a temp dir, written to by one client script; `expected` and
// `values` describe what the script reported sending.
class RealClients : public ::testing::Test {
 protected:
  static constexpr int kRows = 3000;

  void SetUp() override {
    ASSERT_TRUE(ClientsAvailable());
    node_ = std::make_unique<NodeProcess>(data_dir_, std::vector<std::string>{"--set", "ingest.shards=2", "--set", "ingest.string_fields=drop"});
    ASSERT_TRUE(node_->ok()) << node_->log();
  }

  // Runs `script` against `port` and records what it sent.
  void RunClient(const std::string& script, unsigned short port, const std::string& env = "") {
    std::string record;
    ASSERT_TRUE(RunWriter(script, port, kRows, dir_.path(), &record, env));
    ASSERT_TRUE(ParseRecord(record, &expected_, &values_));
    ASSERT_EQ(values_, 3u * kRows);
  }

  // Every value reads back exactly through the query API, and from disk after a clean stop.
  void ExpectReadBackExactly() {
    EXPECT_TRUE(ExportedExactly(node_->http_port(), expected_));
    ASSERT_EQ(node_->Stop(SIGTERM), 0) << node_->log();
    EXPECT_TRUE(StoredExactly(data_dir_, expected_));
  }

  TempDir dir_;
  const std::string data_dir_ = dir_.path() + "/data";
  std::unique_ptr<NodeProcess> node_;
  ExpectedData expected_;
  std::size_t values_ = 0;
};

TEST_F(RealClients, QuestDbNodejsClientOverTcp) {
  ASSERT_NO_FATAL_FAILURE(RunClient("questdb_writer.js", node_->tcp_port()));

  // TCP has no acknowledgement: wait (hang guard only) until the node has taken every line in.
  const unsigned short http = node_->http_port();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((Metric(http, "ingot_lines_total") < kRows || Metric(http, "ingot_connections") != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Metric(http, "ingot_lines_total"), kRows);
  EXPECT_EQ(Metric(http, "ingot_lines_rejected_total{reason=\"malformed\"}"), 0);
  EXPECT_EQ(Metric(http, "ingot_points_accepted_total"), static_cast<double>(values_));
  EXPECT_EQ(Metric(http, "ingot_points_rejected_total{reason=\"string_unsupported\"}"), kRows);
  ExpectReadBackExactly();
}

TEST_F(RealClients, InfluxClientOverHttpWrite) {
  ASSERT_NO_FATAL_FAILURE(RunClient("influx_writer.js", node_->http_port()));
  // Every write was answered 204 (the client throws otherwise), so all of it is accepted.
  const unsigned short http = node_->http_port();
  EXPECT_EQ(Metric(http, "ingot_lines_total"), kRows);
  EXPECT_EQ(Metric(http, "ingot_points_accepted_total"), static_cast<double>(values_));
  EXPECT_EQ(Metric(http, "ingot_http_write_errors_total"), 0);
  ExpectReadBackExactly();
}

// The influx client with a user and password ([auth]): sent as u/p URL parameters, accepted;
// a wrong password fails the client's writes with 401 and stores nothing.
TEST_F(RealClients, InfluxClientWithCredentialsOverHttpWrite) {
  ASSERT_EQ(node_->Stop(SIGTERM), 0) << node_->log();  // the fixture's node has no [auth]
  node_ = std::make_unique<NodeProcess>(
      data_dir_, std::vector<std::string>{"--set", "ingest.shards=2", "--set",
                                          "ingest.string_fields=drop", "--set",
                                          "auth.username=influx", "--set",
                                          "auth.password=se cret&p=x"});
  ASSERT_TRUE(node_->ok()) << node_->log();
  std::string refused;
  EXPECT_FALSE(RunWriter("influx_writer.js", node_->http_port(), 10, dir_.path(), &refused,
                         "INGOT_INFLUX_USERNAME=influx INGOT_INFLUX_PASSWORD=wrong"));
  ASSERT_NO_FATAL_FAILURE(RunClient("influx_writer.js", node_->http_port(),
                                    "INGOT_INFLUX_USERNAME=influx "
                                    "INGOT_INFLUX_PASSWORD='se cret&p=x'"));
  ASSERT_EQ(node_->Stop(SIGTERM), 0) << node_->log();
  EXPECT_TRUE(StoredExactly(data_dir_, expected_));  // the refused writes left nothing
}

}  // namespace
}  // namespace ingot::ingest
