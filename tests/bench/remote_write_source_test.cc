// RemoteWriteSource: the cpu workload as remote-write requests carries exactly the samples the
// line-protocol lines carry, series by series, in requests of the asked shape.
#include "bench/ingot_bench/remote_write_source.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <map>
#include <string>
#include <vector>

#include "ingest/proto/remote.pb.h"

namespace ingot::bench {
namespace {

using Samples = std::vector<std::pair<int64_t, double>>;
using SeriesMap = std::map<std::string, Samples>;  // "name{k=v,...}" -> samples

std::string Key(const std::string& name, std::vector<std::pair<std::string, std::string>> tags) {
  std::string key = name + "{";
  for (const auto& [k, v] : tags) key += k + "=" + v + ",";
  return key + "}";
}

TEST(RemoteWriteSource, CarriesExactlyTheLinesSamples) {
  CpuWorkloadOptions options;
  options.hosts = 5;
  options.fields = 3;
  options.tags = 2;
  options.total_lines = 5 * 7 + 2;  // a last, partial row
  // What line protocol sends, parsed.
  SeriesMap expected;
  {
    CpuWorkload workload(options, 1, 4);
    ByteBuffer text;
    while (workload.Generate(100, text) > 0) {
    }
    std::string_view rest = text.view();
    std::vector<std::pair<std::string, std::string>> tags;
    std::vector<std::pair<std::string, double>> fields;
    while (!rest.empty()) {
      const size_t end = rest.find('\n');
      int64_t ts_ns = 0;
      ASSERT_TRUE(ParseCpuLine(rest.substr(0, end), &tags, &fields, &ts_ns));
      ASSERT_EQ(tags.size(), 3u);  // hostname, region, datacenter
      for (const auto& [field, value] : fields) {
        expected[Key("cpu_" + field, tags)].emplace_back(ts_ns / 1'000'000, value);
      }
      rest.remove_prefix(end + 1);
    }
  }
  ASSERT_EQ(expected.size(), 3u * 3);

  // 2 hosts (6 series) of 3 samples each per request.
  RemoteWriteSource source(options, 1, 4, 6, 3);
  SeriesMap got;
  Batch batch;
  uint64_t samples = 0, requests = 0;
  while (source.Next(&batch)) {
    ++requests;
    std::string raw;
    ASSERT_TRUE(snappy::Uncompress(batch.bytes.data(), batch.bytes.size(), &raw));
    prometheus::WriteRequest request;
    ASSERT_TRUE(request.ParseFromString(raw));
    EXPECT_LE(request.timeseries_size(), 6);
    uint64_t in_request = 0;
    for (const auto& ts : request.timeseries()) {
      std::string name;
      std::vector<std::pair<std::string, std::string>> tags;
      for (int i = 0; i < ts.labels_size(); ++i) {
        if (i > 0) {
          EXPECT_LT(ts.labels(i - 1).name(), ts.labels(i).name());
        }
        if (ts.labels(i).name() == "__name__") {
          name = ts.labels(i).value();
        } else {
          tags.emplace_back(ts.labels(i).name(), ts.labels(i).value());
        }
      }
      EXPECT_LE(ts.samples_size(), 3);
      for (const auto& s : ts.samples())
        got[Key(name, tags)].emplace_back(s.timestamp(), s.value());
      in_request += static_cast<uint64_t>(ts.samples_size());
    }
    EXPECT_EQ(batch.values, in_request);
    EXPECT_EQ(batch.lines * options.fields, in_request);
    samples += in_request;
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(samples, 3u * 3 * 8 - 3 * 3 + 3);  // hosts 1..3: 7 full rows, host 1 in the 8th
  EXPECT_EQ(requests, 6u);                     // 3 blocks of rows (3, 3, 2) x hosts {1,2}, {3}
  EXPECT_GT(source.encoded_bytes(), 0u);
}

}  // namespace
}  // namespace ingot::bench
