// Real Prometheus-protocol peers against the real ingotd, each started here on free loopback ports
// with a temporary directory (never the ports of the services Debian's packages may run):
//
// - Prometheus scrapes ingotd's own /metrics every second and remote-writes to it; the raw samples
//   Prometheus holds (an instant query of `name{...}[5m]`) equal Ingot's answer to the same query,
//   series for series, timestamp for timestamp, value text for value text (Prometheus prints the
//   shortest text that parses back to the same double, so equal text is equal bits).
// - A second Prometheus with `remote_read` to ingotd returns a series only Ingot has (written as
//   line protocol) with exactly its values.
// - vmagent takes line protocol on its -influxListenAddr and remote-writes it to ingotd; every
//   value reads back exact.
//
// A test skips when its peer binary (Debian packages `prometheus`, `victoria-metrics`; ./dev
// installs them) is missing. Waits are bounded polls; nothing is timed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/url_encoding.h"
#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The first executable `name` on PATH (or the absolute path), "" when there is none.
std::string FindBinary(const std::string& name) {
  if (!name.empty() && name[0] == '/') return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  dirs += ":/usr/bin:/usr/sbin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// A loopback port free right now (the peer binds it a moment later).
unsigned short FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  unsigned short port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// A peer process with its output in a log file; stopped (TERM, then KILL) when destroyed.
class Peer {
 public:
  Peer(const std::string& binary, const std::vector<std::string>& args, const std::string& log)
      : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~Peer() { Stop(); }

  bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }
  std::string log() const {
    std::ifstream in(log_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

// Polls `done` every 100 ms for at most `seconds` (a hang guard, not a timing assertion).
bool WaitFor(int seconds, const std::function<bool()>& done) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// An instant query's `data.result` (null when the request failed).
Json InstantQuery(unsigned short port, const std::string& query, const std::string& time) {
  const HttpResult r = HttpGet(port, "/api/v1/query?query=" + UrlEncode(query) + "&time=" + time);
  if (r.status != 200) return nullptr;
  const Json j = Json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("data")) return nullptr;
  return j["data"]["result"];
}

// A matrix result as metric (labels JSON text) -> [[t, "value"], ...], in a canonical order.
std::map<std::string, Json> MatrixBySeries(const Json& result) {
  std::map<std::string, Json> out;
  if (!result.is_array()) return out;
  for (const Json& series : result) out[series["metric"].dump()] = series["values"];
  return out;
}

std::string TimeText(std::int64_t ms) {
  return std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class PrometheusClients : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_unique<NodeProcess>(dir_.path() + "/ingot");
    ASSERT_TRUE(node_->ok()) << node_->log();
  }

  TempDir dir_;
  std::unique_ptr<NodeProcess> node_;
};

TEST_F(PrometheusClients, PrometheusRemoteWriteMatchesItsOwnTsdbAndRemoteReadsIngot) {
  const std::string prometheus = FindBinary("prometheus");
  if (prometheus.empty()) {
    GTEST_SKIP() << "the prometheus binary is not installed (Debian package prometheus; ./dev "
                    "test installs it)";
  }
  const unsigned short ingot = node_->http_port();
  const unsigned short port = FreePort();
  const std::string config = dir_.path() + "/prometheus.yml";
  WriteFile(config,
            "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            "scrape_configs:\n"
            "  - job_name: ingot\n"
            "    static_configs:\n"
            "      - targets: ['127.0.0.1:" +
                std::to_string(ingot) +
                "']\n"
                "remote_write:\n"
                "  - url: http://127.0.0.1:" +
                std::to_string(ingot) +
                "/api/v1/write\n"
                "    queue_config:\n"
                "      batch_send_deadline: 200ms\n"
                "      min_backoff: 50ms\n"
                "      max_backoff: 1s\n");
  Peer peer(prometheus,
            {"--config.file=" + config, "--storage.tsdb.path=" + dir_.path() + "/prom-data",
             "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"},
            dir_.path() + "/prometheus.log");

  // A few scrapes in Prometheus' own TSDB.
  ASSERT_TRUE(WaitFor(60,
                      [&] {
                        const Json r = InstantQuery(port, "count_over_time(up{job=\"ingot\"}[5m])",
                                                    TimeText(NowMs()));
                        return r.is_array() && !r.empty() &&
                               std::stod(r[0]["value"][1].get<std::string>()) >= 5;
                      }))
      << "Prometheus did not scrape ingotd 5 times:\n"
      << peer.log();

  // Raw samples up to a moment a little in the past, which remote write delivers shortly.
  const std::string at = TimeText(NowMs() - 2000);
  const std::vector<std::string> selectors = {
      "up{job=\"ingot\"}",
      "scrape_duration_seconds{job=\"ingot\"}",
      "scrape_samples_scraped{job=\"ingot\"}",
      "ingot_remote_write_samples_total",
      "{__name__=~\"ingot_remote_write_requests_rejected_total|ingot_queries_total\"}",
  };
  for (const std::string& selector : selectors) {
    const std::string query = selector + "[5m]";
    const Json theirs = InstantQuery(port, query, at);
    ASSERT_TRUE(theirs.is_array()) << query << "\n" << peer.log();
    ASSERT_FALSE(theirs.empty()) << query;
    const auto expected = MatrixBySeries(theirs);
    std::map<std::string, Json> ours;
    const bool same = WaitFor(20, [&] {
      ours = MatrixBySeries(InstantQuery(ingot, query, at));
      return ours == expected;
    });
    EXPECT_TRUE(same) << query << "\nPrometheus: " << theirs.dump().substr(0, 1500)
                      << "\nIngot: " << Json(ours).dump().substr(0, 1500);
    std::size_t samples = 0;
    for (const auto& [metric, values] : expected) samples += values.size();
    EXPECT_GE(samples, 2u) << query;
  }
  const HttpResult metrics = HttpGet(ingot, "/metrics");
  EXPECT_NE(metrics.body.find("ingot_remote_write_requests_total "), std::string::npos);
  peer.Stop();

  // A series only Ingot has, written as line protocol at whole milliseconds.
  const std::int64_t base_ms = NowMs() - 60'000;
  const std::vector<double> values = {1.5, -0.25, 1e-300, 123456789.123456789, 0.1, 7};
  std::string lines;
  for (std::size_t i = 0; i < values.size(); ++i) {
    char value[64];
    std::snprintf(value, sizeof(value), "%.17g", values[i]);
    lines += "ingot_only,host=a value=" + std::string(value) + " " +
             std::to_string((base_ms + 5000 * static_cast<std::int64_t>(i)) * 1'000'000) + "\n";
  }
  const HttpResult written = HttpPost(ingot, "/write?precision=ns", lines);
  ASSERT_EQ(written.status, 204) << written.body;

  const unsigned short reader_port = FreePort();
  const std::string reader_config = dir_.path() + "/reader.yml";
  WriteFile(reader_config,
            "global:\n"
            "  scrape_interval: 1h\n"
            "remote_read:\n"
            "  - url: http://127.0.0.1:" +
                std::to_string(ingot) +
                "/api/v1/read\n"
                "    read_recent: true\n");
  Peer reader(
      prometheus,
      {"--config.file=" + reader_config, "--storage.tsdb.path=" + dir_.path() + "/reader-data",
       "--web.listen-address=127.0.0.1:" + std::to_string(reader_port), "--log.level=warn"},
      dir_.path() + "/reader.log");
  const std::string read_at = TimeText(base_ms + 5000 * static_cast<std::int64_t>(values.size()));
  Json result;
  ASSERT_TRUE(WaitFor(30,
                      [&] {
                        result = InstantQuery(reader_port, "ingot_only_value[5m]", read_at);
                        return result.is_array() && !result.empty();
                      }))
      << "the remote-reading Prometheus did not answer:\n"
      << reader.log();
  ASSERT_EQ(result.size(), 1u) << result.dump();
  EXPECT_EQ(result[0]["metric"], Json({{"__name__", "ingot_only_value"}, {"host", "a"}}));
  const Json& got = result[0]["values"];
  ASSERT_EQ(got.size(), values.size()) << got.dump();
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(got[i][0].get<double>() * 1000,
              static_cast<double>(base_ms + 5000 * static_cast<std::int64_t>(i)));
    const double v = std::stod(got[i][1].get<std::string>());
    EXPECT_EQ(std::bit_cast<std::uint64_t>(v), std::bit_cast<std::uint64_t>(values[i]))
        << i << ": " << got[i].dump();
  }
  const HttpResult after = HttpGet(ingot, "/metrics");
  EXPECT_NE(after.body.find("ingot_remote_read_requests_total "), std::string::npos);
}

TEST_F(PrometheusClients, VmagentRelaysLineProtocolByRemoteWrite) {
  const std::string vmagent = FindBinary("vmagent");
  if (vmagent.empty()) {
    GTEST_SKIP() << "the vmagent binary is not installed (Debian package victoria-metrics; ./dev "
                    "test installs it)";
  }
  const unsigned short ingot = node_->http_port();
  const unsigned short influx_port = FreePort();
  const unsigned short http_port = FreePort();
  Peer peer(vmagent,
            {"-influxListenAddr=127.0.0.1:" + std::to_string(influx_port),
             "-httpListenAddr=127.0.0.1:" + std::to_string(http_port),
             "-remoteWrite.url=http://127.0.0.1:" + std::to_string(ingot) + "/api/v1/write",
             "-remoteWrite.tmpDataPath=" + dir_.path() + "/vmagent",
             "-remoteWrite.flushInterval=100ms", "-loggerLevel=WARN"},
            dir_.path() + "/vmagent.log");
  ASSERT_TRUE(WaitFor(30, [&] { return HttpGet(http_port, "/health").status == 200; }))
      << peer.log();

  // Three series of 200 points each, a second apart, values with every number of decimals.
  const std::int64_t base_ms = NowMs() - 600'000;
  constexpr int kPoints = 200;
  std::map<std::string, std::vector<std::pair<std::int64_t, double>>> expected;
  std::string lines;
  for (int i = 0; i < kPoints; ++i) {
    const std::int64_t ms = base_ms + 1000 * i;
    const double load = 0.01 * ((i * 7919) % 10007) - 40;
    const double temp = 1e-5 * i + 1e6 / (i + 3);
    const double count = static_cast<double>(i) * 1e9 + 7;
    char text[200];
    std::snprintf(text, sizeof(text), "relay,host=h0 load=%.17g,temp=%.17g %lld\n", load, temp,
                  static_cast<long long>(ms * 1'000'000));
    lines += text;
    std::snprintf(text, sizeof(text), "relay_count,host=h0 total=%.17g %lld\n", count,
                  static_cast<long long>(ms * 1'000'000));
    lines += text;
    expected["relay_load"].emplace_back(ms, load);
    expected["relay_temp"].emplace_back(ms, temp);
    expected["relay_count_total"].emplace_back(ms, count);
  }
  ASSERT_TRUE(TcpSend(influx_port, lines));

  const std::string at = TimeText(base_ms + 1000 * kPoints);
  for (const auto& [name, points] : expected) {
    Json result;
    const bool all = WaitFor(30, [&] {
      result = InstantQuery(ingot, name + "{host=\"h0\"}[15m]", at);
      return result.is_array() && result.size() == 1 && result[0]["values"].size() == points.size();
    });
    ASSERT_TRUE(all) << name << ": " << result.dump().substr(0, 1000) << "\n" << peer.log();
    EXPECT_EQ(result[0]["metric"], Json({{"__name__", name}, {"host", "h0"}}));
    const Json& values = result[0]["values"];
    for (std::size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(std::llround(values[i][0].get<double>() * 1000), points[i].first) << name << i;
      const double v = std::stod(values[i][1].get<std::string>());
      EXPECT_EQ(std::bit_cast<std::uint64_t>(v), std::bit_cast<std::uint64_t>(points[i].second))
          << name << " point " << i << ": " << values[i].dump();
    }
  }
  const HttpResult metrics = HttpGet(ingot, "/metrics");
  EXPECT_NE(metrics.body.find("ingot_remote_write_samples_total "), std::string::npos);
}

}  // namespace
}  // namespace ingot::testing
