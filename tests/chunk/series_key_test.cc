#include "chunk/series_key.h"

#include <gtest/gtest.h>

namespace ingot {
namespace {

TEST(SeriesKeyTest, BuildsCanonicalForm) {
  std::string key;
  const TagView tags[] = {{"host", "a"}, {"region", "eu"}};
  BuildSeriesKey("cpu", tags, "usage", &key);
  EXPECT_EQ(key, "cpu,host=a,region=eu usage");
  BuildSeriesKey("cpu", {}, "usage", &key);
  EXPECT_EQ(key, "cpu usage");
}

TEST(SeriesKeyTest, EscapingKeepsKeysDistinctAndRoundTrips) {
  // Pairs of inputs that would collide without escaping.
  struct Case {
    std::string measurement;
    std::vector<std::pair<std::string, std::string>> tags;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"m", {{"a", "b,c=d"}}, "f"},
      {"m", {{"a", "b"}, {"c", "d"}}, "f"},
      {"m a", {}, "f"},
      {"m", {{"a", ""}}, "f"},
      {"m\\", {{"k=", "v\\"}}, "f g"},
      {"m,x=y", {}, "f"},
      {"m", {{"x", "y"}}, "f"},
  };
  std::vector<std::string> keys;
  for (const Case& c : cases) {
    std::vector<TagView> tags;
    for (const auto& [k, v] : c.tags) tags.emplace_back(k, v);
    std::string key;
    BuildSeriesKey(c.measurement, tags, c.field, &key);
    for (const std::string& other : keys) EXPECT_NE(key, other);
    keys.push_back(key);
    SeriesKeyParts parts;
    ASSERT_TRUE(ParseSeriesKey(key, &parts).ok()) << key;
    EXPECT_EQ(parts.measurement, c.measurement);
    EXPECT_EQ(parts.tags, c.tags);
    EXPECT_EQ(parts.field, c.field);
  }
}

TEST(SeriesKeyTest, RejectsMalformedKeys) {
  SeriesKeyParts parts;
  for (const char* bad : {"", "cpu", " f", "cpu,host f", "cpu f\\", "cpu ", "cpu,h=v"}) {
    EXPECT_TRUE(ParseSeriesKey(bad, &parts).IsInvalidArgument()) << bad;
  }
}

}  // namespace
}  // namespace ingot
