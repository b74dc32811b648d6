// End-to-end ingest through the real ingotd: line protocol over real TCP and HTTP sockets, the
// node stopped by a signal, and the data directory reopened with Storage::Open to check that
// every good value is stored exactly (and nothing else).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chunk/storage.h"
#include "tests/e2e/node_process.h"
#include "tests/ingest/ingest_test_util.h"
#include "tests/ingest/remote_write_test_util.h"

namespace ingot::ingest {
namespace {

using ingot::testing::HttpGet;
using ingot::testing::HttpPost;
using ingot::testing::NodeProcess;
using ingot::testing::TcpSend;
using ingot::testing::TempDir;
using testutil::ExpectedData;
using testutil::FormatDouble;
using testutil::MetricValue;
using testutil::SeriesKeyOf;
using testutil::StoredExactly;

// Good lines with every stored type plus a string field; the expectation is filled alongside.
struct Workload {
  std::vector<std::string> lines;  // each with its '\n'
  ExpectedData expected;
  std::uint64_t points = 0;
  std::uint64_t string_fields = 0;
};

Workload MakeWorkload(std::uint64_t seed, int hosts, int times, const std::string& measurement) {
  Workload w;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> gauge(-500.0, 500.0);
  for (int t = 0; t < times; ++t) {
    for (int h = 0; h < hosts; ++h) {
      // (Built with += : GCC 12 warns falsely about `"literal" + std::string` here.)
      std::string host = "h";
      host += std::to_string(h);
      std::string rack = "r";
      rack += std::to_string(h % 3);
      const std::int64_t ts = 1'650'000'000'000'000'000 + t * 1'000'000'000ll + h * 1000;
      const double temp = gauge(rng);
      const double load = std::round(gauge(rng) * 100) / 100;
      const std::int64_t count = static_cast<std::int64_t>(rng() >> 12) - (1ll << 51);
      const bool up = (rng() & 1) != 0;
      w.lines.push_back(measurement + ",host=" + host + ",rack=" + rack +
                        " temp=" + FormatDouble(temp) + ",load=" + FormatDouble(load) +
                        ",count=" + std::to_string(count) + "i,up=" + (up ? "t" : "f") +
                        ",note=\"n " + std::to_string(t) + "\" " + std::to_string(ts) + "\n");
      const testutil::TagList tags = {{"host", host}, {"rack", rack}};
      w.expected.Add(SeriesKeyOf(measurement, tags, "temp"), ValueType::kFloat, ts, temp);
      w.expected.Add(SeriesKeyOf(measurement, tags, "load"), ValueType::kFloat, ts, load);
      w.expected.Add(SeriesKeyOf(measurement, tags, "count"), ValueType::kInteger, ts,
                     static_cast<double>(count));
      w.expected.Add(SeriesKeyOf(measurement, tags, "up"), ValueType::kBoolean, ts, up ? 1 : 0);
      w.points += 4;
      w.string_fields += 1;
    }
  }
  return w;
}

double Metric(unsigned short http_port, const std::string& sample) {
  const auto r = HttpGet(http_port, "/metrics");
  EXPECT_EQ(r.status, 200) << r.error;
  return MetricValue(r.body, sample);
}

// Waits until every TCP connection has ended on the node's side and at least `lines` lines were
// taken in. The deadline is a hang guard, not an expectation about speed.
void WaitForTcpIdle(unsigned short http_port, std::uint64_t lines) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((Metric(http_port, "ingot_connections") != 0 ||
          Metric(http_port, "ingot_lines_total") < static_cast<double>(lines)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(IngestE2E, TcpWithBadAndOverlongLinesThenSigterm) {
  TempDir dir;
  const std::string data_dir = dir.path() + "/data";
  NodeProcess node(data_dir, {"--set", "ingest.max_line_bytes=1024", "--set", "ingest.shards=3",
                              "--set", "ingest.io_threads=2"});
  ASSERT_TRUE(node.ok()) << node.log();

  Workload w = MakeWorkload(11, 30, 40, "tcp");
  // Mix in bad lines: malformed ones, lines a bit over the limit (which the server may see whole
  // or in pieces) and one longer than a connection's buffer.
  std::vector<std::string> all;
  std::uint64_t malformed = 0, too_long = 0;
  const std::string bad[] = {"no fields\n", "tcp,host=x temp=1 notatime\n", "tcp,host temp=1\n",
                             "tcp temp=+1\n", "tcp,host=x temp=1e999\n"};
  for (std::size_t i = 0; i < w.lines.size(); ++i) {
    all.push_back(w.lines[i]);
    if (i % 97 == 5) {
      all.push_back(bad[malformed % std::size(bad)]);
      ++malformed;
    }
    if (i % 301 == 7) {
      all.push_back("tcp,host=long temp=1,pad=\"" + std::string(1500 + i, 'p') + "\" 1\n");
      ++too_long;
    }
  }
  all.insert(all.begin() + 100, "tcp,host=huge pad=\"" + std::string(400'000, 'H') + "\"\n");
  ++too_long;
  all.insert(all.begin() + 50, "# a comment is a line too\n");

  // Three connections, each a contiguous share, each waiting for the server to close.
  constexpr int kConnections = 3;
  std::vector<std::string> payload(kConnections);
  for (std::size_t i = 0; i < all.size(); ++i) payload[i * kConnections / all.size()] += all[i];
  std::vector<std::thread> senders;
  for (int c = 0; c < kConnections; ++c) {
    senders.emplace_back([&, c] { EXPECT_TRUE(TcpSend(node.tcp_port(), payload[c])); });
  }
  for (auto& t : senders) t.join();

  const unsigned short http = node.http_port();
  WaitForTcpIdle(http, all.size());
  EXPECT_EQ(Metric(http, "ingot_lines_total"), static_cast<double>(all.size()));
  EXPECT_EQ(Metric(http, "ingot_lines_rejected_total{reason=\"malformed\"}"),
            static_cast<double>(malformed));
  EXPECT_EQ(Metric(http, "ingot_lines_rejected_total{reason=\"line_too_long\"}"),
            static_cast<double>(too_long));
  EXPECT_EQ(Metric(http, "ingot_points_accepted_total"), static_cast<double>(w.points));
  EXPECT_EQ(Metric(http, "ingot_points_received_total"), static_cast<double>(w.points));
  EXPECT_EQ(Metric(http, "ingot_points_rejected_total{reason=\"string_unsupported\"}"),
            static_cast<double>(w.string_fields));
  EXPECT_EQ(Metric(http, "ingot_points_rejected_total{reason=\"type_conflict\"}"), 0.0);
  EXPECT_GT(Metric(http, "ingot_bytes_received_total"), 0.0);
  EXPECT_EQ(Metric(http, "ingot_connections"), 0.0);

  ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();
  EXPECT_NE(node.log().find("max_line_bytes"), std::string::npos) << "skipped lines are logged";
  EXPECT_TRUE(StoredExactly(data_dir, w.expected));
}

TEST(IngestE2E, HttpWriteWithGzipPrecisionAndPartialWrites) {
  TempDir dir;
  const std::string data_dir = dir.path() + "/data";
  NodeProcess node(data_dir);
  ASSERT_TRUE(node.ok()) << node.log();
  const unsigned short http = node.http_port();
  EXPECT_EQ(HttpGet(http, "/ping").status, 204);

  ExpectedData expected;
  // gzip, milliseconds.
  std::string body;
  for (int i = 0; i < 500; ++i) {
    const double v = i * 0.25 - 17;
    body +=
        "web,path=/a\\ b v=" + FormatDouble(v) + " " + std::to_string(1'700'000'000'000 + i) + "\n";
    expected.Add(SeriesKeyOf("web", {{"path", "/a b"}}, "v"), ValueType::kFloat,
                 (1'700'000'000'000 + i) * 1'000'000ll, v);
  }
  auto r = HttpPost(http, "/write?db=ingot&precision=ms", testutil::GzipCompress(body),
                    "text/plain", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 204) << r.body << r.error;
  // Plain, seconds, no trailing newline (as the influx client sends).
  r = HttpPost(http, "/write?db=ingot&rp=autogen&precision=s", "web,path=/s n=5i 1700000001");
  EXPECT_EQ(r.status, 204) << r.body;
  expected.Add(SeriesKeyOf("web", {{"path", "/s"}}, "n"), ValueType::kInteger,
               1'700'000'001'000'000'000, 5);
  // The InfluxDB 2 path is served too (u = microseconds).
  r = HttpPost(http, "/api/v2/write?precision=u", "web,path=/v2 b=true 1700000002000000\n");
  EXPECT_EQ(r.status, 204) << r.body;
  expected.Add(SeriesKeyOf("web", {{"path", "/v2"}}, "b"), ValueType::kBoolean,
               1'700'000'002'000'000'000, 1);

  r = HttpPost(http, "/write?precision=fortnight", "web v=1 1\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("fortnight"), std::string::npos) << r.body;
  r = HttpPost(http, "/write", "garbage\n", "text/plain", {{"Content-Encoding", "gzip"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.content_type.find("json"), std::string::npos);

  r = HttpPost(http, "/write?precision=ns",
               "web,path=/p v=1 10\nweb,path=/p v=bad 20\nweb,path=/p v=3 30\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.rfind("{\"error\":\"partial write: ", 0), 0u) << r.body;
  EXPECT_NE(r.body.find("dropped=1"), std::string::npos) << r.body;
  expected.Add(SeriesKeyOf("web", {{"path", "/p"}}, "v"), ValueType::kFloat, 10, 1);
  expected.Add(SeriesKeyOf("web", {{"path", "/p"}}, "v"), ValueType::kFloat, 30, 3);

  ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();
  EXPECT_TRUE(StoredExactly(data_dir, expected));
}

// Writes `data` and closes at once, without waiting for anything from the server.
void WriteAndClose(unsigned short port, const std::string& data) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string_view rest = data;
  while (!rest.empty()) {
    const ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  ::close(fd);
}

TEST(IngestE2E, ClientThatWritesAndClosesImmediatelyLosesNothing) {
  TempDir dir;
  const std::string data_dir = dir.path() + "/data";
  NodeProcess node(data_dir, {"--set", "ingest.shards=2"});
  ASSERT_TRUE(node.ok()) << node.log();

  constexpr int kClients = 4;
  ExpectedData expected;
  std::vector<std::string> payload(kClients);
  std::uint64_t lines = 0;
  for (int c = 0; c < kClients; ++c) {
    const Workload w =
        MakeWorkload(100 + static_cast<std::uint64_t>(c), 20, 150, "close" + std::to_string(c));
    std::string& p = payload[static_cast<std::size_t>(c)];
    for (const auto& l : w.lines) p += l;
    p.pop_back();  // the last line has no newline: the close ends it
    lines += w.lines.size();
    expected.Merge(w.expected);
  }
  std::vector<std::thread> writers;
  for (int c = 0; c < kClients; ++c) {
    writers.emplace_back(
        [&, c] { WriteAndClose(node.tcp_port(), payload[static_cast<std::size_t>(c)]); });
  }
  for (auto& t : writers) t.join();

  // The clients are gone without waiting for anything; the node must still take in every line.
  const unsigned short http = node.http_port();
  WaitForTcpIdle(http, lines);
  EXPECT_EQ(Metric(http, "ingot_lines_total"), static_cast<double>(lines));
  EXPECT_EQ(Metric(http, "ingot_points_accepted_total"), static_cast<double>(expected.points()));
  ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();
  EXPECT_TRUE(StoredExactly(data_dir, expected));
}

TEST(IngestE2E, SigkillAfterAcknowledgedHttpWriteLosesNothing) {
  TempDir dir;
  const std::string data_dir = dir.path() + "/data";
  ExpectedData expected;
  {
    // The workload's string fields are dropped on purpose: every write is then a 204.
    NodeProcess node(data_dir, {"--set", "storage.wal_sync=always", "--set", "ingest.shards=2",
                                "--set", "ingest.string_fields=drop"});
    ASSERT_TRUE(node.ok()) << node.log();
    for (int batch = 0; batch < 5; ++batch) {
      const Workload w = MakeWorkload(300 + static_cast<std::uint64_t>(batch), 25, 8,
                                      "kill" + std::to_string(batch));
      std::string body;
      for (const auto& l : w.lines) body += l;
      const auto r = HttpPost(node.http_port(), "/write?db=x", body);
      ASSERT_EQ(r.status, 204) << r.body << r.error;
      expected.Merge(w.expected);
    }
    // No clean shutdown: only the WAL (synced before each 204) has the data.
    EXPECT_EQ(node.Stop(SIGKILL), 128 + SIGKILL);
  }
  EXPECT_TRUE(StoredExactly(data_dir, expected));
  // And the node itself starts on that directory and keeps taking writes.
  NodeProcess again(data_dir);
  ASSERT_TRUE(again.ok()) << again.log();
  ASSERT_EQ(HttpPost(again.http_port(), "/write", "after,restart=1 v=1 1\n").status, 204);
  expected.Add(SeriesKeyOf("after", {{"restart", "1"}}, "v"), ValueType::kFloat, 1, 1);
  ASSERT_EQ(again.Stop(SIGTERM), 0) << again.log();
  EXPECT_TRUE(StoredExactly(data_dir, expected));
}

// Each protocol's points land in its own counter, counted once durable; together they are the
// node-wide total (no WAL replay here).
TEST(IngestE2E, AcceptedPointsAreCountedByProtocol) {
  TempDir dir;
  NodeProcess node(dir.path() + "/data",
                   {"--set", "ingest.shards=2", "--set", "ingest.string_fields=drop"});
  ASSERT_TRUE(node.ok()) << node.log();
  const unsigned short http = node.http_port();
  const std::string tcp_sample = "ingot_points_accepted_by_protocol_total{protocol=\"tcp\"}";
  const std::string http_sample = "ingot_points_accepted_by_protocol_total{protocol=\"http\"}";
  const std::string remote_sample =
      "ingot_points_accepted_by_protocol_total{protocol=\"remote_write\"}";
  EXPECT_EQ(Metric(http, tcp_sample), 0.0);
  EXPECT_EQ(Metric(http, http_sample), 0.0);
  EXPECT_EQ(Metric(http, remote_sample), 0.0);

  // Different amounts per protocol, so that no counter can stand in for another.
  const Workload over_tcp = MakeWorkload(41, 7, 30, "viatcp");
  std::string payload;
  for (const auto& l : over_tcp.lines) payload += l;
  ASSERT_TRUE(TcpSend(node.tcp_port(), payload));
  WaitForTcpIdle(http, over_tcp.lines.size());
  EXPECT_EQ(Metric(http, tcp_sample), static_cast<double>(over_tcp.points));
  EXPECT_EQ(Metric(http, http_sample), 0.0);

  const Workload over_http = MakeWorkload(42, 3, 11, "viahttp");
  std::string body;
  for (const auto& l : over_http.lines) body += l;
  const auto written = HttpPost(http, "/write?precision=ns", body);
  ASSERT_EQ(written.status, 204) << written.body << written.error;
  EXPECT_EQ(Metric(http, http_sample), static_cast<double>(over_http.points));
  EXPECT_EQ(Metric(http, tcp_sample), static_cast<double>(over_tcp.points));

  prometheus::WriteRequest request;
  std::uint64_t samples = 0;
  for (int s = 0; s < 5; ++s) {
    std::vector<std::pair<std::int64_t, double>> points;
    for (int i = 0; i < 9; ++i) points.emplace_back(1'700'000'000'000 + i * 1000, s + i * 0.5);
    std::string instance = "i";
    instance += std::to_string(s);
    testutil::AddSeries(&request, {{"__name__", "viaremote"}, {"instance", instance}}, points);
    samples += points.size();
  }
  const auto remote =
      HttpPost(http, "/api/v1/write", testutil::Encode(request), "application/x-protobuf",
               {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}});
  ASSERT_EQ(remote.status, 204) << remote.body << remote.error;
  EXPECT_EQ(Metric(http, remote_sample), static_cast<double>(samples));
  EXPECT_EQ(Metric(http, tcp_sample), static_cast<double>(over_tcp.points));
  EXPECT_EQ(Metric(http, http_sample), static_cast<double>(over_http.points));
  EXPECT_EQ(Metric(http, "ingot_points_accepted_total"),
            static_cast<double>(over_tcp.points + over_http.points + samples));
  ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();
}

}  // namespace
}  // namespace ingot::ingest
