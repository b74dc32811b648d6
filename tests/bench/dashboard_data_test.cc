#include "bench/ingot_bench/dashboard_data.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ingot::bench {
namespace {

// A day at 5 minutes over 10 instances: small, and still a few restarts.
DashboardDataOptions SmallOptions() {
  DashboardDataOptions options;
  options.counters = 50;
  options.histogram_sets = 10;
  options.interval_ns = 300'000'000'000;
  return options;
}

std::string Generate(const DashboardDataOptions& options, DashboardFormat format) {
  DashboardData data(options, format);
  ByteBuffer out;
  data.AppendHeader(out);
  while (data.AppendRow(out)) {
  }
  data.AppendFooter(out);
  return std::string(out.view());
}

struct Sample {
  std::string series;  // name{label="value",...}, labels in name order
  uint64_t value;
  int64_t ts_ms;
  bool operator==(const Sample&) const = default;
};

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return lines;
}

uint64_t ToU64(std::string_view text) {
  return std::strtoull(std::string(text).c_str(), nullptr, 10);
}

// "http_requests,code=200,instance=h,job=api total=12 1704067200000000000"
Sample ParseLineProtocol(std::string_view line) {
  const size_t space = line.find(' ');
  const size_t last_space = line.rfind(' ');
  std::string_view key = line.substr(0, space);
  const std::string_view field = line.substr(space + 1, last_space - space - 1);
  const size_t equals = field.find('=');
  const size_t comma = key.find(',');
  std::string series =
      std::string(key.substr(0, comma)) + "_" + std::string(field.substr(0, equals)) + "{";
  key.remove_prefix(comma == std::string_view::npos ? key.size() : comma + 1);
  bool first = true;
  while (!key.empty()) {
    const size_t end = key.find(',');
    const std::string_view tag = key.substr(0, end);
    const size_t tag_equals = tag.find('=');
    if (!first) series += ",";
    first = false;
    series += std::string(tag.substr(0, tag_equals)) + "=\"" +
              std::string(tag.substr(tag_equals + 1)) + "\"";
    key.remove_prefix(end == std::string_view::npos ? key.size() : end + 1);
  }
  series += "}";
  return {series, ToU64(field.substr(equals + 1)),
          static_cast<int64_t>(ToU64(line.substr(last_space + 1)) / 1'000'000)};
}

// "name{...} 12 <ts>", the timestamp in seconds (OpenMetrics) or milliseconds.
Sample ParseText(std::string_view line, bool seconds) {
  const size_t brace = line.find("} ");
  const size_t last_space = line.rfind(' ');
  const std::string_view ts = line.substr(last_space + 1);
  const int64_t ts_ms =
      seconds ? static_cast<int64_t>(std::strtod(std::string(ts).c_str(), nullptr) * 1000 + 0.5)
              : static_cast<int64_t>(ToU64(ts));
  return {std::string(line.substr(0, brace + 1)),
          ToU64(line.substr(brace + 2, last_space - brace - 2)), ts_ms};
}

std::vector<Sample> Parse(std::string_view text, DashboardFormat format) {
  std::vector<Sample> samples;
  for (std::string_view line : Lines(text)) {
    if (line.starts_with('#')) continue;
    samples.push_back(format == DashboardFormat::kLineProtocol
                          ? ParseLineProtocol(line)
                          : ParseText(line, format == DashboardFormat::kOpenMetrics));
  }
  return samples;
}

TEST(DashboardDataTest, TheThreeFormatsCarryTheSameSamples) {
  const DashboardDataOptions options = SmallOptions();
  const std::string lp = Generate(options, DashboardFormat::kLineProtocol);
  const std::string om = Generate(options, DashboardFormat::kOpenMetrics);
  const std::string prom = Generate(options, DashboardFormat::kPrometheusText);
  EXPECT_TRUE(lp.starts_with("http_requests,code=200,instance=host-0000:9100,job=api total="));
  EXPECT_TRUE(om.starts_with("# TYPE http_requests counter\n"));
  EXPECT_TRUE(om.ends_with("\n# EOF\n"));
  EXPECT_TRUE(
      prom.starts_with("http_requests_total{code=\"200\",instance=\"host-0000:9100\","
                       "job=\"api\"} "));
  EXPECT_NE(prom.find("http_request_duration_seconds_bucket{instance=\"host-0009:9100\","
                      "job=\"search\",le=\"+Inf\"} "),
            std::string::npos);

  const std::vector<Sample> from_lp = Parse(lp, DashboardFormat::kLineProtocol);
  const DashboardData data(options, DashboardFormat::kLineProtocol);
  ASSERT_EQ(data.rows(), 288u);
  ASSERT_EQ(data.series(), 50u + 10u * kDashboardBuckets.size());
  ASSERT_EQ(from_lp.size(), data.samples());
  EXPECT_EQ(from_lp.front().ts_ms, data.first_ts_ns() / 1'000'000);
  EXPECT_EQ(from_lp.back().ts_ms, data.last_ts_ns() / 1'000'000);
  EXPECT_EQ(Parse(om, DashboardFormat::kOpenMetrics), from_lp);
  EXPECT_EQ(Parse(prom, DashboardFormat::kPrometheusText), from_lp);
}

TEST(DashboardDataTest, CountersGrowAndResetBucketsAreCumulative) {
  const DashboardDataOptions options = SmallOptions();
  const std::vector<Sample> samples =
      Parse(Generate(options, DashboardFormat::kPrometheusText), DashboardFormat::kPrometheusText);
  std::map<std::string, uint64_t> last;
  uint64_t resets = 0;
  uint64_t increases = 0;
  for (const Sample& s : samples) {
    const auto it = last.find(s.series);
    if (it != last.end()) {
      if (s.value < it->second) ++resets;
      if (s.value > it->second) ++increases;
    }
    last[s.series] = s.value;
  }
  EXPECT_GT(resets, 0u);
  EXPECT_LT(resets, samples.size() / 100);
  EXPECT_GT(increases, samples.size() / 2);

  // Within one row and one histogram, the buckets never decrease with `le`, and the quantiles are
  // not all in one bucket.
  const size_t buckets = kDashboardBuckets.size();
  uint64_t histograms = 0;
  uint64_t spread = 0;  // histograms with observations above 0.1 s
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].series.find("le=\"0.005\"") == std::string::npos) continue;
    ASSERT_LE(i + buckets, samples.size());
    for (size_t b = 1; b < buckets; ++b) {
      ASSERT_LE(samples[i + b - 1].value, samples[i + b].value) << samples[i + b].series;
      ASSERT_EQ(samples[i + b].ts_ms, samples[i].ts_ms);
    }
    EXPECT_NE(samples[i + buckets - 1].series.find("le=\"+Inf\""), std::string::npos);
    ++histograms;
    if (samples[i + 4].value < samples[i + buckets - 1].value) ++spread;
  }
  EXPECT_EQ(histograms, 288u * 10u);
  EXPECT_GT(spread, histograms / 2);
}

TEST(DashboardDataTest, SameSeedSameBytes) {
  DashboardDataOptions options = SmallOptions();
  const std::string a = Generate(options, DashboardFormat::kLineProtocol);
  EXPECT_EQ(Generate(options, DashboardFormat::kLineProtocol), a);
  options.seed = 2;
  EXPECT_NE(Generate(options, DashboardFormat::kLineProtocol), a);
}

TEST(DashboardDataTest, Validation) {
  DashboardDataOptions options;
  EXPECT_TRUE(ValidateDashboardDataOptions(options).ok());
  options.interval_ns = 1'500'000;  // 1.5 ms: not whole milliseconds
  EXPECT_TRUE(ValidateDashboardDataOptions(options).IsInvalidArgument());
  options = DashboardDataOptions{};
  options.duration_ns = options.interval_ns - 1;
  EXPECT_TRUE(ValidateDashboardDataOptions(options).IsInvalidArgument());
  options = DashboardDataOptions{};
  options.counters = 0;
  options.histogram_sets = 0;
  EXPECT_TRUE(ValidateDashboardDataOptions(options).IsInvalidArgument());
  DashboardFormat format;
  EXPECT_TRUE(ParseDashboardFormat("openmetrics", &format).ok());
  EXPECT_EQ(format, DashboardFormat::kOpenMetrics);
  EXPECT_TRUE(ParseDashboardFormat("csv", &format).IsInvalidArgument());
}

}  // namespace
}  // namespace ingot::bench
