#include "chunk/series_key.h"

#include <gtest/gtest.h>

namespace ingot {
namespace {

TEST(SeriesKeyTest, BuildsCanonicalForm) {
  std::string key;
  const TagView tags[] = {{"host", "a"}, {"region", "eu"}};
  BuildSeriesKey("cpu", tags, "usage", &key);
  EXPECT_EQ(key, "cpu_usage,host=a,region=eu");
  BuildSeriesKey("cpu", {}, "usage", &key);
  EXPECT_EQ(key, "cpu_usage");
}

// A series is its label set: the measurement/field split that produced the metric name is not part
// of the identity, and a label set built from a metric name gives the same key.
TEST(SeriesKeyTest, SameLabelSetIsTheSameKey) {
  const TagView tags[] = {{"host", "a"}};
  std::string a, b, c;
  BuildSeriesKey("cpu", tags, "usage_user", &a);
  BuildSeriesKey("cpu_usage", tags, "user", &b);
  BuildLabelSetKey("cpu_usage_user", tags, &c);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  std::string other;
  BuildSeriesKey("cpu", tags, "usage", &other);
  EXPECT_NE(a, other);
}

TEST(SeriesKeyTest, LegacyKeysParseAsLabelSets) {
  SeriesKeyParts parts;
  ASSERT_TRUE(ParseSeriesKey("cpu,host=a usage_user", &parts).ok());
  EXPECT_TRUE(parts.legacy);
  EXPECT_EQ(parts.name, "cpu_usage_user");
  EXPECT_EQ(parts.tags, (std::vector<std::pair<std::string, std::string>>{{"host", "a"}}));
  ASSERT_TRUE(ParseSeriesKey("cpu_usage_user,host=a", &parts).ok());
  EXPECT_FALSE(parts.legacy);
  EXPECT_EQ(parts.name, "cpu_usage_user");
  ASSERT_TRUE(ParseSeriesKey("m\\ x,k\\==v\\  f\\ g", &parts).ok());
  EXPECT_TRUE(parts.legacy);
  EXPECT_EQ(parts.name, "m x_f g");
  EXPECT_EQ(parts.tags, (std::vector<std::pair<std::string, std::string>>{{"k=", "v "}}));
}

TEST(SeriesKeyTest, EscapingKeepsKeysDistinctAndRoundTrips) {
  // Pairs of inputs that would collide without escaping.
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, std::string>> tags;
  };
  const std::vector<Case> cases = {
      {"m", {{"a", "b,c=d"}}},
      {"m", {{"a", "b"}, {"c", "d"}}},
      {"m a", {}},
      {"m", {{"a", ""}}},
      {"m\\", {{"k=", "v\\"}}},
      {"m,x=y", {}},
      {"m", {{"x", "y"}}},
      {"m f", {}},
      {"m\\ f", {}},
  };
  std::vector<std::string> keys;
  for (const Case& c : cases) {
    std::vector<TagView> tags;
    for (const auto& [k, v] : c.tags) tags.emplace_back(k, v);
    std::string key;
    BuildLabelSetKey(c.name, tags, &key);
    for (const std::string& other : keys) EXPECT_NE(key, other);
    keys.push_back(key);
    SeriesKeyParts parts;
    ASSERT_TRUE(ParseSeriesKey(key, &parts).ok()) << key;
    EXPECT_FALSE(parts.legacy);
    EXPECT_EQ(parts.name, c.name);
    EXPECT_EQ(parts.tags, c.tags);
  }
}

TEST(SeriesKeyTest, RejectsMalformedKeys) {
  SeriesKeyParts parts;
  for (const char* bad : {"", " f", ",h=v", "cpu,host f", "cpu f\\", "cpu ", "cpu,h", "cpu\\"}) {
    EXPECT_TRUE(ParseSeriesKey(bad, &parts).IsInvalidArgument()) << bad;
  }
}

}  // namespace
}  // namespace ingot
