// The codec inspector's endpoints (node/codec_routes.h) through the router, over a real Storage,
// checked against the chunks as RocksDB holds them: the chunks family is walked here with its own
// iterator and every chunk's fields are read from the bytes at the offsets docs/chunk-format.md
// and docs/codec-format.md draw, not through chunk/chunk_inspect.h.
#include "node/codec_routes.h"

#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <nlohmann/json.hpp>

#include "chunk/chunk_inspect.h"
#include "chunk/chunk_store.h"
#include "codec/codec.h"
#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using testing::kSec;
using testing::kT0;
using testing::Points;
using testing::Response;
using Json = nlohmann::json;

std::uint16_t Le16(const std::string& b, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<std::uint8_t>(b[at]) |
                                    static_cast<std::uint8_t>(b[at + 1]) << 8);
}
std::uint32_t Le32(const std::string& b, std::size_t at) {
  return static_cast<std::uint32_t>(Le16(b, at)) | static_cast<std::uint32_t>(Le16(b, at + 2))
                                                       << 16;
}

// One stored chunk, read from the raw bytes.
struct RawChunk {
  std::int64_t first_ts_ns = 0;
  std::size_t bytes = 0;
  unsigned count = 0;
  unsigned type = 0;
  unsigned value_encoding = 0;
  std::uint32_t ts_bytes = 0;
  std::uint32_t value_bytes = 0;
  int alp_exponent = -1;  // -1: not an ALP block
  int alp_factor = -1;
  unsigned exceptions = 0;
};

std::map<SeriesId, std::vector<RawChunk>> ReadChunksFamily(ChunkStore& store) {
  std::map<SeriesId, std::vector<RawChunk>> out;
  std::unique_ptr<rocksdb::Iterator> it(
      store.db()->NewIterator(rocksdb::ReadOptions(), store.chunks_cf()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    SeriesId sid = 0;
    RawChunk c;
    EXPECT_TRUE(DecodeChunkKey(it->key(), &sid, &c.first_ts_ns));
    const std::string b = it->value().ToString();
    c.bytes = b.size();
    c.type = static_cast<std::uint8_t>(b[1]);
    c.value_encoding = static_cast<std::uint8_t>(b[3]);
    c.count = Le16(b, 4);
    c.ts_bytes = Le32(b, 24);
    c.value_bytes = Le32(b, 28);
    const std::size_t v = 40 + c.ts_bytes;  // the value block
    EXPECT_EQ(static_cast<std::uint8_t>(b[v]), c.type == 0 ? c.value_encoding : b[v]);
    const auto enc = static_cast<codec::FloatEncoding>(c.value_encoding);
    if (c.type == 0 &&
        (enc == codec::FloatEncoding::kAlp || enc == codec::FloatEncoding::kAlpDelta ||
         enc == codec::FloatEncoding::kAlpZstd)) {
      c.alp_exponent = static_cast<std::uint8_t>(b[v + 3]);
      c.alp_factor = static_cast<std::uint8_t>(b[v + 4]);
      c.exceptions = Le16(b, v + 6);
    } else if (c.type == 0 && enc == codec::FloatEncoding::kAlpRd) {
      c.exceptions = Le16(b, v + 5);
    }
    out[sid].push_back(c);
  }
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

class CodecRoutesTest : public testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    RegisterCodecRoutes(*router_, *storage_, query_options_);
    // Patterns the chooser encodes differently: two-decimal gauges (ALP), full-precision noise
    // (ALP-RD or XOR), a constant, and an integer counter; each long enough to seal chunks.
    Points gauge, noise, constant, counter;
    std::uint64_t seed = 12345;
    double level = 20;
    for (int i = 0; i < 2300; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const double u = static_cast<double>(seed >> 11) / 9007199254740992.0;
      level = std::round((level + u - 0.5) * 100) / 100;
      const std::int64_t ts = kT0 + i * 10 * kSec;
      gauge.emplace_back(ts, level);
      noise.emplace_back(ts, u * 1e3 + 1.0 / 3.0);
      constant.emplace_back(ts, 7.5);
      counter.emplace_back(ts, static_cast<double>(i * 3));
    }
    sids_["gauge"] = Add("cpu", {{"host", "a"}}, "usage", gauge);
    sids_["noise"] = Add("cpu", {{"host", "b"}}, "usage", noise);
    sids_["constant"] = Add("mem", {{"host", "a"}}, "limit", constant);
    sids_["counter"] = Add("req", {{"host", "a"}}, "total", counter, ValueType::kInteger);
  }

  Json GetJson(const std::string& target, int expected_status = 200) {
    const Response r = Get(target);
    EXPECT_EQ(r.status, expected_status) << target << ": " << r.body;
    const Json j = Json::parse(r.body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.body;
    return j;
  }
  void ExpectBadParam(const std::string& target, const std::string& message) {
    const Json j = GetJson(target, 400);
    EXPECT_EQ(j["errorType"], "bad_data");
    EXPECT_EQ(j["error"], message) << target;
  }

  std::map<std::string, SeriesId> sids_;
};

TEST_F(CodecRoutesTest, ChunksEqualTheStoredChunks) {
  const auto stored = ReadChunksFamily(storage_->chunks());
  // 2300 points per series: two sealed chunks of 1024 and 252 points in the open head.
  const Json j = GetJson("/api/v1/ingot/chunks?match[]=" + UrlEncode("{__name__=~\".+\"}"));
  ASSERT_EQ(j["status"], "success");
  const Json& series = j["data"]["series"];
  ASSERT_EQ(series.size(), 4u);
  std::set<std::string> encodings;
  for (const Json& s : series) {
    const std::string host = s["metric"]["host"];
    const std::string name = s["metric"]["__name__"];
    const SeriesId sid = name == "mem_limit"   ? sids_["constant"]
                         : name == "req_total" ? sids_["counter"]
                         : host == "a"         ? sids_["gauge"]
                                               : sids_["noise"];
    ASSERT_TRUE(stored.count(sid)) << name;
    const std::vector<RawChunk>& raw = stored.at(sid);
    EXPECT_EQ(s["type"], name == "req_total" ? "integer" : "float");
    EXPECT_EQ(s["head_points"], 2300 - 2 * 1024);
    ASSERT_EQ(s["chunks"].size(), raw.size()) << name;
    ASSERT_EQ(raw.size(), 2u);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const Json& c = s["chunks"][i];
      const RawChunk& r = raw[i];
      SCOPED_TRACE(name + " chunk " + std::to_string(i));
      EXPECT_TRUE(c["ok"].get<bool>());
      EXPECT_EQ(c["first_ts_ns"], std::to_string(r.first_ts_ns));
      EXPECT_EQ(c["bytes"], r.bytes);
      EXPECT_EQ(c["count"], r.count);
      EXPECT_EQ(c["ts_bytes"], r.ts_bytes);
      EXPECT_EQ(c["value_bytes"], r.value_bytes);
      EXPECT_DOUBLE_EQ(c["bits_per_value"].get<double>(), r.value_bytes * 8.0 / r.count);
      if (r.type == 0) {
        EXPECT_EQ(c["value_encoding"],
                  codec::FloatEncodingName(static_cast<codec::FloatEncoding>(r.value_encoding)));
      } else {
        EXPECT_EQ(c["value_encoding"].get<std::string>().rfind("int_", 0), 0u);
      }
      encodings.insert(c["value_encoding"]);
      if (r.alp_exponent >= 0) {
        EXPECT_EQ(c["alp_exponent"], r.alp_exponent);
        EXPECT_EQ(c["alp_factor"], r.alp_factor);
        // Two decimals: the exponent minus the factor is 2.
        if (sid == sids_["gauge"]) {
          EXPECT_EQ(r.alp_exponent - r.alp_factor, 2);
        }
      } else {
        EXPECT_TRUE(c["alp_exponent"].is_null());
        EXPECT_TRUE(c["alp_factor"].is_null());
      }
      EXPECT_EQ(c["exception_count"], r.exceptions);
    }
  }
  // The patterns really took different encodings.
  EXPECT_TRUE(encodings.count("constant")) << Json(encodings).dump();
  EXPECT_GE(encodings.size(), 4u) << Json(encodings).dump();

  // A time range keeps the chunks that may hold points in it; one series by its labels.
  const Json one = GetJson("/api/v1/ingot/chunks?match[]=" + UrlEncode("cpu_usage{host=\"a\"}") +
                           "&start=" + std::to_string(kT0 / kSec + 10'300) +
                           "&end=" + std::to_string(kT0 / kSec + 10'400));
  ASSERT_EQ(one["data"]["series"].size(), 1u);
  ASSERT_EQ(one["data"]["series"][0]["chunks"].size(), 1u);
  EXPECT_EQ(one["data"]["series"][0]["chunks"][0]["first_ts_ns"],
            std::to_string(kT0 + 1024 * 10 * kSec));
  EXPECT_EQ(one["data"]["series"][0]["head_points"], 0);
}

TEST_F(CodecRoutesTest, CodecStatsEqualTheChunksFamily) {
  const auto stored = ReadChunksFamily(storage_->chunks());
  std::map<std::string, std::array<std::uint64_t, 3>> expected;  // chunks, values, value bytes
  std::uint64_t chunks = 0, values = 0, bytes = 0;
  for (const auto& [sid, list] : stored) {
    for (const RawChunk& c : list) {
      const std::string name =
          c.type == 0
              ? codec::FloatEncodingName(static_cast<codec::FloatEncoding>(c.value_encoding))
              : "int";
      auto& e = expected[name];
      e[0] += 1;
      e[1] += c.count;
      e[2] += c.value_bytes;
      chunks += 1;
      values += c.count;
      bytes += c.bytes;
    }
  }
  const Json j = GetJson("/api/v1/ingot/codec_stats");
  const Json& d = j["data"];
  EXPECT_EQ(d["chunks"], chunks);
  EXPECT_EQ(d["values"], values);
  EXPECT_EQ(d["chunk_bytes"], bytes);
  EXPECT_EQ(d["truncated"], false);
  EXPECT_EQ(d["unreadable_chunks"], 0);
  ASSERT_EQ(d["encodings"].size(), expected.size());
  double shares = 0;
  for (const Json& e : d["encodings"]) {
    const auto& want = expected.at(e["encoding"]);
    EXPECT_EQ(e["chunks"], want[0]) << e.dump();
    EXPECT_EQ(e["values"], want[1]) << e.dump();
    EXPECT_EQ(e["value_bytes"], want[2]) << e.dump();
    shares += e["share_of_values"].get<double>();
  }
  EXPECT_NEAR(shares, 1.0, 1e-9);
  // A cap stops the walk and says so.
  const Json capped = GetJson("/api/v1/ingot/codec_stats?max_chunks=3");
  EXPECT_EQ(capped["data"]["chunks"], 3);
  EXPECT_EQ(capped["data"]["truncated"], true);
}

TEST_F(CodecRoutesTest, BadParametersArePreciseErrors) {
  ExpectBadParam("/api/v1/ingot/chunks",
                 "invalid parameter \"match[]\": at least one series selector is required");
  ExpectBadParam("/api/v1/ingot/chunks?match[]=" + UrlEncode("cpu_usage{"),
                 "invalid parameter \"match[]\": expected a label name or '}' in selector at "
                 "offset 10, found end of input");
  ExpectBadParam("/api/v1/ingot/chunks?match[]=cpu_usage&start=yesterday",
                 "invalid parameter \"start\": cannot parse \"yesterday\" as Unix seconds or an "
                 "RFC 3339 time");
  ExpectBadParam("/api/v1/ingot/chunks?match[]=cpu_usage&start=20&end=10",
                 "invalid parameter \"end\": before \"start\"");
  ExpectBadParam("/api/v1/ingot/chunks?match[]=cpu_usage&limit=0",
                 "invalid parameter \"limit\": \"0\" is not an integer in 1..10000");
  ExpectBadParam("/api/v1/ingot/codec_stats?max_chunks=-1",
                 "invalid parameter \"max_chunks\": \"-1\" is not an integer in 1..1000000000");
  ExpectBadParam("/api/v1/ingot/codec_stats?max_chunks=",
                 "invalid parameter \"max_chunks\": \"\" is not an integer in 1..1000000000");
  // A limit on series says the answer is cut.
  const Json j = GetJson("/api/v1/ingot/chunks?match[]=cpu_usage&limit=1");
  EXPECT_EQ(j["data"]["series"].size(), 1u);
  EXPECT_EQ(j["data"]["truncated"], true);
  EXPECT_EQ(Post("/api/v1/ingot/chunks", "").status, 405);
}

TEST_F(CodecRoutesTest, DamagedChunksAreListedWithTheReason) {
  // Every stored chunk truncated at every length and with bits flipped: a description or an
  // error, never a read outside the bytes (this suite runs under ASan+UBSan).
  const SeriesId sid = sids_["gauge"];
  std::vector<std::string> chunks;
  std::unique_ptr<rocksdb::Iterator> it(
      storage_->chunks().db()->NewIterator(rocksdb::ReadOptions(), storage_->chunks().chunks_cf()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) chunks.push_back(it->value().ToString());
  ASSERT_FALSE(chunks.empty());
  std::uint64_t seed = 99;
  for (const std::string& chunk : chunks) {
    for (std::size_t n = 0; n < chunk.size(); ++n) {
      const std::vector<std::uint8_t> cut(chunk.begin(), chunk.begin() + n);
      const ChunkDescription d = DescribeChunk(cut);
      EXPECT_FALSE(d.ok && n < kChunkHeaderBytes);
      EXPECT_TRUE(d.ok || !d.error.empty());
    }
    for (int round = 0; round < 200; ++round) {
      std::vector<std::uint8_t> bytes(chunk.begin(), chunk.end());
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      bytes[(seed >> 33) % bytes.size()] ^= static_cast<std::uint8_t>(1u << ((seed >> 20) % 8));
      DescribeChunk(bytes);
    }
  }
  // A chunk whose header does not parse, stored under the series: the endpoint lists it.
  const ChunkKey key = EncodeChunkKey(sid, kT0 - 100 * kSec);
  ASSERT_TRUE(storage_->chunks()
                  .db()
                  ->Put(rocksdb::WriteOptions(), storage_->chunks().chunks_cf(), key.slice(),
                        rocksdb::Slice(chunks[0].data(), 30))
                  .ok());
  const Json j = GetJson("/api/v1/ingot/chunks?match[]=" + UrlEncode("cpu_usage{host=\"a\"}"));
  const Json& listed = j["data"]["series"][0]["chunks"];
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0]["ok"], false);
  EXPECT_EQ(listed[0]["bytes"], 30);
  EXPECT_FALSE(listed[0]["error"].get<std::string>().empty()) << listed[0].dump();
  EXPECT_EQ(listed[1]["ok"], true);
  EXPECT_EQ(GetJson("/api/v1/ingot/codec_stats")["data"]["unreadable_chunks"], 1);
}

}  // namespace
}  // namespace ingot
