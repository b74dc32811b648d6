// WriteHandler (HTTP /write semantics) without sockets, over a real Storage and ShardSet.
#include "ingest/write_handler.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <random>
#include <string>

#include "config/logging.h"
#include "tests/ingest/ingest_test_util.h"

namespace ingot::ingest {
namespace {

using testutil::ReadAll;
using testutil::ScratchDir;
using testutil::SeriesKeyOf;
using testutil::StoredSeries;

constexpr std::int64_t kNowNs = 1'700'000'000'000'000'000;

std::string Gzip(std::string_view data) { return testutil::GzipCompress(data); }

class WriteHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Logger("ingest")->set_level(spdlog::level::off);
    ASSERT_TRUE(
        Storage::Open(testutil::TestStorageOptions(dir_.path() + "/data"), 2, clock_, &storage_)
            .ok());
    shards_ = std::make_unique<ShardSet>(*storage_, 4);
    shards_->Start();
    options_.max_body_bytes = 4096;
    handler_ = std::make_unique<WriteHandler>(*shards_, storage_->index(), clock_, options_);
  }
  void TearDown() override {
    handler_.reset();
    shards_->Stop();
    EXPECT_TRUE(storage_->Close().ok());
    Logger("ingest")->set_level(spdlog::level::info);
  }

  WriteResponse Post(std::string_view body, std::string_view precision = "",
                     std::string_view encoding = "") {
    WriteRequest request;
    request.body = body;
    request.precision = precision;
    request.content_encoding = encoding;
    return handler_->Handle(request);
  }
  StoredSeries Read(std::string_view measurement, std::string_view field) {
    return ReadAll(*storage_, SeriesKeyOf(measurement, {}, field));
  }

  ScratchDir dir_;
  ManualClock clock_{kNowNs};
  IngestOptions options_;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<ShardSet> shards_;
  std::unique_ptr<WriteHandler> handler_;
};

TEST_F(WriteHandlerTest, GoodBodyIs204AndStored) {
  const WriteResponse r = Post("w v=1.25 10\nw v=2.5 20\nw,x=y n=3i 30");
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Read("w", "v").values, (std::vector<double>{1.25, 2.5}));
  EXPECT_EQ(Read("w", "v").ts, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(ReadAll(*storage_, SeriesKeyOf("w", {{"x", "y"}}, "n")).values,
            (std::vector<double>{3}));
}

TEST_F(WriteHandlerTest, EmptyBodyIs204) { EXPECT_EQ(Post("").status, 204); }

TEST_F(WriteHandlerTest, GzipBodyIsInflated) {
  std::string body;
  for (int i = 0; i < 100; ++i) body += "gz v=" + std::to_string(i) + " " + std::to_string(i) + "\n";
  const WriteResponse r = Post(Gzip(body), "", "gzip");
  EXPECT_EQ(r.status, 204) << r.body;
  const StoredSeries s = Read("gz", "v");
  ASSERT_EQ(s.values.size(), 100u);
  EXPECT_EQ(s.values[99], 99.0);
  EXPECT_EQ(s.ts[99], 99);
}

TEST_F(WriteHandlerTest, CorruptOrTruncatedGzipIs400AndStoresNothing) {
  const std::string good = Gzip("bad v=1 1\nbad v=2 2\n");
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x5a);
  flipped[flipped.size() - 3] = static_cast<char>(flipped[flipped.size() - 3] ^ 0xff);  // CRC
  for (const std::string& body :
       {flipped, good.substr(0, good.size() - 6), std::string("not gzip at all")}) {
    const WriteResponse r = Post(body, "", "gzip");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("invalid gzip body"), std::string::npos) << r.body;
  }
  EXPECT_FALSE(Read("bad", "v").found);
}

TEST_F(WriteHandlerTest, BodyOverTheLimitIs413PlainAndAfterGunzip) {
  std::string big;
  while (big.size() <= options_.max_body_bytes) big += "big v=1 1\n";
  WriteResponse r = Post(big);
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("max_body_bytes"), std::string::npos) << r.body;
  // Small on the wire, too big once inflated.
  const std::string bomb = Gzip(std::string(200'000, '\n'));
  ASSERT_LT(bomb.size(), options_.max_body_bytes);
  r = Post(bomb, "", "gzip");
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("after gunzip"), std::string::npos) << r.body;
  EXPECT_FALSE(Read("big", "v").found);
  // Exactly at the limit is fine.
  std::string at_limit = "edge v=1 1\n";
  at_limit += std::string(options_.max_body_bytes - at_limit.size(), '\n');
  EXPECT_EQ(Post(at_limit).status, 204);
  EXPECT_EQ(Post(Gzip(at_limit), "", "gzip").status, 204);
}

TEST_F(WriteHandlerTest, PrecisionParameter) {
  struct Case {
    const char* precision;
    std::int64_t nanos;
  };
  const Case cases[] = {{"", 1},         {"n", 1},          {"ns", 1},
                        {"u", 1'000},    {"us", 1'000},     {"ms", 1'000'000},
                        {"s", 1'000'000'000},  {"m", 60'000'000'000},
                        {"h", 3'600'000'000'000}};
  int i = 0;
  for (const Case& c : cases) {
    const std::string m = "prec" + std::to_string(i++);
    const WriteResponse r = Post(m + " v=1 16000\n" + m + " v=2\n", c.precision);
    EXPECT_EQ(r.status, 204) << c.precision << ": " << r.body;
    EXPECT_EQ(Read(m, "v").ts,
              (std::vector<std::int64_t>{16000 * c.nanos, kNowNs / c.nanos * c.nanos}))
        << c.precision;
  }
}

TEST_F(WriteHandlerTest, BadPrecisionIs400NamingIt) {
  const WriteResponse r = Post("bp v=1 1\n", "fortnight");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("fortnight"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("precision"), std::string::npos) << r.body;
  EXPECT_FALSE(Read("bp", "v").found);
}

TEST_F(WriteHandlerTest, UnsupportedContentEncodingIs415) {
  const WriteResponse r = Post("ce v=1 1\n", "", "br");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("br"), std::string::npos) << r.body;
  EXPECT_EQ(Post("ce v=1 1\n", "", "identity").status, 204);
}

// `cat a.gz b.gz` is one valid gzip file of two members (RFC 1952); every member is stored.
TEST_F(WriteHandlerTest, MultiMemberGzipStoresEveryMember) {
  const std::string body = Gzip("mm v=1 1\nmm v=2 2\n") + Gzip("mm v=3 3\n") + Gzip("mm v=4 4\n");
  const WriteResponse r = Post(body, "", "gzip");
  EXPECT_EQ(r.status, 204) << r.body;
  EXPECT_EQ(Read("mm", "v").values, (std::vector<double>{1, 2, 3, 4}));
}

// Bytes after the last member that are not another member are an error, not silently ignored.
TEST_F(WriteHandlerTest, TrailingBytesAfterGzipAre400AndStoreNothing) {
  for (const std::string& tail : {std::string("tb v=9 9\n"), std::string("\x1f"),
                                  std::string("\x1f\x8b\x08garbage")}) {
    const WriteResponse r = Post(Gzip("tb v=1 1\n") + tail, "", "gzip");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("invalid gzip body"), std::string::npos) << r.body;
  }
  EXPECT_FALSE(Read("tb", "v").found);
}

// String values are not stored; the answer says so (a partial write), the other fields are kept.
TEST_F(WriteHandlerTest, StringFieldsAreAPartialWrite) {
  WriteResponse r = Post("sf v=1,s=\"text\" 1\nsf v=2 2\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("partial write: line 1: field 's' has a string value"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("dropped=1\"}"), std::string::npos) << r.body;
  EXPECT_EQ(Read("sf", "v").values, (std::vector<double>{1, 2}));
  // A stray quote makes the rest of the body one string value: refused, not a 204.
  r = Post("sq v=1 1\nsq s=\"a\nsq v=3 3\nsq t=\" 4\n");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("string value"), std::string::npos) << r.body;
  EXPECT_EQ(Read("sq", "v").values, (std::vector<double>{1}));
}

// INT64_MIN is a valid timestamp, not "nothing sealed yet": stored first, and again after the
// series has sealed data (where it is a late point within retention).
TEST_F(WriteHandlerTest, PointAtTheSmallestTimestampIsStored) {
  EXPECT_EQ(Post("mn v=1 -9223372036854775808\nmn v=2 5\n").status, 204);
  StoredSeries s = Read("mn", "v");
  EXPECT_EQ(s.ts, (std::vector<std::int64_t>{INT64_MIN, 5}));
  for (int batch = 0; batch < 30; ++batch) {  // 3,000 points: sealed chunks (body limit 4 KiB)
    std::string lines;
    for (int i = batch * 100; i < batch * 100 + 100; ++i) {
      lines += "mn2 v=" + std::to_string(i) + " " + std::to_string(1000 + i) + "\n";
    }
    ASSERT_EQ(Post(lines).status, 204);
  }
  const WriteResponse r = Post("mn2 v=-1 -9223372036854775808\n");
  EXPECT_EQ(r.status, 204) << r.body;
  s = Read("mn2", "v");
  ASSERT_EQ(s.ts.size(), 3001u);
  EXPECT_EQ(s.ts.front(), INT64_MIN);
  EXPECT_EQ(s.values.front(), -1.0);
}

TEST_F(WriteHandlerTest, PartialWriteStoresGoodLinesAndAnswers400) {
  const WriteResponse r = Post(
      "pw v=1 1\n"
      "pw v=oops 2\n"
      "pw v=3 3\n"
      "this is not line protocol\n"
      "pw v=5 5\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.rfind("{\"error\":\"partial write: ", 0), 0u) << r.body;
  EXPECT_NE(r.body.find("dropped=2\"}"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("line 2"), std::string::npos) << r.body;
  EXPECT_EQ(Read("pw", "v").values, (std::vector<double>{1, 3, 5}));
}

// A tag named __name__ would give a series two metric names: refused, the rest stored.
TEST_F(WriteHandlerTest, ReservedTagKeyIsAPartialWrite) {
  const WriteResponse r = Post("rn,__name__=x v=1 1\nrn,host=a v=2 2\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("tag key '__name__' is reserved"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("dropped=1\"}"), std::string::npos) << r.body;
  EXPECT_FALSE(ReadAll(*storage_, SeriesKeyOf("rn", {{"__name__", "x"}}, "v")).found);
  EXPECT_EQ(ReadAll(*storage_, SeriesKeyOf("rn", {{"host", "a"}}, "v")).values,
            (std::vector<double>{2}));
}

TEST_F(WriteHandlerTest, RejectedPointsAreAPartialWrite) {
  ASSERT_EQ(Post("tc v=1i 1\n").status, 204);
  const WriteResponse r = Post("tc v=2.5 2\ntc v=3i 3\ntc v=18446744073709551615u 4\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body.rfind("{\"error\":\"partial write: ", 0), 0u) << r.body;
  EXPECT_NE(r.body.find("dropped=2\"}"), std::string::npos) << r.body;
  EXPECT_EQ(Read("tc", "v").values, (std::vector<double>{1, 3}));
}

TEST_F(WriteHandlerTest, ErrorBodyIsValidJsonForHostileInput) {
  const WriteResponse r = Post("ok v=1 1\nq\"uo\tte\\ v=\x01\n");
  EXPECT_EQ(r.status, 400);
  // Quotes, backslashes and control bytes from the input are escaped in the JSON string.
  const nlohmann::json parsed = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(parsed.is_object()) << r.body;
  const std::string error = parsed.value("error", "");
  EXPECT_EQ(error.rfind("partial write: ", 0), 0u) << error;
  EXPECT_NE(error.find("dropped=1"), std::string::npos) << error;
}

// Series limits over HTTP: a new series past limits.max_series is a 400 partial write naming the
// limit, and points of existing series in the same body are stored.
TEST(WriteHandlerLimits, NewSeriesPastTheLimitAreAPartialWriteNamingIt) {
  Logger("ingest")->set_level(spdlog::level::off);
  ScratchDir dir;
  ManualClock clock{kNowNs};
  StorageOptions storage_options = testutil::TestStorageOptions(dir.path() + "/data");
  storage_options.limits.max_series = 2;
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(storage_options, 2, clock, &storage).ok());
  {
    ShardSet shards(*storage, 4);
    shards.Start();
    IngestOptions options;
    WriteHandler handler(shards, storage->index(), clock, options);
    WriteRequest request;
    request.body = "lim,host=a v=1 1\nlim,host=b v=2 2\n";
    ASSERT_EQ(handler.Handle(request).status, 204);
    request.body = "lim,host=a v=3 3\nlim,host=c v=4 4\nlim,host=b v=5 5\n";
    const WriteResponse r = handler.Handle(request);
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("limits.max_series = 2"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("dropped=1\"}"), std::string::npos) << r.body;
    shards.Stop();
  }
  EXPECT_EQ(ReadAll(*storage, SeriesKeyOf("lim", {{"host", "a"}}, "v")).values,
            (std::vector<double>{1, 3}));
  EXPECT_EQ(ReadAll(*storage, SeriesKeyOf("lim", {{"host", "b"}}, "v")).values,
            (std::vector<double>{2, 5}));
  EXPECT_FALSE(ReadAll(*storage, SeriesKeyOf("lim", {{"host", "c"}}, "v")).found);
  EXPECT_TRUE(storage->Close().ok());
  Logger("ingest")->set_level(spdlog::level::info);
}

TEST(Gunzip, RoundTripAndLimits) {
  std::mt19937_64 rng(3);
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "m v=" + std::to_string(rng() % 1000) + "\n";
  std::string out;
  EXPECT_EQ(ingest::Gunzip(Gzip(text), text.size(), &out), "");
  EXPECT_EQ(out, text);
  EXPECT_EQ(ingest::Gunzip(Gzip(text), text.size() - 1, &out), "too_large");
  EXPECT_NE(ingest::Gunzip(Gzip(text).substr(0, 40), text.size(), &out), "");
}

}  // namespace
}  // namespace ingot::ingest
