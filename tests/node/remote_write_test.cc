// Prometheus remote write (`POST /api/v1/write`) through the node's real router and handlers over
// a real Storage and ShardSet: requests encoded with the generated protobuf classes and libsnappy
// round-trip bit for bit and are queryable beside line-protocol series; every malformed request is
// a 400 naming the problem and stores nothing; limits answer 413, 415 and 429; the counters on
// /metrics. The last tests go through a real HttpServer on loopback.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <google/protobuf/stubs/logging.h>

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/logging.h"
#include "config/metrics.h"
#include "ingest/remote_write_format.h"
#include "ingest/remote_write_handler.h"
#include "ingest/shard_set.h"
#include "ingest/write_handler.h"
#include "node/http_server.h"
#include "node/write_routes.h"
#include "tests/e2e/node_process.h"
#include "tests/ingest/ingest_test_util.h"
#include "tests/ingest/remote_write_test_util.h"
#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using ingest::testutil::AddSeries;
using ingest::testutil::Encode;
using ingest::testutil::LabelList;
using ingest::testutil::PbSeries;
using ingest::testutil::PbWriter;
using ingest::testutil::Snappy;
using testing::Response;

constexpr std::uint64_t kStale = ingest::remote_write::kStaleNaNBits;
constexpr std::int64_t kMs = 1'000'000;
// 2023-11-14T22:13:20Z in milliseconds: the fixture clock's "now".
constexpr std::int64_t kNowMs = 1'700'000'000'000;

double Counter(const std::string& sample) {
  std::string text;
  MetricsRegistry::Default().RenderPrometheus(&text);
  const double v = ingest::testutil::MetricValue(text, sample);
  return v < 0 ? 0 : v;
}

class RemoteWriteTest : public testing::QueryFixture {
 protected:
  void SetUp() override {
    Logger("ingest")->set_level(spdlog::level::off);
    google::protobuf::SetLogHandler(nullptr);
    QueryFixture::SetUp();
    StartWriters();
  }
  void TearDown() override {
    StopWriters();
    QueryFixture::TearDown();
    Logger("ingest")->set_level(spdlog::level::info);
  }
  // REQUIRES: a router without write routes (a fresh one: Configure or Reopen).
  void StartWriters() {
    shards_ = std::make_unique<ingest::ShardSet>(*storage_, 4);
    shards_->Start();
    write_ = std::make_unique<ingest::WriteHandler>(*shards_, storage_->index(), clock_, ingest_);
    remote_ = std::make_unique<ingest::RemoteWriteHandler>(*shards_, storage_->index(), ingest_);
    RegisterWriteRoutes(*router_, *write_, *remote_);
  }
  void StopWriters() {
    remote_.reset();
    write_.reset();
    if (shards_) shards_->Stop();
    shards_.reset();
  }
  // Closes and opens the store with `options` (limits), the routes registered again.
  void Restart(const StorageOptions& options) {
    StopWriters();
    storage_options_ = options;
    Reopen();
    StartWriters();
  }

  Response Write(const std::string& body, const std::string& encoding = "snappy",
                 const std::string& content_type = "application/x-protobuf") {
    HttpRequest request(http::verb::post, "/api/v1/write", 11);
    if (!encoding.empty()) request.set(http::field::content_encoding, encoding);
    if (!content_type.empty()) request.set(http::field::content_type, content_type);
    request.set("X-Prometheus-Remote-Write-Version", "0.1.0");
    request.body() = body;
    request.prepare_payload();
    HttpReply reply;
    reply.response.version(11);
    router_->Handle(request, reply);
    // What must wait runs afterwards, as the server runs it on its write pool.
    if (reply.then) reply.then(reply);
    Response r;
    r.status = static_cast<int>(reply.response.result_int());
    r.content_type = std::string(reply.response[http::field::content_type]);
    r.body = reply.response.body();
    retry_after_ = std::string(reply.response[http::field::retry_after]);
    return r;
  }

  // Every point of the series `name{tags}`: timestamps and value bits.
  struct Stored {
    bool found = false;
    std::vector<std::int64_t> ts;
    std::vector<std::uint64_t> bits;
  };
  Stored Read(const std::string& name, LabelList tags = {}) {
    std::vector<TagView> views;
    for (const auto& [k, v] : tags) views.emplace_back(k, v);
    std::string key;
    BuildLabelSetKey(name, views, &key);
    Stored out;
    const SeriesId sid = storage_->index().Find(key);
    if (sid == kInvalidSeriesId) return out;
    out.found = true;
    std::vector<double> values;
    EXPECT_TRUE(storage_
                    ->ReadSeries(sid, std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max(), &out.ts, &values)
                    .ok());
    for (double v : values) out.bits.push_back(std::bit_cast<std::uint64_t>(v));
    return out;
  }

  nlohmann::json Query(const std::string& q, std::int64_t t_s) {
    const Response r = Get("/api/v1/query?query=" + UrlEncode(q) + "&time=" + std::to_string(t_s));
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  }

  // Queues on every shard of `set` a batch of one point of a series of that shard.
  void QueueOnEveryShard(ingest::ShardSet& set) {
    std::vector<std::unique_ptr<ingest::Batch>> batches(
        static_cast<std::size_t>(set.shard_count()));
    auto missing = [&] {
      return std::find(batches.begin(), batches.end(), nullptr) != batches.end();
    };
    for (int i = 0; missing(); ++i) {
      ResolvedSeries resolved;
      ASSERT_TRUE(storage_->index()
                      .Resolve("queued_" + std::to_string(i), ValueType::kFloat, &resolved)
                      .ok());
      auto& batch = batches[static_cast<std::size_t>(set.ShardOf(resolved.sid))];
      if (batch) continue;
      batch = set.Acquire();
      if (resolved.definition_pending) {
        storage_->index().AppendDefinition(resolved.sid, &batch->definitions);
      }
      batch->points.push_back(PointRecord{resolved.sid, (kNowMs - 5000) * kMs,
                                          std::bit_cast<std::uint64_t>(1.0), ValueType::kFloat});
    }
    for (int shard = 0; shard < set.shard_count(); ++shard) {
      set.Submit(shard, std::move(batches[static_cast<std::size_t>(shard)]));
    }
  }

  IngestOptions ingest_;
  std::unique_ptr<ingest::ShardSet> shards_;
  std::unique_ptr<ingest::WriteHandler> write_;
  std::unique_ptr<ingest::RemoteWriteHandler> remote_;
  std::string retry_after_;
};

TEST_F(RemoteWriteTest, SamplesRoundTripBitExactAndAreQueryable) {
  const double before_requests = Counter("ingot_remote_write_requests_total");
  const double before_samples = Counter("ingot_remote_write_samples_total");
  const double before_series = Counter("ingot_remote_write_series_total");
  prometheus::WriteRequest request;
  // Out of order, before 1970, not on a second, the staleness marker last, specials between.
  const std::vector<std::pair<std::int64_t, double>> samples = {
      {kNowMs - 60'000, 1.0},
      {kNowMs - 45'123, 2.5},
      {-1'500, -0.0},
      {-1, std::numeric_limits<double>::infinity()},
      {kNowMs - 30'001, std::bit_cast<double>(0x7ff8000000c0ffeeull)},
      {0, std::numeric_limits<double>::denorm_min()},
      {kNowMs - 15'000, 3.0},
      {kNowMs - 1, std::bit_cast<double>(kStale)},
  };
  AddSeries(&request, {{"__name__", "http_requests_total"}, {"job", "api"}, {"method", "GET"}},
            samples);
  AddSeries(&request, {{"__name__", "http_requests_total"}, {"job", "api"}, {"method", "POST"}},
            {{kNowMs - 10'000, 7.0}});
  // Prometheus sorts label names bytewise: an upper-case name comes before __name__.
  AddSeries(&request, {{"Zone", "eu"}, {"__name__", "node:cpu:rate5m"}}, {{kNowMs - 5'000, 0.25}});
  const Response r = Write(Encode(request));
  ASSERT_EQ(r.status, 204) << r.body;
  EXPECT_TRUE(r.body.empty());

  const Stored get = Read("http_requests_total", {{"job", "api"}, {"method", "GET"}});
  ASSERT_TRUE(get.found);
  std::map<std::int64_t, std::uint64_t> expected;
  for (const auto& [ms, v] : samples) expected[ms * kMs] = std::bit_cast<std::uint64_t>(v);
  ASSERT_EQ(get.ts.size(), expected.size());
  std::size_t i = 0;
  for (const auto& [ts, bits] : expected) {
    EXPECT_EQ(get.ts[i], ts) << i;
    EXPECT_EQ(get.bits[i], bits) << i << ": " << std::hex << get.bits[i] << " != " << bits;
    ++i;
  }
  EXPECT_EQ(get.bits.back(), kStale);
  EXPECT_TRUE(Read("node:cpu:rate5m", {{"Zone", "eu"}}).found);

  // Queried by metric name and labels, as Prometheus shows them.
  nlohmann::json j = Query("http_requests_total{job=\"api\"}", (kNowMs - 15'000) / 1000);
  ASSERT_EQ(j["data"]["result"].size(), 1u) << j.dump();
  EXPECT_EQ(
      j["data"]["result"][0]["metric"],
      (nlohmann::json{{"__name__", "http_requests_total"}, {"job", "api"}, {"method", "GET"}}));
  EXPECT_EQ(j["data"]["result"][0]["value"][1], "3");
  j = Query("http_requests_total{method=\"POST\"}", kNowMs / 1000);
  ASSERT_EQ(j["data"]["result"].size(), 1u) << j.dump();
  EXPECT_EQ(j["data"]["result"][0]["value"][1], "7");
  j = Query("node:cpu:rate5m", kNowMs / 1000);
  ASSERT_EQ(j["data"]["result"].size(), 1u) << j.dump();
  EXPECT_EQ(j["data"]["result"][0]["metric"]["Zone"], "eu");

  EXPECT_EQ(Counter("ingot_remote_write_requests_total") - before_requests, 1);
  EXPECT_EQ(Counter("ingot_remote_write_samples_total") - before_samples, 10);
  EXPECT_EQ(Counter("ingot_remote_write_series_total") - before_series, 3);
}

// Series seen before are found in the series cache by lookups run many at a time: each of a
// request's series (more than the lookups in flight, known and new ones mixed, in shuffled order)
// gets its own samples, whichever request it came in.
TEST_F(RemoteWriteTest, SeriesFoundInTheCacheKeepTheirOwnSamples) {
  constexpr int kSeries = 150;
  std::vector<int> order(kSeries);
  for (int i = 0; i < kSeries; ++i) order[static_cast<std::size_t>(i)] = i;
  std::mt19937 rng(11);
  for (int round = 0; round < 4; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    prometheus::WriteRequest request;
    for (const int s : order) {
      // Round 0 writes the even series only; later rounds all of them.
      if (round == 0 && s % 2 == 1) continue;
      AddSeries(&request, {{"__name__", "cached"}, {"s", std::to_string(s)}},
                {{kNowMs - 60'000 + round * 1'000, s * 100.0 + round}});
    }
    const Response r = Write(Encode(request));
    ASSERT_EQ(r.status, 204) << r.body;
  }
  for (int s = 0; s < kSeries; ++s) {
    const Stored got = Read("cached", {{"s", std::to_string(s)}});
    ASSERT_TRUE(got.found) << s;
    const int first_round = s % 2 == 1 ? 1 : 0;
    ASSERT_EQ(got.ts.size(), static_cast<std::size_t>(4 - first_round)) << s;
    for (std::size_t i = 0; i < got.ts.size(); ++i) {
      const int round = first_round + static_cast<int>(i);
      EXPECT_EQ(got.ts[i], (kNowMs - 60'000 + round * 1'000) * kMs) << s;
      EXPECT_EQ(std::bit_cast<double>(got.bits[i]), s * 100.0 + round) << s;
    }
  }
}

// One series space: a line-protocol field and a remote-write metric of the same name and labels
// are one series.
TEST_F(RemoteWriteTest, SharesSeriesWithLineProtocol) {
  HttpRequest lp(http::verb::post, "/write", 11);
  lp.body() = "cpu,host=a usage=1.5 " + std::to_string((kNowMs - 2'000) * kMs) + "\n";
  lp.prepare_payload();
  EXPECT_EQ(testing::RunRequest(*router_, lp).status, 204);
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "cpu_usage"}, {"host", "a"}}, {{kNowMs - 1'000, 2.5}});
  ASSERT_EQ(Write(Encode(request)).status, 204);
  const Stored s = Read("cpu_usage", {{"host", "a"}});
  EXPECT_EQ(s.ts, (std::vector<std::int64_t>{(kNowMs - 2'000) * kMs, (kNowMs - 1'000) * kMs}));
  EXPECT_EQ(storage_->index().size(), 1u);
  const nlohmann::json j = Query("cpu_usage{host=\"a\"}", kNowMs / 1000);
  ASSERT_EQ(j["data"]["result"].size(), 1u) << j.dump();
  EXPECT_EQ(j["data"]["result"][0]["value"][1], "2.5");
}

TEST_F(RemoteWriteTest, MalformedRequestsAre400AndStoreNothing) {
  const std::uint64_t one = std::bit_cast<std::uint64_t>(1.0);
  const std::string good =
      PbWriter().Bytes(1, PbSeries({{"__name__", "good"}}, {{kNowMs, one}})).str();
  auto with = [&](const std::string& series) {
    // A valid series first: nothing of the request may be stored.
    return Snappy(good + PbWriter().Bytes(1, series).str());
  };
  struct Case {
    const char* what;
    std::string body;
    const char* reason;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      {"bad snappy", "definitely not snappy", "snappy", "snappy"},
      {"empty body", "", "snappy", "empty body"},
      {"bad protobuf", Snappy(good + "\x0a\x7f"), "protobuf", "invalid protobuf WriteRequest"},
      {"unsorted", with(PbSeries({{"__name__", "m"}, {"b", "1"}, {"a", "1"}}, {{kNowMs, one}})),
       "labels", "labels not sorted by name"},
      {"duplicate", with(PbSeries({{"__name__", "m"}, {"a", "1"}, {"a", "1"}}, {{kNowMs, one}})),
       "labels", "duplicate label name"},
      {"empty metric name", with(PbSeries({{"__name__", ""}, {"a", "1"}}, {{kNowMs, one}})),
       "labels", "empty metric name"},
      {"missing metric name", with(PbSeries({{"a", "1"}}, {{kNowMs, one}})), "labels",
       "no metric name"},
      {"invalid metric name", with(PbSeries({{"__name__", "a-b"}}, {{kNowMs, one}})), "labels",
       "invalid metric name \"a-b\""},
      {"invalid label name", with(PbSeries({{"0a", "1"}, {"__name__", "m"}}, {{kNowMs, one}})),
       "labels", "invalid label name"},
      {"empty label name", with(PbSeries({{"", "1"}, {"__name__", "m"}}, {{kNowMs, one}})),
       "labels", "empty label name"},
      {"timestamp",
       with(PbSeries({{"__name__", "m"}}, {{std::numeric_limits<std::int64_t>::max(), one}})),
       "timestamp", "outside the range"},
  };
  for (const Case& c : cases) {
    const double before = Counter(
        std::string("ingot_remote_write_requests_rejected_total{reason=\"") + c.reason + "\"}");
    const Response r = Write(c.body);
    EXPECT_EQ(r.status, 400) << c.what << ": " << r.body;
    EXPECT_NE(r.body.find(c.message_part), std::string::npos) << c.what << ": " << r.body;
    EXPECT_EQ(r.content_type, "text/plain; charset=utf-8") << c.what;
    EXPECT_EQ(Counter(std::string("ingot_remote_write_requests_rejected_total{reason=\"") +
                      c.reason + "\"}") -
                  before,
              1)
        << c.what;
  }
  EXPECT_EQ(storage_->index().size(), 0u);
  EXPECT_FALSE(Read("good").found);
}

TEST_F(RemoteWriteTest, OversizeBodiesAre413) {
  StopWriters();
  ingest_.max_body_bytes = 4096;
  Configure(query_options_);
  StartWriters();
  // A 6-byte body claiming 4 GiB decoded: refused from its header.
  Response r = Write(std::string("\xff\xff\xff\xff\x0f\x00", 6));
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(r.body.find("snappy header claims 4294967295 decoded bytes, more than "
                        "ingest.max_body_bytes = 4096"),
            std::string::npos)
      << r.body;
  // A valid request that decodes past the limit.
  prometheus::WriteRequest request;
  for (int i = 0; i < 100; ++i) {
    std::string job = "job";
    job.append(std::to_string(i));
    AddSeries(&request, {{"__name__", "big"}, {"job", job}}, {{kNowMs, 1.0}, {kNowMs + 1, 2.0}});
  }
  const std::string body = Encode(request);
  ASSERT_GT(request.ByteSizeLong(), 4096u);
  r = Write(body);
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_EQ(storage_->index().size(), 0u);
  // A body larger than any compression of the limit, whatever it claims.
  r = Write(std::string(8192, 'x'));
  EXPECT_EQ(r.status, 413) << r.body;
}

TEST_F(RemoteWriteTest, EncodingAndContentTypeHeaders) {
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "h"}}, {{kNowMs, 1.0}});
  const std::string body = Encode(request);
  Response r = Write(body, "gzip");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("unsupported Content-Encoding \"gzip\""), std::string::npos) << r.body;
  r = Write(body, "snappy", "application/json");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("application/json"), std::string::npos) << r.body;
  r = Write(body, "snappy", "application/x-protobuf;proto=io.prometheus.write.v2.Request");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("remote write 1.0"), std::string::npos) << r.body;
  EXPECT_FALSE(Read("h").found);
  // Accepted: what Prometheus sends, no headers at all, and variants of both.
  EXPECT_EQ(Write(body).status, 204);
  EXPECT_EQ(Write(body, "", "").status, 204);
  EXPECT_EQ(
      Write(body, "Snappy", "Application/X-Protobuf; proto=\"prometheus.WriteRequest\"").status,
      204);
  EXPECT_EQ(Write(body, " snappy ", "application/x-protobuf;proto=prometheus.WriteRequest").status,
            204);
  EXPECT_EQ(Read("h").ts, (std::vector<std::int64_t>{kNowMs * kMs}));
}

TEST_F(RemoteWriteTest, ExemplarsHistogramsAndMetadataAreCountedAndSkipped) {
  const double exemplars = Counter("ingot_remote_write_skipped_total{kind=\"exemplar\"}");
  const double histograms = Counter("ingot_remote_write_skipped_total{kind=\"histogram\"}");
  const double metadata = Counter("ingot_remote_write_skipped_total{kind=\"metadata\"}");
  prometheus::WriteRequest request;
  prometheus::TimeSeries* ts =
      AddSeries(&request, {{"__name__", "with_exemplar"}}, {{kNowMs, 1.0}});
  prometheus::Exemplar* e = ts->add_exemplars();
  e->set_value(0.5);
  e->set_timestamp(kNowMs);
  prometheus::Label* trace = e->add_labels();
  trace->set_name("trace_id");
  trace->set_value("abc");
  prometheus::TimeSeries* hist = AddSeries(&request, {{"__name__", "native_hist"}}, {});
  hist->add_histograms()->set_count_int(3);
  hist->add_histograms()->set_count_float(2.5);
  prometheus::MetricMetadata* md = request.add_metadata();
  md->set_type(prometheus::MetricMetadata::COUNTER);
  md->set_metric_family_name("with_exemplar");
  md->set_help("help text");
  const Response r = Write(Encode(request));
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(Read("with_exemplar").ts.size(), 1u);
  EXPECT_FALSE(Read("native_hist").found);
  EXPECT_EQ(Counter("ingot_remote_write_skipped_total{kind=\"exemplar\"}") - exemplars, 1);
  EXPECT_EQ(Counter("ingot_remote_write_skipped_total{kind=\"histogram\"}") - histograms, 2);
  EXPECT_EQ(Counter("ingot_remote_write_skipped_total{kind=\"metadata\"}") - metadata, 1);
}

// The new-series rate limit is back-pressure: 429 with Retry-After, nothing appended, and the
// series created meanwhile let the retry get further.
TEST_F(RemoteWriteTest, NewSeriesRateLimitIs429AndStoresNothing) {
  StorageOptions options = storage_options_;
  options.limits.max_new_series_per_minute = 2;
  Restart(options);
  prometheus::WriteRequest request;
  for (const char* job : {"a", "b", "c"}) {
    AddSeries(&request, {{"__name__", "rl"}, {"job", job}}, {{kNowMs, 1.0}});
  }
  const double before =
      Counter("ingot_remote_write_requests_rejected_total{reason=\"new_series_rate\"}");
  Response r = Write(Encode(request));
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(retry_after_, "1");
  EXPECT_NE(r.body.find("max_new_series_per_minute"), std::string::npos) << r.body;
  EXPECT_EQ(
      Counter("ingot_remote_write_requests_rejected_total{reason=\"new_series_rate\"}") - before,
      1);
  for (const char* job : {"a", "b"}) {
    const Stored s = Read("rl", {{"job", job}});
    EXPECT_TRUE(s.found) << job;       // created
    EXPECT_TRUE(s.ts.empty()) << job;  // but nothing appended
  }
  // The two series that exist now take their samples (their definitions logged with them).
  request.mutable_timeseries()->RemoveLast();
  r = Write(Encode(request));
  EXPECT_EQ(r.status, 204) << r.body;
  Restart(options);
  EXPECT_EQ(Read("rl", {{"job", "a"}}).ts, (std::vector<std::int64_t>{kNowMs * kMs}));
  EXPECT_EQ(Read("rl", {{"job", "b"}}).ts, (std::vector<std::int64_t>{kNowMs * kMs}));
}

// A series refused for good (limits.max_series): a 400 partial write naming it; the rest stored.
TEST_F(RemoteWriteTest, SeriesLimitIsAPartialWrite) {
  StorageOptions options = storage_options_;
  options.limits.max_series = 1;
  Restart(options);
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "first"}}, {{kNowMs, 1.0}, {kNowMs + 1, 2.0}});
  AddSeries(&request, {{"__name__", "second"}, {"job", "x"}}, {{kNowMs, 3.0}});
  const Response r = Write(Encode(request));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("partial write: series second{job=\"x\"} refused"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("max_series"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("dropped=1 of 3 samples"), std::string::npos) << r.body;
  EXPECT_EQ(Read("first").ts.size(), 2u);
  EXPECT_FALSE(Read("second", {{"job", "x"}}).found);
}

// Floats into a series that line protocol made an integer one: converted when exact.
TEST_F(RemoteWriteTest, IntegerSeriesTakeExactIntegersOnly) {
  HttpRequest lp(http::verb::post, "/write", 11);
  lp.body() = "jobs count=5i " + std::to_string((kNowMs - 1'000) * kMs) + "\n";
  lp.prepare_payload();
  ASSERT_EQ(testing::RunRequest(*router_, lp).status, 204);
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "jobs_count"}}, {{kNowMs, 7.0}, {kNowMs + 1, 7.5}});
  const Response r = Write(Encode(request));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("1 samples of integer or boolean series"), std::string::npos) << r.body;
  const Stored s = Read("jobs_count");
  EXPECT_EQ(s.ts, (std::vector<std::int64_t>{(kNowMs - 1'000) * kMs, kNowMs * kMs}));
}

TEST_F(RemoteWriteTest, RepeatedRequestsReuseTheirSeries) {
  for (int round = 0; round < 3; ++round) {
    prometheus::WriteRequest request;
    for (int s = 0; s < 20; ++s) {
      std::string instance = "i";
      instance.append(std::to_string(s));
      AddSeries(&request, {{"__name__", "up"}, {"instance", instance}},
                {{kNowMs + round * 15'000, 1.0}});
    }
    ASSERT_EQ(Write(Encode(request)).status, 204);
  }
  EXPECT_EQ(storage_->index().size(), 20u);
  EXPECT_EQ(Read("up", {{"instance", "i7"}}).ts.size(), 3u);
}

// A request handled where it may not block (an HTTP I/O thread) goes as far as it can: with idle
// shards it is answered at once, its batches applied by the caller; behind busy shards it leaves
// the rest, which stores everything once the shards run; a large body is left whole.
TEST_F(RemoteWriteTest, AWriteThatWouldWaitLeavesTheRestToAThreadThatMay) {
  // A set that is not started: only callers apply, and what is queued waits for Start().
  ingest::ShardSet set(*storage_, 4);
  ingest::RemoteWriteHandler handler(set, storage_->index(), ingest_);
  const std::string prefix = "instance-with-a-long-name-to-fill-the-body-";
  auto request_of = [&](const std::string& name, int series, std::int64_t t_ms) {
    prometheus::WriteRequest request;
    for (int s = 0; s < series; ++s) {
      AddSeries(&request, {{"__name__", name}, {"instance", prefix + std::to_string(s)}},
                {{t_ms, 1.0 * s}});
    }
    return Encode(request);
  };
  auto bits = [](double v) { return std::vector<std::uint64_t>{std::bit_cast<std::uint64_t>(v)}; };
  const std::string first = request_of("idle", 16, kNowMs - 3000);
  ingest::RemoteWriteResponse r = handler.Handle({first, "snappy", ""}, /*may_block=*/false);
  ASSERT_FALSE(r.rest) << "idle shards: nothing waits";
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(Read("idle", {{"instance", prefix + "9"}}).bits, bits(9.0));

  // A batch queued on every shard: the request must not wait here.
  QueueOnEveryShard(set);
  const std::string second = request_of("busy", 16, kNowMs - 2000);
  r = handler.Handle({second, "snappy", ""}, /*may_block=*/false);
  ASSERT_TRUE(r.rest) << "busy shards: the rest is left";
  EXPECT_TRUE(Read("busy", {{"instance", prefix + "3"}}).ts.empty());
  set.Start();
  const ingest::RemoteWriteResponse rest = r.rest();
  EXPECT_EQ(rest.status, 204) << rest.body;
  for (int s = 0; s < 16; ++s) {
    EXPECT_EQ(Read("busy", {{"instance", prefix + std::to_string(s)}}).bits, bits(1.0 * s)) << s;
  }

  // A body past kInlineBodyBytes is not even decoded here.
  const double requests_before = Counter("ingot_remote_write_requests_total");
  const std::string large = request_of("large", 30000, kNowMs - 1000);
  ASSERT_GT(large.size(), ingest::RemoteWriteHandler::kInlineBodyBytes);
  r = handler.Handle({large, "snappy", ""}, /*may_block=*/false);
  ASSERT_TRUE(r.rest);
  EXPECT_EQ(Counter("ingot_remote_write_requests_total"), requests_before);
  EXPECT_EQ(r.rest().status, 204);
  EXPECT_EQ(Read("large", {{"instance", prefix + "29999"}}).bits, bits(29999.0));
  set.Stop();
}

// A rest that is dropped without running (the server stopping) leaves no batch pointing at freed
// memory: its end waits for what was handed to the shards.
TEST_F(RemoteWriteTest, ADroppedRestWaitsForItsBatches) {
  ingest::ShardSet set(*storage_, 4);
  ingest::RemoteWriteHandler handler(set, storage_->index(), ingest_);
  prometheus::WriteRequest request;
  for (int s = 0; s < 64; ++s) {
    AddSeries(&request, {{"__name__", "dropped"}, {"n", std::to_string(s)}},
              {{kNowMs - 1000, 2.0}});
  }
  // Every shard gets a batch queued ahead, so the request's batches queue behind it.
  QueueOnEveryShard(set);
  const std::string body = Encode(request);
  ingest::RemoteWriteResponse r = handler.Handle({body, "snappy", ""}, /*may_block=*/false);
  ASSERT_TRUE(r.rest);
  set.Start();
  r = {};  // dropped: must neither crash nor leave a dangling completion (ASan checks)
  set.Stop();
}

// Through a real HttpServer on loopback: the request as Prometheus sends it, and the server's
// own body limit (query.max_request_bytes).
TEST_F(RemoteWriteTest, OverRealSockets) {
  HttpServerOptions options;
  options.max_request_bytes = 64 * 1024;
  HttpServer server(options, *router_);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "sock"}, {"job", "x"}}, {{kNowMs, 42.0}});
  testing::HttpResult r = testing::HttpPost(
      server.port(), "/api/v1/write", Encode(request), "application/x-protobuf",
      {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}});
  EXPECT_EQ(r.status, 204) << r.body << r.error;
  EXPECT_EQ(Read("sock", {{"job", "x"}}).ts, (std::vector<std::int64_t>{kNowMs * kMs}));
  r = testing::HttpPost(server.port(), "/api/v1/write", std::string(70 * 1024, 'x'),
                        "application/x-protobuf", {{"Content-Encoding", "snappy"}});
  EXPECT_EQ(r.status, 413) << r.body;
  EXPECT_NE(r.body.find("query.max_request_bytes"), std::string::npos) << r.body;
  server.Stop();
}

// A body past what the I/O thread decodes itself goes to the write pool whole, its answer the
// same: every sample stored (204), or a 400 for a bad body.
TEST_F(RemoteWriteTest, LargeBodiesGoToTheWritePoolOverRealSockets) {
  HttpServerOptions options;
  options.max_request_bytes = 8 << 20;
  HttpServer server(options, *router_);
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  prometheus::WriteRequest request;
  for (int s = 0; s < 40000; ++s) {
    AddSeries(&request,
              {{"__name__", "big"}, {"series", "a-long-series-label-" + std::to_string(s)}},
              {{kNowMs, 0.5 * s}});
  }
  const std::string body = Encode(request);
  ASSERT_GT(body.size(), ingest::RemoteWriteHandler::kInlineBodyBytes);
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
  testing::HttpResult r =
      testing::HttpPost(server.port(), "/api/v1/write", body, "application/x-protobuf", headers);
  EXPECT_EQ(r.status, 204) << r.body << r.error;
  EXPECT_EQ(Read("big", {{"series", "a-long-series-label-39999"}}).bits,
            (std::vector<std::uint64_t>{std::bit_cast<std::uint64_t>(0.5 * 39999)}));
  r = testing::HttpPost(server.port(), "/api/v1/write", std::string(300 * 1024, 'x'),
                        "application/x-protobuf", headers);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("snappy"), std::string::npos) << r.body;
  server.Stop();
}

}  // namespace
}  // namespace ingot
