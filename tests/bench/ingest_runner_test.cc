// RunIngest against servers started by the test on ephemeral loopback ports: a raw TCP sink that
// keeps every byte, and a minimal HTTP server with /write and a Prometheus-style count query.

#include "bench/ingot_bench/ingest_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/ingot_bench/asio.h"
#include "bench/ingot_bench/batch_source.h"
#include "bench/ingot_bench/cpu_workload.h"

namespace ingot::bench {
namespace {

using asio::ip::tcp;

class LocalServer {
 public:
  enum class Mode { kRawTcp, kHttp };

  explicit LocalServer(Mode mode, unsigned write_status = 204)
      : mode_(mode), write_status_(write_status), acceptor_(ioc_) {
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(ioc_, Accept(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~LocalServer() {
    ioc_.stop();
    thread_.join();
  }

  uint16_t port() const { return port_; }

  // Waits until `connections` connections have been closed by the client, then returns what they
  // sent (raw bytes, or the bodies of /write requests), one connection after the other.
  std::string WaitForClosed(int connections) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (closed_ >= connections) return received_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "connections were not closed";
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

  int write_requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return write_requests_;
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
      asio::co_spawn(ioc_, mode_ == Mode::kRawTcp ? ServeRaw(std::move(socket))
                                                  : ServeHttp(std::move(socket)),
                     asio::detached);
    }
  }

  asio::awaitable<void> ServeRaw(tcp::socket socket) {
    std::string bytes;
    char buffer[65536];
    boost::system::error_code ec;
    for (;;) {
      const size_t n = co_await socket.async_read_some(
          asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
      bytes.append(buffer, n);
      if (ec) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    received_ += bytes;
    ++closed_;
  }

  asio::awaitable<void> ServeHttp(tcp::socket socket) {
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(uint64_t{1} << 30);
      co_await http::async_read(socket, buffer, parser,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
      http::request<http::string_body>& request = parser.get();
      http::response<http::string_body> response;
      response.version(11);
      response.keep_alive(true);
      const std::string target(request.target());
      if (target.starts_with("/write?db=bench&precision=ns")) {
        response.result(write_status_);
        std::lock_guard<std::mutex> lock(mu_);
        ++write_requests_;
        if (write_status_ == 204) received_ += request.body();
      } else if (target.starts_with("/api/v1/query?query=sum%28count_over_time")) {
        uint64_t values = 0;
        {
          std::lock_guard<std::mutex> lock(mu_);
          LineProtocolFile file;
          SplitLineProtocol(received_, 1000, &file);
          values = file.values;
        }
        response.result(200);
        response.body() = R"({"status":"success","data":{"resultType":"vector","result":[)"
                          R"({"metric":{},"value":[1,")" +
                          std::to_string(values) + R"("]}]}})";
      } else {
        response.result(404);
      }
      response.prepare_payload();
      co_await http::async_write(socket, response, asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++closed_;
  }

  const Mode mode_;
  const unsigned write_status_;
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string received_;    // guarded by mu_
  int closed_ = 0;          // guarded by mu_
  int write_requests_ = 0;  // guarded by mu_
};

std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string Expected(const IngestOptions& options) {
  CpuWorkloadOptions workload = options.workload;
  workload.total_lines = options.values / workload.fields;
  CpuWorkload generator(workload, 0, workload.hosts);
  ByteBuffer out;
  while (generator.Generate(1000, out) > 0) {
  }
  return std::string(out.view());
}

IngestOptions SmallRun(const std::string& target) {
  IngestOptions options;
  options.target = target;
  options.values = 12'340;  // 1234 lines: a partial last row of 100 hosts
  options.batch_lines = 100;
  options.quiet = true;
  options.timeout_ns = 5'000'000'000;
  return options;
}

TEST(IngestRunnerTest, TcpDeliversEveryByteOverSeveralConnections) {
  LocalServer server(LocalServer::Mode::kRawTcp);
  IngestOptions options = SmallRun("tcp://127.0.0.1:" + std::to_string(server.port()));
  options.connections = 3;
  IngestReport report;
  ASSERT_TRUE(RunIngest(options, &report).ok());
  const std::string received = server.WaitForClosed(3);
  const std::string expected = Expected(options);
  EXPECT_EQ(report.values, 12'340u);
  EXPECT_EQ(report.lines, 1'234u);
  EXPECT_EQ(report.bytes, expected.size());
  EXPECT_EQ(report.error_count(), 0u);
  EXPECT_EQ(received.size(), expected.size());
  EXPECT_EQ(SortedLines(received), SortedLines(expected));
}

TEST(IngestRunnerTest, HttpWritesBatchesAndVerifyCountsThem) {
  LocalServer server(LocalServer::Mode::kHttp);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  IngestOptions options = SmallRun(base + "/write");
  options.verify_url = base;
  options.verify_timeout_ns = 5'000'000'000;
  IngestReport report;
  ASSERT_TRUE(RunIngest(options, &report).ok());
  EXPECT_EQ(server.write_requests(), 13);  // 1234 lines in batches of 100
  EXPECT_EQ(report.batches, 13u);
  EXPECT_EQ(report.values, 12'340u);
  EXPECT_EQ(report.error_count(), 0u) << report.first_error;
  EXPECT_TRUE(report.has_write_latency);
  EXPECT_EQ(report.write_latency_us.count(), 13u);
  EXPECT_TRUE(report.verify.complete) << report.verify.last_error;
  EXPECT_EQ(report.verify.counted_values, 12'340u);
  EXPECT_EQ(server.WaitForClosed(1), Expected(options));
  const std::string json = IngestReportJson(report);
  EXPECT_NE(json.find("\"values\":12340"), std::string::npos) << json;
  EXPECT_NE(json.find("\"complete\":true"), std::string::npos) << json;
}

TEST(IngestRunnerTest, HttpErrorStatusesAreCountedByKind) {
  LocalServer server(LocalServer::Mode::kHttp, 400);
  IngestOptions options = SmallRun("http://127.0.0.1:" + std::to_string(server.port()) + "/write");
  options.values = 3'000;  // 3 batches
  IngestReport report;
  ASSERT_TRUE(RunIngest(options, &report).ok());
  EXPECT_EQ(report.values, 0u);
  ASSERT_EQ(report.errors.count("http_400"), 1u);
  EXPECT_EQ(report.errors.at("http_400"), 3u);
}

TEST(IngestRunnerTest, UnreachableServerGivesUpAndStops) {
  uint16_t port;
  {
    // A port that was just free: nothing listens there.
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }
  IngestOptions options = SmallRun("tcp://127.0.0.1:" + std::to_string(port));
  options.timeout_ns = 300'000'000;  // also how long failures go on before giving up
  IngestReport report;
  ASSERT_TRUE(RunIngest(options, &report).ok());
  EXPECT_EQ(report.values, 0u);
  EXPECT_GT(report.errors["connect"], 0u);
  EXPECT_EQ(report.errors["gave_up"], 1u);
}

TEST(IngestRunnerTest, RateLimitHoldsOverThreeSeconds) {
  LocalServer server(LocalServer::Mode::kRawTcp);
  IngestOptions options;
  options.target = "tcp://127.0.0.1:" + std::to_string(server.port());
  options.rate_values_per_s = 200'000;
  options.duration_ns = 3'000'000'000;
  options.values = 0;
  options.quiet = true;
  IngestReport report;
  ASSERT_TRUE(RunIngest(options, &report).ok());
  const std::string received = server.WaitForClosed(1);
  EXPECT_EQ(received.size(), report.bytes);
  // Generous bounds: this checks pacing, not the machine's speed.
  EXPECT_GT(report.values, 600'000 * 0.9);
  EXPECT_LT(report.values, 600'000 * 1.1);
  EXPECT_NEAR(report.send_seconds, 3.0, 0.5);
}

TEST(IngestRunnerTest, NewSeriesAreCountedAndVerifiedOverSeveralConnections) {
  LocalServer server(LocalServer::Mode::kHttp);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  IngestOptions options = SmallRun(base + "/write");
  options.connections = 3;
  options.workload.fields = 1;
  options.workload.new_series_ratio = 1;
  options.values = 1'234;  // one value per line: 1234 lines, 1234 new series
  options.verify_url = base;
  options.verify_timeout_ns = 5'000'000'000;
  IngestReport report;
  ASSERT_TRUE(RunIngest(options, &report).ok());
  EXPECT_EQ(report.error_count(), 0u) << report.first_error;
  EXPECT_EQ(report.lines, 1'234u);
  EXPECT_EQ(report.values, 1'234u);
  EXPECT_EQ(report.new_series, 1'234u);
  EXPECT_TRUE(report.verify.complete) << report.verify.last_error;
  EXPECT_EQ(report.verify.counted_values, 1'234u);
  EXPECT_GT(report.queryable_new_series_per_s(), 0);
  const std::vector<std::string> lines = SortedLines(server.WaitForClosed(3));
  EXPECT_EQ(lines, SortedLines(Expected(options)));
  std::vector<std::string> hosts;
  for (const std::string& line : lines) {
    const size_t begin = line.find("hostname=") + 9;
    hosts.push_back(line.substr(begin, line.find(',', begin) - begin));
  }
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(std::unique(hosts.begin(), hosts.end()), hosts.end()) << "a host was sent twice";
  const std::string json = IngestReportJson(report);
  EXPECT_NE(json.find("\"new_series\":1234"), std::string::npos) << json;
  EXPECT_NE(FormatIngestReport(report).find("new series    1234"), std::string::npos)
      << FormatIngestReport(report);
}

TEST(IngestRunnerTest, VerifyStopsAtOnceWhenTheServerRejectsTheCountQuery) {
  // The raw TCP server answers nothing HTTP-like, so point --verify at an HTTP server that 404s it:
  // asking again would not help, so the run must not wait out the verify timeout.
  LocalServer sink(LocalServer::Mode::kRawTcp);
  LocalServer http(LocalServer::Mode::kHttp);
  IngestOptions options = SmallRun("tcp://127.0.0.1:" + std::to_string(sink.port()));
  options.verify_url = "http://127.0.0.1:" + std::to_string(http.port()) + "/elsewhere";
  options.verify_timeout_ns = 60'000'000'000;
  IngestReport report;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(RunIngest(options, &report).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_FALSE(report.verify.complete);
  EXPECT_EQ(report.verify.polls, 1u);
  EXPECT_TRUE(report.verify.last_error.starts_with("http_404")) << report.verify.last_error;
}

TEST(IngestRunnerTest, RejectsFieldsAndRatiosOutOfRange) {
  IngestOptions options;
  EXPECT_TRUE(ValidateIngestOptions(options).ok());
  for (const uint32_t fields : {0u, 11u}) {
    options.workload.fields = fields;
    EXPECT_TRUE(ValidateIngestOptions(options).IsInvalidArgument()) << fields;
  }
  options.workload.fields = 1;
  options.values = 1;
  EXPECT_TRUE(ValidateIngestOptions(options).ok());
  for (const double ratio : {-0.1, 1.5, std::nan("")}) {
    options.workload.new_series_ratio = ratio;
    EXPECT_TRUE(ValidateIngestOptions(options).IsInvalidArgument()) << ratio;
  }
}

TEST(IngestRunnerTest, RejectsUnboundedRuns) {
  IngestOptions options;
  options.values = 0;
  options.duration_ns = 0;
  EXPECT_TRUE(ValidateIngestOptions(options).IsInvalidArgument());
  options.values = 100;
  options.connections = 101;
  EXPECT_TRUE(ValidateIngestOptions(options).IsInvalidArgument());
}

}  // namespace
}  // namespace ingot::bench
