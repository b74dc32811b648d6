// LineIngester over a real Storage (RocksDB and WALs in a temp dir) and a real ShardSet: what a
// line turns into is read back through Storage::ReadSeries and compared exactly.
#include "ingest/line_ingester.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "ingest/ingest_metrics.h"
#include "tests/ingest/ingest_test_util.h"

namespace ingot::ingest {
namespace {

using testutil::ExpectedData;
using testutil::FormatDouble;
using testutil::ReadAll;
using testutil::ScratchDir;
using testutil::SeriesKeyOf;
using testutil::StoredSeries;

constexpr std::int64_t kNowNs = 1'700'000'123'456'789'012;

std::uint64_t Bits(double v) { return std::bit_cast<std::uint64_t>(v); }

class LineIngesterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Logger("ingest")->set_level(spdlog::level::off);
    ASSERT_TRUE(Storage::Open(testutil::TestStorageOptions(dir_.path() + "/data"), kShards, clock_,
                              &storage_)
                    .ok());
    shards_ = std::make_unique<ShardSet>(*storage_, 4);
    shards_->Start();
  }
  void TearDown() override {
    shards_->Stop();
    shards_.reset();
    if (storage_) {
      EXPECT_TRUE(storage_->Close().ok());
    }
    Logger("ingest")->set_level(spdlog::level::info);
  }

  // Feeds `text` as one Consume() (as an HTTP body is) and finishes.
  IngestStats Ingest(std::string_view text, Precision precision = Precision::kNanoseconds,
                     std::size_t max_line_bytes = 64 * 1024) {
    LineIngester ingester(*shards_, storage_->index(), clock_, precision, max_line_bytes,
                          WriteProtocol::kTcp, "test");
    ingester.Consume(text);
    ingester.Finish();
    EXPECT_TRUE(ingester.storage_status().ok()) << ingester.storage_status().ToString();
    EXPECT_EQ(ingester.storage_rejected(), 0u);
    return ingester.stats();
  }

  StoredSeries Read(std::string_view measurement, testutil::TagList tags, std::string_view field) {
    return ReadAll(*storage_, SeriesKeyOf(measurement, std::move(tags), field));
  }

  static constexpr int kShards = 4;
  ScratchDir dir_;
  ManualClock clock_{kNowNs};
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<ShardSet> shards_;
};

TEST_F(LineIngesterTest, EveryFieldTypeIsStoredAsItsOwnSeries) {
  const IngestStats stats = Ingest(
      "m,host=a f=1.5,i=-42i,u=42u,b=true,s=\"text\" 1000\n"
      "m,host=a f=-0.0,i=9007199254740992i,u=0u,b=F,s=\"more\" 2000\n"
      "m,host=a f=1.7976931348623157e308,i=-9223372036854775808i,u=9223372036854775807u,b=T 3000\n"
      "m,host=a f=5e-324,i=0i,u=1u,b=false 4000\n"
      "m,host=a f=0.1,i=1i,u=2u,b=t 5000\n");
  EXPECT_EQ(stats.lines, 5u);
  EXPECT_EQ(stats.points, 20u);
  EXPECT_EQ(stats.points_unsupported, 2u);  // the string fields
  EXPECT_EQ(stats.points_rejected, 0u);
  EXPECT_EQ(stats.lines_malformed, 0u);

  const StoredSeries f = Read("m", {{"host", "a"}}, "f");
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.type, ValueType::kFloat);
  ASSERT_EQ(f.ts, (std::vector<std::int64_t>{1000, 2000, 3000, 4000, 5000}));
  const double floats[] = {1.5, -0.0, 1.7976931348623157e308, 5e-324, 0.1};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(Bits(f.values[i]), Bits(floats[i])) << i;

  const StoredSeries in = Read("m", {{"host", "a"}}, "i");
  ASSERT_TRUE(in.found);
  EXPECT_EQ(in.type, ValueType::kInteger);
  EXPECT_EQ(in.values,
            (std::vector<double>{-42.0, 9007199254740992.0, -9223372036854775808.0, 0.0, 1.0}));

  const StoredSeries u = Read("m", {{"host", "a"}}, "u");
  ASSERT_TRUE(u.found);
  EXPECT_EQ(u.type, ValueType::kInteger);  // unsigned values that fit int64 are integers
  EXPECT_EQ(u.values, (std::vector<double>{42.0, 0.0, 9223372036854775807.0, 1.0, 2.0}));

  const StoredSeries b = Read("m", {{"host", "a"}}, "b");
  ASSERT_TRUE(b.found);
  EXPECT_EQ(b.type, ValueType::kBoolean);
  EXPECT_EQ(b.values, (std::vector<double>{1, 0, 1, 0, 1}));

  EXPECT_FALSE(Read("m", {{"host", "a"}}, "s").found);
  EXPECT_EQ(storage_->index().size(), 4u);
}

TEST_F(LineIngesterTest, IntegerIntoFloatSeriesIsConvertedWhenExact) {
  Ingest("conv v=1.5 1\n");
  // A second ingester: the series type comes from the index, not from this ingester's cache.
  const std::uint64_t conflicts_before = Metrics().points_type_conflict->Value();
  const IngestStats stats = Ingest(
      "conv v=3i 2\n"
      "conv v=7u 3\n"
      "conv v=-9007199254740992i 4\n"
      "conv v=9007199254740993i 5\n"      // 2^53 + 1: no double holds it
      "conv v=18446744073709551615u 6\n"  // 2^64 - 1: neither
      "conv v=9007199254740993u 7\n"
      "conv v=1152921504606846976i 8\n"   // 2^60: exact
      "conv v=-9223372036854775808i 9\n"  // -2^63: exact
      "conv v=2.25 10\n");
  EXPECT_EQ(stats.points, 6u);
  EXPECT_EQ(stats.points_rejected, 3u);
  EXPECT_EQ(Metrics().points_type_conflict->Value() - conflicts_before, 3u);
  const StoredSeries v = Read("conv", {}, "v");
  ASSERT_TRUE(v.found);
  EXPECT_EQ(v.type, ValueType::kFloat);
  EXPECT_EQ(v.ts, (std::vector<std::int64_t>{1, 2, 3, 4, 8, 9, 10}));
  EXPECT_EQ(v.values, (std::vector<double>{1.5, 3.0, 7.0, -9007199254740992.0,
                                           1152921504606846976.0, -9223372036854775808.0, 2.25}));
}

TEST_F(LineIngesterTest, ConflictingTypesAreRejectedAndCounted) {
  Ingest("ints v=1i 1\nbools v=true 1\nfloats v=1 1\n");
  const std::uint64_t conflicts_before = Metrics().points_type_conflict->Value();
  const IngestStats stats = Ingest(
      "ints v=2.0 2\n"  // float into integer: rejected even when integral
      "ints v=3i 3\n"
      "bools v=1i 2\n"   // integer into boolean
      "bools v=1.0 3\n"  // float into boolean
      "bools v=f 4\n"
      "floats v=t 2\n"  // boolean into float
      "floats v=2 3\n");
  EXPECT_EQ(stats.points_rejected, 4u);
  EXPECT_EQ(stats.points, 3u);
  EXPECT_EQ(Metrics().points_type_conflict->Value() - conflicts_before, 4u);
  EXPECT_NE(stats.first_error.find("line 1"), std::string::npos) << stats.first_error;
  EXPECT_EQ(Read("ints", {}, "v").values, (std::vector<double>{1, 3}));
  EXPECT_EQ(Read("ints", {}, "v").ts, (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(Read("bools", {}, "v").values, (std::vector<double>{1, 0}));
  EXPECT_EQ(Read("bools", {}, "v").ts, (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(Read("floats", {}, "v").values, (std::vector<double>{1, 2}));
}

TEST_F(LineIngesterTest, UnsignedAboveInt64MaxIsRejected) {
  const std::uint64_t overflow_before = Metrics().points_uint_overflow->Value();
  const IngestStats stats = Ingest(
      "big u=9223372036854775807u,other=1i 1\n"
      "big u=9223372036854775808u,other=2i 2\n"
      "big u=18446744073709551615u,other=3i 3\n"
      "big u=5u,other=4i 4\n");
  EXPECT_EQ(stats.points_rejected, 2u);
  EXPECT_EQ(Metrics().points_uint_overflow->Value() - overflow_before, 2u);
  const StoredSeries u = Read("big", {}, "u");
  EXPECT_EQ(u.ts, (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(u.values, (std::vector<double>{9223372036854775807.0, 5.0}));
  // The line's other fields are kept.
  EXPECT_EQ(Read("big", {}, "other").ts, (std::vector<std::int64_t>{1, 2, 3, 4}));
}

TEST_F(LineIngesterTest, PrecisionScalesTimestamps) {
  struct Case {
    Precision precision;
    const char* name;
    std::int64_t nanos;
  };
  const Case cases[] = {{Precision::kNanoseconds, "ns", 1},
                        {Precision::kMicroseconds, "us", 1'000},
                        {Precision::kMilliseconds, "ms", 1'000'000},
                        {Precision::kSeconds, "s", 1'000'000'000}};
  for (const Case& c : cases) {
    const std::string m = std::string("p_") + c.name;
    Ingest(m + " v=1 1700000000\n" + m + " v=2 -5\n" + m + " v=3\n", c.precision);
    const StoredSeries s = Read(m, {}, "v");
    ASSERT_TRUE(s.found) << c.name;
    // A missing timestamp is the receive time truncated to the precision.
    const std::int64_t default_ts = kNowNs / c.nanos * c.nanos;
    EXPECT_EQ(s.ts, (std::vector<std::int64_t>{-5 * c.nanos, 1700000000 * c.nanos, default_ts}))
        << c.name;
    EXPECT_EQ(s.values, (std::vector<double>{2, 1, 3})) << c.name;
  }
}

TEST_F(LineIngesterTest, DefaultTimestampComesFromTheClock) {
  Ingest("clock v=1\n");
  clock_.Set(kNowNs + 5'000);
  Ingest("clock v=2\n");
  const StoredSeries s = Read("clock", {}, "v");
  EXPECT_EQ(s.ts, (std::vector<std::int64_t>{kNowNs, kNowNs + 5'000}));
  EXPECT_EQ(s.values, (std::vector<double>{1, 2}));
}

TEST_F(LineIngesterTest, TagOrderAndEscapingVariantsNameOneSeries) {
  // Different prefixes as written (so different cache entries), one canonical key.
  const IngestStats stats = Ingest(
      "cpu,host=a,region=eu\\ west,k=x\\=y v=1 1\n"
      "cpu,region=eu\\ west,host=a,k=x\\=y v=2 2\n"
      "cpu,k=x\\=y,host=a,region=eu\\ west v=3 3\n"
      "cpu,k=x\\=y,region=eu\\ west,host=a w=4,v=4 4\n");
  EXPECT_EQ(stats.points, 5u);
  const StoredSeries v = Read("cpu", {{"host", "a"}, {"region", "eu west"}, {"k", "x=y"}}, "v");
  ASSERT_TRUE(v.found);
  EXPECT_EQ(v.ts, (std::vector<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(v.values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(storage_->index().size(), 2u);  // v and w

  // Escaped names everywhere: measurement, tag key and value, field key.
  Ingest("we\\,ird\\ m,t\\ k\\=1=v\\,1 f\\ k\\=\\,=7i 9\n");
  const StoredSeries weird = Read("we,ird m", {{"t k=1", "v,1"}}, "f k=,");
  ASSERT_TRUE(weird.found);
  EXPECT_EQ(weird.values, (std::vector<double>{7}));
}

TEST_F(LineIngesterTest, MalformedLinesAreCountedAndSkippedWithoutLosingNeighbours) {
  const std::uint64_t malformed_before = Metrics().lines_malformed->Value();
  const IngestStats stats = Ingest(
      "good v=1 1\n"
      "no_fields_here\n"
      "good v=2 2\n"
      "good v=3 notatime\n"
      "# a comment\n"
      "\n"
      "good v=4 4\n"
      "good,tag v=5 5\n"
      "good v=abc 6\n"
      "good v=7 7\n"
      "good v=1e400 8\n"
      "good v=9 9");  // last line without newline
  EXPECT_EQ(stats.lines_malformed, 5u);
  EXPECT_EQ(Metrics().lines_malformed->Value() - malformed_before, 5u);
  EXPECT_EQ(stats.points, 5u);
  EXPECT_NE(stats.first_error.find("line 2"), std::string::npos) << stats.first_error;
  const StoredSeries s = Read("good", {}, "v");
  EXPECT_EQ(s.ts, (std::vector<std::int64_t>{1, 2, 4, 7, 9}));
  EXPECT_EQ(s.values, (std::vector<double>{1, 2, 4, 7, 9}));
}

TEST_F(LineIngesterTest, OverlongLinesAreCountedAndSkipped) {
  const std::string long_line = "long v=2,pad=\"" + std::string(400, 'p') + "\" 2\n";
  LineIngester ingester(*shards_, storage_->index(), clock_, Precision::kNanoseconds, 256,
                        WriteProtocol::kTcp, "test");
  ingester.Consume("long v=1 1\n" + long_line + "long v=3 3\n");
  ingester.OverlongLine(4, 100'000);  // as the TCP server reports one it skipped
  ingester.Consume("long v=5 5\n");
  ingester.Finish();
  EXPECT_EQ(ingester.stats().lines_too_long, 2u);
  EXPECT_EQ(ingester.stats().lines, 5u);
  EXPECT_NE(ingester.stats().first_error.find("line 2"), std::string::npos)
      << ingester.stats().first_error;
  EXPECT_EQ(Read("long", {}, "v").ts, (std::vector<std::int64_t>{1, 3, 5}));
}

TEST_F(LineIngesterTest, DuplicateFieldKeysLastValueWins) {
  const IngestStats stats = Ingest(
      "dup v=1,v=2 100\n"
      "dup v=3,w=1i,v=4 200\n"
      "dup v=5 300\n"
      "dup v=6 300\n");  // a later line at the same time replaces too
  EXPECT_EQ(stats.lines_malformed, 0u);
  const StoredSeries v = Read("dup", {}, "v");
  EXPECT_EQ(v.ts, (std::vector<std::int64_t>{100, 200, 300}));
  EXPECT_EQ(v.values, (std::vector<double>{2, 4, 6}));
}

TEST_F(LineIngesterTest, ManySeriesAcrossShardsInSplitConsumes) {
  // 300 hosts x 4 fields x 5 times, random values in the spellings clients use, fed the way the
  // TCP server does: several Consume() calls cut at line boundaries, one ingester.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> gauge(-1000.0, 1000.0);
  std::uniform_int_distribution<std::int64_t> counter(-(1ll << 40), 1ll << 40);
  ExpectedData expected;
  std::vector<std::string> lines;
  for (int t = 0; t < 5; ++t) {
    for (int h = 0; h < 300; ++h) {
      const std::string host = "host" + std::to_string(h);
      const std::string dc = "dc" + std::to_string(h % 7);
      const std::int64_t ts = 1'600'000'000'000'000'000 + t * 10'000'000'000ll + h;
      const double usage = std::round(gauge(rng) * 100) / 100;
      const double temp = gauge(rng);
      const std::int64_t count = counter(rng);
      const bool up = (rng() & 1) != 0;
      lines.push_back("sys,host=" + host + ",dc=" + dc + " usage=" + FormatDouble(usage) +
                      ",temp=" + FormatDouble(temp) + ",count=" + std::to_string(count) +
                      "i,up=" + (up ? "true" : "false") + " " + std::to_string(ts) + "\n");
      const testutil::TagList tags = {{"host", host}, {"dc", dc}};
      expected.Add(SeriesKeyOf("sys", tags, "usage"), ValueType::kFloat, ts, usage);
      expected.Add(SeriesKeyOf("sys", tags, "temp"), ValueType::kFloat, ts, temp);
      expected.Add(SeriesKeyOf("sys", tags, "count"), ValueType::kInteger, ts,
                   static_cast<double>(count));
      expected.Add(SeriesKeyOf("sys", tags, "up"), ValueType::kBoolean, ts, up ? 1 : 0);
    }
  }
  LineIngester ingester(*shards_, storage_->index(), clock_, Precision::kNanoseconds, 64 * 1024,
                        WriteProtocol::kTcp, "test");
  std::uniform_int_distribution<std::size_t> group(1, 400);
  for (std::size_t i = 0; i < lines.size();) {
    std::string piece;
    for (std::size_t n = group(rng); n > 0 && i < lines.size(); --n) piece += lines[i++];
    ingester.Consume(piece);
  }
  ingester.Finish();
  ASSERT_TRUE(ingester.storage_status().ok());
  EXPECT_EQ(ingester.stats().points, 6000u);
  EXPECT_EQ(ingester.stats().lines, 1500u);
  EXPECT_EQ(expected.series(), 1200u);
  EXPECT_TRUE(expected.Matches(*storage_));

  // The series really are spread over every shard.
  std::vector<int> per_shard(kShards, 0);
  for (SeriesId sid : storage_->index().AllSeries()) ++per_shard[storage_->ShardOf(sid)];
  for (int s = 0; s < kShards; ++s) EXPECT_GT(per_shard[static_cast<std::size_t>(s)], 0) << s;

  // And all of it survives a reopen.
  shards_->Stop();
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  ASSERT_TRUE(
      Storage::Open(testutil::TestStorageOptions(dir_.path() + "/data"), 2, clock_, &storage_)
          .ok());
  EXPECT_TRUE(expected.Matches(*storage_));
  shards_ = std::make_unique<ShardSet>(*storage_, 4);
  shards_->Start();
}

TEST_F(LineIngesterTest, DestroyingWithoutFinishStillDeliversPendingBatches) {
  {
    LineIngester ingester(*shards_, storage_->index(), clock_, Precision::kNanoseconds, 64 * 1024,
                          WriteProtocol::kTcp, "test");
    ingester.Consume("nofinish v=1 1\nnofinish v=2 2\n");
  }
  EXPECT_EQ(Read("nofinish", {}, "v").values, (std::vector<double>{1, 2}));
}

}  // namespace
}  // namespace ingot::ingest
