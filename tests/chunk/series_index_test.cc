#include "chunk/series_index.h"

#include <gtest/gtest.h>

#include "tests/chunk/test_util.h"

namespace ingot {
namespace {

std::string Key(std::string_view m, std::vector<TagView> tags, std::string_view f) {
  std::string k;
  BuildSeriesKey(m, tags, f, &k);
  return k;
}

class SeriesIndexTest : public ::testing::Test {
 protected:
  void Open() {
    ASSERT_TRUE(ChunkStore::Open(dir_.path(), testing::TestStorageOptions(dir_.path()), &store_).ok());
    ASSERT_TRUE(SeriesIndex::Load(*store_, &index_).ok());
  }
  void Reopen() {
    index_.reset();
    ASSERT_TRUE(store_->Close().ok());
    store_.reset();
    Open();
  }
  testing::TempDir dir_;
  std::unique_ptr<ChunkStore> store_;
  std::unique_ptr<SeriesIndex> index_;
};

TEST_F(SeriesIndexTest, ResolveCreatesOnceAndSurvivesReopen) {
  Open();
  SeriesId a, b, a2;
  ValueType t;
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "a"}}, "usage"), ValueType::kFloat, &a, &t).ok());
  EXPECT_EQ(a, 1u);
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "b"}}, "usage"), ValueType::kInteger, &b, &t).ok());
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(t, ValueType::kInteger);
  // The stored type wins; the caller sees the conflict.
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "a"}}, "usage"), ValueType::kBoolean, &a2, &t).ok());
  EXPECT_EQ(a2, a);
  EXPECT_EQ(t, ValueType::kFloat);
  Reopen();
  EXPECT_EQ(index_->size(), 2u);
  std::string key;
  ValueType type;
  ASSERT_TRUE(index_->Lookup(b, &key, &type).ok());
  EXPECT_EQ(key, Key("cpu", {{"host", "b"}}, "usage"));
  EXPECT_EQ(type, ValueType::kInteger);
  EXPECT_TRUE(index_->Lookup(99, &key, &type).IsNotFound());
  SeriesId c;
  ASSERT_TRUE(index_->Resolve(Key("mem", {}, "free"), ValueType::kFloat, &c, &t).ok());
  EXPECT_EQ(c, 3u);
  EXPECT_EQ(index_->Find(Key("mem", {}, "free")), 3u);
  EXPECT_EQ(index_->Find(Key("mem", {}, "used")), kInvalidSeriesId);
}

TEST_F(SeriesIndexTest, InvertedIndexAnswersSelectors) {
  Open();
  const std::vector<std::string> keys = {
      Key("cpu", {{"dc", "x"}, {"host", "a"}}, "usage"),
      Key("cpu", {{"dc", "x"}, {"host", "b"}}, "usage"),
      Key("cpu", {{"dc", "y"}, {"host", "a"}}, "idle"),
      Key("mem", {{"host", "a"}}, "free"),
  };
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<ValueType> types(4, ValueType::kFloat);
  std::vector<SeriesId> sids(4);
  std::vector<ValueType> stored(4);
  ASSERT_TRUE(index_->ResolveMany(views, types, sids, stored).ok());
  EXPECT_EQ(sids, (std::vector<SeriesId>{1, 2, 3, 4}));
  Reopen();
  EXPECT_EQ(index_->ByMeasurement("cpu"), (std::vector<SeriesId>{1, 2, 3}));
  EXPECT_EQ(index_->ByTag("host", "a"), (std::vector<SeriesId>{1, 3, 4}));
  EXPECT_EQ(index_->ByTag("dc", "y"), (std::vector<SeriesId>{3}));
  EXPECT_TRUE(index_->ByTag("dc", "z").empty());
  EXPECT_EQ(index_->ByField("usage"), (std::vector<SeriesId>{1, 2}));
  EXPECT_EQ(index_->AllSeries(), (std::vector<SeriesId>{1, 2, 3, 4}));
  EXPECT_EQ(index_->Measurements(), (std::vector<std::string>{"cpu", "mem"}));
  EXPECT_EQ(index_->Fields(), (std::vector<std::string>{"free", "idle", "usage"}));
  EXPECT_EQ(index_->TagKeys(), (std::vector<std::string>{"dc", "host"}));
  EXPECT_EQ(index_->TagValues("host"), (std::vector<std::string>{"a", "b"}));
  std::vector<std::string> seen;
  index_->ForEachTagValue("dc", [&](std::string_view v, std::span<const SeriesId> ids) {
    seen.push_back(std::string(v) + ":" + std::to_string(ids.size()));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"x:2", "y:1"}));
}

TEST_F(SeriesIndexTest, ResolveManyDeduplicatesNewKeys) {
  Open();
  const std::string k = Key("m", {}, "f");
  std::vector<std::string_view> views = {k, k};
  std::vector<ValueType> types(2, ValueType::kFloat);
  std::vector<SeriesId> sids(2);
  std::vector<ValueType> stored(2);
  ASSERT_TRUE(index_->ResolveMany(views, types, sids, stored).ok());
  EXPECT_EQ(sids[0], sids[1]);
  EXPECT_EQ(index_->size(), 1u);
}

TEST_F(SeriesIndexTest, RejectsUnparsableKey) {
  Open();
  SeriesId sid;
  ValueType t;
  EXPECT_TRUE(index_->Resolve("no-field", ValueType::kFloat, &sid, &t).IsInvalidArgument());
  EXPECT_EQ(index_->size(), 0u);
}

}  // namespace
}  // namespace ingot
