// Crash loop against the real ingotd: writers over TCP and HTTP /write while the node is killed
// with SIGKILL at random moments and restarted on the same data directory, round after round.
// At the end every acknowledged point must be there with its exact value, and every stored point
// must be one that was sent, once.
//
// What counts as acknowledged (storage.wal_sync = always, so an acknowledged point has been
// written and fsynced to the WAL):
// - HTTP: a 204 answer to /write.
// - TCP: line protocol has no answer per batch. The server makes everything a connection sent
//   durable before it closes the connection (LineConsumer::Finish, then close), so a batch is sent
//   on its own connection, the client half-closes and waits for a clean end of stream. A killed
//   process' sockets are closed by the kernel in the same way, so the close alone proves nothing:
//   the batch counts only when the same node process then answers GET /health, i.e. it was alive
//   after the close and the close was its own.
//
// Environment: INGOT_CRASH_ROUNDS (default 5), INGOT_CRASH_SEED (default fixed; the seed is
// printed, the kill moments and batch sizes follow from it).
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/asio.h"
#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

constexpr int kTcpWriters = 2;
constexpr int kHttpWriters = 2;
constexpr int kSeriesPerWriter = 4;
constexpr int kSeries = (kTcpWriters + kHttpWriters) * kSeriesPerWriter;
constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;
constexpr std::int64_t kStepNs = 1'000'000'000;
constexpr int kMaxBatchLines = 400;

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoull(v, nullptr, 10);
}

std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The value of point `index` of `series`: decimals with two digits for even series (the ALP
// path), arbitrary finite bit patterns (subnormals, huge exponents) for odd ones.
double ValueOf(int series, std::int64_t index) {
  const std::uint64_t h = Mix(static_cast<std::uint64_t>(series) << 40 ^
                              static_cast<std::uint64_t>(index));
  if (series % 2 == 0) {
    return static_cast<double>(static_cast<std::int64_t>(h % 2'000'001) - 1'000'000) / 100.0;
  }
  const double d = std::bit_cast<double>(h);
  return std::isfinite(d) ? d : static_cast<double>(h >> 11) * 0x1p-40;
}

std::int64_t TsOf(std::int64_t index) { return kStartNs + index * kStepNs; }

void AppendLine(int series, std::int64_t index, std::string* out) {
  out->append("crash,w=");
  out->append(std::to_string(series / kSeriesPerWriter));
  out->append(",s=");
  out->append(std::to_string(series));
  out->append(" v=");
  char buf[64];
  // Shortest text that parses back to the same double.
  const auto r = std::to_chars(buf, buf + sizeof buf, ValueOf(series, index));
  out->append(buf, r.ptr);
  out->push_back(' ');
  out->append(std::to_string(TsOf(index)));
  out->push_back('\n');
}

// Per series: how many points were sent (indexes [0, sent)) and which of them were acknowledged.
struct SeriesLedger {
  std::int64_t sent = 0;
  std::vector<char> acked;
};

// One writer owns kSeriesPerWriter series and sends batches to them in turn; state carries over
// from round to round, so no timestamp is ever sent twice.
class Writer {
 public:
  Writer(int id, bool tcp, std::uint64_t seed) : id_(id), tcp_(tcp), rng_(seed) {}

  // Sends batches until `stop`; `tcp_port`/`http_port` belong to one node process.
  void Run(unsigned short tcp_port, unsigned short http_port, const std::atomic<bool>& stop) {
    std::unique_ptr<HttpConnection> http;
    while (!stop.load()) {
      std::string body;
      const int lines = std::uniform_int_distribution<int>(1, kMaxBatchLines)(rng_);
      const int first_series = id_ * kSeriesPerWriter;
      std::int64_t begin[kSeriesPerWriter];
      for (int s = 0; s < kSeriesPerWriter; ++s) begin[s] = ledger_[s].sent;
      for (int i = 0; i < lines; ++i) {
        const int s = i % kSeriesPerWriter;
        AppendLine(first_series + s, ledger_[s].sent, &body);
        ++ledger_[s].sent;
        ledger_[s].acked.push_back(0);
      }
      bool acked = false;
      if (tcp_) {
        acked = SendTcpBatch(tcp_port, body) && HttpGet(http_port, "/health").status == 200;
      } else {
        if (http == nullptr || !http->connected()) http = std::make_unique<HttpConnection>(http_port);
        const HttpResult r = http->Post("/write?precision=ns", body);
        acked = r.status == 204;
        if (r.status == 0) http.reset();  // the node is gone (or the connection broke)
      }
      ++batches_;
      if (acked) {
        ++acked_batches_;
        for (int s = 0; s < kSeriesPerWriter; ++s) {
          for (std::int64_t i = begin[s]; i < ledger_[s].sent; ++i) ledger_[s].acked[i] = 1;
        }
      } else {
        // Typically the node was killed; do not spin on refused connections.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }

  const SeriesLedger& ledger(int s) const { return ledger_[s]; }
  std::uint64_t batches() const { return batches_; }
  std::uint64_t acked_batches() const { return acked_batches_; }

 private:
  // Sends `body` on a new connection and half-closes it; true when the server then closed the
  // stream cleanly (end of stream, not a reset or an error).
  static bool SendTcpBatch(unsigned short port, const std::string& body) {
    boost::system::error_code ec;
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec) return false;
    const timeval timeout{30, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    asio::write(socket, asio::buffer(body), ec);
    if (ec) return false;
    socket.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    if (ec) return false;
    char buf[64];
    while (!ec) socket.read_some(asio::buffer(buf), ec);
    return ec == asio::error::eof;
  }

  const int id_;
  const bool tcp_;
  std::mt19937_64 rng_;
  SeriesLedger ledger_[kSeriesPerWriter];
  std::uint64_t batches_ = 0;
  std::uint64_t acked_batches_ = 0;
};

struct StoredSeries {
  std::vector<std::int64_t> ts_ns;
  std::vector<double> values;
};

// Reads every crash_v series through the binary export; keyed by the label s. Fails the test on
// a malformed stream.
void ExportAll(unsigned short port, std::map<int, StoredSeries>* out) {
  const HttpResult r =
      HttpGet(port, "/api/v1/export?format=binary&match%5B%5D=crash_v");
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  const std::string& b = r.body;
  ASSERT_GE(b.size(), 8u);
  ASSERT_EQ(b.compare(0, 4, "INGX"), 0);
  ASSERT_EQ(b[4], 1);
  std::size_t pos = 8;
  StoredSeries* current = nullptr;
  for (;;) {
    ASSERT_LE(pos + 8, b.size()) << "export cut short";
    std::uint32_t tag, length;
    std::memcpy(&tag, b.data() + pos, 4);
    std::memcpy(&length, b.data() + pos + 4, 4);
    pos += 8;
    if (tag == 4) break;
    ASSERT_NE(tag, 3u) << b.substr(pos, length);
    if (tag == 1) {
      ASSERT_LE(pos + length, b.size());
      const auto labels = nlohmann::json::parse(b.substr(pos, length), nullptr, false);
      ASSERT_FALSE(labels.is_discarded());
      ASSERT_TRUE(labels.contains("s")) << labels.dump();
      const int s = std::stoi(labels["s"].get<std::string>());
      ASSERT_TRUE(s >= 0 && s < kSeries) << "a series that was never sent: " << labels.dump();
      ASSERT_EQ(labels["w"].get<std::string>(), std::to_string(s / kSeriesPerWriter));
      ASSERT_EQ(labels.size(), 3u) << labels.dump();
      ASSERT_EQ(out->count(s), 0u) << "series exported twice: " << labels.dump();
      current = &(*out)[s];
      pos += (length + 7) & ~std::size_t{7};
    } else {
      ASSERT_EQ(tag, 2u);
      ASSERT_NE(current, nullptr);
      ASSERT_LE(pos + 16 * std::size_t{length}, b.size());
      for (std::uint32_t i = 0; i < length; ++i) {
        std::int64_t ts;
        double v;
        std::memcpy(&ts, b.data() + pos + 8 * i, 8);
        std::memcpy(&v, b.data() + pos + 8 * (length + i), 8);
        current->ts_ns.push_back(ts);
        current->values.push_back(v);
      }
      pos += 16 * std::size_t{length};
    }
  }
}

struct Verified {
  std::uint64_t acknowledged = 0;
  std::uint64_t stored = 0;
};

// Every acknowledged point is stored with its exact value; every stored point was sent, once.
void VerifyNode(unsigned short port, const std::vector<std::unique_ptr<Writer>>& writers,
                std::uint64_t seed, Verified* result) {
  std::map<int, StoredSeries> stored;
  ExportAll(port, &stored);
  if (::testing::Test::HasFatalFailure()) return;
  for (int s = 0; s < kSeries; ++s) {
    const SeriesLedger& ledger = writers[s / kSeriesPerWriter]->ledger(s % kSeriesPerWriter);
    const StoredSeries& got = stored[s];
    std::size_t next = 0;  // position in got
    for (std::int64_t i = 0; i < ledger.sent; ++i) {
      const bool present = next < got.ts_ns.size() && got.ts_ns[next] == TsOf(i);
      if (ledger.acked[i]) {
        ++result->acknowledged;
        ASSERT_TRUE(present) << "seed " << seed << ": acknowledged point " << i << " of series "
                             << s << " (ts " << TsOf(i) << ") is missing";
      }
      if (!present) continue;
      const double want = ValueOf(s, i);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(got.values[next]), std::bit_cast<std::uint64_t>(want))
          << "seed " << seed << ": series " << s << " point " << i << ": stored "
          << got.values[next] << ", sent " << want;
      ++next;
      ++result->stored;
    }
    ASSERT_EQ(next, got.ts_ns.size())
        << "seed " << seed << ": series " << s << " holds a point that was never sent (ts "
        << got.ts_ns[next] << ") or a point twice; " << ledger.sent << " sent";
  }
}

TEST(CrashLoop, AcknowledgedPointsSurviveKillNineOverTcpAndHttp) {
  const std::uint64_t rounds = EnvOr("INGOT_CRASH_ROUNDS", 5);
  const std::uint64_t seed = EnvOr("INGOT_CRASH_SEED", 20240917);
  std::printf("crash loop: seed %llu, %llu rounds (INGOT_CRASH_SEED, INGOT_CRASH_ROUNDS)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(rounds));
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);

  TempDir dir;
  const std::string data = dir.path() + "/data";
  // Small WAL and checkpoint thresholds, so kills also land during checkpoints and seals.
  const std::vector<std::string> args = {
      "--set", "storage.wal_sync=always",         "--set", "storage.wal_max_bytes=1048576",
      "--set", "storage.checkpoint_interval_ms=1000", "--set", "ingest.shards=2",
      "--set", "ingest.io_threads=2",             "--set", "query.write_workers=2",
      "--set", "query.workers=2"};

  std::vector<std::unique_ptr<Writer>> writers;
  for (int w = 0; w < kTcpWriters + kHttpWriters; ++w) {
    writers.push_back(std::make_unique<Writer>(w, w < kTcpWriters, Mix(seed + w)));
  }

  for (std::uint64_t round = 0; round < rounds; ++round) {
    NodeProcess node(data, args);
    ASSERT_TRUE(node.ok()) << "round " << round << ": " << node.log();
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (auto& w : writers) {
      threads.emplace_back([&w, &node, &stop] { w->Run(node.tcp_port(), node.http_port(), stop); });
    }
    const int kill_after_ms = std::uniform_int_distribution<int>(50, 1500)(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(kill_after_ms));
    const int code = node.Stop(SIGKILL);
    stop.store(true);
    for (auto& t : threads) t.join();
    // Anything else means the node died on its own (a crash, a sanitizer report) before the kill.
    ASSERT_EQ(code, 128 + SIGKILL) << "round " << round << ": " << node.log();
  }

  std::uint64_t sent = 0, batches = 0, acked_batches = 0;
  for (int s = 0; s < kSeries; ++s) sent += writers[s / kSeriesPerWriter]->ledger(s % kSeriesPerWriter).sent;
  for (const auto& w : writers) {
    batches += w->batches();
    acked_batches += w->acked_batches();
  }

  NodeProcess node(data, args);
  ASSERT_TRUE(node.ok()) << node.log();
  Verified after_crash;
  VerifyNode(node.http_port(), writers, seed, &after_crash);
  if (HasFatalFailure()) return;
  std::printf("crash loop: %llu rounds, %llu of %llu batches acknowledged, %llu points sent, "
              "%llu acknowledged, %llu stored, all verified\n",
              static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(acked_batches),
              static_cast<unsigned long long>(batches), static_cast<unsigned long long>(sent),
              static_cast<unsigned long long>(after_crash.acknowledged),
              static_cast<unsigned long long>(after_crash.stored));
  ::testing::Test::RecordProperty("points_acknowledged", std::to_string(after_crash.acknowledged));
  ::testing::Test::RecordProperty("points_stored", std::to_string(after_crash.stored));
  EXPECT_GT(after_crash.acknowledged, 0u);

  // A clean stop after the crashes keeps the same points.
  ASSERT_EQ(node.Stop(SIGTERM), 0) << node.log();
  NodeProcess again(data, args);
  ASSERT_TRUE(again.ok()) << again.log();
  Verified after_stop;
  VerifyNode(again.http_port(), writers, seed, &after_stop);
  if (HasFatalFailure()) return;
  EXPECT_EQ(after_stop.stored, after_crash.stored);
  EXPECT_EQ(again.Stop(SIGTERM), 0) << again.log();
}

}  // namespace
}  // namespace ingot::testing
