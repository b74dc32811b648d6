// Damage on disk stays local: a byte flipped inside the chunks family's SST file costs the points
// of the block it hits, not the queries over every series that share a selector with it. Skipped
// damage is reported in the answer's warnings, counted and logged; with query.damaged_chunks =
// "fail" a query that reads it fails naming the series. GCC 12 reports a false -Wrestrict on
// "literal" + std::string chains (GCC bug 105329).
#if !defined(__clang__)  // clang has no -Wrestrict (and rejects the unknown group)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <filesystem>
#include <random>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <nlohmann/json.hpp>

#include "config/metrics.h"
#include "tests/query/query_test_util.h"
#include "tests/support/chunk_damage.h"
#include "tests/support/file_damage.h"

namespace ingot {
namespace {

using testing::kSec;
using testing::kT0;
using testing::Points;
using testing::Response;

constexpr int kSeries = 40;
constexpr int kPoints = 4096;  // four sealed chunks per series

std::uint64_t MetricValue(std::string_view name) {
  std::string text;
  MetricsRegistry::Default().RenderPrometheus(&text);
  const std::string prefix = std::string(name) + " ";
  const auto at = text.find("\n" + prefix);
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + 1 + prefix.size()));
}

class DamageTest : public testing::QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> noise(0, 1000);
    for (int s = 0; s < kSeries; ++s) {
      Points pts;
      for (int i = 0; i < kPoints; ++i) pts.emplace_back(kT0 + i * 10 * kSec, noise(rng));
      Add("cpu", {{"host", "h" + std::to_string(s)}}, "usage", pts);
    }
    // Seal everything into the chunks family's SST files, then damage one data block.
    std::uint64_t largest = 0;
    const std::string target = testing::FlushedLargestChunksFile(*storage_, &largest);
    ASSERT_FALSE(target.empty());
    Reopen();
    // A third of the way in is inside the data blocks (index and footer are at the end).
    ASSERT_TRUE(testing::FlipByte(target, largest / 3)) << target;
    Reopen();  // drops cached blocks
  }

  // count_over_time over all the data, per host.
  std::map<std::string, int> Counts(const Response& r) {
    std::map<std::string, int> out;
    const auto j = nlohmann::json::parse(r.body);
    for (const auto& s : j["data"]["result"]) {
      out[s["metric"]["host"].get<std::string>()] = std::stoi(s["value"][1].get<std::string>());
    }
    return out;
  }

  Response CountAll(const std::string& selector) {
    const std::int64_t t = (kT0 + kPoints * 10 * kSec) / kSec;
    return Get("/api/v1/query?query=" + UrlEncode("count_over_time(" + selector + "[2d])") +
               "&time=" + std::to_string(t));
  }
};

TEST_F(DamageTest, SkipAnswersEveryOtherPointWithAWarning) {
  const std::uint64_t corrupt_before = MetricValue("ingot_chunks_corrupt_total");
  const Response r = CountAll("cpu_usage");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = nlohmann::json::parse(r.body);
  ASSERT_TRUE(j.contains("warnings")) << r.body;
  ASSERT_FALSE(j["warnings"].empty());
  const std::string warning = j["warnings"][0].get<std::string>();
  EXPECT_NE(warning.find("damaged data left out"), std::string::npos) << warning;
  EXPECT_NE(warning.find("series cpu_usage,host=h"), std::string::npos) << warning;

  const auto counts = Counts(r);
  EXPECT_EQ(counts.size(), static_cast<std::size_t>(kSeries));
  int total = 0, damaged = 0;
  std::string damaged_host;
  for (const auto& [host, n] : counts) {
    total += n;
    if (n != kPoints) {
      ++damaged;
      damaged_host = host;
    }
  }
  // One block holds the chunks of one or two series: every other series is whole.
  EXPECT_GE(damaged, 1);
  EXPECT_LE(damaged, 3);
  EXPECT_LT(total, kSeries * kPoints);
  EXPECT_GE(total, kSeries * kPoints - 3 * kPoints);
  EXPECT_GT(MetricValue("ingot_chunks_corrupt_total"), corrupt_before);
  EXPECT_GT(MetricValue("ingot_query_damaged_chunks_skipped_total"), 0u);

  // A query that does not read the damaged block has no warning; one that does has it again.
  const std::string whole_host = damaged_host == "h0" ? "h1" : "h0";
  if (counts.at(whole_host) == kPoints) {
    const Response whole = CountAll("cpu_usage{host=\"" + whole_host + "\"}");
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(whole.body.find("warnings"), std::string::npos) << whole.body;
    EXPECT_EQ(Counts(whole).at(whole_host), kPoints);
  }
  const Response again = CountAll("cpu_usage{host=\"" + damaged_host + "\"}");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.body.find("warnings"), std::string::npos) << again.body;
  // Raw points too (a range query decodes every chunk).
  const std::int64_t start = kT0 / kSec, end = (kT0 + (kPoints - 1) * 10 * kSec) / kSec;
  const Response range =
      Get("/api/v1/query_range?query=" + UrlEncode("cpu_usage{host=\"" + damaged_host + "\"}") +
          "&start=" + std::to_string(start) + "&end=" + std::to_string(end) + "&step=10");
  ASSERT_EQ(range.status, 200) << range.body;
  const auto rj = nlohmann::json::parse(range.body);
  ASSERT_TRUE(rj.contains("warnings")) << range.body.substr(0, 300);
  ASSERT_EQ(rj["data"]["result"].size(), 1u);
  EXPECT_LT(rj["data"]["result"][0]["values"].size(), static_cast<std::size_t>(kPoints));
}

TEST_F(DamageTest, FailModeNamesTheSeriesAndSparesTheOthers) {
  QueryOptions options;
  options.damaged_chunks = "fail";
  Configure(options);
  const Response r = CountAll("cpu_usage");
  ASSERT_EQ(r.status, 500) << r.body;
  EXPECT_NE(r.body.find("series cpu_usage,host=h"), std::string::npos) << r.body;
  // Find the damaged series one by one: the others answer in full.
  int failed = 0;
  for (int s = 0; s < kSeries; ++s) {
    const std::string host = "h" + std::to_string(s);
    const Response one = CountAll("cpu_usage{host=\"" + host + "\"}");
    if (one.status == 500) {
      ++failed;
      EXPECT_NE(one.body.find("host=" + host), std::string::npos) << one.body;
      continue;
    }
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(Counts(one).at(host), kPoints);
  }
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, 3);
}

}  // namespace
}  // namespace ingot
