// RemoteWriteDecoder: requests encoded by the generated protobuf classes and libsnappy decode to
// the same series and samples, bit for bit; every malformed body is refused with a message naming
// the problem; a corruption suite (truncation at every byte, random bit flips) never crashes.
#include "ingest/remote_write_decoder.h"

#include <gtest/gtest.h>

#include <google/protobuf/stubs/logging.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/ingest/remote_write_test_util.h"
#include "tests/support/allocation_counter.h"

namespace ingot::ingest {
namespace {

using testutil::AddSeries;
using testutil::Encode;
using testutil::LabelList;
using testutil::PbLabel;
using testutil::PbSample;
using testutil::PbSeries;
using testutil::PbWriter;
using testutil::Snappy;

constexpr std::uint64_t kLimit = 1 << 20;
constexpr std::uint64_t kStale = remote_write::kStaleNaNBits;

struct Decoded {
  std::string name;
  LabelList tags;
  std::vector<std::pair<std::int64_t, std::uint64_t>> samples;  // ms, bits
  bool operator==(const Decoded&) const = default;
};

std::vector<Decoded> All(const RemoteWriteDecoder& decoder) {
  std::vector<Decoded> out;
  std::vector<TagView> tags;
  for (const RemoteWriteSeries& s : decoder.series()) {
    Decoded d;
    std::string_view name;
    RemoteWriteDecoder::LabelsOf(s, &name, &tags);
    d.name = std::string(name);
    for (const auto& [k, v] : tags) d.tags.emplace_back(std::string(k), std::string(v));
    RemoteWriteDecoder::ForEachSample(
        s, [&](std::int64_t ts, std::uint64_t bits) { d.samples.emplace_back(ts, bits); });
    EXPECT_EQ(d.samples.size(), s.samples);
    out.push_back(std::move(d));
  }
  return out;
}

// What the generated classes parse from the same bytes, in the decoder's terms.
std::vector<Decoded> Reference(const prometheus::WriteRequest& request) {
  std::vector<Decoded> out;
  for (const prometheus::TimeSeries& ts : request.timeseries()) {
    if (ts.samples_size() == 0) continue;
    Decoded d;
    for (const prometheus::Label& l : ts.labels()) {
      if (l.name() == "__name__") {
        d.name = l.value();
      } else if (!l.value().empty()) {
        d.tags.emplace_back(l.name(), l.value());
      }
    }
    for (const prometheus::Sample& s : ts.samples()) {
      d.samples.emplace_back(s.timestamp(), std::bit_cast<std::uint64_t>(s.value()));
    }
    out.push_back(std::move(d));
  }
  return out;
}

RemoteWriteError DecodeRaw(RemoteWriteDecoder* decoder, std::string_view protobuf) {
  return decoder->Decode(Snappy(protobuf), kLimit, "test.limit");
}

// A cluster node applying its log gets the WriteRequest itself (the accepting node inflated it):
// copied instead of inflated, validated the same way, and held to the same limit.
TEST(RemoteWriteDecoderTest, ABodyThatIsTheProtobufItselfDecodesAsItsSnappyBlockDoes) {
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "up"}, {"job", "api"}}, {{1'700'000'000'000, 1.0}});
  AddSeries(&request, {{"__name__", "up"}, {"job", "db"}}, {{1'700'000'000'000, 0.0}});
  const std::string protobuf = request.SerializeAsString();
  RemoteWriteDecoder decoder;
  ASSERT_EQ(decoder.Decode(protobuf, kLimit, "test.limit", nullptr,
                           RemoteWriteDecoder::BodyFormat::kProtobuf),
            RemoteWriteError::kNone)
      << decoder.message();
  EXPECT_EQ(All(decoder), Reference(request));
  // The same bytes read as a snappy block are not one.
  EXPECT_EQ(decoder.Decode(protobuf, kLimit, "test.limit"), RemoteWriteError::kSnappy);

  EXPECT_EQ(decoder.Decode(protobuf, protobuf.size() - 1, "test.limit", nullptr,
                           RemoteWriteDecoder::BodyFormat::kProtobuf),
            RemoteWriteError::kTooLarge);
  EXPECT_NE(decoder.message().find("test.limit"), std::string::npos) << decoder.message();
  const std::string bad = protobuf.substr(0, protobuf.size() - 3);
  EXPECT_EQ(decoder.Decode(bad, kLimit, "test.limit", nullptr,
                           RemoteWriteDecoder::BodyFormat::kProtobuf),
            RemoteWriteError::kProtobuf)
      << decoder.message();
}

TEST(RemoteWriteDecoderTest, RoundTripsBitExact) {
  prometheus::WriteRequest request;
  const double values[] = {std::bit_cast<double>(kStale),
                           0.0,
                           -0.0,
                           1.5,
                           -2.25,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           std::bit_cast<double>(0x7ff8dead0000beefull),
                           std::numeric_limits<double>::denorm_min(),
                           9007199254740993.0};
  std::vector<std::pair<std::int64_t, double>> samples;
  // Milliseconds as Prometheus sends them: negative (before 1970), not on a second, and the
  // extremes that still fit nanoseconds.
  const std::int64_t times[] = {1'700'000'000'123,
                                -1,
                                -1'500,
                                0,
                                1'700'000'000'001,
                                std::numeric_limits<std::int64_t>::max() / 1'000'000,
                                std::numeric_limits<std::int64_t>::min() / 1'000'000,
                                42,
                                43,
                                44,
                                45};
  for (std::size_t i = 0; i < std::size(values); ++i) samples.emplace_back(times[i], values[i]);
  AddSeries(&request, {{"__name__", "http_requests_total"}, {"job", "api"}, {"method", "GET"}},
            samples);
  AddSeries(&request, {{"__name__", "up"}}, {{1000, 1.0}});
  AddSeries(&request,
            {{"__name__", "ns:rule:rate5m"}, {"a", "v,with=escapes and spaces"}, {"b", "\xc3\xa9"}},
            {{5, 2.0}});
  RemoteWriteDecoder decoder;
  ASSERT_EQ(decoder.Decode(Encode(request), kLimit, "test.limit"), RemoteWriteError::kNone)
      << decoder.message();
  EXPECT_EQ(All(decoder), Reference(request));
  EXPECT_EQ(decoder.counts().series, 3u);
  EXPECT_EQ(decoder.counts().samples, std::size(values) + 2);
  ASSERT_EQ(decoder.series().size(), 3u);
  // The first sample is the staleness marker, bit for bit.
  EXPECT_EQ(All(decoder)[0].samples[0].second, kStale);
  EXPECT_EQ(All(decoder)[0].tags, (LabelList{{"job", "api"}, {"method", "GET"}}));
  // The generated encoder writes labels first: the raw label bytes are the cache key.
  EXPECT_FALSE(decoder.series()[0].raw_labels.empty());
}

TEST(RemoteWriteDecoderTest, EmptyRequestAndEmptyValuesAndSkippedItems) {
  RemoteWriteDecoder decoder;
  EXPECT_EQ(DecodeRaw(&decoder, ""), RemoteWriteError::kNone) << decoder.message();
  EXPECT_TRUE(decoder.series().empty());

  prometheus::WriteRequest request;
  prometheus::TimeSeries* ts =
      AddSeries(&request, {{"__name__", "m"}, {"empty", ""}, {"z", "1"}}, {{1, 1.0}, {2, 2.0}});
  prometheus::Exemplar* ex = ts->add_exemplars();
  ex->set_value(3);
  ex->add_labels()->set_name("trace_id");
  ts->add_exemplars();
  // A native-histogram series: no samples, so validated and skipped.
  prometheus::TimeSeries* hist = AddSeries(&request, {{"__name__", "h"}}, {});
  hist->add_histograms()->set_sum(5);
  hist->add_histograms()->set_count_int(2);
  hist->add_histograms();
  request.add_metadata()->set_metric_family_name("m");
  ASSERT_EQ(decoder.Decode(Encode(request), kLimit, "test.limit"), RemoteWriteError::kNone)
      << decoder.message();
  EXPECT_EQ(decoder.counts().series, 2u);
  EXPECT_EQ(decoder.counts().samples, 2u);
  EXPECT_EQ(decoder.counts().exemplars, 2u);
  EXPECT_EQ(decoder.counts().histograms, 3u);
  EXPECT_EQ(decoder.counts().metadata, 1u);
  const std::vector<Decoded> all = All(decoder);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].name, "m");
  EXPECT_EQ(all[0].tags, (LabelList{{"z", "1"}}));  // an empty value is no label
}

// Any conforming encoder: fields in any order, unknown fields of every wire type (groups too),
// a known field number with another wire type, the last of a repeated singular field.
TEST(RemoteWriteDecoderTest, ReadsWhatProtobufReads) {
  const std::string group =
      PbWriter().Tag(9, 3).VarintField(1, 5).Tag(10, 3).Tag(10, 4).Tag(9, 4).str();
  const std::string sample = PbWriter()
                                 .VarintField(2, 7)
                                 .Fixed64Field(1, std::bit_cast<std::uint64_t>(1.0))
                                 .Raw(group)
                                 .Fixed64Field(1, std::bit_cast<std::uint64_t>(2.5))
                                 .Tag(7, 5)
                                 .Raw("abcd")
                                 .VarintField(1, 99)  // field 1 as a varint: unknown, skipped
                                 .str();
  const std::string series =
      PbWriter()
          .Bytes(2, sample)
          .Bytes(1, PbLabel("__name__", "m"))
          .Bytes(15, "unknown")
          .Bytes(1, PbWriter().Bytes(2, "v").Bytes(1, "x").Bytes(1, "k").str())
          .Bytes(2, "")  // a sample of defaults: value 0 at 0 ms
          .str();
  // A 5-byte tag whose last byte carries bits past 32: protobuf cuts it to 32 bits (field
  // 2^29-1, varint) and reads on.
  const std::string long_tag("\xf8\xff\xff\xff\x7f\x01", 6);
  const std::string body = PbWriter()
                               .VarintField(2, 1)
                               .Bytes(1, series)
                               .Raw(group)
                               .Fixed64Field(4, 0)
                               .Raw(long_tag)
                               .str();
  prometheus::WriteRequest reference;
  ASSERT_TRUE(reference.ParseFromString(body));
  RemoteWriteDecoder decoder;
  ASSERT_EQ(DecodeRaw(&decoder, body), RemoteWriteError::kNone) << decoder.message();
  EXPECT_EQ(All(decoder), Reference(reference));
  const std::vector<Decoded> all = All(decoder);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].tags, (LabelList{{"k", "v"}}));
  EXPECT_EQ(all[0].samples, (std::vector<std::pair<std::int64_t, std::uint64_t>>{
                                {7, std::bit_cast<std::uint64_t>(2.5)}, {0, 0}}));
  // Labels interleaved with other fields: no raw key.
  EXPECT_TRUE(decoder.series()[0].raw_labels.empty());
}

struct BadCase {
  const char* what;
  std::string protobuf;
  RemoteWriteError error;
  const char* message_part;
};

TEST(RemoteWriteDecoderTest, MalformedRequestsAreRefusedNamingTheProblem) {
  const std::uint64_t one = std::bit_cast<std::uint64_t>(1.0);
  auto request_of = [](const std::string& series) { return PbWriter().Bytes(1, series).str(); };
  const std::string good = PbSeries({{"__name__", "ok"}}, {{1, one}});
  const std::vector<BadCase> cases = {
      {"truncated", request_of(good).substr(0, 5), RemoteWriteError::kProtobuf,
       "length-delimited field longer than its message"},
      {"bad tag", std::string("\x00\x01", 2), RemoteWriteError::kProtobuf, "field number 0"},
      {"wire type 7", "\x0f", RemoteWriteError::kProtobuf, "invalid wire type"},
      {"stray end group", "\x0c", RemoteWriteError::kProtobuf, "end of a group"},
      {"open group", "\x0b\x08\x01", RemoteWriteError::kProtobuf, "truncated varint"},
      {"long varint", std::string("\x08") + std::string(10, '\xff') + "\x01",
       RemoteWriteError::kProtobuf, "varint longer than 10 bytes"},
      {"truncated sample",
       request_of(PbWriter()
                      .Bytes(1, PbLabel("__name__", "m"))
                      .Bytes(2, std::string("\x09\x00", 2))
                      .str()),
       RemoteWriteError::kProtobuf, "timeseries[0].samples[0]"},
      {"unsorted",
       request_of(good) +
           request_of(PbSeries({{"__name__", "m"}, {"b", "1"}, {"a", "2"}}, {{1, one}})),
       RemoteWriteError::kLabels,
       "timeseries[1] {__name__=\"m\", b=\"1\", a=\"2\"}: label 2 \"a\": labels not sorted by name "
       "(comes after \"b\")"},
      {"name after labels", request_of(PbSeries({{"a", "1"}, {"__name__", "m"}}, {{1, one}})),
       RemoteWriteError::kLabels, "labels not sorted by name"},
      {"duplicate", request_of(PbSeries({{"__name__", "m"}, {"a", "1"}, {"a", "2"}}, {{1, one}})),
       RemoteWriteError::kLabels, "label 2 \"a\": duplicate label name"},
      {"duplicate name", request_of(PbSeries({{"__name__", "m"}, {"__name__", "n"}}, {{1, one}})),
       RemoteWriteError::kLabels, "duplicate label name"},
      {"no name", request_of(PbSeries({{"job", "x"}}, {{1, one}})), RemoteWriteError::kLabels,
       "no metric name (label __name__)"},
      {"no labels", request_of(PbSeries({}, {{1, one}})), RemoteWriteError::kLabels, "no labels"},
      {"empty name", request_of(PbSeries({{"__name__", ""}, {"job", "x"}}, {{1, one}})),
       RemoteWriteError::kLabels, "empty metric name"},
      {"bad metric name", request_of(PbSeries({{"__name__", "http.requests"}}, {{1, one}})),
       RemoteWriteError::kLabels, "invalid metric name \"http.requests\""},
      {"digit first", request_of(PbSeries({{"__name__", "1m"}}, {{1, one}})),
       RemoteWriteError::kLabels, "invalid metric name"},
      {"bad label name", request_of(PbSeries({{"__name__", "m"}, {"a-b", "1"}}, {{1, one}})),
       RemoteWriteError::kLabels, "label 1 \"a-b\": invalid label name"},
      {"colon label name", request_of(PbSeries({{"__name__", "m"}, {"a:b", "1"}}, {{1, one}})),
       RemoteWriteError::kLabels, "invalid label name"},
      {"empty label name", request_of(PbSeries({{"", "1"}, {"__name__", "m"}}, {{1, one}})),
       RemoteWriteError::kLabels, "empty label name"},
      {"bad utf-8 value", request_of(PbSeries({{"__name__", "m"}, {"a", "\xc3("}}, {{1, one}})),
       RemoteWriteError::kLabels, "label value is not valid UTF-8"},
      {"surrogate", request_of(PbSeries({{"__name__", "m"}, {"a", "\xed\xa0\x80"}}, {{1, one}})),
       RemoteWriteError::kLabels, "not valid UTF-8"},
      {"bad utf-8 name", request_of(PbSeries({{"__name__", "m"}, {"\xff", "1"}}, {{1, one}})),
       RemoteWriteError::kLabels, "label name is not valid UTF-8"},
      {"histogram series with bad labels",
       request_of(PbWriter().Bytes(1, PbLabel("job", "x")).Bytes(4, "").str()),
       RemoteWriteError::kLabels, "no metric name"},
      {"timestamp too late",
       request_of(PbSeries({{"__name__", "m"}}, {{1, one}, {9'223'372'036'855, one}})),
       RemoteWriteError::kTimestamp,
       "timeseries[0] {__name__=\"m\"}: sample 1 has timestamp 9223372036855 ms"},
      {"timestamp too early",
       request_of(PbSeries({{"__name__", "m"}}, {{-9'223'372'036'855, one}})),
       RemoteWriteError::kTimestamp, "outside the range"},
  };
  for (const BadCase& c : cases) {
    RemoteWriteDecoder decoder;
    EXPECT_EQ(DecodeRaw(&decoder, c.protobuf), c.error) << c.what << ": " << decoder.message();
    EXPECT_NE(decoder.message().find(c.message_part), std::string::npos)
        << c.what << ": " << decoder.message();
    EXPECT_TRUE(decoder.series().empty()) << c.what;
  }
}

TEST(RemoteWriteDecoderTest, BadSnappyIsRefused) {
  RemoteWriteDecoder decoder;
  EXPECT_EQ(decoder.Decode("", kLimit, "x"), RemoteWriteError::kSnappy);
  EXPECT_NE(decoder.message().find("empty body"), std::string::npos) << decoder.message();
  // Length header says 3 bytes; a literal of 5 follows.
  EXPECT_EQ(decoder.Decode(std::string("\x03\x10hello", 7), kLimit, "x"),
            RemoteWriteError::kSnappy);
  EXPECT_NE(decoder.message().find("not a valid snappy block"), std::string::npos)
      << decoder.message();
  EXPECT_EQ(decoder.Decode("\xff\xff\xff\xff\xff\xff", kLimit, "x"), RemoteWriteError::kSnappy);
  // Protobuf sent without compression: its first byte (0x0a) reads as a 10-byte length.
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "m"}}, {{1, 1.0}});
  EXPECT_NE(decoder.Decode(request.SerializeAsString(), kLimit, "x"), RemoteWriteError::kNone);
  // The framed format is named.
  const std::string framed = std::string("\xff\x06\x00\x00sNaPpY", 10) + "\x01\x05\x00\x00";
  EXPECT_EQ(decoder.Decode(framed, kLimit, "x"), RemoteWriteError::kSnappy);
  EXPECT_NE(decoder.message().find("framed snappy stream"), std::string::npos) << decoder.message();
}

TEST(RemoteWriteDecoderTest, TooLargeIsRefusedBeforeAllocating) {
  RemoteWriteDecoder decoder;
  // A 6-byte body whose header claims 4 GiB - 1.
  const std::string bomb("\xff\xff\xff\xff\x0f\x00", 6);
  const long before = ingot::testing::AllocationCount();
  EXPECT_EQ(decoder.Decode(bomb, kLimit, "ingest.max_body_bytes"), RemoteWriteError::kTooLarge);
  EXPECT_LE(ingot::testing::AllocationCount() - before, 8);  // the message only
  EXPECT_NE(decoder.message().find("snappy header claims 4294967295 decoded bytes, more than "
                                   "ingest.max_body_bytes = 1048576"),
            std::string::npos)
      << decoder.message();
  EXPECT_LT(decoder.retained_bytes(), 4096u);
  // Exactly at the limit passes the size check; one byte more does not.
  const std::string at_limit = Snappy(std::string(kLimit, '\0'));
  EXPECT_NE(decoder.Decode(at_limit, kLimit, "x"), RemoteWriteError::kTooLarge);
  EXPECT_EQ(decoder.Decode(Snappy(std::string(kLimit + 1, '\0')), kLimit, "x"),
            RemoteWriteError::kTooLarge);
  // A body larger than any compression of the limit.
  EXPECT_EQ(decoder.Decode(std::string(2 * kLimit, 'x'), kLimit, "x"), RemoteWriteError::kTooLarge);
  EXPECT_NE(decoder.message().find("body of 2097152 bytes exceeds"), std::string::npos)
      << decoder.message();
}

TEST(RemoteWriteDecoderTest, NoAllocationOnceWarm) {
  prometheus::WriteRequest request;
  for (int s = 0; s < 50; ++s) {
    std::vector<std::pair<std::int64_t, double>> samples;
    for (int i = 0; i < 20; ++i) samples.emplace_back(1000 * i, i * 0.5);
    AddSeries(&request, {{"__name__", "m"}, {"s", std::to_string(s)}}, samples);
  }
  const std::string body = Encode(request);
  RemoteWriteDecoder decoder;
  std::vector<TagView> tags;
  tags.reserve(8);
  ASSERT_EQ(decoder.Decode(body, kLimit, "x"), RemoteWriteError::kNone);
  const long before = ingot::testing::AllocationCount();
  std::uint64_t sum = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(decoder.Decode(body, kLimit, "x"), RemoteWriteError::kNone);
    for (const RemoteWriteSeries& s : decoder.series()) {
      std::string_view name;
      RemoteWriteDecoder::LabelsOf(s, &name, &tags);
      RemoteWriteDecoder::ForEachSample(s, [&](std::int64_t ts, std::uint64_t) { sum += ts; });
    }
  }
  EXPECT_EQ(ingot::testing::AllocationCount() - before, 0);
  EXPECT_EQ(sum, 3u * 50 * 190'000);
}

// Vouches for the label fields it was told about, handing back their position as the token.
class FakeKnown final : public KnownLabelSets {
 public:
  std::vector<std::string> known;
  std::vector<std::string> asked;
  bool Known(std::string_view raw_labels, std::uint64_t* token) override {
    asked.emplace_back(raw_labels);
    for (std::size_t i = 0; i < known.size(); ++i) {
      if (known[i] == raw_labels) {
        *token = 100 + i;
        return true;
      }
    }
    return false;
  }
};

TEST(RemoteWriteDecoderTest, KnownLabelSetsAreNotCheckedAgain) {
  // Unsorted labels: refused unless the caller vouches for exactly these bytes.
  const LabelList unsorted = {{"b", "1"}, {"__name__", "m"}};
  const LabelList sorted = {{"__name__", "m"}, {"b", "2"}};
  const std::string body =
      Snappy(PbWriter()
                 .Bytes(1, PbSeries(sorted, {{1000, std::bit_cast<std::uint64_t>(1.0)}}))
                 .Bytes(1, PbSeries(unsorted, {{2000, std::bit_cast<std::uint64_t>(2.0)}}))
                 .Bytes(1, PbSeries(unsorted, {}))
                 .str());
  RemoteWriteDecoder decoder;
  FakeKnown known;
  EXPECT_EQ(decoder.Decode(body, kLimit, "x", &known), RemoteWriteError::kLabels);
  EXPECT_NE(decoder.message().find("timeseries[1]"), std::string::npos) << decoder.message();
  // Only series with samples are asked about.
  ASSERT_EQ(known.asked.size(), 2u);
  known.known = {known.asked[1]};
  ASSERT_EQ(decoder.Decode(body, kLimit, "x", &known), RemoteWriteError::kLabels);
  // The series without samples is still checked.
  EXPECT_NE(decoder.message().find("timeseries[2]"), std::string::npos) << decoder.message();
  const std::string two =
      Snappy(PbWriter()
                 .Bytes(1, PbSeries(sorted, {{1000, std::bit_cast<std::uint64_t>(1.0)}}))
                 .Bytes(1, PbSeries(unsorted, {{2000, std::bit_cast<std::uint64_t>(2.0)}}))
                 .str());
  ASSERT_EQ(decoder.Decode(two, kLimit, "x", &known), RemoteWriteError::kNone) << decoder.message();
  ASSERT_EQ(decoder.series().size(), 2u);
  EXPECT_FALSE(decoder.series()[0].known);
  EXPECT_TRUE(decoder.series()[1].known);
  EXPECT_EQ(decoder.series()[1].known_token, 100u);
  // Without the oracle, everything is checked.
  EXPECT_EQ(decoder.Decode(two, kLimit, "x"), RemoteWriteError::kLabels);
}

// A label field cut short is named by its position among the series' labels.
TEST(RemoteWriteDecoderTest, ATruncatedLabelIsNamedByItsPosition) {
  const std::string series = PbWriter()
                                 .Bytes(1, PbWriter().Bytes(1, "__name__").Bytes(2, "m").str())
                                 .Tag(1, 2)
                                 .Varint(40)
                                 .Raw("ab")
                                 .str();
  RemoteWriteDecoder decoder;
  EXPECT_EQ(decoder.Decode(Snappy(PbWriter().Bytes(1, series).str()), kLimit, "x"),
            RemoteWriteError::kProtobuf);
  EXPECT_NE(decoder.message().find("timeseries[0].labels[1]"), std::string::npos)
      << decoder.message();
}

// Label sets are looked up in the cache for the whole request at once, after the walk; still,
// the first bad series in request order is the one reported: a series with bad labels before a
// malformed one, and the malformed one's own message when every series before it is good.
TEST(RemoteWriteDecoderTest, TheFirstBadSeriesIsReportedThoughLabelsAreCheckedAfterTheWalk) {
  const LabelList unsorted = {{"b", "1"}, {"__name__", "m"}};
  const LabelList sorted = {{"__name__", "m"}, {"b", "2"}};
  const std::string sample = PbWriter().Fixed64Field(1, 0).str();
  // A series whose samples field claims more bytes than the series holds.
  const std::string malformed = PbWriter()
                                    .Bytes(1, PbWriter().Bytes(1, "__name__").Bytes(2, "x").str())
                                    .Tag(2, 2)
                                    .Varint(50)
                                    .Raw(sample)
                                    .str();
  RemoteWriteDecoder decoder;
  FakeKnown known;
  const std::string bad_first =
      Snappy(PbWriter()
                 .Bytes(1, PbSeries(sorted, {{1000, std::bit_cast<std::uint64_t>(1.0)}}))
                 .Bytes(1, PbSeries(unsorted, {{2000, std::bit_cast<std::uint64_t>(2.0)}}))
                 .Bytes(1, malformed)
                 .str());
  EXPECT_EQ(decoder.Decode(bad_first, kLimit, "x", &known), RemoteWriteError::kLabels);
  EXPECT_NE(decoder.message().find("timeseries[1]"), std::string::npos) << decoder.message();
  EXPECT_NE(decoder.message().find("not sorted"), std::string::npos) << decoder.message();
  const std::string good_first =
      Snappy(PbWriter()
                 .Bytes(1, PbSeries(sorted, {{1000, std::bit_cast<std::uint64_t>(1.0)}}))
                 .Bytes(1, malformed)
                 .str());
  EXPECT_EQ(decoder.Decode(good_first, kLimit, "x", &known), RemoteWriteError::kProtobuf);
  EXPECT_NE(decoder.message().find("timeseries[1]"), std::string::npos) << decoder.message();
  // The same answers without a cache, where every series is checked during the walk.
  EXPECT_EQ(decoder.Decode(bad_first, kLimit, "x"), RemoteWriteError::kLabels);
  EXPECT_NE(decoder.message().find("timeseries[1]"), std::string::npos) << decoder.message();
  EXPECT_EQ(decoder.Decode(good_first, kLimit, "x"), RemoteWriteError::kProtobuf);
}

// Checks that `body` either fails cleanly or decodes to what protobuf parses.
void DecodeOrRefuse(RemoteWriteDecoder* decoder, std::string_view body) {
  const RemoteWriteError e = decoder->Decode(body, kLimit, "x");
  if (e != RemoteWriteError::kNone) {
    EXPECT_FALSE(decoder->message().empty());
    return;
  }
  const std::vector<Decoded> all = All(*decoder);
  prometheus::WriteRequest reference;
  if (reference.ParseFromArray(decoder->decoded().data(),
                               static_cast<int>(decoder->decoded().size()))) {
    EXPECT_EQ(all, Reference(reference));
  }
}

TEST(RemoteWriteDecoderTest, CorruptionNeverCrashes) {
  google::protobuf::SetLogHandler(nullptr);  // damaged UTF-8 is expected here
  prometheus::WriteRequest request;
  AddSeries(&request, {{"__name__", "cpu_seconds_total"}, {"cpu", "0"}, {"mode", "idle"}},
            {{1'700'000'000'000, 1.5}, {1'700'000'015'000, 2.5}});
  AddSeries(&request, {{"__name__", "up"}, {"job", "node"}}, {{-5, std::bit_cast<double>(kStale)}})
      ->add_exemplars()
      ->set_value(1);
  request.add_metadata()->set_help("help");
  const std::string raw = request.SerializeAsString();
  const std::string body = Snappy(raw);
  RemoteWriteDecoder decoder;
  for (std::size_t n = 0; n <= raw.size(); ++n) DecodeOrRefuse(&decoder, Snappy(raw.substr(0, n)));
  for (std::size_t n = 0; n <= body.size(); ++n) DecodeOrRefuse(&decoder, body.substr(0, n));
  std::mt19937_64 rng(20240611);
  for (int round = 0; round < 4000; ++round) {
    std::string damaged = (round % 2 == 0) ? raw : body;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      damaged[rng() % damaged.size()] ^= static_cast<char>(1u << (rng() % 8));
    }
    DecodeOrRefuse(&decoder, round % 2 == 0 ? Snappy(damaged) : damaged);
  }
}

// Random requests from the generated classes decode to exactly what they hold.
TEST(RemoteWriteDecoderTest, AgreesWithProtobufOnRandomRequests) {
  std::mt19937_64 rng(7);
  RemoteWriteDecoder decoder;
  for (int round = 0; round < 200; ++round) {
    prometheus::WriteRequest request;
    const int series = static_cast<int>(rng() % 20);
    for (int s = 0; s < series; ++s) {
      LabelList labels;
      const int extra = static_cast<int>(rng() % 4);
      std::string name = "metric_";
      name.append(std::to_string(rng() % 5));
      labels.emplace_back("__name__", name);
      for (int l = 0; l < extra; ++l) {
        std::string label = "l";
        label.append(std::to_string(l));
        labels.emplace_back(label, std::to_string(rng() % 3));
      }
      std::vector<std::pair<std::int64_t, double>> samples;
      const int n = static_cast<int>(rng() % 30);
      for (int i = 0; i < n; ++i) {
        const std::uint64_t bits = rng();
        const std::int64_t ts =
            static_cast<std::int64_t>(rng() % 4'000'000'000'000ull) - 2'000'000'000'000;
        samples.emplace_back(ts, std::bit_cast<double>(bits));
      }
      AddSeries(&request, labels, samples);
    }
    ASSERT_EQ(decoder.Decode(Encode(request), kLimit, "x"), RemoteWriteError::kNone)
        << decoder.message();
    EXPECT_EQ(All(decoder), Reference(request));
  }
}

}  // namespace
}  // namespace ingot::ingest
