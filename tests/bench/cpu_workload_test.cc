#include "bench/ingot_bench/cpu_workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bench/ingot_bench/batch_source.h"
#include "tests/support/allocation_counter.h"

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

// The hostname tag's value of a generated line.
std::string_view HostnameOf(std::string_view line) {
  const size_t begin = line.find("hostname=") + 9;
  return line.substr(begin, line.find(',', begin) - begin);
}

// Views into `text`, which must outlive them.
std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines = Split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

bool IsNewHost(std::string_view hostname) { return hostname.starts_with('n'); }

CpuWorkloadOptions NewSeriesOptions(double ratio) {
  CpuWorkloadOptions options;
  options.hosts = 50;
  options.total_lines = 50 * 200;
  options.seed = 7;
  options.new_series_ratio = ratio;
  return options;
}

TEST(CpuWorkloadNewSeriesTest, RatioZeroNeverLeavesTheHosts) {
  const CpuWorkloadOptions options = NewSeriesOptions(0);
  CpuWorkload workload(options, 0, options.hosts);
  ByteBuffer out;
  while (workload.Generate(333, out) > 0) {
  }
  EXPECT_EQ(workload.new_series_lines(), 0u);
  std::map<std::string, int> lines_per_host;
  for (std::string_view line : Lines(out.view())) {
    ++lines_per_host[std::string(HostnameOf(line))];
  }
  ASSERT_EQ(lines_per_host.size(), options.hosts);
  for (uint32_t i = 0; i < options.hosts; ++i) {
    EXPECT_EQ(lines_per_host["host_" + std::to_string(i)], 200) << i;
  }
  // The default ratio and field count leave the bytes as they always were.
  CpuWorkloadOptions defaults = options;
  defaults.new_series_ratio = CpuWorkloadOptions().new_series_ratio;
  defaults.fields = CpuWorkloadOptions().fields;
  EXPECT_EQ(GenerateAll(defaults, 0, options.hosts, 1000), std::string(out.view()));
}

TEST(CpuWorkloadNewSeriesTest, RatioOneMakesEveryLineANewHost) {
  const CpuWorkloadOptions options = NewSeriesOptions(1);
  CpuWorkload workload(options, 0, options.hosts);
  ByteBuffer out;
  while (workload.Generate(77, out) > 0) {
  }
  const std::vector<std::string_view> lines = Lines(out.view());
  ASSERT_EQ(lines.size(), options.total_lines);
  EXPECT_EQ(workload.new_series_lines(), options.total_lines);
  for (size_t i = 0; i < lines.size(); ++i) {
    // The name is the line's number, zero padded: unique, and counting up.
    char expected[24];
    std::snprintf(expected, sizeof(expected), "n%010zu", i);
    ASSERT_EQ(HostnameOf(lines[i]), expected) << lines[i];
    // The rest of the line keeps the workload's shape: 9 more tags, 10 fields, the row's time.
    const std::vector<std::string_view> sections = Split(lines[i], ' ');
    ASSERT_EQ(sections.size(), 3u);
    EXPECT_EQ(Split(sections[0], ',').size(), 11u);
    EXPECT_EQ(Split(sections[1], ',').size(), kCpuFieldsPerLine);
    const int64_t row = static_cast<int64_t>(i / options.hosts);
    EXPECT_EQ(sections[2], std::to_string(options.start_ns + row * options.interval_ns));
  }
}

TEST(CpuWorkloadNewSeriesTest, RatioQuarterIsAQuarterAndFixedForASeed) {
  auto count_new = [](const CpuWorkloadOptions& options) {
    uint64_t from_lines = 0;
    std::set<std::string, std::less<>> names;
    const std::string text = GenerateAll(options, 0, options.hosts, 500);
    for (std::string_view line : Lines(text)) {
      const std::string_view host = HostnameOf(line);
      if (IsNewHost(host)) {
        ++from_lines;
        EXPECT_TRUE(names.emplace(host).second) << "sent twice: " << host;
      }
    }
    CpuWorkload workload(options, 0, options.hosts);
    ByteBuffer out;
    while (workload.Generate(500, out) > 0) {
    }
    EXPECT_EQ(workload.new_series_lines(), from_lines);
    return from_lines;
  };
  const CpuWorkloadOptions options = NewSeriesOptions(0.25);
  const uint64_t lines = options.total_lines;  // 10,000
  const uint64_t count = count_new(options);
  // A fixed seed gives a fixed count; the binomial's sd here is 43 lines, so 4 sd either side.
  EXPECT_EQ(count, count_new(options));
  EXPECT_NEAR(static_cast<double>(count), 0.25 * lines, 175.0);
  CpuWorkloadOptions other_seed = options;
  other_seed.seed = 8;
  const uint64_t other = count_new(other_seed);
  EXPECT_NEAR(static_cast<double>(other), 0.25 * lines, 175.0);
  EXPECT_NE(GenerateAll(options, 0, options.hosts, 500),
            GenerateAll(other_seed, 0, options.hosts, 500));
}

TEST(CpuWorkloadNewSeriesTest, ANewHostTakesItsSlotsValuesAndTheDefaultSeedsTags) {
  // A new host's line carries the values and timestamp its slot's host would have sent, and the
  // tags that host has under the default seed: the series do not depend on the seed.
  CpuWorkloadOptions options = NewSeriesOptions(0.5);
  const std::string with_new = GenerateAll(options, 0, options.hosts, 1000);
  options.new_series_ratio = 0;
  const std::string without = GenerateAll(options, 0, options.hosts, 1000);
  options.seed = CpuWorkloadOptions().seed;
  const std::string default_seed = GenerateAll(options, 0, options.hosts, 1000);
  const std::vector<std::string_view> a = Lines(with_new);
  const std::vector<std::string_view> b = Lines(without);
  const std::vector<std::string_view> tags = Lines(default_seed);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), tags.size());
  size_t new_lines = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const size_t space = a[i].find(' ');
    EXPECT_EQ(a[i].substr(space), b[i].substr(b[i].find(' '))) << i;
    if (!IsNewHost(HostnameOf(a[i]))) {
      EXPECT_EQ(a[i], b[i]);
      continue;
    }
    ++new_lines;
    const size_t region = a[i].find(",region=");
    const size_t tags_region = tags[i].find(",region=");
    EXPECT_EQ(a[i].substr(region, space - region),
              tags[i].substr(tags_region, tags[i].find(' ') - tags_region))
        << i;
  }
  EXPECT_GT(new_lines, 0u);
}

TEST(CpuWorkloadNewSeriesTest, AnotherSeedSendsOtherValuesToTheSameNewSeries) {
  CpuWorkloadOptions options = NewSeriesOptions(1);
  const std::string first = GenerateAll(options, 0, options.hosts, 1000);
  options.seed = 8;
  const std::string second = GenerateAll(options, 0, options.hosts, 1000);
  const std::vector<std::string_view> a = Lines(first);
  const std::vector<std::string_view> b = Lines(second);
  ASSERT_EQ(a.size(), b.size());
  size_t same_values = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const size_t space = a[i].find(' ');
    ASSERT_EQ(a[i].substr(0, space), b[i].substr(0, b[i].find(' '))) << i;
    if (a[i] == b[i]) ++same_values;
  }
  EXPECT_LT(same_values, a.size() / 10);
}

TEST(CpuWorkloadNewSeriesTest, OneFieldPerLine) {
  CpuWorkloadOptions options = NewSeriesOptions(1);
  options.fields = 1;
  options.total_lines = 1234;
  CpuWorkload workload(options, 0, options.hosts);
  ByteBuffer out;
  while (workload.Generate(100, out) > 0) {
  }
  const std::vector<std::string_view> lines = Lines(out.view());
  ASSERT_EQ(lines.size(), 1234u);
  EXPECT_EQ(workload.new_series_lines(), 1234u);
  for (std::string_view line : lines) {
    const std::vector<std::string_view> sections = Split(line, ' ');
    ASSERT_EQ(sections.size(), 3u) << line;
    EXPECT_TRUE(sections[1].starts_with("usage_user=")) << line;
    EXPECT_EQ(sections[1].find(','), std::string_view::npos) << line;
  }
  EXPECT_LE(out.size(), lines.size() * workload.max_line_bytes());
}

TEST(CpuWorkloadNewSeriesTest, ConnectionsNeverShareANewHost) {
  CpuWorkloadOptions options = NewSeriesOptions(0.3);
  options.hosts = 10;
  options.total_lines = 10 * 300 + 7;
  // The split of ingot-bench's runner: connection c owns hosts [hosts * c / n, hosts * (c+1) / n).
  const uint32_t connections = 3;
  std::set<std::string, std::less<>> seen;
  std::multiset<std::string> split_lines;
  uint64_t new_lines = 0;
  for (uint32_t c = 0; c < connections; ++c) {
    const uint32_t begin = options.hosts * c / connections;
    const uint32_t end = options.hosts * (c + 1) / connections;
    const std::string text = GenerateAll(options, begin, end, 64);
    for (std::string_view line : Lines(text)) {
      split_lines.emplace(line);
      const std::string_view host = HostnameOf(line);
      if (!IsNewHost(host)) continue;
      ++new_lines;
      EXPECT_TRUE(seen.emplace(host).second) << "connection " << c << " repeats " << host;
    }
  }
  EXPECT_GT(new_lines, 0u);
  // Splitting changes neither which lines go to new hosts nor their names.
  std::multiset<std::string> whole_lines;
  const std::string whole = GenerateAll(options, 0, options.hosts, 64);
  for (std::string_view line : Lines(whole)) {
    whole_lines.emplace(line);
  }
  EXPECT_EQ(split_lines, whole_lines);
}

TEST(CpuWorkloadNewSeriesTest, GeneratingAllocatesNothingOnceTheBufferHasGrown) {
  for (const uint32_t fields : {1u, 10u}) {
    CpuWorkloadOptions options = NewSeriesOptions(0.5);
    options.fields = fields;
    options.total_lines = kUnboundedLines;
    CpuWorkload workload(options, 0, options.hosts);
    ByteBuffer out;
    workload.Generate(1000, out);
    const long before = ingot::testing::AllocationCount();
    for (int batch = 0; batch < 20; ++batch) {
      out.Clear();
      ASSERT_EQ(workload.Generate(1000, out), 1000u);
    }
    EXPECT_EQ(ingot::testing::AllocationCount() - before, 0) << fields << " fields";
    EXPECT_GT(workload.new_series_lines(), 0u);
  }
}

TEST(GeneratedSourceTest, CountsValuesAndNewSeriesByFields) {
  CpuWorkloadOptions options = NewSeriesOptions(1);
  options.fields = 3;
  options.total_lines = 1000;
  GeneratedSource source(options, 0, options.hosts, 128);
  uint64_t values = 0;
  uint64_t new_series = 0;
  Batch batch;
  while (source.Next(&batch)) {
    EXPECT_EQ(batch.values, batch.lines * 3);
    values += batch.values;
    new_series += batch.new_series;
  }
  EXPECT_EQ(values, 3000u);
  EXPECT_EQ(new_series, 3000u);
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

TEST(CpuWorkloadTagsTest, FewerTagsKeepTheFirstOnesAndTheValues) {
  CpuWorkloadOptions all;
  all.hosts = 5;
  all.total_lines = 40;
  CpuWorkloadOptions two = all;
  two.tags = 2;
  CpuWorkloadOptions none = all;
  none.tags = 0;
  const auto all_lines = GenerateAll(all, 0, all.hosts, 7);
  const auto two_lines = GenerateAll(two, 0, two.hosts, 7);
  const auto no_lines = GenerateAll(none, 0, none.hosts, 7);
  const auto split = [](const std::string& text) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t end = text.find('\n', pos);
      out.push_back(text.substr(pos, end - pos));
      pos = end + 1;
    }
    return out;
  };
  const auto a = split(all_lines), b = split(two_lines), c = split(no_lines);
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), a.size());
  ASSERT_EQ(c.size(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string tags_all = a[i].substr(0, a[i].find(' '));
    const std::string tags_two = b[i].substr(0, b[i].find(' '));
    // cpu,hostname=...,region=...,datacenter=...: the prefix of the full tag set.
    EXPECT_EQ(std::count(tags_two.begin(), tags_two.end(), ','), 3) << b[i];
    EXPECT_TRUE(tags_all.starts_with(tags_two + ",rack=")) << a[i] << "\n" << b[i];
    EXPECT_EQ(c[i].substr(0, c[i].find(' ')).find(',', 4), std::string::npos) << c[i];
    // Fields and timestamp are the same bytes whatever the tags.
    EXPECT_EQ(a[i].substr(a[i].find(' ')), b[i].substr(b[i].find(' ')));
    EXPECT_EQ(a[i].substr(a[i].find(' ')), c[i].substr(c[i].find(' ')));
  }
}

}  // namespace
}  // namespace ingot::bench
