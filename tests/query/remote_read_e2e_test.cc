// Remote read against the real ingotd over real sockets: samples remote-written and written as
// line protocol are read back through `POST /api/v1/read`, as SAMPLES and as a streamed (chunked
// transfer) STREAMED_XOR_CHUNKS answer, and a malformed request is a 400.
#include <gtest/gtest.h>
#include <snappy.h>

#include <bit>
#include <string>
#include <vector>

#include "ingest/proto/remote.pb.h"
#include "query/crc32c.h"
#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

constexpr std::int64_t kBaseMs = 1'700'000'000'000;

std::string Snappy(const std::string& raw) {
  std::string out;
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

HttpResult PostRead(unsigned short port, const prometheus::ReadRequest& request) {
  return HttpPost(port, "/api/v1/read", Snappy(request.SerializeAsString()),
                  "application/x-protobuf",
                  {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Read-Version", "0.1.0"}});
}

TEST(RemoteReadE2e, ReadsRemoteWrittenAndLineProtocolSeries) {
  TempDir dir;
  NodeProcess node(dir.path() + "/data");
  ASSERT_TRUE(node.ok()) << node.log();
  const unsigned short port = node.http_port();

  prometheus::WriteRequest write;
  prometheus::TimeSeries* ts = write.add_timeseries();
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"__name__", "rr_total"}, {"job", "a"}}) {
    prometheus::Label* l = ts->add_labels();
    l->set_name(name);
    l->set_value(value);
  }
  constexpr int kSamples = 300;
  for (int i = 0; i < kSamples; ++i) {
    prometheus::Sample* s = ts->add_samples();
    s->set_timestamp(kBaseMs + 15'000 * i);
    s->set_value(i * 1.25);
  }
  const HttpResult written = HttpPost(port, "/api/v1/write", Snappy(write.SerializeAsString()),
                                      "application/x-protobuf", {{"Content-Encoding", "snappy"}});
  ASSERT_EQ(written.status, 204) << written.body;
  const HttpResult lp =
      HttpPost(port, "/write", "rr,job=a value=0.1 " + std::to_string(kBaseMs * 1'000'000) + "\n");
  ASSERT_EQ(lp.status, 204) << lp.body;

  prometheus::ReadRequest request;
  prometheus::Query* q = request.add_queries();
  q->set_start_timestamp_ms(kBaseMs);
  q->set_end_timestamp_ms(kBaseMs + 15'000 * kSamples);
  prometheus::LabelMatcher* m = q->add_matchers();
  m->set_type(prometheus::LabelMatcher::EQ);
  m->set_name("job");
  m->set_value("a");

  const HttpResult samples = PostRead(port, request);
  ASSERT_EQ(samples.status, 200) << samples.body;
  EXPECT_EQ(samples.content_type, "application/x-protobuf");
  std::string raw;
  ASSERT_TRUE(snappy::Uncompress(samples.body.data(), samples.body.size(), &raw));
  prometheus::ReadResponse response;
  ASSERT_TRUE(response.ParseFromString(raw));
  ASSERT_EQ(response.results_size(), 1);
  const auto& series = response.results(0).timeseries();
  ASSERT_EQ(series.size(), 2);
  // Sorted by label set: rr_total after rr_value.
  EXPECT_EQ(series[0].labels(0).value(), "rr_total");
  EXPECT_EQ(series[1].labels(0).value(), "rr_value");
  ASSERT_EQ(series[0].samples_size(), kSamples);
  for (int i = 0; i < kSamples; ++i) {
    EXPECT_EQ(series[0].samples(i).timestamp(), kBaseMs + 15'000 * i);
    EXPECT_EQ(series[0].samples(i).value(), i * 1.25);
  }
  ASSERT_EQ(series[1].samples_size(), 1);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(series[1].samples(0).value()),
            std::bit_cast<std::uint64_t>(0.1));

  request.add_accepted_response_types(prometheus::ReadRequest::STREAMED_XOR_CHUNKS);
  const HttpResult streamed = PostRead(port, request);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.content_type,
            "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse");
  std::string_view rest = streamed.body;
  std::vector<std::string> names;
  int chunks = 0;
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
    ASSERT_GE(rest.size(), used + 4 + length);
    std::uint32_t crc = 0;
    for (int i = 0; i < 4; ++i) crc = crc << 8 | static_cast<std::uint8_t>(rest[used + i]);
    const std::string_view message = rest.substr(used + 4, length);
    EXPECT_EQ(crc, Crc32c(message));
    prometheus::ChunkedReadResponse frame;
    ASSERT_TRUE(frame.ParseFromArray(message.data(), static_cast<int>(message.size())));
    for (const auto& s : frame.chunked_series()) {
      names.push_back(s.labels(0).value());
      chunks += s.chunks_size();
    }
    rest.remove_prefix(used + 4 + length);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"rr_total", "rr_value"}));
  EXPECT_EQ(chunks, 3 + 1);  // 300 samples in chunks of 120, and one

  const HttpResult bad = HttpPost(port, "/api/v1/read", "not snappy", "application/x-protobuf",
                                  {{"Content-Encoding", "snappy"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("snappy"), std::string::npos) << bad.body;
}

}  // namespace
}  // namespace ingot::testing
