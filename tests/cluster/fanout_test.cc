// The query fan-out over real nodes: storages in temporary directories, each serving
// /internal/cluster/select on a real HttpServer, and a ClusterFanout on one of them. Checks the
// merge of replicas, PromQL over the cluster against PromQL over one storage holding everything,
// partial answers when peers fail, credentials and TLS towards peers, the query's deadline on
// every node, damaged chunks skipped on peers, the fanned-out query routes, and the select wire
// format (round trips and a corruption suite).
#include "cluster/fanout.h"

#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chunk/series_key.h"
#include "chunk/series_reader.h"
#include "cluster/select_wire.h"
#include "config/asio.h"
#include "config/clock.h"
#include "config/metrics.h"
#include "node/cluster_routes.h"
#include "node/http_server.h"
#include "query/promql_engine.h"
#include "query/promql_parser.h"
#include "query/query_routes.h"
#include "query/series_catalog.h"
#include "tests/query/query_test_util.h"
#include "tests/support/chunk_damage.h"
#include "tests/support/file_damage.h"
#include "tests/support/point_batch.h"
#include "tests/support/temp_dir.h"

namespace ingot {
namespace {

using promql::FetchedSeries;
using promql::Labels;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::kSec;
using testing::kT0;
using testing::Points;

constexpr std::uint64_t kStaleBits = 0x7ff0000000000002ull;
const double kStale = std::bit_cast<double>(kStaleBits);

// A series as the tests write it: measurement, tags, field (metric `<measurement>_<field>`).
struct SeriesSpec {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;
  std::string field;
};

// One node: a storage, and an HTTP server answering its peers' selects.
class Node {
 public:
  explicit Node(const ManualClock& clock) : clock_(clock) {
    EXPECT_TRUE(Storage::Open(testing::TestStorageOptions(dir_.path()), 2, clock, &storage_).ok());
  }
  ~Node() {
    Stop();
    EXPECT_TRUE(storage_->Close().ok());
  }

  // Listens on a free port, requiring `auth`'s credentials and speaking TLS with `tls` when set.
  void Serve(const AuthOptions& auth = {}, const TlsOptions& tls = {}) {
    HttpServerOptions options;
    options.io_threads = 1;
    options.query_workers = 2;
    options.write_workers = 1;
    options.auth = auth;
    options.tls = tls;
    router_ = std::make_unique<HttpRouter>();
    RegisterClusterSelectRoute(*router_, *storage_, QueryOptions{});
    server_ = std::make_unique<HttpServer>(options, *router_);
    ASSERT_TRUE(server_->Start("127.0.0.1:0").ok());
    address_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  // Closes the listener too, as a node that went away: connections are refused.
  void Stop() { server_.reset(); }

  // Seals everything into the chunks family's files and flips a byte a third of the way into the
  // largest, inside its data blocks (index and footer are at the end); the storage is opened
  // again, without cached blocks. Call before Serve.
  void DamageChunks() {
    std::uint64_t largest = 0;
    const std::string target = testing::FlushedLargestChunksFile(*storage_, &largest);
    ASSERT_FALSE(target.empty());
    Reopen();
    ASSERT_TRUE(testing::FlipByte(target, largest / 3)) << target;
    Reopen();
  }

  // Appends `points` to the series (created when new).
  void Add(const SeriesSpec& spec, const Points& points) {
    auto tags = spec.tags;
    std::sort(tags.begin(), tags.end());
    std::vector<TagView> views;
    for (const auto& [k, v] : tags) views.emplace_back(k, v);
    std::string key;
    BuildSeriesKey(spec.measurement, views, spec.field, &key);
    SeriesId sid = 0;
    ValueType stored;
    ASSERT_TRUE(storage_->index().Resolve(key, ValueType::kFloat, &sid, &stored).ok());
    const std::vector<PointRecord> batch = testing::PointBatch(sid, points, ValueType::kFloat);
    if (batch.empty()) return;
    AppendResult result;
    ASSERT_TRUE(storage_->shard(storage_->ShardOf(sid)).Append(batch, &result).ok());
    ASSERT_EQ(result.accepted, batch.size());
  }

  Storage& storage() { return *storage_; }
  const std::string& address() const { return address_; }

 private:
  void Reopen() {
    ASSERT_TRUE(storage_->Close().ok());
    storage_.reset();
    ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir_.path()), 2, clock_, &storage_).ok());
  }

  const ManualClock& clock_;
  testing::TempDir dir_;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<HttpRouter> router_;
  std::unique_ptr<HttpServer> server_;
  std::string address_;
};

Selector Parse(const std::string& text) {
  Selector s;
  EXPECT_TRUE(ParseSelector(text, &s).ok()) << text;
  return s;
}

Labels L(std::vector<std::pair<std::string, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  return labels;
}

Points Range(std::int64_t from_s, std::int64_t to_s, std::int64_t step_s, double base) {
  Points p;
  for (std::int64_t t = from_s; t <= to_s; t += step_s) {
    p.emplace_back(kT0 + t * kSec, base + static_cast<double>(t));
  }
  return p;
}

bool SameBits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

class FanoutTest : public ::testing::Test {
 protected:
  ManualClock clock_{kT0};
};

// ---- (a) replicas merge exactly ----

TEST_F(FanoutTest, MergesReplicasByLabelSetAndUnitesPoints) {
  Node a(clock_), b(clock_), c(clock_);
  b.Serve();
  c.Serve();
  const SeriesSpec x{"x", {{"host", "h1"}}, "v"};
  const SeriesSpec only_b{"x", {{"host", "h2"}}, "v"};
  const SeriesSpec only_c{"x", {{"host", "h0"}}, "v"};
  const SeriesSpec other{"y", {{"host", "h1"}}, "v"};
  // x{host=h1}: a has [0, 990] s, b has [500, 1490] s (overlapping, same values), c has a
  // stretch in the middle of each plus a staleness marker only it holds.
  Points pa = Range(0, 990, 10, 100), pb = Range(500, 1490, 10, 100), pc = Range(495, 505, 5, 100);
  pc.emplace_back(kT0 + 1495 * kSec, kStale);
  a.Add(x, pa);
  b.Add(x, pb);
  c.Add(x, pc);
  b.Add(only_b, Range(0, 100, 10, 7));
  c.Add(only_c, Range(0, 100, 20, 9));
  a.Add(other, Range(0, 100, 10, 1));

  cluster::ClusterFanout fanout(
      a.storage(),
      [&] {
        return std::vector<std::string>{b.address(), c.address()};
      },
      5000);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  ASSERT_TRUE(fanout.Select(Parse("x_v"), kT0, kT0 + 2000 * kSec, 100, {}, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].labels, L({{"__name__", "x_v"}, {"host", "h0"}}));
  EXPECT_EQ(out[1].labels, L({{"__name__", "x_v"}, {"host", "h1"}}));
  EXPECT_EQ(out[2].labels, L({{"__name__", "x_v"}, {"host", "h2"}}));

  // The union, one point per timestamp.
  std::map<std::int64_t, double> want;
  for (const Points* p : {&pa, &pb, &pc}) {
    for (const auto& [t, v] : *p) want.emplace(t, v);
  }
  const FetchedSeries& merged = out[1];
  ASSERT_EQ(merged.ts.size(), want.size());
  ASSERT_EQ(merged.values.size(), want.size());
  std::size_t i = 0;
  for (const auto& [t, v] : want) {
    EXPECT_EQ(merged.ts[i], t) << i;
    EXPECT_TRUE(SameBits(merged.values[i], v)) << i;
    ++i;
  }
  EXPECT_TRUE(SameBits(merged.values.back(), kStale));  // the marker's bits survived the wire
  EXPECT_EQ(out[0].ts.size(), 6u);
  EXPECT_EQ(out[2].ts.size(), 11u);

  // A narrower range: only points inside it, series without any left out.
  ASSERT_TRUE(
      fanout.Select(Parse("x_v"), kT0 + 1000 * kSec, kT0 + 1100 * kSec, 100, {}, &out, &warnings)
          .ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ts.front(), kT0 + 1000 * kSec);
  EXPECT_EQ(out[0].ts.back(), kT0 + 1100 * kSec);
  EXPECT_EQ(out[0].ts.size(), 11u);

  // Labels only: the same series, no points.
  ASSERT_TRUE(
      fanout
          .SelectSeries(Parse("{host=~\"h.*\"}"), kT0, kT0 + 2000 * kSec, 100, {}, &out, &warnings)
          .ok());
  ASSERT_EQ(out.size(), 4u);
  for (const FetchedSeries& s : out) EXPECT_TRUE(s.ts.empty() && s.values.empty());
  EXPECT_EQ(out[3].labels, L({{"__name__", "y_v"}, {"host", "h1"}}));
}

TEST_F(FanoutTest, SealedChunksAndHeadMergeAcrossNodes) {
  // Enough points to seal chunks (1024 per chunk) on both replicas, split differently.
  Node a(clock_), b(clock_);
  b.Serve();
  const SeriesSpec big{"big", {{"k", "v"}}, "f"};
  Points all = Range(0, 2 * 5000, 2, 0.5);
  a.Add(big, Points(all.begin(), all.begin() + 3000));
  b.Add(big, Points(all.begin() + 1500, all.end()));
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{b.address()}; }, 5000);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  ASSERT_TRUE(
      fanout.Select(Parse("big_f"), kT0 - kSec, kT0 + 20000 * kSec, 10, {}, &out, &warnings).ok());
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].ts.size(), all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(out[0].ts[i], all[i].first);
    ASSERT_EQ(out[0].values[i], all[i].second);
  }
}

TEST_F(FanoutTest, DifferingReplicaValuesKeepTheLocalOne) {
  Node a(clock_), b(clock_);
  b.Serve();
  const SeriesSpec x{"x", {}, "v"};
  a.Add(x, {{kT0, 1.0}, {kT0 + kSec, 2.0}});
  b.Add(x, {{kT0 + kSec, 20.0}, {kT0 + 2 * kSec, 3.0}});
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{b.address()}; }, 5000);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  ASSERT_TRUE(fanout.Select(Parse("x_v"), kT0, kT0 + 10 * kSec, 10, {}, &out, &warnings).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ts, (std::vector<std::int64_t>{kT0, kT0 + kSec, kT0 + 2 * kSec}));
  EXPECT_EQ(out[0].values, (std::vector<double>{1.0, 2.0, 3.0}));
}

TEST_F(FanoutTest, MaxSeriesAppliesToTheMergedAnswerAndToEachPeer) {
  Node a(clock_), b(clock_);
  b.Serve();
  for (int i = 0; i < 3; ++i) {
    a.Add({"m", {{"i", std::to_string(i)}}, "v"}, {{kT0, 1.0}});
    b.Add({"m", {{"i", std::to_string(i + 2)}}, "v"}, {{kT0, 1.0}});
  }
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{b.address()}; }, 5000);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  // 3 + 3 matched, 5 label sets merged.
  EXPECT_TRUE(fanout.Select(Parse("m_v"), kT0, kT0, 5, {}, &out, &warnings).ok());
  EXPECT_EQ(out.size(), 5u);
  Status st = fanout.Select(Parse("m_v"), kT0, kT0, 4, {}, &out, &warnings);
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_NE(st.message().find("query.max_series = 4"), std::string::npos) << st.ToString();
  // Over the limit on a peer (and on this node) alike.
  st = fanout.Select(Parse("m_v"), kT0, kT0, 2, {}, &out, &warnings);
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_TRUE(warnings.empty());
}

// ---- (b) PromQL over the cluster equals PromQL over one storage ----

struct Dataset {
  std::vector<SeriesSpec> series;  // in label order
  std::vector<Points> points;
};

Dataset MakeDataset() {
  Dataset d;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> noise(0, 5);
  // Counters and a gauge; label sets sorted so that series ids follow label order.
  for (const char* host : {"a", "b", "c", "d"}) {
    d.series.push_back({"req", {{"host", host}, {"job", "api"}}, "total"});
    Points p;
    double v = 0;
    for (std::int64_t t = -3600; t <= 600; t += 15) {
      v += noise(rng);
      if (t == 0 && host[0] == 'b') v = 1;  // a counter reset
      p.emplace_back(kT0 + t * kSec, v);
    }
    if (host[0] == 'c') p.emplace_back(kT0 + 601 * kSec, kStale);  // the series went away
    d.points.push_back(std::move(p));
  }
  for (const char* host : {"a", "b", "c"}) {
    d.series.push_back({"temp", {{"host", host}}, "celsius"});
    Points p;
    for (std::int64_t t = -3600; t <= 600; t += 20) {
      p.emplace_back(kT0 + t * kSec, 20 + noise(rng) + (host[0] - 'a'));
    }
    d.points.push_back(std::move(p));
  }
  // Enough series and long enough windows for the engine's parallel range functions.
  for (int i = 0; i < 150; ++i) {
    char name[8];
    std::snprintf(name, sizeof(name), "%03d", i);
    d.series.push_back({"many", {{"i", name}}, "total"});
    Points p;
    double v = 0;
    for (std::int64_t t = -7200; t <= 600; t += 60) {
      v += noise(rng);
      p.emplace_back(kT0 + t * kSec, v);
    }
    d.points.push_back(std::move(p));
  }
  return d;
}

void ExpectSameResult(const promql::QueryResult& want, const promql::QueryResult& got,
                      const std::string& query) {
  SCOPED_TRACE(query);
  ASSERT_EQ(static_cast<int>(want.type), static_cast<int>(got.type));
  ASSERT_EQ(want.scalar.size(), got.scalar.size());
  for (std::size_t i = 0; i < want.scalar.size(); ++i) {
    EXPECT_TRUE(SameBits(want.scalar[i], got.scalar[i]));
  }
  // Without an order of its own, a local instant vector is in series-id order and the cluster's
  // in label order: compare both sorted.
  auto series_want = want.series, series_got = got.series;
  EXPECT_EQ(want.ordered, got.ordered);
  if (!want.ordered) {
    auto by_labels = [](const promql::SeriesResult& x, const promql::SeriesResult& y) {
      return x.labels < y.labels;
    };
    std::sort(series_want.begin(), series_want.end(), by_labels);
    std::sort(series_got.begin(), series_got.end(), by_labels);
  }
  ASSERT_EQ(series_want.size(), series_got.size());
  for (std::size_t s = 0; s < series_want.size(); ++s) {
    EXPECT_EQ(series_want[s].labels, series_got[s].labels);
    ASSERT_EQ(series_want[s].present, series_got[s].present);
    for (std::size_t i = 0; i < series_want[s].values.size(); ++i) {
      if (!series_want[s].present[i]) continue;
      EXPECT_TRUE(SameBits(series_want[s].values[i], series_got[s].values[i]))
          << s << " step " << i << ": " << series_want[s].values[i] << " vs "
          << series_got[s].values[i];
    }
  }
  ASSERT_EQ(want.ranges.size(), got.ranges.size());
  for (std::size_t s = 0; s < want.ranges.size(); ++s) {
    EXPECT_EQ(want.ranges[s].labels, got.ranges[s].labels);
    EXPECT_EQ(want.ranges[s].ts, got.ranges[s].ts);
    ASSERT_EQ(want.ranges[s].values.size(), got.ranges[s].values.size());
    for (std::size_t i = 0; i < want.ranges[s].values.size(); ++i) {
      EXPECT_TRUE(SameBits(want.ranges[s].values[i], got.ranges[s].values[i]));
    }
  }
  EXPECT_EQ(want.samples_read, got.samples_read);
}

class PromqlOverClusterTest : public FanoutTest {
 protected:
  void SetUp() override {
    data_ = MakeDataset();
    reference_ = std::make_unique<Node>(clock_);
    for (int i = 0; i < 3; ++i) nodes_.push_back(std::make_unique<Node>(clock_));
    nodes_[1]->Serve();
    nodes_[2]->Serve();
    // Each series on two of the three nodes: the first replica has only the first two thirds of
    // its points, the second the last two thirds less some the first has, so only their union
    // is complete.
    for (std::size_t s = 0; s < data_.series.size(); ++s) {
      const Points& p = data_.points[s];
      reference_->Add(data_.series[s], p);
      Node& first = *nodes_[s % 3];
      Node& second = *nodes_[(s + 1) % 3];
      first.Add(data_.series[s],
                Points(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(p.size() * 2 / 3)));
      Points rest;
      for (std::size_t i = p.size() / 3; i < p.size(); ++i) {
        if (i < p.size() * 2 / 3 && i % 7 == 3) continue;
        rest.push_back(p[i]);
      }
      second.Add(data_.series[s], rest);
    }
    fanout_ = std::make_unique<cluster::ClusterFanout>(
        nodes_[0]->storage(),
        [this] {
          return std::vector<std::string>{nodes_[1]->address(), nodes_[2]->address()};
        },
        5000);
  }
  void TearDown() override {
    fanout_.reset();
    nodes_.clear();
    reference_.reset();
  }

  Status Eval(Storage& storage, promql::SeriesFanout* fanout, const std::string& query,
              std::int64_t start, std::int64_t end, std::int64_t step, promql::QueryResult* out) {
    std::unique_ptr<promql::Expr> expr;
    INGOT_RETURN_IF_ERROR(promql::Parse(query, &expr));
    promql::QueryParams params;
    params.start_ns = start;
    params.end_ns = end;
    params.step_ns = step;
    params.query = query;
    params.fanout = fanout;
    SeriesCatalog catalog(storage.index());
    SeriesReader reader(storage);
    return promql::Evaluate(*expr, params, catalog, reader, out);
  }

  void Compare(const std::string& query, std::int64_t start, std::int64_t end, std::int64_t step) {
    promql::QueryResult want, got;
    const Status sw = Eval(reference_->storage(), nullptr, query, start, end, step, &want);
    const Status sg = Eval(nodes_[0]->storage(), fanout_.get(), query, start, end, step, &got);
    ASSERT_EQ(sw.ToString(), sg.ToString()) << query;
    ++compared_;
    if (!sw.ok()) return;
    EXPECT_TRUE(got.warnings == want.warnings) << query;
    ExpectSameResult(want, got, query);
    if (!want.series.empty() || !want.ranges.empty()) ++with_series_;
  }

  Dataset data_;
  std::unique_ptr<Node> reference_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unique_ptr<cluster::ClusterFanout> fanout_;
  // Comparisons made, and those whose answer had series: a check that the data is where the
  // queries look.
  int compared_ = 0;
  int with_series_ = 0;
};

const char* const kQueries[] = {
    "req_total",
    "req_total offset 1m",
    "req_total @ 1700000300",
    "temp_celsius",
    "sum(rate(req_total[5m]))",
    "sum by (host) (rate(req_total[5m]))",
    "rate(req_total[5m] offset 2m)",
    "increase(req_total[10m] @ 1700000000)",
    "topk(2, temp_celsius)",
    "bottomk(1, req_total)",
    "max_over_time(temp_celsius[10m])",
    "count_over_time(req_total[30m])",
    "avg(temp_celsius) by (host) / on(host) group_left sum(req_total) by (host)",
    "req_total > 100 and on(host) temp_celsius",
    "timestamp(temp_celsius)",
    "absent(nothing_here)",
    "absent_over_time(req_total[1m])",
    "quantile_over_time(0.9, temp_celsius[15m:1m])",
    "sum(req_total{host=~\"a|b\"})",
    "sum(rate(many_total[1h]))",
    "count(max_over_time(many_total[2h]) > 300)",
};

TEST_F(PromqlOverClusterTest, InstantQueriesMatchOneStorage) {
  for (const char* q : kQueries) {
    for (std::int64_t t : {kT0 - 1800 * kSec, kT0, kT0 + 300 * kSec, kT0 + 700 * kSec}) {
      Compare(q, t, t, 1);
    }
  }
  EXPECT_GT(with_series_, compared_ * 3 / 4);
}

TEST_F(PromqlOverClusterTest, RangeQueriesMatchOneStorage) {
  for (const char* q : kQueries) {
    Compare(q, kT0 - 3000 * kSec, kT0 + 900 * kSec, 60 * kSec);
    Compare(q, kT0 - 600 * kSec, kT0 + 600 * kSec, 7 * kSec);
  }
  EXPECT_GT(with_series_, compared_ * 3 / 4);
}

TEST_F(PromqlOverClusterTest, RangeVectorResultsMatchOneStorage) {
  for (const char* q :
       {"req_total[5m]", "temp_celsius[2m] offset 1m", "rate(req_total[5m])[10m:1m]"}) {
    Compare(q, kT0, kT0, 1);
  }
  EXPECT_EQ(with_series_, compared_);
}

TEST_F(PromqlOverClusterTest, FetchedPointsCountAgainstMaxSamples) {
  std::unique_ptr<promql::Expr> expr;
  ASSERT_TRUE(promql::Parse("count_over_time(req_total[1h])", &expr).ok());
  promql::QueryParams params;
  params.start_ns = params.end_ns = kT0;
  params.fanout = fanout_.get();
  params.max_samples = 500;  // 4 series x 241 points held at once
  SeriesCatalog catalog(nodes_[0]->storage().index());
  SeriesReader reader(nodes_[0]->storage());
  promql::QueryResult result;
  const Status st = promql::Evaluate(*expr, params, catalog, reader, &result);
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  params.max_samples = 2000;
  ASSERT_TRUE(promql::Evaluate(*expr, params, catalog, reader, &result).ok());
  EXPECT_EQ(result.series.size(), 4u);
}

// ---- (c) peers that fail ----

// Listens but never answers: requests to it time out.
class SilentPeer {
 public:
  SilentPeer() : acceptor_(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}
  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
};

TEST_F(FanoutTest, StoppedSilentAndBrokenPeersGiveWarningsAndTheRest) {
  Node a(clock_), b(clock_), stopped(clock_);
  b.Serve();
  stopped.Serve();
  const std::string stopped_address = stopped.address();
  stopped.Stop();
  SilentPeer silent;
  // A peer answering 200 with bytes that are not a select response.
  HttpRouter broken_router;
  broken_router.Add(http::verb::post, std::string(cluster::kSelectPath),
                    [](const HttpRequest&, HttpReply& reply) {
                      SetReply(reply, http::status::ok, "application/octet-stream", "ISER\x02zz");
                    });
  HttpServer broken({}, broken_router);
  ASSERT_TRUE(broken.Start("127.0.0.1:0").ok());
  const std::string broken_address = "127.0.0.1:" + std::to_string(broken.port());

  a.Add({"x", {{"n", "a"}}, "v"}, {{kT0, 1.0}});
  b.Add({"x", {{"n", "b"}}, "v"}, {{kT0, 2.0}});
  cluster::ClusterFanout fanout(
      a.storage(),
      [&] {
        return std::vector<std::string>{b.address(), stopped_address, silent.address(),
                                        broken_address};
      },
      300);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  ASSERT_TRUE(fanout.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].values, std::vector<double>{1.0});
  EXPECT_EQ(out[1].values, std::vector<double>{2.0});
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_EQ(warnings[0], "cluster: partial result: node " + stopped_address +
                             " did not answer (connection refused)");
  EXPECT_EQ(warnings[1].rfind("cluster: partial result: node " + silent.address() +
                                  " did not answer (timed out after 300 ms",
                              0),
            0u)
      << warnings[1];
  EXPECT_EQ(warnings[2].rfind("cluster: partial result: node " + broken_address +
                                  " answered badly (Corruption: select response",
                              0),
            0u)
      << warnings[2];
  std::string metrics;
  MetricsRegistry::Default().RenderPrometheus(&metrics);
  for (const char* reason : {"refused", "timeout", "error"}) {
    EXPECT_NE(metrics.find(std::string("ingot_cluster_query_remote_errors_total{reason=\"") +
                           reason + "\"} "),
              std::string::npos)
        << reason;
  }
  EXPECT_EQ(metrics.find("ingot_cluster_query_remote_errors_total{reason=\"error\"} 0\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("ingot_cluster_query_fanout_seconds_count"), std::string::npos);

  // Through PromQL: the warnings reach the result, once per node however many selectors.
  std::unique_ptr<promql::Expr> expr;
  ASSERT_TRUE(promql::Parse("sum(x_v) + count(x_v)", &expr).ok());
  promql::QueryParams params;
  params.start_ns = params.end_ns = kT0;
  params.fanout = &fanout;
  SeriesCatalog catalog(a.storage().index());
  SeriesReader reader(a.storage());
  promql::QueryResult result;
  ASSERT_TRUE(promql::Evaluate(*expr, params, catalog, reader, &result).ok());
  ASSERT_EQ(result.series.size(), 1u);
  EXPECT_EQ(result.series[0].values[0], 5.0);
  EXPECT_EQ(result.warnings.size(), 3u);
  broken.Stop();
}

// ---- (e) credentials and TLS ----

TEST_F(FanoutTest, PeersRequiringCredentialsGetThisNodesOwn) {
  Node a(clock_), by_token(clock_), by_password(clock_);
  AuthOptions token;
  token.token = "cluster-T0ken/with+odd=chars";
  AuthOptions password;
  password.username = "ingot";
  password.password = "pa:ss w\xc3\xb6rd";  // a colon after the first belongs to the password
  by_token.Serve(token);
  by_password.Serve(password);
  a.Add({"x", {{"n", "a"}}, "v"}, {{kT0, 1.0}});
  by_token.Add({"x", {{"n", "b"}}, "v"}, {{kT0, 2.0}});
  by_password.Add({"x", {{"n", "c"}}, "v"}, {{kT0, 3.0}});
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;

  cluster::ClusterFanout with_token(
      a.storage(), [&] { return std::vector<std::string>{by_token.address()}; }, 5000, token);
  ASSERT_TRUE(with_token.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].values, std::vector<double>{2.0});

  cluster::ClusterFanout with_password(
      a.storage(), [&] { return std::vector<std::string>{by_password.address()}; }, 5000, password);
  ASSERT_TRUE(with_password.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].values, std::vector<double>{3.0});

  // Both configured: the bearer token goes (the peer knowing only the token accepts it).
  AuthOptions both = token;
  both.username = "someone";
  both.password = "else";
  cluster::ClusterFanout with_both(
      a.storage(), [&] { return std::vector<std::string>{by_token.address()}; }, 5000, both);
  ASSERT_TRUE(with_both.SelectSeries(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(out.size(), 2u);

  // Without credentials, or with others, the peers answer 401: left out with a warning each.
  cluster::ClusterFanout without(
      a.storage(),
      [&] {
        return std::vector<std::string>{by_token.address(), by_password.address()};
      },
      5000);
  ASSERT_TRUE(without.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].values, std::vector<double>{1.0});
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(
      warnings[0].rfind(
          "cluster: partial result: node " + by_token.address() + " answered badly (HTTP 401: ", 0),
      0u)
      << warnings[0];
  EXPECT_EQ(warnings[1].rfind("cluster: partial result: node " + by_password.address() +
                                  " answered badly (HTTP 401: ",
                              0),
            0u)
      << warnings[1];
  AuthOptions wrong = password;
  wrong.password = "pa:ss";
  cluster::ClusterFanout with_wrong(
      a.storage(), [&] { return std::vector<std::string>{by_password.address()}; }, 5000, wrong);
  warnings.clear();
  ASSERT_TRUE(with_wrong.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("HTTP 401: "), std::string::npos) << warnings[0];
  EXPECT_EQ(out.size(), 1u);
}

// A self-signed certificate for 127.0.0.1 made by the openssl tool; false when that failed.
bool MakeCertificate(const std::string& dir) {
  const std::string command =
      "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -days 1 -keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

TEST_F(FanoutTest, TlsPeersAreAskedOverTls) {
  testing::TempDir certs;
  if (!MakeCertificate(certs.path())) {
    GTEST_SKIP() << "the openssl tool is needed to make a certificate (./dev deps installs it)";
  }
  TlsOptions tls;
  tls.cert_file = certs.path() + "/cert.pem";
  tls.key_file = certs.path() + "/key.pem";
  AuthOptions auth;
  auth.token = "over-tls";
  Node a(clock_), secure(clock_), plain(clock_);
  secure.Serve(auth, tls);
  plain.Serve(auth);
  a.Add({"x", {{"n", "a"}}, "v"}, {{kT0, 1.0}});
  secure.Add({"x", {{"n", "b"}}, "v"}, {{kT0, 2.0}});
  plain.Add({"x", {{"n", "c"}}, "v"}, {{kT0, 3.0}});
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;

  // The self-signed certificate is accepted: peers' certificates are not verified.
  cluster::ClusterFanout over_tls(
      a.storage(), [&] { return std::vector<std::string>{secure.address()}; }, 5000, auth,
      /*tls=*/true);
  ASSERT_TRUE(over_tls.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].values, std::vector<double>{2.0});
  ASSERT_TRUE(over_tls.SelectSeries(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_EQ(out.size(), 2u);
  EXPECT_TRUE(warnings.empty()) << warnings.front();

  // TLS to a plaintext peer fails its handshake; plaintext to a TLS peer gets no answer.
  cluster::ClusterFanout tls_to_plain(
      a.storage(), [&] { return std::vector<std::string>{plain.address()}; }, 5000, auth,
      /*tls=*/true);
  ASSERT_TRUE(tls_to_plain.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_EQ(out.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("cluster: partial result: node " + plain.address() +
                                  " did not answer (TLS handshake: ",
                              0),
            0u)
      << warnings[0];
  warnings.clear();
  cluster::ClusterFanout plain_to_tls(
      a.storage(), [&] { return std::vector<std::string>{secure.address()}; }, 5000, auth);
  ASSERT_TRUE(plain_to_tls.Select(Parse("x_v"), kT0, kT0, 10, {}, &out, &warnings).ok());
  EXPECT_EQ(out.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("cluster: partial result: node " + secure.address(), 0), 0u)
      << warnings[0];
}

// ---- (f) the query's deadline ----

TEST_F(FanoutTest, TheQueryDeadlineEndsPeerRequests) {
  Node a(clock_);
  SilentPeer silent;
  a.Add({"x", {{"n", "a"}}, "v"}, {{kT0, 1.0}});
  // A peer timeout far longer than the query has left.
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{silent.address()}; }, 60'000);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  promql::SelectContext context;
  auto started = steady_clock::now();
  context.deadline = started + milliseconds(300);
  Status st = fanout.Select(Parse("x_v"), kT0, kT0, 10, context, &out, &warnings);
  auto took = steady_clock::now() - started;
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_EQ(st.message(),
            "query timed out: it ran past its deadline (query.timeout) waiting for node " +
                silent.address());
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(5000));
  EXPECT_TRUE(out.empty());

  // Already past: Busy at once.
  context.deadline = steady_clock::now() - milliseconds(1);
  st = fanout.SelectSeries(Parse("x_v"), kT0, kT0, 10, context, &out, &warnings);
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_NE(st.message().find("query timed out"), std::string::npos) << st.ToString();

  // The peer timeout first: the peer is left out with a warning, as before.
  cluster::ClusterFanout short_timeout(
      a.storage(), [&] { return std::vector<std::string>{silent.address()}; }, 200);
  context.deadline = steady_clock::now() + std::chrono::seconds(60);
  ASSERT_TRUE(short_timeout.Select(Parse("x_v"), kT0, kT0, 10, context, &out, &warnings).ok());
  EXPECT_EQ(out.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("did not answer (timed out after 200 ms"), std::string::npos)
      << warnings[0];

  // Through PromQL: the query's deadline reaches the fanout.
  std::unique_ptr<promql::Expr> expr;
  ASSERT_TRUE(promql::Parse("sum(x_v)", &expr).ok());
  promql::QueryParams params;
  params.start_ns = params.end_ns = kT0;
  params.fanout = &fanout;
  started = steady_clock::now();
  params.deadline = started + milliseconds(300);
  SeriesCatalog catalog(a.storage().index());
  SeriesReader reader(a.storage());
  promql::QueryResult result;
  st = promql::Evaluate(*expr, params, catalog, reader, &result);
  took = steady_clock::now() - started;
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_NE(st.message().find("query timed out"), std::string::npos) << st.ToString();
  EXPECT_LT(took, milliseconds(5000));
}

TEST_F(FanoutTest, PeersAreToldTheTimeLeftAndStopAtIt) {
  Node a(clock_);
  a.Add({"x", {{"n", "a"}}, "v"}, {{kT0, 1.0}});
  // A peer that keeps what it was asked and answers nothing.
  std::mutex mu;
  cluster::SelectRequest seen;
  HttpRouter recorder;
  recorder.Add(http::verb::post, std::string(cluster::kSelectPath),
               [&](const HttpRequest& request, HttpReply& reply) {
                 std::lock_guard lock(mu);
                 EXPECT_TRUE(cluster::DecodeSelectRequest(request.body(), &seen).ok());
                 std::string body;
                 cluster::EncodeSelectResponse({}, {}, &body);
                 SetReply(reply, http::status::ok, cluster::kSelectContentType, std::move(body));
               });
  HttpServer server({}, recorder);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const std::string address = "127.0.0.1:" + std::to_string(server.port());
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{address}; }, 5000);
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  promql::SelectContext context;
  context.deadline = steady_clock::now() + std::chrono::seconds(30);
  ASSERT_TRUE(fanout.Select(Parse("x_v"), kT0, kT0, 10, context, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  {
    std::lock_guard lock(mu);
    EXPECT_GT(seen.timeout_ms, 25'000u);
    EXPECT_LE(seen.timeout_ms, 30'000u);
    EXPECT_FALSE(seen.skip_damage);
  }
  // No deadline: none sent. Damage skipped: asked of the peer too.
  std::vector<CorruptChunk> damage;
  context = {};
  context.damage = &damage;
  ASSERT_TRUE(fanout.Select(Parse("x_v"), kT0, kT0, 10, context, &out, &warnings).ok());
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(seen.timeout_ms, 0u);
    EXPECT_TRUE(seen.skip_damage);
  }
  server.Stop();

  // On the peer: a selection past the time it was given fails with 422, which the coordinator
  // passes on as the query's error. Enough series that reading them takes far longer than the
  // 1 ms given (about 10 ms in a release build).
  Node b(clock_);
  for (int i = 0; i < 10'000; ++i) {
    b.Add({"many", {{"i", std::to_string(i)}}, "v"}, Range(0, 90, 10, 1));
  }
  HttpRouter router;
  RegisterClusterSelectRoute(router, b.storage(), QueryOptions{});
  HttpRequest request(http::verb::post, std::string(cluster::kSelectPath), 11);
  cluster::EncodeSelectRequest(Parse("many_v"),
                               {.lo_ns = kT0, .hi_ns = kT0, .max_series = 10'000, .timeout_ms = 1},
                               &request.body());
  request.prepare_payload();
  testing::Response r = testing::RunRequest(router, request);
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.body, "query timed out: it ran past its deadline (query.timeout)\n");
  // With time enough, the same answers.
  request.body().clear();
  cluster::EncodeSelectRequest(
      Parse("many_v"), {.lo_ns = kT0, .hi_ns = kT0, .max_series = 10'000, .timeout_ms = 60'000},
      &request.body());
  request.prepare_payload();
  r = testing::RunRequest(router, request);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<CorruptChunk> none;
  ASSERT_TRUE(cluster::DecodeSelectResponse(r.body, &out, &none).ok());
  EXPECT_EQ(out.size(), 10'000u);

  // And locally, SelectLocal alike.
  context = {};
  context.deadline = steady_clock::now() - milliseconds(1);
  const Status st = promql::SelectLocal(b.storage(), Parse("many_v"), kT0, kT0, 10'000, &out,
                                        /*with_points=*/true, context);
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_TRUE(out.empty());
}

// ---- (g) damaged chunks ----

TEST_F(FanoutTest, DamagedChunksOnAPeerAreSkippedAndNamed) {
  constexpr int kSeries = 40;
  constexpr int kPoints = 4096;  // four sealed chunks per series
  Node a(clock_), b(clock_);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0, 1000);
  for (int s = 0; s < kSeries; ++s) {
    Points pts;
    for (int i = 0; i < kPoints; ++i) pts.emplace_back(kT0 + i * 10 * kSec, noise(rng));
    std::string host = std::to_string(s);
    host.insert(0, 1, 'h');  // not "h" + ...: GCC 12's false -Wrestrict (bug 105329)
    b.Add({"cpu", {{"host", host}}, "usage"}, pts);
  }
  a.Add({"cpu", {{"host", "local"}}, "usage"}, {{kT0, 1.0}});
  b.DamageChunks();
  b.Serve();
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{b.address()}; }, 5000);
  const std::int64_t hi = kT0 + kPoints * 10 * kSec;
  std::vector<FetchedSeries> out;
  std::vector<std::string> warnings;
  std::vector<CorruptChunk> damage;
  promql::SelectContext context;
  context.damage = &damage;
  ASSERT_TRUE(fanout.Select(Parse("cpu_usage"), kT0, hi, 100, context, &out, &warnings).ok());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  // Every series but for the damaged block's points: one block holds chunks of one or two
  // series.
  EXPECT_EQ(out.size(), static_cast<std::size_t>(kSeries + 1));
  std::size_t total = 0;
  for (const FetchedSeries& s : out) total += s.ts.size();
  EXPECT_LT(total, std::size_t{kSeries * kPoints + 1});
  EXPECT_GE(total, std::size_t{(kSeries - 3) * kPoints + 1});
  ASSERT_FALSE(damage.empty());
  for (const CorruptChunk& d : damage) {
    EXPECT_TRUE(d.status.IsCorruption());
    EXPECT_EQ(d.status.message().rfind("node " + b.address() + ": ", 0), 0u) << d.status.message();
    EXPECT_NE(d.status.message().find("series cpu_usage,host=h"), std::string::npos)
        << d.status.message();
    EXPECT_LE(d.first_ts_ns, d.last_ts_ns);
  }

  // Labels only, the same series (damage or not, each has points left).
  damage.clear();
  ASSERT_TRUE(fanout.SelectSeries(Parse("cpu_usage"), kT0, hi, 100, context, &out, &warnings).ok());
  EXPECT_EQ(out.size(), static_cast<std::size_t>(kSeries + 1));
  EXPECT_TRUE(warnings.empty()) << warnings.front();

  // Damage not skipped: the peer's answer fails and is left out with a warning.
  ASSERT_TRUE(fanout.Select(Parse("cpu_usage"), kT0, hi, 100, {}, &out, &warnings).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].labels, L({{"__name__", "cpu_usage"}, {"host", "local"}}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("cluster: partial result: node " + b.address() +
                                  " answered badly (HTTP 500: Corruption: ",
                              0),
            0u)
      << warnings[0];

  // Through the query API (query.damaged_chunks = "skip" by default): the answer's warnings name
  // the node and the series.
  HttpRouter router;
  RegisterQueryRoutes(router, a.storage(), QueryOptions{}, &fanout);
  const std::string t = std::to_string(hi / kSec);
  testing::Response r = testing::RunRequest(
      router, testing::MakeGet("/api/v1/query?query=count(count_over_time(cpu_usage%5B2d%5D))"
                               "&time=" +
                               t));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"value\":[" + t + ",\"41\"]"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"warnings\":[\"damaged data left out of the answer: points in ["),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("] ns: node " + b.address() + ": series cpu_usage,host=h"),
            std::string::npos)
      << r.body;
  r = testing::RunRequest(router, testing::MakeGet("/api/v1/series?match[]=cpu_usage"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"host\":\"local\""), std::string::npos) << r.body.substr(0, 300);

  // The same storage read locally: damage skipped into the sink, or failing the selection.
  damage.clear();
  ASSERT_TRUE(promql::SelectLocal(b.storage(), Parse("cpu_usage"), kT0, hi, 100, &out,
                                  /*with_points=*/true, context)
                  .ok());
  EXPECT_EQ(out.size(), static_cast<std::size_t>(kSeries));
  ASSERT_FALSE(damage.empty());
  EXPECT_EQ(damage[0].status.message().rfind("series cpu_usage,host=h", 0), 0u)
      << damage[0].status.message();
  EXPECT_TRUE(
      promql::SelectLocal(b.storage(), Parse("cpu_usage"), kT0, hi, 100, &out).IsCorruption());
}

// ---- the query routes over the cluster ----

TEST_F(FanoutTest, QueryRoutesFanOut) {
  Node a(clock_), b(clock_);
  b.Serve();
  a.Add({"x", {{"n", "a"}}, "v"}, {{kT0, 1.0}});
  b.Add({"x", {{"n", "b"}, {"zone", "z1"}}, "v"}, {{kT0, 2.0}});
  b.Add({"y", {{"n", "c"}}, "v"}, {{kT0 - 7200 * kSec, 3.0}});
  std::string peer = b.address();
  cluster::ClusterFanout fanout(
      a.storage(), [&] { return std::vector<std::string>{peer}; }, 5000);
  HttpRouter router;
  RegisterQueryRoutes(router, a.storage(), QueryOptions{}, &fanout);
  auto get = [&](const std::string& target) {
    return testing::RunRequest(router, testing::MakeGet(target));
  };

  testing::Response r = get("/api/v1/query?query=sum(x_v)&time=1700000000");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"value\":[1700000000,\"3\"]"), std::string::npos) << r.body;
  r = get("/api/v1/query_range?query=x_v&start=1700000000&end=1700000060&step=60");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"n\":\"a\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"n\":\"b\""), std::string::npos) << r.body;

  r = get("/api/v1/series?match[]=x_v&start=1699999000&end=1700001000");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body,
            "{\"status\":\"success\",\"data\":[{\"__name__\":\"x_v\",\"n\":\"a\"},"
            "{\"__name__\":\"x_v\",\"n\":\"b\",\"zone\":\"z1\"}]}\n");
  r = get("/api/v1/labels");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "{\"status\":\"success\",\"data\":[\"__name__\",\"n\",\"zone\"]}\n");
  r = get("/api/v1/label/n/values?start=1699999000&end=1700001000");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "{\"status\":\"success\",\"data\":[\"a\",\"b\"]}\n");
  r = get("/api/v1/label/__name__/values");
  EXPECT_EQ(r.body, "{\"status\":\"success\",\"data\":[\"x_v\",\"y_v\"]}\n");

  // The peer gone: answers from this node, with the warning.
  b.Stop();
  r = get("/api/v1/query?query=sum(x_v)&time=1700000000");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"value\":[1700000000,\"1\"]"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"warnings\":[\"cluster: partial result: node " + peer +
                        " did not answer (connection refused)\"]"),
            std::string::npos)
      << r.body;
  r = get("/api/v1/label/n/values");
  EXPECT_EQ(r.body,
            "{\"status\":\"success\",\"data\":[\"a\"],\"warnings\":[\"cluster: partial "
            "result: node " +
                peer + " did not answer (connection refused)\"]}\n");
}

TEST_F(FanoutTest, SelectRouteRejectsBadBodies) {
  Node a(clock_);
  HttpRouter router;
  RegisterClusterSelectRoute(router, a.storage(), QueryOptions{});
  HttpRequest request(http::verb::post, std::string(cluster::kSelectPath), 11);
  request.body() = "nonsense";
  request.prepare_payload();
  testing::Response r = testing::RunRequest(router, request);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("select request"), std::string::npos) << r.body;

  a.Add({"x", {}, "v"}, {{kT0, 1.0}});
  request.body().clear();
  cluster::EncodeSelectRequest(Parse("x_v"), {.lo_ns = kT0, .hi_ns = kT0, .max_series = 10},
                               &request.body());
  request.prepare_payload();
  r = testing::RunRequest(router, request);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/octet-stream");
  std::vector<FetchedSeries> series;
  std::vector<CorruptChunk> damage;
  ASSERT_TRUE(cluster::DecodeSelectResponse(r.body, &series, &damage).ok());
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].values, std::vector<double>{1.0});
}

// ---- (d) the wire format ----

std::vector<FetchedSeries> SampleSeries() {
  std::vector<FetchedSeries> s(3);
  s[0].labels = L({{"__name__", "a"}, {"host", "x\n\"y\xff"}});
  s[0].ts = {-5, 0, 7, std::numeric_limits<std::int64_t>::max()};
  s[0].values = {-0.0, std::numeric_limits<double>::infinity(), kStale,
                 std::bit_cast<double>(0x7ff8dead0000beefull)};
  s[1].labels = L({{"__name__", "a"}, {"host", "z"}});  // no points (labels only)
  s[2].labels = L({{"__name__", "b"}, {"zone", ""}});
  s[2].ts = {1};
  s[2].values = {std::numeric_limits<double>::denorm_min()};
  return s;
}

std::vector<CorruptChunk> SampleDamage() {
  return {{7, -3, 99, Status::Corruption("series a,host=z v: chunk checksum mismatch")},
          {8, std::numeric_limits<std::int64_t>::min(), 0, Status::Corruption("")}};
}

// Decodes from a heap copy of exactly `bytes`' size, so that ASan sees any read past its end.
template <typename Out, typename Fn>
Status DecodeExact(std::string_view bytes, Out* out, Fn decode) {
  std::unique_ptr<char[]> copy(new char[std::max<std::size_t>(bytes.size(), 1)]);
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  return decode(std::string_view(copy.get(), bytes.size()), out);
}

struct Answer {
  std::vector<FetchedSeries> series;
  std::vector<CorruptChunk> damage;
};

Status DecodeResponse(std::string_view b, Answer* out) {
  return cluster::DecodeSelectResponse(b, &out->series, &out->damage);
}
Status DecodeRequest(std::string_view b, cluster::SelectRequest* out) {
  return cluster::DecodeSelectRequest(b, out);
}

TEST(SelectWireTest, ResponseRoundTripIsBitExact) {
  const std::vector<FetchedSeries> in = SampleSeries();
  const std::vector<CorruptChunk> damage = SampleDamage();
  std::string bytes;
  cluster::EncodeSelectResponse(in, damage, &bytes);
  Answer out;
  const Status st = DecodeExact(bytes, &out, DecodeResponse);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.series.size(), in.size());
  for (std::size_t s = 0; s < in.size(); ++s) {
    EXPECT_EQ(out.series[s].labels, in[s].labels);
    EXPECT_EQ(out.series[s].ts, in[s].ts);
    ASSERT_EQ(out.series[s].values.size(), in[s].values.size());
    for (std::size_t i = 0; i < in[s].values.size(); ++i) {
      EXPECT_TRUE(SameBits(out.series[s].values[i], in[s].values[i])) << s << " " << i;
    }
  }
  // The damage's range and message; series ids are the peer's own and do not travel.
  ASSERT_EQ(out.damage.size(), damage.size());
  for (std::size_t i = 0; i < damage.size(); ++i) {
    EXPECT_EQ(out.damage[i].sid, 0u);
    EXPECT_EQ(out.damage[i].first_ts_ns, damage[i].first_ts_ns);
    EXPECT_EQ(out.damage[i].last_ts_ns, damage[i].last_ts_ns);
    EXPECT_TRUE(out.damage[i].status.IsCorruption());
    EXPECT_EQ(out.damage[i].status.message(), damage[i].status.message());
  }
  bytes.clear();
  cluster::EncodeSelectResponse({}, {}, &bytes);
  ASSERT_TRUE(DecodeExact(bytes, &out, DecodeResponse).ok());
  EXPECT_TRUE(out.series.empty());
  EXPECT_TRUE(out.damage.empty());
}

TEST(SelectWireTest, RequestRoundTripRebuildsMatchers) {
  const Selector in = Parse(R"({__name__=~"cpu_.*", host!="a\"b", region!~"us-.+", dc="x"})");
  std::string bytes;
  cluster::EncodeSelectRequest(
      in, {.lo_ns = -7, .hi_ns = 99, .max_series = 1234, .labels_only = true, .timeout_ms = 4321},
      &bytes);
  cluster::SelectRequest out;
  ASSERT_TRUE(DecodeExact(bytes, &out, DecodeRequest).ok());
  EXPECT_EQ(out.lo_ns, -7);
  EXPECT_EQ(out.hi_ns, 99);
  EXPECT_EQ(out.max_series, 1234u);
  EXPECT_TRUE(out.labels_only);
  EXPECT_EQ(out.timeout_ms, 4321u);
  EXPECT_FALSE(out.skip_damage);
  ASSERT_EQ(out.selector.matchers.size(), in.matchers.size());
  for (std::size_t i = 0; i < in.matchers.size(); ++i) {
    EXPECT_EQ(out.selector.matchers[i].name, in.matchers[i].name);
    EXPECT_EQ(out.selector.matchers[i].op, in.matchers[i].op);
    EXPECT_EQ(out.selector.matchers[i].value, in.matchers[i].value);
    EXPECT_EQ(out.selector.matchers[i].regex != nullptr, in.matchers[i].regex != nullptr);
  }
  // The regex compiled on this side, anchored as the parser's.
  EXPECT_TRUE(out.selector.matchers[0].Matches("cpu_idle"));
  EXPECT_FALSE(out.selector.matchers[0].Matches("xcpu_idle"));
  EXPECT_TRUE(out.selector.matchers[2].Matches("eu-1"));
  EXPECT_FALSE(out.selector.matchers[2].Matches("us-1"));

  bytes.clear();
  cluster::EncodeSelectRequest(in, {.max_series = 1, .skip_damage = true}, &bytes);
  ASSERT_TRUE(DecodeExact(bytes, &out, DecodeRequest).ok());
  EXPECT_FALSE(out.labels_only);
  EXPECT_TRUE(out.skip_damage);
  EXPECT_EQ(out.timeout_ms, 0u);
}

TEST(SelectWireTest, RejectsWhatCannotBeServed) {
  Selector bad_regex;
  bad_regex.matchers.push_back({"x", MatchOp::kEqual, "y", nullptr});
  std::string bytes;
  cluster::EncodeSelectRequest(bad_regex, {.hi_ns = 1, .max_series = 1}, &bytes);
  // Turn the operator into a regex match of "y(" by hand: op byte, then name and value.
  constexpr std::size_t kFlagsAt = 4 + 1 + 8 + 8 + 8 + 4;
  const std::size_t op_at = kFlagsAt + 1 + 4;
  bytes[op_at] = static_cast<char>(cluster::SelectWireOp::kRegexMatch);
  bytes.back() = '(';
  cluster::SelectRequest req;
  Status st = DecodeExact(bytes, &req, DecodeRequest);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  bytes[op_at] = 9;
  st = DecodeExact(bytes, &req, DecodeRequest);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();

  bytes.clear();
  cluster::EncodeSelectRequest(Selector{}, {.hi_ns = 1, .max_series = 1}, &bytes);
  st = DecodeExact(bytes, &req, DecodeRequest);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();

  bytes.clear();
  cluster::EncodeSelectRequest(Parse("x"), {.hi_ns = 1, .max_series = 1}, &bytes);
  ASSERT_TRUE(DecodeExact(bytes, &req, DecodeRequest).ok());
  for (const char version : {1, 3}) {  // the version before this one's fields, and a later one
    std::string other = bytes;
    other[4] = version;
    st = DecodeExact(other, &req, DecodeRequest);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find("this node speaks 2"), std::string::npos) << st.ToString();
  }
  bytes[kFlagsAt] = 4;  // a flag this version does not know
  st = DecodeExact(bytes, &req, DecodeRequest);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("unknown flags 4"), std::string::npos) << st.ToString();
}

TEST(SelectWireTest, RejectsUnorderedResponses) {
  auto encode = [](std::vector<FetchedSeries> s) {
    std::string bytes;
    cluster::EncodeSelectResponse(s, {}, &bytes);
    return bytes;
  };
  Answer out;
  auto series = SampleSeries();
  std::swap(series[0], series[2]);
  EXPECT_TRUE(DecodeExact(encode(series), &out, DecodeResponse).IsCorruption());
  series = SampleSeries();
  series[1] = series[0];  // a label set twice
  EXPECT_TRUE(DecodeExact(encode(series), &out, DecodeResponse).IsCorruption());
  series = SampleSeries();
  std::swap(series[0].ts[0], series[0].ts[1]);
  EXPECT_TRUE(DecodeExact(encode(series), &out, DecodeResponse).IsCorruption());
  series = SampleSeries();
  series[0].ts[1] = series[0].ts[0];
  EXPECT_TRUE(DecodeExact(encode(series), &out, DecodeResponse).IsCorruption());
  series = SampleSeries();
  std::swap(series[0].labels[0], series[0].labels[1]);
  EXPECT_TRUE(DecodeExact(encode(series), &out, DecodeResponse).IsCorruption());
  std::string trailing = encode(SampleSeries()) + '\0';
  EXPECT_TRUE(DecodeExact(trailing, &out, DecodeResponse).IsCorruption());
  EXPECT_TRUE(out.series.empty());
  // A damaged list whose count runs past the end.
  std::string bytes;
  cluster::EncodeSelectResponse(SampleSeries(), SampleDamage(), &bytes);
  bytes.pop_back();
  EXPECT_TRUE(DecodeExact(bytes, &out, DecodeResponse).IsCorruption());
  EXPECT_TRUE(out.series.empty());
  EXPECT_TRUE(out.damage.empty());
}

// Every truncation and random bit flips: an error or a valid decode, never a crash or a read
// outside the input.
template <typename Out, typename Fn>
void CorruptionSuite(const std::string& valid, Fn decode) {
  Out out;
  const Status st = DecodeExact(valid, &out, decode);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (std::size_t n = 0; n < valid.size(); ++n) {
    const Status st = DecodeExact(std::string_view(valid).substr(0, n), &out, decode);
    EXPECT_FALSE(st.ok()) << "truncated at " << n;
  }
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4000; ++round) {
    std::string bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const std::size_t bit = rng() % (bytes.size() * 8);
      bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
    }
    (void)DecodeExact(bytes, &out, decode);
  }
  // Large counts in every 8-byte window.
  for (std::size_t at = 0; at + 8 <= valid.size(); ++at) {
    std::string bytes = valid;
    std::memset(bytes.data() + at, 0xff, 4);
    (void)DecodeExact(bytes, &out, decode);
    bytes = valid;
    std::memset(bytes.data() + at, 0x7f, 8);
    (void)DecodeExact(bytes, &out, decode);
  }
}

TEST(SelectWireTest, CorruptResponsesAreErrorsNotCrashes) {
  std::string bytes;
  cluster::EncodeSelectResponse(SampleSeries(), SampleDamage(), &bytes);
  CorruptionSuite<Answer>(bytes, DecodeResponse);
}

TEST(SelectWireTest, CorruptRequestsAreErrorsNotCrashes) {
  std::string bytes;
  cluster::EncodeSelectRequest(
      Parse(R"sel({__name__=~"cpu_.*", host!="a", region!~"us-(1|2)"})sel"),
      {.lo_ns = 1, .hi_ns = 2, .max_series = 3, .timeout_ms = 500, .skip_damage = true}, &bytes);
  CorruptionSuite<cluster::SelectRequest>(bytes, DecodeRequest);
}

}  // namespace
}  // namespace ingot
