#include "bench/ingot_bench/cpu_workload.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "bench/ingot_bench/batch_source.h"

namespace ingot::bench {
namespace {

std::string GenerateAll(const CpuWorkloadOptions& options, uint32_t begin, uint32_t end,
                        size_t batch_lines) {
  CpuWorkload workload(options, begin, end);
  ByteBuffer out;
  while (workload.Generate(batch_lines, out) > 0) {
  }
  return std::string(out.view());
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  for (;;) {
    const size_t next = text.find(separator, pos);
    parts.push_back(text.substr(pos, next - pos));
    if (next == std::string_view::npos) return parts;
    pos = next + 1;
  }
}

CpuWorkloadOptions SmallOptions() {
  CpuWorkloadOptions options;
  options.hosts = 7;
  options.total_lines = 7 * 20 + 3;  // a partial last row
  options.seed = 42;
  return options;
}

TEST(CpuWorkloadTest, SameSeedSameBytesWhateverTheBatchSize) {
  const CpuWorkloadOptions options = SmallOptions();
  const std::string a = GenerateAll(options, 0, options.hosts, 1);
  const std::string b = GenerateAll(options, 0, options.hosts, 1000);
  const std::string c = GenerateAll(options, 0, options.hosts, 13);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
}

TEST(CpuWorkloadTest, DifferentSeedDifferentValues) {
  CpuWorkloadOptions options = SmallOptions();
  const std::string a = GenerateAll(options, 0, options.hosts, 100);
  options.seed = 43;
  EXPECT_NE(a, GenerateAll(options, 0, options.hosts, 100));
}

TEST(CpuWorkloadTest, SplittingHostsKeepsEachHostsLines) {
  const CpuWorkloadOptions options = SmallOptions();
  auto by_host = [](const std::string& text) {
    std::map<std::string, std::string> lines;
    for (std::string_view line : Split(text, '\n')) {
      if (line.empty()) continue;
      const std::string host(line.substr(0, line.find(',', 4)));
      lines[host] += std::string(line) + "\n";
    }
    return lines;
  };
  const auto whole = by_host(GenerateAll(options, 0, options.hosts, 50));
  std::string parts = GenerateAll(options, 0, 2, 50) + GenerateAll(options, 2, 3, 50) +
                      GenerateAll(options, 3, 7, 50);
  EXPECT_EQ(by_host(parts), whole);
  uint64_t total = 0;
  for (const auto& [b, e] : std::vector<std::pair<uint32_t, uint32_t>>{{0, 2}, {2, 3}, {3, 7}}) {
    total += CpuWorkload::LinesForHosts(options.total_lines, options.hosts, b, e);
  }
  EXPECT_EQ(total, options.total_lines);
}

class CpuWorkloadShapeTest : public ::testing::TestWithParam<int> {};

TEST_P(CpuWorkloadShapeTest, TagsFieldsDecimalsTimestamps) {
  CpuWorkloadOptions options = SmallOptions();
  options.decimals = GetParam();
  options.interval_ns = 15'000'000'000;
  options.start_ns = 1'600'000'000'000'000'000;
  const std::string text = GenerateAll(options, 0, options.hosts, 64);
  std::vector<std::string_view> lines = Split(text, '\n');
  ASSERT_EQ(lines.back(), "");  // every line ends with '\n'
  lines.pop_back();
  ASSERT_EQ(lines.size(), options.total_lines);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::vector<std::string_view> sections = Split(lines[i], ' ');
    ASSERT_EQ(sections.size(), 3u) << lines[i];
    const std::vector<std::string_view> tags = Split(sections[0], ',');
    ASSERT_EQ(tags.size(), 11u);
    EXPECT_EQ(tags[0], "cpu");
    EXPECT_EQ(tags[1], "hostname=host_" + std::to_string(i % options.hosts));
    const char* const kTagKeys[] = {"region",  "datacenter", "rack",           "os",
                                    "arch",    "team",       "service",        "service_version",
                                    "service_environment"};
    for (size_t t = 0; t < 9; ++t) {
      EXPECT_TRUE(tags[t + 2].starts_with(std::string(kTagKeys[t]) + "=")) << tags[t + 2];
    }
    const std::vector<std::string_view> fields = Split(sections[1], ',');
    ASSERT_EQ(fields.size(), kCpuFieldsPerLine);
    for (size_t f = 0; f < kCpuFieldsPerLine; ++f) {
      const size_t eq = fields[f].find('=');
      ASSERT_NE(eq, std::string_view::npos);
      EXPECT_EQ(fields[f].substr(0, eq), kCpuFieldNames[f]);
      const std::string_view value = fields[f].substr(eq + 1);
      const size_t dot = value.find('.');
      if (options.decimals == 0) {
        EXPECT_EQ(dot, std::string_view::npos) << value;
      } else {
        ASSERT_NE(dot, std::string_view::npos) << value;
        EXPECT_EQ(value.size() - dot - 1, static_cast<size_t>(options.decimals)) << value;
      }
      double v = -1;
      std::from_chars(value.data(), value.data() + value.size(), v);
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 100.0);
    }
    const int64_t row = static_cast<int64_t>(i / options.hosts);
    EXPECT_EQ(sections[2], std::to_string(options.start_ns + row * options.interval_ns));
  }
  EXPECT_EQ(CpuWorkload::LastTimestampNs(options, options.total_lines),
            options.start_ns + 20 * options.interval_ns);
}

INSTANTIATE_TEST_SUITE_P(Decimals, CpuWorkloadShapeTest, ::testing::Values(0, 1, 2, 4, 6));

TEST(CpuWorkloadTest, RandomWalkStepsAtMostOne) {
  CpuWorkloadOptions options = SmallOptions();
  options.hosts = 1;
  options.total_lines = 2000;
  const std::string text = GenerateAll(options, 0, 1, 500);
  double previous = -1;
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty()) continue;
    const std::string_view field = Split(Split(line, ' ')[1], ',')[0];
    const std::string_view value = field.substr(field.find('=') + 1);
    double v;
    std::from_chars(value.data(), value.data() + value.size(), v);
    if (previous >= 0) {
      EXPECT_LE(std::abs(v - previous), 1.0 + 1e-9);
    }
    previous = v;
  }
}

TEST(GeneratedSourceTest, DeliversTheGeneratorsBytesInOrder) {
  const CpuWorkloadOptions options = SmallOptions();
  GeneratedSource source(options, 1, 6, 9);
  std::string received;
  uint64_t lines = 0;
  uint64_t values = 0;
  Batch batch;
  while (source.Next(&batch)) {
    EXPECT_LE(batch.lines, 9u);
    received += batch.bytes;
    lines += batch.lines;
    values += batch.values;
  }
  EXPECT_EQ(received, GenerateAll(options, 1, 6, 1000));
  EXPECT_EQ(lines, CpuWorkload::LinesForHosts(options.total_lines, options.hosts, 1, 6));
  EXPECT_EQ(values, lines * kCpuFieldsPerLine);
}

TEST(GeneratedSourceTest, StopEndsAnUnboundedSource) {
  CpuWorkloadOptions options = SmallOptions();
  options.total_lines = kUnboundedLines;
  GeneratedSource source(options, 0, options.hosts, 100);
  Batch batch;
  ASSERT_TRUE(source.Next(&batch));
  source.Stop();
  EXPECT_FALSE(source.Next(&batch));
}

TEST(LineProtocolFileTest, CountsFieldsAndSplitsIntoBatches) {
  EXPECT_EQ(CountFields("m,t=a f=1,g=2i,h=\"x, y\" 10"), 3u);
  EXPECT_EQ(CountFields("m\\ x,t=a\\ b f=1 10"), 1u);
  EXPECT_EQ(CountFields("# comment"), 0u);
  EXPECT_EQ(CountFields("   "), 0u);
  LineProtocolFile file;
  SplitLineProtocol("m f=1,g=2 30\n\n# c\nm f=1 10\nm f=1,g=2,h=3 20\nm f=4 40", 2, &file);
  EXPECT_EQ(file.lines, 4u);
  EXPECT_EQ(file.values, 7u);
  ASSERT_EQ(file.batches.size(), 3u);
  EXPECT_EQ(file.bytes.substr(file.batches[0].offset, file.batches[0].size), "m f=1,g=2 30\n");
  EXPECT_EQ(file.batches[1].lines, 2u);
  EXPECT_EQ(file.batches[1].values, 4u);
  EXPECT_EQ(file.bytes.substr(file.batches[2].offset, file.batches[2].size), "m f=4 40");
  EXPECT_TRUE(file.has_timestamps);
  EXPECT_EQ(file.min_ts_ns, 10);
  EXPECT_EQ(file.max_ts_ns, 40);
}

}  // namespace
}  // namespace ingot::bench
