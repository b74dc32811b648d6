// A cluster end to end, on loopback only, everything started and stopped here: three nats-server
// processes in one JetStream cluster and the real ingotd binary as cluster nodes (8 partitions,
// each on 2 nodes, the log replicated on the 3 servers, leases renewed every 200 ms and expiring
// after 2 s). One writer sends numbered points to node A over HTTP /write (acknowledged with 204),
// over TCP and over Prometheus remote write, and the test checks, through other nodes, that every acknowledged point is stored
// exactly once (an instant query of `cl_v[1h]` returns the raw points of every series) while:
//   1. node B is killed with SIGKILL mid-stream;
//   2. B, down past the grace (its partitions moved to A and C), restarts: it takes its
//      partitions back, catches up (lag 0 on them) and answers as C does;
//   3. a fourth node D joins with an empty data directory: partitions move to it, and queries
//      through C stay complete during the move;
//   4. one NATS server is killed: writes (retried on 503) and reads go on.
// Waits are bounded polls; nothing is timed. Skips when nats-server is not installed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/nats/nats_log.h"
#include "config/url_encoding.h"
#include "tests/cluster/nats_process.h"
#include "tests/e2e/node_process.h"
#include "tests/ingest/remote_write_test_util.h"
#include "tests/support/temp_dir.h"

namespace ingot::testing {
namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr int kSeries = 16;
constexpr std::int64_t kBaseSeconds = 1'700'000'000;  // points at kBaseSeconds + n

// Polls `ready` every 100 ms until it holds or `seconds` pass.
template <typename Fn>
bool WaitFor(int seconds, Fn ready) {
  const auto deadline = SteadyClock::now() + std::chrono::seconds(seconds);
  while (SteadyClock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ready();
}

class Node {
 public:
  Node(std::string id, const std::string& nats_urls, std::string data_dir)
      : id_(std::move(id)), nats_urls_(nats_urls), data_dir_(std::move(data_dir)) {
    Start();
  }
  void Start() {
    process_ = std::make_unique<NodeProcess>(
        data_dir_, std::vector<std::string>{
                       "--set", "cluster.name=e2e", "--set", "cluster.node_id=" + id_, "--set",
                       "cluster.nats_urls=" + nats_urls_, "--set", "cluster.partitions=8",
                       "--set", "cluster.replication=2", "--set", "cluster.stream_replicas=3",
                       "--set", "cluster.lease_renew_ms=200", "--set", "cluster.lease_ttl_ms=2000",
                       "--set", "cluster.dead_node_grace_ms=4000", "--set",
                       "cluster.publish_timeout_ms=20000", "--set", "ingest.shards=1", "--set",
                       "storage.wal_sync=interval"});
  }
  void Kill() { process_->Stop(SIGKILL); }
  bool ok() const { return process_->ok(); }
  std::string log() { return process_->log(); }
  unsigned short http() const { return process_->http_port(); }
  unsigned short tcp() const { return process_->tcp_port(); }
  const std::string& id() const { return id_; }

  Json Status() {
    const HttpResult r = HttpGet(http(), "/internal/cluster/status");
    if (r.status != 200) {
      std::printf("status of %s: %d %s %s\n", id_.c_str(), r.status, r.error.c_str(),
                  r.body.c_str());
      return Json::object();
    }
    return Json::parse(r.body, nullptr, false);
  }
  // Whether this node sees `live` nodes alive and has applied everything of the partitions it
  // consumes, and consumes every partition it owns.
  bool CaughtUp(std::size_t live) {
    const Json s = Status();
    if (!s.contains("partitions")) return false;
    std::size_t n = 0;
    for (const auto& m : s["members"]) n += m["live"].get<bool>();
    if (n != live) return false;
    for (const auto& p : s["partitions"]) {
      bool mine = false;
      for (const auto& o : p["owners"]) mine |= o.get<std::string>() == id_;
      if (mine != p["consuming"].get<bool>()) return false;
      if (mine && (!p.contains("lag") || p["lag"].get<std::uint64_t>() != 0)) return false;
    }
    return true;
  }

 private:
  const std::string id_;
  const std::string nats_urls_;
  const std::string data_dir_;
  std::unique_ptr<NodeProcess> process_;
};

// Points written and acknowledged: series index -> point numbers.
class Ledger {
 public:
  void Add(int series, int n) {
    std::lock_guard lock(mu_);
    points_[series].insert(n);
  }
  std::map<int, std::set<int>> Snapshot() {
    std::lock_guard lock(mu_);
    return points_;
  }

 private:
  std::mutex mu_;
  std::map<int, std::set<int>> points_;
};

// Point n of a series, its timestamp in seconds (HTTP, precision=s) or nanoseconds (TCP).
std::string Line(int series, int n, bool nanoseconds = false) {
  return "cl,host=h" + std::to_string(series) + " v=" + std::to_string(n) + " " +
         std::to_string(kBaseSeconds + n) + (nanoseconds ? "000000000\n" : "\n");
}

// Posts with `post` until it is answered 204, retrying a 503 or a failed connection for up to
// 30 s (a write the log could not store is safe to send again); false after anything else.
bool PostUntilAcknowledged(const std::function<HttpResult()>& post, const std::string& what) {
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (SteadyClock::now() < deadline) {
    const HttpResult r = post();
    if (r.status == 204) return true;
    if (r.status != 503 && r.status != 0) {
      ADD_FAILURE() << what << ": " << r.status << " " << r.body;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << what << " was not acknowledged within 30 s";
  return false;
}

// Writes point n of every series to `node` over HTTP (seconds precision); records the points
// once acknowledged.
bool WriteHttp(Node& node, int n, Ledger* ledger) {
  std::string body;
  for (int s = 0; s < kSeries; ++s) body += Line(s, n);
  if (!PostUntilAcknowledged([&] { return HttpPost(node.http(), "/write?precision=s", body); },
                             "write " + std::to_string(n))) {
    return false;
  }
  for (int s = 0; s < kSeries; ++s) ledger->Add(s, n);
  return true;
}

// Point n of every `rw_up` series over Prometheus remote write (timestamps in ms), retried as
// WriteHttp does.
bool WriteRemote(Node& node, int n, Ledger* ledger) {
  prometheus::WriteRequest request;
  for (int s = 0; s < kSeries; ++s) {
    std::string host = std::to_string(s);
    host.insert(host.begin(), 'h');
    ingest::testutil::AddSeries(&request, {{"__name__", "rw_up"}, {"host", host}},
                                {{(kBaseSeconds + n) * 1000, static_cast<double>(n)}});
  }
  const std::string body = ingest::testutil::Encode(request);
  const auto post = [&] {
    return HttpPost(node.http(), "/api/v1/write", body, "application/x-protobuf",
                    {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}});
  };
  if (!PostUntilAcknowledged(post, "remote write " + std::to_string(n))) return false;
  for (int s = 0; s < kSeries; ++s) ledger->Add(s, n);
  return true;
}

// What the last ReadAll on this thread was answered (status, then the error or the warnings), for
// the message of a failed comparison.
thread_local std::string last_answer;

// The raw points of every `metric` series as seen through `node`; empty on error.
std::map<int, std::set<int>> ReadAll(Node& node, const std::string& metric = "cl_v") {
  const std::string target = "/api/v1/query?query=" + UrlEncode(metric + "[1h]") +
                             "&time=" + std::to_string(kBaseSeconds + 3000);
  const HttpResult r = HttpGet(node.http(), target);
  std::map<int, std::set<int>> out;
  last_answer = "HTTP " + std::to_string(r.status) + " from node " + node.id() + ": ";
  if (r.status != 200) {
    last_answer += r.error + " " + r.body;
    return out;
  }
  const Json j = Json::parse(r.body, nullptr, false);
  if (!j.is_object()) return out;
  last_answer += j.contains("warnings") ? j["warnings"].dump() : "no warnings";
  for (const auto& series : j["data"]["result"]) {
    const int s = std::stoi(series["metric"]["host"].get<std::string>().substr(1));
    for (const auto& v : series["values"]) {
      const int n = std::stoi(v[1].get<std::string>());
      EXPECT_EQ(v[0].get<double>(), static_cast<double>(kBaseSeconds + n));
      // A point seen twice is a duplicate the cluster should have merged.
      if (!out[s].insert(n).second) out[s].insert(-1);
    }
  }
  return out;
}

std::string Diff(const std::map<int, std::set<int>>& want, const std::map<int, std::set<int>>& got) {
  std::string out;
  for (const auto& [s, points] : want) {
    auto it = got.find(s);
    std::size_t missing = 0;
    for (int n : points) missing += it == got.end() || it->second.count(n) == 0;
    if (missing) out += "series " + std::to_string(s) + ": " + std::to_string(missing) + " missing; ";
  }
  for (const auto& [s, points] : got) {
    auto it = want.find(s);
    std::size_t extra = 0;
    for (int n : points) extra += it == want.end() || it->second.count(n) == 0;
    if (extra) out += "series " + std::to_string(s) + ": " + std::to_string(extra) + " unexpected; ";
  }
  return out + "last answer: " + last_answer;
}

TEST(ClusterE2e, NodesAndALogServerFailWithoutLosingAcknowledgedPoints) {
  if (!NatsServerInstalled()) GTEST_SKIP() << "nats-server is not installed (./dev installs it)";
  NatsTestCluster nats(3);
  ASSERT_TRUE(nats.ok());
  TempDir dir_a, dir_b, dir_c, dir_d;
  Node a("a", nats.urls(), dir_a.path());
  ASSERT_TRUE(a.ok()) << a.log();
  Node b("b", nats.urls(), dir_b.path());
  ASSERT_TRUE(b.ok()) << b.log();
  Node c("c", nats.urls(), dir_c.path());
  ASSERT_TRUE(c.ok()) << c.log();
  ASSERT_TRUE(WaitFor(30, [&] { return a.CaughtUp(3) && b.CaughtUp(3) && c.CaughtUp(3); }))
      << a.Status().dump() << "\n" << a.log();

  Ledger ledger;
  int next = 0;
  // Over TCP too: lines without acknowledgement, sent and closed before B is killed; they count
  // once they are readable (checked with the rest).
  {
    std::string lines;
    for (int n = 0; n < 50; ++n) {
      for (int s = 0; s < kSeries; ++s) lines += Line(s, n, /*nanoseconds=*/true);
    }
    ASSERT_TRUE(TcpSend(a.tcp(), lines));
    for (int n = 0; n < 50; ++n) {
      for (int s = 0; s < kSeries; ++s) ledger.Add(s, n);
    }
    next = 50;
  }
  // 1. B killed while A takes writes (line protocol, and remote write into rw_up).
  Ledger remote;
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(WriteRemote(a, next, &remote));
    ASSERT_TRUE(WriteHttp(a, next++, &ledger));
  }
  b.Kill();
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(WriteRemote(a, next, &remote));
    ASSERT_TRUE(WriteHttp(a, next++, &ledger));
  }
  std::map<int, std::set<int>> got;
  EXPECT_TRUE(WaitFor(20, [&] { return (got = ReadAll(c)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got);
  EXPECT_TRUE(WaitFor(20, [&] {
    return (got = ReadAll(c, "rw_up")) == remote.Snapshot();
  })) << Diff(remote.Snapshot(), got);

  // B stays down past the grace: its partitions move to A and C, which catch them up from the log.
  const auto killed = SteadyClock::now();
  ASSERT_TRUE(WaitFor(30, [&] {
    const Json s = c.Status();
    bool b_owns = false;  // B leaves the members once down past the grace
    for (const auto& m : s.value("members", Json::array())) {
      if (m["id"] == "b") b_owns = m["owns_partitions"].get<bool>();
    }
    return !b_owns && a.CaughtUp(2) && c.CaughtUp(2);
  })) << c.Status().dump();
  std::printf("B's partitions were taken over and caught up %.2f s after B was killed\n",
              std::chrono::duration<double>(SteadyClock::now() - killed).count());
  EXPECT_TRUE(WaitFor(20, [&] { return (got = ReadAll(c)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got);

  // 2. B comes back, catches up, and answers as C does.
  const auto restarted = SteadyClock::now();
  b.Start();
  ASSERT_TRUE(b.ok()) << b.log();
  ASSERT_TRUE(WaitFor(30, [&] { return b.CaughtUp(3); })) << b.Status().dump();
  std::printf("B caught up %.2f s after its restart\n",
              std::chrono::duration<double>(SteadyClock::now() - restarted).count());
  EXPECT_TRUE(WaitFor(20, [&] { return (got = ReadAll(b)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got);
  EXPECT_EQ(ReadAll(b), ReadAll(c)) << last_answer;
  EXPECT_EQ(ReadAll(b, "rw_up"), remote.Snapshot()) << last_answer;

  // 3. D joins; queries through C stay complete while partitions move. A 204 means "in the
  // log": a point becomes visible once an owner applied it. So every read must hold everything
  // the read before it held (nothing disappears while partitions move), never a point twice,
  // and in the end everything acknowledged.
  EXPECT_TRUE(WaitFor(20, [&] { return (got = ReadAll(c)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got);
  std::atomic<bool> moving{true};
  std::atomic<int> incomplete{0}, reads{0};
  std::string first_bad;
  std::thread reader([&, previous = got]() mutable {
    while (moving) {
      const auto seen = ReadAll(c);
      std::string bad;
      for (const auto& [s, points] : seen) {
        if (points.count(-1)) bad += "series " + std::to_string(s) + " has a duplicate; ";
      }
      for (const auto& [s, points] : previous) {
        auto it = seen.find(s);
        for (int n : points) {
          if (it == seen.end() || it->second.count(n) == 0) {
            bad += "series " + std::to_string(s) + " lost point " + std::to_string(n) + "; ";
            break;
          }
        }
      }
      if (!bad.empty() && incomplete++ == 0) first_bad = bad;
      previous = seen;
      ++reads;
    }
  });
  const auto joined = SteadyClock::now();
  Node d("d", nats.urls(), dir_d.path());
  ASSERT_TRUE(d.ok()) << d.log();
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(WriteHttp(a, next++, &ledger));
  EXPECT_TRUE(WaitFor(40, [&] {
    return d.CaughtUp(4) && a.CaughtUp(4) && b.CaughtUp(4) && c.CaughtUp(4);
  })) << d.Status().dump();
  std::printf("D joined and every node caught up %.2f s after D started\n",
              std::chrono::duration<double>(SteadyClock::now() - joined).count());
  moving = false;
  reader.join();
  EXPECT_EQ(incomplete.load(), 0) << "of " << reads.load() << " reads; first: " << first_bad;
  std::size_t consumed_by_d = 0;
  const Json d_status = d.Status();
  if (d_status.contains("partitions")) {
    for (const auto& p : d_status["partitions"]) consumed_by_d += p["consuming"].get<bool>();
  }
  EXPECT_GT(consumed_by_d, 0u) << d_status.dump();
  EXPECT_TRUE(WaitFor(20, [&] { return (got = ReadAll(d)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got);

  // 4. The NATS server leading most partitions' streams is lost: writes (retried on 503) and
  // reads go on.
  int victim = 0;
  {
    std::unique_ptr<cluster::NatsClient> client;
    cluster::NatsOptions options;
    options.urls = nats.urls();
    ASSERT_TRUE(cluster::NatsClient::Connect(options, &client).ok());
    cluster::LogLayout layout;  // as the nodes made it
    layout.cluster = "e2e";
    layout.partitions = 8;
    layout.replicas = 3;
    layout.max_age_ns = 6ll * 3600 * 1'000'000'000;
    ASSERT_TRUE(client->log().EnsureLayout(layout).ok());
    std::map<std::string, int> led;
    for (cluster::PartitionId p = 0; p < 8; ++p) {
      std::string leader;
      if (client->PartitionLeader(p, &leader).ok()) ++led[leader];
    }
    int most = 0;
    for (const auto& [name, count] : led) {
      if (count > most && nats.IndexOf(name) >= 0) {
        most = count;
        victim = nats.IndexOf(name);
      }
    }
    std::printf("killing NATS server %s, leader of %d of 8 partitions' streams\n",
                nats.server(victim).name().c_str(), most);
  }
  nats.server(victim).Kill();
  double slowest = 0;
  for (int i = 0; i < 30; ++i) {
    const auto started = SteadyClock::now();
    ASSERT_TRUE(WriteHttp(a, next++, &ledger));
    slowest = std::max(
        slowest, std::chrono::duration<double>(SteadyClock::now() - started).count());
  }
  std::printf("after a NATS server was killed, the slowest write took %.2f s (retries included)\n",
              slowest);
  EXPECT_TRUE(WaitFor(30, [&] { return (got = ReadAll(c)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got);
  EXPECT_TRUE(WaitFor(30, [&] { return (got = ReadAll(b)) == ledger.Snapshot(); }))
      << Diff(ledger.Snapshot(), got) << b.Status().dump();
}

}  // namespace
}  // namespace ingot::testing
