// Prometheus remote read (`POST /api/v1/read`) through the query routes over a real Storage:
// requests encoded and answers decoded with the generated protobuf classes (the reference), XOR
// chunks checked against known bytes and read back by a decoder written from Prometheus' format
// description, frame checksums by a bitwise CRC-32C; every malformed request a 400 naming the
// problem, the limits 413, 415 and 422; the counters on /metrics.
#include <gtest/gtest.h>
#include <snappy.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "config/metrics.h"
#include "ingest/proto/remote.pb.h"
#include "query/crc32c.h"
#include "query/remote_read.h"
#include "query/xor_chunk_encoder.h"
#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

using testing::kSec;
using testing::kT0;
using testing::Points;
using testing::Response;

constexpr std::int64_t kMs = 1'000'000;
constexpr std::uint64_t kStaleBits = 0x7ff0000000000002ull;

// ---- Prometheus' XOR chunk, read back ---------------------------------------------------------

class BitReader {
 public:
  explicit BitReader(std::string_view bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  std::uint64_t Bits(int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= 8 * bytes_.size()) {
        ok_ = false;
        return 0;
      }
      const auto byte = static_cast<std::uint8_t>(bytes_[pos_ / 8]);
      v = (v << 1) | ((byte >> (7 - pos_ % 8)) & 1);
      ++pos_;
    }
    return v;
  }
  std::uint64_t Uvarint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70 && ok_; shift += 7) {
      const std::uint64_t byte = Bits(8);
      v |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    return v;
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

struct Sample {
  std::int64_t t_ms;
  std::uint64_t bits;
  bool operator==(const Sample&) const = default;
};

// Decodes an XOR chunk as Prometheus' xorIterator does (tsdb/chunkenc/xor.go, described in its
// docs/format/chunks.md).
std::vector<Sample> DecodeXor(std::string_view chunk, bool* ok) {
  std::vector<Sample> out;
  BitReader r(chunk);
  const auto count = static_cast<std::size_t>(r.Bits(16));
  std::int64_t t = 0;
  std::uint64_t delta = 0, value = 0;
  int leading = 0, trailing = 0;
  auto read_value = [&] {
    if (r.Bits(1) == 0) return;
    if (r.Bits(1) == 1) {
      leading = static_cast<int>(r.Bits(5));
      int significant = static_cast<int>(r.Bits(6));
      if (significant == 0) significant = 64;
      trailing = 64 - leading - significant;
    }
    const int significant = 64 - leading - trailing;
    value ^= r.Bits(significant) << trailing;
  };
  for (std::size_t i = 0; i < count && r.ok(); ++i) {
    if (i == 0) {
      const std::uint64_t zigzag = r.Uvarint();
      t = static_cast<std::int64_t>(zigzag >> 1) ^ -static_cast<std::int64_t>(zigzag & 1);
      value = r.Bits(64);
    } else if (i == 1) {
      delta = r.Uvarint();
      t += static_cast<std::int64_t>(delta);
      read_value();
    } else {
      int ones = 0;
      while (ones < 4 && r.Bits(1) == 1) ++ones;
      constexpr int kWidths[] = {0, 14, 17, 20, 64};
      const int width = kWidths[ones];
      std::uint64_t dod = width == 0 ? 0 : r.Bits(width);
      if (width != 0 && width != 64 && dod > (std::uint64_t{1} << (width - 1))) {
        dod -= std::uint64_t{1} << width;
      }
      delta += dod;
      t += static_cast<std::int64_t>(delta);
      read_value();
    }
    out.push_back({t, value});
  }
  *ok = r.ok() && out.size() == count;
  return out;
}

std::vector<Sample> EncodeDecode(const std::vector<Sample>& samples, std::size_t* bytes = nullptr) {
  XorChunkEncoder encoder;
  for (const Sample& s : samples) encoder.Append(s.t_ms, s.bits);
  const auto data = encoder.bytes();
  if (bytes) *bytes = data.size();
  bool ok = false;
  auto decoded =
      DecodeXor(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()), &ok);
  EXPECT_TRUE(ok);
  return decoded;
}

std::uint64_t Bits(double v) { return std::bit_cast<std::uint64_t>(v); }

TEST(XorChunkEncoder, KnownBytes) {
  XorChunkEncoder encoder;
  encoder.Append(1000, Bits(1.0));
  encoder.Append(2000, Bits(1.0));
  encoder.Append(3000, Bits(2.0));
  // count 3; zigzag varint of 1000; 1.0; uvarint of the delta 1000; then the bits 0 (same value),
  // 0 (delta-of-delta 0), 11 00001 001011 11111111111 (new window: 1 leading zero, 11 bits).
  const std::vector<std::uint8_t> expected = {0x00, 0x03, 0xD0, 0x0F, 0x3F, 0xF0, 0x00, 0x00, 0x00,
                                              0x00, 0x00, 0x00, 0xE8, 0x07, 0x30, 0x97, 0xFF, 0xC0};
  const auto data = encoder.bytes();
  EXPECT_EQ(std::vector<std::uint8_t>(data.begin(), data.end()), expected);
  EXPECT_EQ(encoder.count(), 3u);
  EXPECT_EQ(encoder.min_time_ms(), 1000);
  EXPECT_EQ(encoder.max_time_ms(), 3000);
}

TEST(XorChunkEncoder, PatternsRoundTripBitExact) {
  std::mt19937_64 rng(42);
  std::vector<std::vector<Sample>> cases;
  // Regular scrape interval, constant, counter, random-walk gauge with decimals.
  for (int kind = 0; kind < 4; ++kind) {
    std::vector<Sample> s;
    double walk = 100;
    for (int i = 0; i < 120; ++i) {
      double v = kind == 0 ? 5.0 : kind == 1 ? i * 3.0 : (walk += (rng() % 200 - 100) / 100.0);
      if (kind == 3) v = std::bit_cast<double>(rng());
      s.push_back({1'700'000'000'000 + i * 15'000, Bits(v)});
    }
    cases.push_back(s);
  }
  // Every delta-of-delta width and its boundaries, negative timestamps, the specials.
  const std::int64_t dods[] = {0,       1,         -1,           8192,   -8191,  8193,    -8192,
                               65536,   -65535,    65537,        -65536, 524288, -524287, 524289,
                               -524288, 1LL << 40, -(1LL << 39), 7,      0,      0};
  {
    std::vector<Sample> s;
    std::int64_t t = -5'000'000, delta = 1'000'000;
    const double specials[] = {0.0,
                               -0.0,
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::denorm_min(),
                               9007199254740993.0,
                               std::bit_cast<double>(kStaleBits),
                               std::bit_cast<double>(0x7ff8000000000001ull),
                               1.5};
    s.push_back({t, Bits(1.0)});
    t += delta;
    s.push_back({t, Bits(2.0)});
    for (std::size_t i = 0; i < std::size(dods); ++i) {
      delta += dods[i];
      t += delta;
      s.push_back({t, Bits(specials[i % std::size(specials)])});
    }
    cases.push_back(s);
  }
  for (std::size_t n = 1; n <= 3; ++n)
    cases.push_back(std::vector<Sample>(cases[2].begin(), cases[2].begin() + n));
  for (const auto& c : cases) EXPECT_EQ(EncodeDecode(c), c);
}

TEST(XorChunkEncoder, WorstCaseFitsAndResetReuses) {
  std::mt19937_64 rng(7);
  std::vector<Sample> worst;
  std::int64_t t = 0;
  for (std::size_t i = 0; i < XorChunkEncoder::kMaxSamples; ++i) {
    t += static_cast<std::int64_t>(rng() % (1ull << 40)) + 1;
    worst.push_back({t, rng()});
  }
  std::size_t bytes = 0;
  EXPECT_EQ(EncodeDecode(worst, &bytes), worst);
  EXPECT_LE(bytes, XorChunkEncoder::kMaxBytes);
  // A reused encoder writes a short chunk over a long one without leftovers.
  XorChunkEncoder encoder;
  for (const Sample& s : worst) encoder.Append(s.t_ms, s.bits);
  encoder.Reset();
  encoder.Append(1000, Bits(1.0));
  encoder.Append(2000, Bits(1.0));
  encoder.Append(3000, Bits(2.0));
  EXPECT_EQ(encoder.bytes().size(), 18u);
  EXPECT_EQ(encoder.bytes().back(), 0xC0);
}

// ---- CRC-32C -----------------------------------------------------------------------------------

std::uint32_t BitwiseCrc32c(std::string_view data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
  }
  return ~crc;
}

TEST(Crc32c, KnownVectorsAndEveryLength) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string data;
  std::mt19937 rng(3);
  for (int n = 0; n < 100; ++n) {
    EXPECT_EQ(Crc32c(data), BitwiseCrc32c(data)) << n;
    data.push_back(static_cast<char>(rng()));
  }
}

// ---- the endpoint
// --------------------------------------------------------------------------------

using MatcherList =
    std::vector<std::tuple<prometheus::LabelMatcher::Type, std::string, std::string>>;

void AddQuery(prometheus::ReadRequest* request, std::int64_t start_ms, std::int64_t end_ms,
              const MatcherList& matchers) {
  prometheus::Query* q = request->add_queries();
  q->set_start_timestamp_ms(start_ms);
  q->set_end_timestamp_ms(end_ms);
  for (const auto& [type, name, value] : matchers) {
    prometheus::LabelMatcher* m = q->add_matchers();
    m->set_type(type);
    m->set_name(name);
    m->set_value(value);
  }
}

std::string Snappy(const std::string& raw) {
  std::string out;
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

// Labels and samples of one series in an answer.
struct ReadSeries {
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<Sample> samples;
  bool operator==(const ReadSeries&) const = default;
};
using QueryAnswer = std::vector<ReadSeries>;

std::ostream& operator<<(std::ostream& os, const ReadSeries& s) {
  os << "{";
  for (const auto& [k, v] : s.labels) os << k << "=" << v << ",";
  os << "} " << s.samples.size() << " samples";
  for (std::size_t i = 0; i < s.samples.size() && i < 4; ++i) {
    os << " " << s.samples[i].t_ms << ":" << std::hex << s.samples[i].bits << std::dec;
  }
  return os;
}

class RemoteReadTest : public testing::QueryFixture {
 protected:
  Response Read(const std::string& body, const std::string& encoding = "snappy") {
    HttpRequest request(http::verb::post, "/api/v1/read", 11);
    if (!encoding.empty()) request.set(http::field::content_encoding, encoding);
    request.set(http::field::content_type, "application/x-protobuf");
    request.set("X-Prometheus-Remote-Read-Version", "0.1.0");
    request.body() = body;
    request.prepare_payload();
    HttpReply reply;
    reply.response.version(11);
    router_->Handle(request, reply);
    Response r;
    r.status = static_cast<int>(reply.response.result_int());
    r.content_type = std::string(reply.response[http::field::content_type]);
    content_encoding_ = std::string(reply.response[http::field::content_encoding]);
    r.body = reply.response.body();
    if (reply.stream) {
      r.streamed = true;
      std::string piece;
      for (bool more = true; more;) {
        piece.clear();
        more = reply.stream(&piece);
        r.body += piece;
        ++pieces_;
      }
    }
    return r;
  }

  // Runs `request` with SAMPLES and checks the envelope; one answer per query.
  std::vector<QueryAnswer> ReadSamples(const prometheus::ReadRequest& request) {
    const Response r = Read(Snappy(request.SerializeAsString()));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/x-protobuf");
    EXPECT_EQ(content_encoding_, "snappy");
    EXPECT_FALSE(r.streamed);
    std::string raw;
    EXPECT_TRUE(snappy::Uncompress(r.body.data(), r.body.size(), &raw));
    prometheus::ReadResponse response;
    EXPECT_TRUE(response.ParseFromString(raw));
    std::vector<QueryAnswer> out;
    for (const auto& result : response.results()) {
      QueryAnswer answer;
      for (const auto& ts : result.timeseries()) {
        ReadSeries s;
        for (const auto& l : ts.labels()) s.labels.emplace_back(l.name(), l.value());
        for (const auto& sample : ts.samples()) {
          s.samples.push_back({sample.timestamp(), Bits(sample.value())});
        }
        answer.push_back(std::move(s));
      }
      out.push_back(std::move(answer));
    }
    return out;
  }

  // Runs `request` asking for STREAMED_XOR_CHUNKS; checks every frame (checksum, one series per
  // frame, chunk bounds and sizes) and joins a series split over frames.
  std::vector<QueryAnswer> ReadStreamed(prometheus::ReadRequest request) {
    request.clear_accepted_response_types();
    request.add_accepted_response_types(prometheus::ReadRequest::STREAMED_XOR_CHUNKS);
    request.add_accepted_response_types(prometheus::ReadRequest::SAMPLES);
    const Response r = Read(Snappy(request.SerializeAsString()));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type,
              "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse");
    EXPECT_TRUE(r.streamed);
    std::vector<QueryAnswer> out(static_cast<std::size_t>(request.queries_size()));
    std::string_view rest = r.body;
    frames_ = 0;
    std::vector<std::string> seen;  // label sets already closed, in order
    while (!rest.empty()) {
      std::uint64_t length = 0;
      int shift = 0;
      std::size_t used = 0;
      while (used < rest.size()) {
        const auto byte = static_cast<std::uint8_t>(rest[used++]);
        length |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
        shift += 7;
        if (byte < 0x80) break;
      }
      if (rest.size() < used + 4 + length) {
        ADD_FAILURE() << "truncated frame";
        break;
      }
      std::uint32_t crc = 0;
      for (int i = 0; i < 4; ++i) crc = crc << 8 | static_cast<std::uint8_t>(rest[used + i]);
      const std::string_view message = rest.substr(used + 4, length);
      EXPECT_EQ(crc, BitwiseCrc32c(message));
      rest.remove_prefix(used + 4 + length);
      ++frames_;
      prometheus::ChunkedReadResponse frame;
      EXPECT_TRUE(frame.ParseFromArray(message.data(), static_cast<int>(message.size())));
      EXPECT_EQ(frame.chunked_series_size(), 1);
      EXPECT_LE(message.size(), 2u << 20);
      const auto index = static_cast<std::size_t>(frame.query_index());
      EXPECT_LT(index, out.size());
      if (index >= out.size()) break;
      for (const auto& series : frame.chunked_series()) {
        ReadSeries s;
        for (const auto& l : series.labels()) s.labels.emplace_back(l.name(), l.value());
        QueryAnswer& answer = out[index];
        ReadSeries* target = nullptr;
        if (!answer.empty() && answer.back().labels == s.labels) {
          target = &answer.back();  // the same series, continued in the next frame
        } else {
          answer.push_back(s);
          target = &answer.back();
        }
        for (const auto& chunk : series.chunks()) {
          EXPECT_EQ(chunk.type(), prometheus::Chunk::XOR);
          bool ok = false;
          const std::vector<Sample> samples = DecodeXor(chunk.data(), &ok);
          EXPECT_TRUE(ok);
          EXPECT_FALSE(samples.empty());
          EXPECT_LE(samples.size(), XorChunkEncoder::kMaxSamples);
          if (samples.empty()) continue;
          EXPECT_EQ(chunk.min_time_ms(), samples.front().t_ms);
          EXPECT_EQ(chunk.max_time_ms(), samples.back().t_ms);
          if (!target->samples.empty()) {
            // Chunks of a series are full until its last one.
            EXPECT_EQ(target->samples.size() % XorChunkEncoder::kMaxSamples, 0u);
            EXPECT_LT(target->samples.back().t_ms, samples.front().t_ms);
          }
          target->samples.insert(target->samples.end(), samples.begin(), samples.end());
        }
      }
    }
    return out;
  }

  // The expectation: `points` (ns) as milliseconds and bits.
  static ReadSeries Expect(std::vector<std::pair<std::string, std::string>> labels,
                           const Points& points) {
    ReadSeries s;
    s.labels = std::move(labels);
    for (const auto& [ts, v] : points) s.samples.push_back({ts / kMs, Bits(v)});
    return s;
  }

  double Metric(const std::string& sample) {
    std::string text;
    MetricsRegistry::Default().RenderPrometheus(&text);
    const std::size_t at = text.find("\n" + sample + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + sample.size() + 2));
  }

  std::string content_encoding_;
  int frames_ = 0;
  int pieces_ = 0;
};

constexpr std::int64_t kT0Ms = kT0 / kMs;

TEST_F(RemoteReadTest, SamplesAndStreamedChunksReturnStoredPointsBitExact) {
  // One series across sealed chunks and the head (1024 points seal), specials included.
  Points big;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2600; ++i) {
    double v = std::bit_cast<double>(rng() >> 2);
    if (i % 97 == 0) v = std::bit_cast<double>(kStaleBits);
    if (i % 89 == 0) v = -0.0;
    big.emplace_back(kT0 + i * 10 * kSec + (i % 7) * kMs, v);
  }
  Add("http", {{"job", "api"}, {"Zone", "eu"}}, "requests", big);
  const Points small = {{kT0, 1.5}, {kT0 + 15 * kSec, 2.5}};
  Add("http", {{"job", "db"}}, "requests", small);
  Add("http", {{"job", "web"}}, "requests", {{kT0 - 3600 * kSec, 9}});  // before the range
  Add("other", {{"job", "api"}}, "requests", small);

  prometheus::ReadRequest request;
  AddQuery(&request, kT0Ms, kT0Ms + 30'000'000,
           {{prometheus::LabelMatcher::EQ, "__name__", "http_requests"}});
  // Sorted by label set: `Zone` sorts before `__name__`; the series outside the range is absent.
  const QueryAnswer expected = {
      Expect({{"Zone", "eu"}, {"__name__", "http_requests"}, {"job", "api"}}, big),
      Expect({{"__name__", "http_requests"}, {"job", "db"}}, small)};
  const std::vector<QueryAnswer> samples = ReadSamples(request);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0], expected);
  const std::vector<QueryAnswer> streamed = ReadStreamed(request);
  ASSERT_EQ(streamed.size(), 1u);
  EXPECT_EQ(streamed[0], expected);
  EXPECT_EQ(frames_, 2);
}

TEST_F(RemoteReadTest, MatcherTypesRangesAndSeveralQueries) {
  Add("m", {{"host", "a"}}, "v", {{kT0, 1}, {kT0 + kSec, 2}, {kT0 + 2 * kSec, 3}});
  Add("m", {{"host", "b"}}, "v", {{kT0, 4}});
  Add("m", {{"host", "cc"}}, "v", {{kT0, 5}});
  Add("m", {}, "v", {{kT0, 6}});
  prometheus::ReadRequest request;
  using T = prometheus::LabelMatcher;
  // The end is inclusive, in milliseconds.
  AddQuery(&request, kT0Ms, kT0Ms + 1000, {{T::EQ, "__name__", "m_v"}, {T::RE, "host", "a|b"}});
  AddQuery(&request, kT0Ms, kT0Ms + 5000, {{T::EQ, "__name__", "m_v"}, {T::NEQ, "host", "a"}});
  AddQuery(&request, kT0Ms, kT0Ms + 5000, {{T::NRE, "host", "a|b|"}});
  AddQuery(&request, kT0Ms + 1, kT0Ms + 999, {{T::EQ, "host", "a"}});  // between the points
  AddQuery(&request, kT0Ms + 5000, kT0Ms, {{T::EQ, "host", "a"}});     // end before start
  const std::vector<QueryAnswer> expected = {
      {Expect({{"__name__", "m_v"}, {"host", "a"}}, {{kT0, 1}, {kT0 + kSec, 2}}),
       Expect({{"__name__", "m_v"}, {"host", "b"}}, {{kT0, 4}})},
      {Expect({{"__name__", "m_v"}}, {{kT0, 6}}),
       Expect({{"__name__", "m_v"}, {"host", "b"}}, {{kT0, 4}}),
       Expect({{"__name__", "m_v"}, {"host", "cc"}}, {{kT0, 5}})},
      {Expect({{"__name__", "m_v"}, {"host", "cc"}}, {{kT0, 5}})},
      {},
      {}};
  EXPECT_EQ(ReadSamples(request), expected);
  EXPECT_EQ(ReadStreamed(request), expected);
}

TEST_F(RemoteReadTest, SubMillisecondPointsAndIntegerSeries) {
  // Several points in one millisecond: the last one is sent, at that millisecond.
  Add("sub", {}, "v", {{kT0 + 1, 1}, {kT0 + 999'999, 2}, {kT0 + kMs, 3}, {kT0 - 1, 4}});
  Add("int", {}, "n", {{kT0, 7}, {kT0 + kSec, -3}}, ValueType::kInteger);
  prometheus::ReadRequest request;
  AddQuery(&request, kT0Ms - 1, kT0Ms + 2000,
           {{prometheus::LabelMatcher::RE, "__name__", "sub_v|int_n"}});
  const std::vector<QueryAnswer> expected = {
      {Expect({{"__name__", "int_n"}}, {{kT0, 7}, {kT0 + kSec, -3}}),
       ReadSeries{{{"__name__", "sub_v"}},
                  {{kT0Ms - 1, Bits(4)}, {kT0Ms, Bits(2)}, {kT0Ms + 1, Bits(3)}}}}};
  EXPECT_EQ(ReadSamples(request), expected);
  EXPECT_EQ(ReadStreamed(request), expected);
}

TEST_F(RemoteReadTest, LongSeriesStreamOverSeveralFramesAndPieces) {
  // Random values cost ~10 bytes a sample: 250k samples are more than two frames of 1 MiB.
  Points points;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 250'000; ++i)
    points.emplace_back(kT0 + i * kSec, std::bit_cast<double>(rng() >> 2));
  Add("long", {}, "v", points);
  Add("long", {}, "w", {{kT0, 1}});
  prometheus::ReadRequest request;
  AddQuery(&request, kT0Ms, kT0Ms + 300'000'000,
           {{prometheus::LabelMatcher::RE, "__name__", "long_.*"}});
  const std::vector<QueryAnswer> streamed = ReadStreamed(request);
  const std::vector<QueryAnswer> expected = {
      {Expect({{"__name__", "long_v"}}, points), Expect({{"__name__", "long_w"}}, {{kT0, 1}})}};
  EXPECT_EQ(streamed, expected);
  EXPECT_GE(frames_, 4);
  EXPECT_GE(pieces_, 2);
}

TEST_F(RemoteReadTest, MalformedRequestsAre400NamingTheProblem) {
  Add("m", {}, "v", {{kT0, 1}});
  const double rejected_before =
      Metric("ingot_remote_read_requests_rejected_total{reason=\"request\"}");
  Response r = Read("definitely not snappy");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("snappy"), std::string::npos) << r.body;
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");

  r = Read(Snappy("\x0a\x05\x08"));  // a query whose length passes the message
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("malformed protobuf ReadRequest"), std::string::npos) << r.body;

  using T = prometheus::LabelMatcher;
  prometheus::ReadRequest bad_regex;
  AddQuery(&bad_regex, 0, 1, {{T::RE, "__name__", "m_(v"}});
  r = Read(Snappy(bad_regex.SerializeAsString()));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("queries[0].matchers[0]"), std::string::npos) << r.body;

  prometheus::ReadRequest no_matchers;
  AddQuery(&no_matchers, 0, 1, {});
  r = Read(Snappy(no_matchers.SerializeAsString()));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("no matchers"), std::string::npos) << r.body;

  prometheus::ReadRequest bad_type;
  AddQuery(&bad_type, 0, 1, {{static_cast<T::Type>(7), "__name__", "m_v"}});
  r = Read(Snappy(bad_type.SerializeAsString()));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("unknown matcher type 7"), std::string::npos) << r.body;

  prometheus::ReadRequest unknown_response;
  AddQuery(&unknown_response, 0, 1, {{T::EQ, "__name__", "m_v"}});
  unknown_response.add_accepted_response_types(
      static_cast<prometheus::ReadRequest::ResponseType>(5));
  r = Read(Snappy(unknown_response.SerializeAsString()));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("accepted_response_types"), std::string::npos) << r.body;

  r = Read(Snappy(unknown_response.SerializeAsString()), "gzip");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find("Content-Encoding"), std::string::npos) << r.body;

  EXPECT_EQ(Metric("ingot_remote_read_requests_rejected_total{reason=\"request\"}"),
            rejected_before + 5);
}

TEST_F(RemoteReadTest, TruncatedAndBitFlippedRequestsNeverCrash) {
  Add("m", {{"host", "a"}}, "v", {{kT0, 1}});
  prometheus::ReadRequest request;
  AddQuery(&request, kT0Ms, kT0Ms + 1000,
           {{prometheus::LabelMatcher::EQ, "__name__", "m_v"},
            {prometheus::LabelMatcher::RE, "host", "a.*"}});
  request.add_accepted_response_types(prometheus::ReadRequest::STREAMED_XOR_CHUNKS);
  const std::string raw = request.SerializeAsString();
  std::mt19937 rng(9);
  for (std::size_t cut = 0; cut <= raw.size(); ++cut) {
    const Response r = Read(Snappy(raw.substr(0, cut)));
    EXPECT_TRUE(r.status == 200 || r.status == 400) << cut << ": " << r.status;
  }
  for (int i = 0; i < 300; ++i) {
    std::string flipped = raw;
    flipped[rng() % flipped.size()] ^= static_cast<char>(1 << (rng() % 8));
    const Response r = Read(Snappy(flipped));
    EXPECT_TRUE(r.status == 200 || r.status == 400) << i << ": " << r.status;
  }
}

TEST_F(RemoteReadTest, LimitsAre413And422) {
  QueryOptions options;
  options.max_points = 3;
  options.max_series = 2;
  options.max_request_bytes = 64;
  Configure(options);
  Add("m", {{"host", "a"}}, "v", {{kT0, 1}, {kT0 + kSec, 2}});
  Add("m", {{"host", "b"}}, "v", {{kT0, 1}, {kT0 + kSec, 2}});
  Add("m", {{"host", "c"}}, "v", {{kT0, 1}});
  using T = prometheus::LabelMatcher;
  prometheus::ReadRequest too_many_points;
  AddQuery(&too_many_points, kT0Ms, kT0Ms + 1000, {{T::RE, "host", "a|b"}});
  Response r = Read(Snappy(too_many_points.SerializeAsString()));
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("query.max_points = 3"), std::string::npos) << r.body;
  too_many_points.add_accepted_response_types(prometheus::ReadRequest::STREAMED_XOR_CHUNKS);
  r = Read(Snappy(too_many_points.SerializeAsString()));
  EXPECT_EQ(r.status, 422);
  EXPECT_FALSE(r.streamed);
  EXPECT_NE(r.body.find("query.max_points = 3"), std::string::npos) << r.body;

  prometheus::ReadRequest fits;
  AddQuery(&fits, kT0Ms, kT0Ms + 1000, {{T::RE, "host", "a|c"}});
  EXPECT_EQ(ReadSamples(fits).at(0).size(), 2u);

  prometheus::ReadRequest too_many_series;
  AddQuery(&too_many_series, kT0Ms, kT0Ms, {{T::EQ, "__name__", "m_v"}});
  r = Read(Snappy(too_many_series.SerializeAsString()));
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("query.max_series = 2"), std::string::npos) << r.body;

  prometheus::ReadRequest large;
  AddQuery(&large, 0, 1, {{T::EQ, "__name__", std::string(100, 'x')}});
  r = Read(Snappy(large.SerializeAsString()));
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("query.max_request_bytes = 64"), std::string::npos) << r.body;
  // A snappy header that claims a huge size is refused before anything is allocated for it.
  r = Read(std::string("\xff\xff\xff\xff\x0f", 5));
  EXPECT_EQ(r.status, 413);
}

TEST_F(RemoteReadTest, CountersOnMetrics) {
  Add("m", {}, "v", {{kT0, 1}, {kT0 + kSec, 2}});
  const double requests = Metric("ingot_remote_read_requests_total");
  const double samples = Metric("ingot_remote_read_samples_total");
  const double series = Metric("ingot_remote_read_series_total");
  const double streamed = Metric("ingot_remote_read_streamed_requests_total");
  prometheus::ReadRequest request;
  AddQuery(&request, kT0Ms, kT0Ms + 1000, {{prometheus::LabelMatcher::EQ, "__name__", "m_v"}});
  ReadSamples(request);
  ReadStreamed(request);
  EXPECT_EQ(Metric("ingot_remote_read_requests_total"), requests + 2);
  EXPECT_EQ(Metric("ingot_remote_read_samples_total"), samples + 4);
  EXPECT_EQ(Metric("ingot_remote_read_series_total"), series + 2);
  EXPECT_EQ(Metric("ingot_remote_read_streamed_requests_total"), streamed + 1);
  EXPECT_GE(Metric("ingot_queries_total{endpoint=\"remote_read\"}"), 2);
}

}  // namespace
}  // namespace ingot
