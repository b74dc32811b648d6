// /api/v1/export in every format: exact text, bit-exact binary, edge ranges across chunk
// boundaries, head-only and mixed sealed + head data, streaming of large series.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "query/binary_export.h"
#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using testing::kSec;
using testing::kT0;
using testing::Points;
using testing::Response;

class ExportTest : public testing::QueryFixture {
 protected:
  Response Export(const std::string& selector, const std::string& extra = "") {
    return Get("/api/v1/export?match[]=" + UrlEncode(selector) + extra);
  }
  std::vector<ExportedSeries> Binary(const std::string& selector, const std::string& extra = "") {
    const Response r = Export(selector, "&format=binary" + extra);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/octet-stream");
    std::vector<ExportedSeries> series;
    const Status st = ParseBinaryExport(r.body, &series);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return series;
  }
};

TEST_F(ExportTest, JsonLinesExact) {
  Add("cpu", {{"host", "a"}}, "usage",
      {{kT0, 1.5}, {kT0 + 10 * kSec, -0.0}, {kT0 + 20 * kSec + 123'456'000, 0.1}});
  Add("cpu", {{"host", "b\"x"}}, "usage", {{kT0, 2}});
  const Response r = Export("cpu_usage");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.streamed);
  EXPECT_EQ(r.content_type, "application/stream+json");
  EXPECT_EQ(r.body,
            "{\"metric\":{\"__name__\":\"cpu_usage\",\"host\":\"a\"},\"values\":[1.5,-0,0.1],"
            "\"timestamps\":[1700000000000,1700000010000,1700000020123.456]}\n"
            "{\"metric\":{\"__name__\":\"cpu_usage\",\"host\":\"b\\\"x\"},\"values\":[2],"
            "\"timestamps\":[1700000000000]}\n");
}

// Series are formatted two at a time and identical timestamp arrays share their text (within a
// response and across requests): the text must still be exactly each series' own. Series h3
// differs from the others only in one timestamp in the middle, with the same size, first and last.
TEST_F(ExportTest, JsonSeriesFormattedInPairsWithSharedTimestampsStayExact) {
  constexpr int kSeries = 5;  // two pairs and a single
  constexpr int kPoints = 300;
  std::string expected;
  for (int h = 0; h < kSeries; ++h) {
    Points points;
    std::string values, stamps;
    for (int i = 0; i < kPoints; ++i) {
      std::int64_t ts = kT0 + i * 10 * kSec;
      if (h == 3 && i == kPoints / 2) ts += 1'000'000;  // 1 ms later
      points.emplace_back(ts, h * 1000 + i);
      if (i != 0) {
        values += ',';
        stamps += ',';
      }
      values += std::to_string(h * 1000 + i);
      stamps += std::to_string(ts / 1'000'000);
    }
    std::string host = "h";
    host += std::to_string(h);
    Add("pair", {{"host", host}}, "v", points);
    expected += "{\"metric\":{\"__name__\":\"pair_v\",\"host\":\"" + host + "\"},\"values\":[" +
                values + "],\"timestamps\":[" + stamps + "]}\n";
  }
  for (int round = 0; round < 2; ++round) {  // the second request reads the shared cache
    const Response r = Export("pair_v");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, expected) << "request " << round;
  }
}

TEST_F(ExportTest, CsvExactWithPrometheusSpecials) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Add("m", {{"k", "v"}}, "f", {{kT0, nan}, {kT0 + kSec, inf}, {kT0 + 2 * kSec, -inf},
                               {kT0 + 3 * kSec, 1e-7}, {kT0 + 4 * kSec, 123456789.125}});
  const Response r = Export("m_f", "&format=csv");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/csv; charset=utf-8");
  EXPECT_EQ(r.body,
            "series,timestamp,value\n"
            "\"m_f{k=\"\"v\"\"}\",1700000000000,NaN\n"
            "\"m_f{k=\"\"v\"\"}\",1700000001000,+Inf\n"
            "\"m_f{k=\"\"v\"\"}\",1700000002000,-Inf\n"
            "\"m_f{k=\"\"v\"\"}\",1700000003000,1e-07\n"
            "\"m_f{k=\"\"v\"\"}\",1700000004000,123456789.125\n");
}

TEST_F(ExportTest, BinaryIsBitExactAcrossChunkBoundaries) {
  std::mt19937_64 rng(11);
  Points points;
  for (int i = 0; i < 2500; ++i) {
    double v;
    switch (i % 7) {
      case 0: v = std::bit_cast<double>(0x7ff8000000000123ull); break;  // NaN with a payload
      case 1: v = -0.0; break;
      case 2: v = std::numeric_limits<double>::denorm_min(); break;
      case 3: v = (i % 2) ? std::numeric_limits<double>::infinity() : 1e300; break;
      default: v = std::bit_cast<double>(rng() & 0xbfffffffffffffffull);
    }
    points.emplace_back(kT0 + i * kSec, v);
  }
  // 2 sealed chunks (0..1023, 1024..2047) and 452 points in the head.
  Add("bin", {{"h", "1"}}, "v", points);
  struct Range {
    int first, last;  // point indexes, inclusive; first > last means empty
  } ranges[] = {{0, 2499},   {0, 0},       {1023, 1023}, {1023, 1024}, {1000, 1100},
                {2047, 2048}, {2048, 2499}, {2100, 2200}, {5, 2400},    {3000, 3100},
                {-50, -10}};
  for (const Range& range : ranges) {
    const std::int64_t start = kT0 + range.first * kSec;
    const std::int64_t end = kT0 + range.last * kSec;
    const std::string extra = "&start=" + std::to_string(start / kSec) +
                              "&end=" + std::to_string(end / kSec);
    const auto series = Binary("bin_v", extra);
    const int lo = std::max(range.first, 0);
    const int hi = std::min(range.last, 2499);
    if (lo > hi) {
      ASSERT_EQ(series.size(), 1u);  // the series frame, without points
      EXPECT_TRUE(series[0].ts_ns.empty());
      continue;
    }
    ASSERT_EQ(series.size(), 1u);
    EXPECT_EQ(series[0].metric_json, R"({"__name__":"bin_v","h":"1"})");
    ASSERT_EQ(series[0].ts_ns.size(), static_cast<std::size_t>(hi - lo + 1))
        << range.first << ".." << range.last;
    for (int i = lo; i <= hi; ++i) {
      const std::size_t k = static_cast<std::size_t>(i - lo);
      ASSERT_EQ(series[0].ts_ns[k], points[static_cast<std::size_t>(i)].first);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(series[0].values[k]),
                std::bit_cast<std::uint64_t>(points[static_cast<std::size_t>(i)].second))
          << "point " << i;
    }
  }
}

TEST_F(ExportTest, EdgeRangesInJson) {
  Add("e", {}, "one", {{kT0, 42}});
  Points head_only;
  for (int i = 0; i < 100; ++i) head_only.emplace_back(kT0 + i * kSec, i);
  Add("e", {}, "head", head_only);
  // Empty store range: nothing.
  EXPECT_EQ(Export("e_one", "&start=1&end=2").body, "");
  EXPECT_EQ(Export("e_one", "&start=1700000000&end=1700000000").body,
            "{\"metric\":{\"__name__\":\"e_one\"},\"values\":[42],\"timestamps\":[1700000000000]}"
            "\n");
  EXPECT_EQ(Export("e_head", "&start=1700000098.5").body,
            "{\"metric\":{\"__name__\":\"e_head\"},\"values\":[99],\"timestamps\":[1700000099000]"
            "}\n");
  EXPECT_EQ(Export("no_such").body, "");
  EXPECT_EQ(Binary("no_such").size(), 0u);
}

TEST_F(ExportTest, IntegerSeriesExportAsNumbers) {
  Add("i", {}, "n", {{kT0, 7}, {kT0 + kSec, -3}}, ValueType::kInteger);
  EXPECT_EQ(Export("i_n").body,
            "{\"metric\":{\"__name__\":\"i_n\"},\"values\":[7,-3],"
            "\"timestamps\":[1700000000000,1700000001000]}\n");
  const auto series = Binary("i_n");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].values, (std::vector<double>{7, -3}));
}

TEST_F(ExportTest, LargeSeriesStreamInPiecesAndMatchEveryFormat) {
  Points points;
  for (int i = 0; i < 150'000; ++i) points.emplace_back(kT0 + i * kSec, (i % 1000) * 0.25);
  Add("big", {}, "v", points);
  Add("big", {}, "w", {{kT0, 1}});
  HttpReply reply;
  router_->Handle(testing::MakeGet("/api/v1/export?match[]=" + UrlEncode("{__name__=~\"big_.*\"}") +
                                   "&format=binary"),
                  reply);
  ASSERT_TRUE(reply.stream);
  std::string body, chunk;
  int pieces = 0;
  for (bool more = true; more;) {
    chunk.clear();
    more = reply.stream(&chunk);
    body += chunk;
    ++pieces;
  }
  EXPECT_GE(pieces, 3);  // 2.4 MB of points in 1 MiB pieces
  std::vector<ExportedSeries> series;
  ASSERT_TRUE(ParseBinaryExport(body, &series).ok());
  ASSERT_EQ(series.size(), 2u);
  ASSERT_EQ(series[0].ts_ns.size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_EQ(series[0].ts_ns[i], points[i].first);
    ASSERT_EQ(series[0].values[i], points[i].second);
  }
  EXPECT_EQ(series[1].values, std::vector<double>{1});
  const Response csv = Export("big_v", "&format=csv");
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.body.begin(), csv.body.end(), '\n')),
            points.size() + 1);
  const Response json = Export("big_v");
  EXPECT_EQ(static_cast<std::size_t>(std::count(json.body.begin(), json.body.end(), ',')),
            2 * (points.size() - 1) + 2);
}

TEST_F(ExportTest, ErrorsNameTheParameter) {
  auto expect = [](const Response& r, const std::string& part) {
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("\"errorType\":\"bad_data\""), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(part), std::string::npos) << r.body;
  };
  expect(Get("/api/v1/export"), R"(invalid parameter \"match[]\")");
  expect(Export("m", "&format=xml"), R"(invalid parameter \"format\")");
  expect(Export("m", "&start=soon"), R"(invalid parameter \"start\")");
  expect(Export("m", "&end=later"), R"(invalid parameter \"end\")");
  expect(Export("m", "&start=10&end=5"), "end timestamp must not be before start time");
  expect(Export("m{"), R"(invalid parameter \"match[]\")");
}

TEST(BinaryExportFormatTest, RejectsBrokenFraming) {
  std::string s;
  AppendBinaryStreamHeader(&s);
  AppendBinaryTextFrame(BinaryFrameTag::kSeries, "{}", &s);
  EXPECT_EQ(s.size(), 8u + 8u + 8u);
  std::vector<ExportedSeries> out;
  EXPECT_TRUE(ParseBinaryExport(s, &out).IsCorruption());  // no end frame
  std::string points = s;
  AppendBinaryFrameHeader(BinaryFrameTag::kPoints, 2, &points);
  points.append(16, '\0');  // one point short
  EXPECT_TRUE(ParseBinaryExport(points, &out).IsCorruption());
  std::string error = s;
  AppendBinaryTextFrame(BinaryFrameTag::kError, "disk on fire", &error);
  EXPECT_TRUE(ParseBinaryExport(error, &out).IsIOError());
  AppendBinaryFrameHeader(BinaryFrameTag::kEnd, 1, &s);
  EXPECT_TRUE(ParseBinaryExport(s, &out).ok());
  EXPECT_TRUE(ParseBinaryExport("XXXX", &out).IsCorruption());
}

}  // namespace
}  // namespace ingot
