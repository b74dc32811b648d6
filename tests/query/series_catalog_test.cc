// Selectors answered from the index's postings, checked against a direct evaluation of every
// matcher on every series' labels.
#include "query/series_catalog.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/query/query_test_util.h"

namespace ingot {
namespace {

class SeriesCatalogTest : public testing::QueryFixture {
 protected:
  std::vector<SeriesId> Ids(std::string_view text) {
    Selector selector;
    Status st = ParseSelector(text, &selector);
    EXPECT_TRUE(st.ok()) << text << ": " << st.ToString();
    std::vector<SeriesRef> matched;
    st = catalog().Match(selector, 1000, &matched);
    EXPECT_TRUE(st.ok()) << text << ": " << st.ToString();
    std::vector<SeriesId> ids;
    for (const SeriesRef& info : matched) ids.push_back(info->sid);
    return ids;
  }
  // The same selector evaluated the obvious way: every matcher on every described series.
  std::vector<SeriesId> Naive(std::string_view text) {
    Selector selector;
    EXPECT_TRUE(ParseSelector(text, &selector).ok());
    std::vector<SeriesId> ids;
    for (SeriesId sid : storage_->index().AllSeries()) {
      SeriesRef info;
      EXPECT_TRUE(catalog().Describe(sid, &info).ok());
      bool all = true;
      for (const LabelMatcher& m : selector.matchers) all = all && m.Matches(info->Label(m.name));
      if (all) ids.push_back(sid);
    }
    return ids;
  }
  void SetUp() override {
    QueryFixture::SetUp();
    catalog_ptr_ = std::make_unique<SeriesCatalog>(storage_->index());
  }
  std::unique_ptr<SeriesCatalog> catalog_ptr_;
  SeriesCatalog& catalog() { return *catalog_ptr_; }
};

TEST_F(SeriesCatalogTest, DescribesSeriesFromTheirKeys) {
  const SeriesId sid =
      Add("cpu", {{"host", "a"}, {"dc", "x y"}, {"Zone", "z\"1"}}, "usage", {{testing::kT0, 1}});
  SeriesRef info;
  ASSERT_TRUE(catalog().Describe(sid, &info).ok());
  EXPECT_EQ(info->name, "cpu_usage");
  EXPECT_EQ(info->Label("__name__"), "cpu_usage");
  EXPECT_EQ(info->Label("dc"), "x y");
  EXPECT_EQ(info->Label("zone"), "");
  // `__name__` sorts after upper-case label names and before lower-case ones.
  std::string json;
  info->AppendMetricJson(&json);
  EXPECT_EQ(json, R"({"Zone":"z\"1","__name__":"cpu_usage","dc":"x y","host":"a"})");
  EXPECT_EQ(info->PromText(), R"(cpu_usage{Zone="z\"1",dc="x y",host="a"})");
  EXPECT_TRUE(catalog().Describe(sid + 100, &info).IsNotFound());
}

TEST_F(SeriesCatalogTest, MatchersAgreeWithNaiveEvaluation) {
  std::mt19937 rng(7);
  const char* hosts[] = {"a", "b", "c", "d"};
  const char* dcs[] = {"x", "y"};
  for (int i = 0; i < 60; ++i) {
    std::vector<std::pair<std::string, std::string>> tags = {{"host", hosts[rng() % 4]}};
    if (rng() % 3 != 0) tags.emplace_back("dc", dcs[rng() % 2]);
    if (rng() % 5 == 0) tags.emplace_back("id", std::to_string(i));
    Add(rng() % 2 ? "cpu" : "mem", tags, rng() % 2 ? "usage" : "idle", {{testing::kT0 + i, 1}});
  }
  const char* selectors[] = {
      R"(cpu_usage)",
      R"(cpu_usage{host="a"})",
      R"({__name__=~"cpu_.*"})",
      R"({__name__=~"cpu_.*",dc=""})",
      R"({__name__=~".*_usage",dc!="x"})",
      R"({__name__!="cpu_usage",host=~"a|b"})",
      R"(mem_idle{dc=~"x|"})",
      R"(mem_idle{dc!~"x"})",
      R"({host=~"[bc]",id!=""})",
      R"({host="zz"})",
      R"({__name__=~"cpu_usage|mem_idle",host!~"a|d",dc=~".+"})",
  };
  for (const char* s : selectors) {
    EXPECT_EQ(Ids(s), Naive(s)) << s;
  }
}

TEST_F(SeriesCatalogTest, TooManyMatchesIsBusyBeforeDescribing) {
  for (int i = 0; i < 20; ++i) Add("m", {{"i", std::to_string(i)}}, "v", {{testing::kT0, 1}});
  Selector selector;
  ASSERT_TRUE(ParseSelector("m_v", &selector).ok());
  std::vector<SeriesRef> matched;
  Status st = catalog().Match(selector, 10, &matched);
  EXPECT_TRUE(st.IsBusy());
  EXPECT_NE(st.ToString().find("matches 20 series"), std::string::npos) << st.ToString();
  EXPECT_TRUE(matched.empty());
}

TEST_F(SeriesCatalogTest, LabelNamesAndValuesComeFromTheIndex) {
  EXPECT_TRUE(catalog().LabelNames().empty());
  Add("cpu", {{"host", "b"}}, "usage", {{testing::kT0, 1}});
  Add("cpu", {{"host", "a"}, {"dc", "x"}}, "idle", {{testing::kT0, 1}});
  EXPECT_EQ(catalog().LabelNames(), (std::vector<std::string>{"__name__", "dc", "host"}));
  EXPECT_EQ(catalog().LabelValues("host"), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(catalog().LabelValues("__name__"),
            (std::vector<std::string_view>{"cpu_idle", "cpu_usage"}));
  EXPECT_TRUE(catalog().LabelValues("nope").empty());
}

}  // namespace
}  // namespace ingot
