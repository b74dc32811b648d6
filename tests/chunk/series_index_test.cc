#include "chunk/series_index.h"

#include <algorithm>

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
    ASSERT_TRUE(SeriesIndex::Load(*store_, limits_, &index_).ok());
  }
  // Definitions reach the store on a flush (Storage flushes in the background and before
  // deleting WAL segments); a reopen without one models a crash that lost them.
  void Reopen(bool flush = true) {
    if (flush) {
      ASSERT_TRUE(index_->FlushDefinitions(/*sync=*/true).ok());
    }
    index_.reset();
    ASSERT_TRUE(store_->Close().ok());
    store_.reset();
    Open();
  }
  testing::TempDir dir_;
  LimitsOptions limits_;
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
  EXPECT_EQ(index_->ByTag("host", "a"), (std::vector<SeriesId>{1, 3, 4}));
  EXPECT_EQ(index_->ByTag("dc", "y"), (std::vector<SeriesId>{3}));
  EXPECT_TRUE(index_->ByTag("dc", "z").empty());
  EXPECT_EQ(index_->AllSeries(), (std::vector<SeriesId>{1, 2, 3, 4}));
  EXPECT_EQ(index_->TagKeys(), (std::vector<std::string>{"dc", "host"}));
  EXPECT_EQ(index_->TagValues("host"), (std::vector<std::string_view>{"a", "b"}));
  std::vector<std::string> seen;
  index_->ForEachTagValue("dc", [&](std::string_view v, std::span<const std::uint32_t> ids) {
    seen.push_back(std::string(v) + ":" + std::to_string(ids.size()));
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"x:2", "y:1"}));
  // Metric names are indexed under __name__ as <measurement>_<field>.
  EXPECT_EQ(index_->TagValues(SeriesIndex::kMetricName),
            (std::vector<std::string_view>{"cpu_idle", "cpu_usage", "mem_free"}));
  EXPECT_EQ(index_->ByTag(SeriesIndex::kMetricName, "cpu_usage"), (std::vector<SeriesId>{1, 2}));
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
  EXPECT_TRUE(index_->Resolve("cpu,host", ValueType::kFloat, &sid, &t).IsInvalidArgument());
  // The older measurement/field form is read from disk, never taken from a writer.
  EXPECT_TRUE(index_->Resolve("cpu,host=a usage", ValueType::kFloat, &sid, &t).IsInvalidArgument());
  EXPECT_EQ(index_->size(), 0u);
}

// A series is its label set: two line-protocol spellings of one metric name are one series, and a
// label set written by metric name joins them.
TEST_F(SeriesIndexTest, OneLabelSetIsOneSeries) {
  Open();
  SeriesId a, b, c;
  ValueType t;
  ASSERT_TRUE(
      index_->Resolve(Key("cpu", {{"host", "a"}}, "usage_user"), ValueType::kFloat, &a, &t).ok());
  ASSERT_TRUE(
      index_->Resolve(Key("cpu_usage", {{"host", "a"}}, "user"), ValueType::kFloat, &b, &t).ok());
  std::string by_name;
  const TagView tags[] = {{"host", "a"}};
  BuildLabelSetKey("cpu_usage_user", tags, &by_name);
  ASSERT_TRUE(index_->Resolve(by_name, ValueType::kFloat, &c, &t).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_EQ(index_->size(), 1u);
  EXPECT_EQ(index_->ByTag(SeriesIndex::kMetricName, "cpu_usage_user"), std::vector<SeriesId>{a});
}

// Series stored with the older `measurement,tags field` keys load as label sets; two of them with
// one label set both stay readable, and the first takes new points.
TEST_F(SeriesIndexTest, LegacyKeysLoadAsLabelSets) {
  Open();
  auto put = [&](SeriesId sid, std::string_view key) {
    std::uint8_t k[8];
    PutBigEndian64(sid, k);
    std::string v(1, static_cast<char>(ValueType::kFloat));
    v.append(key);
    ASSERT_TRUE(store_->db()
                    ->Put(rocksdb::WriteOptions(), store_->series_by_id_cf(),
                          rocksdb::Slice(reinterpret_cast<const char*>(k), 8), v)
                    .ok());
  };
  put(1, "cpu,host=a usage_user");
  put(2, "cpu_usage,host=a user");
  put(3, "mem,host=a free");
  Reopen(/*flush=*/false);
  EXPECT_EQ(index_->size(), 3u);
  EXPECT_EQ(index_->Find(Key("cpu", {{"host", "a"}}, "usage_user")), 1u);
  EXPECT_EQ(index_->Find(Key("mem", {{"host", "a"}}, "free")), 3u);
  std::string key;
  ValueType type;
  ASSERT_TRUE(index_->Lookup(2, &key, &type).ok());
  EXPECT_EQ(key, "cpu_usage_user,host=a");
  EXPECT_EQ(index_->ByTag(SeriesIndex::kMetricName, "cpu_usage_user"),
            (std::vector<SeriesId>{1, 2}));
  ResolvedSeries r;
  ASSERT_TRUE(
      index_->Resolve(Key("cpu_usage", {{"host", "a"}}, "user"), ValueType::kFloat, &r).ok());
  EXPECT_EQ(r.sid, 1u);
  EXPECT_FALSE(r.created);
  // New series continue after the loaded ids.
  ASSERT_TRUE(index_->Resolve(Key("disk", {}, "used"), ValueType::kFloat, &r).ok());
  EXPECT_EQ(r.sid, 4u);
}

TEST_F(SeriesIndexTest, DefinitionsArePendingUntilFlushedAndRestoredFromTheWalForm) {
  Open();
  ResolvedSeries a, b, again;
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "a"}}, "v"), ValueType::kFloat, &a).ok());
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "b"}}, "v"), ValueType::kInteger, &b).ok());
  EXPECT_TRUE(a.created);
  EXPECT_TRUE(a.definition_pending);
  // A second writer of a pending series must log its definition too.
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "a"}}, "v"), ValueType::kFloat, &again).ok());
  EXPECT_FALSE(again.created);
  EXPECT_TRUE(again.definition_pending);
  EXPECT_EQ(index_->pending_definitions(), 2u);
  std::vector<std::uint8_t> wal;
  index_->AppendDefinition(a.sid, &wal);
  index_->AppendDefinition(b.sid, &wal);

  // Crash before any flush: the store knows nothing, the WAL form brings both back.
  Reopen(/*flush=*/false);
  EXPECT_EQ(index_->size(), 0u);
  std::vector<std::string> restored;
  ASSERT_TRUE(SeriesIndex::ForEachDefinition(wal, [&](SeriesId sid, ValueType type,
                                                      std::string_view key) {
    restored.push_back(std::string(key));
    return index_->Restore(sid, type, key);
  }).ok());
  ASSERT_EQ(restored.size(), 2u);
  EXPECT_EQ(index_->Find(Key("cpu", {{"host", "b"}}, "v")), b.sid);
  ValueType type;
  ASSERT_TRUE(index_->Lookup(b.sid, nullptr, &type).ok());
  EXPECT_EQ(type, ValueType::kInteger);
  // Restoring twice is harmless; a conflicting definition is corruption.
  EXPECT_TRUE(index_->Restore(a.sid, ValueType::kFloat, Key("cpu", {{"host", "a"}}, "v")).ok());
  EXPECT_TRUE(index_->Restore(a.sid, ValueType::kFloat, Key("cpu", {{"host", "z"}}, "v"))
                  .IsCorruption());
  EXPECT_TRUE(index_->Restore(9, ValueType::kFloat, Key("cpu", {{"host", "a"}}, "v")).IsCorruption());
  // New ids continue above restored ones.
  ResolvedSeries c;
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "c"}}, "v"), ValueType::kFloat, &c).ok());
  EXPECT_EQ(c.sid, b.sid + 1);

  Reopen();
  EXPECT_EQ(index_->size(), 3u);
  ResolvedSeries loaded;
  ASSERT_TRUE(index_->Resolve(Key("cpu", {{"host", "a"}}, "v"), ValueType::kFloat, &loaded).ok());
  EXPECT_EQ(loaded.sid, a.sid);
  EXPECT_FALSE(loaded.definition_pending);
  EXPECT_EQ(index_->first_new_sid(), c.sid + 1);
}

TEST_F(SeriesIndexTest, MalformedDefinitionsAreCorruption) {
  std::vector<std::uint8_t> bytes = {1, 0, 0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0, 'a'};
  auto ignore = [](SeriesId, ValueType, std::string_view) { return Status::OK(); };
  EXPECT_TRUE(SeriesIndex::ForEachDefinition(bytes, ignore).IsCorruption());  // key overruns
  bytes[9] = 1;
  EXPECT_TRUE(SeriesIndex::ForEachDefinition(bytes, ignore).ok());
  bytes[8] = 7;  // type
  EXPECT_TRUE(SeriesIndex::ForEachDefinition(bytes, ignore).IsCorruption());
  bytes.resize(5);
  EXPECT_TRUE(SeriesIndex::ForEachDefinition(bytes, ignore).IsCorruption());
}

TEST_F(SeriesIndexTest, LimitsRefuseNewSeriesWithAReasonAndKeepExistingOnes) {
  limits_.max_series = 2;
  limits_.max_labels_per_series = 3;
  limits_.max_label_bytes = 8;
  limits_.max_series_key_bytes = 40;
  Open();
  ResolvedSeries r;
  ASSERT_TRUE(index_->Resolve(Key("m", {{"a", "1"}}, "f"), ValueType::kFloat, &r).ok());
  Status st = index_->Resolve(Key("m", {{"a", "1"}, {"b", "2"}, {"c", "3"}}, "f"),
                              ValueType::kFloat, &r);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(r.rejection, SeriesRejection::kLabelCount);
  EXPECT_NE(st.ToString().find("max_labels_per_series = 3"), std::string::npos) << st.ToString();
  st = index_->Resolve(Key("m", {{"a", "123456789"}}, "f"), ValueType::kFloat, &r);
  EXPECT_EQ(r.rejection, SeriesRejection::kLabelBytes) << st.ToString();
  st = index_->Resolve(Key("m", {{"a", "1"}, {"b", "12345678"}}, "12345678901234567890"),
                       ValueType::kFloat, &r);
  EXPECT_EQ(r.rejection, SeriesRejection::kLabelBytes) << st.ToString();
  st = index_->Resolve(Key("m", {{"__name__", "x"}}, "f"), ValueType::kFloat, &r);
  EXPECT_EQ(r.rejection, SeriesRejection::kInvalidKey) << st.ToString();
  st = index_->Resolve(Key("m", {{"a", "2"}}, "f"), ValueType::kFloat, &r);
  ASSERT_TRUE(st.ok());
  st = index_->Resolve(Key("m", {{"a", "3"}}, "f"), ValueType::kFloat, &r);
  EXPECT_TRUE(st.IsBusy()) << st.ToString();
  EXPECT_EQ(r.rejection, SeriesRejection::kMaxSeries);
  // Existing series still resolve at the limit.
  ASSERT_TRUE(index_->Resolve(Key("m", {{"a", "1"}}, "f"), ValueType::kFloat, &r).ok());
  EXPECT_EQ(r.sid, 1u);
  EXPECT_EQ(index_->size(), 2u);
}

TEST_F(SeriesIndexTest, KeyBytesLimit) {
  limits_.max_series_key_bytes = 64;
  Open();
  ResolvedSeries r;
  Status st = index_->Resolve(Key("m", {{"a", std::string(70, 'x')}}, "f"), ValueType::kFloat, &r);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_EQ(r.rejection, SeriesRejection::kKeyBytes);
  EXPECT_NE(st.ToString().find("max_series_key_bytes = 64"), std::string::npos) << st.ToString();
}

TEST_F(SeriesIndexTest, NewSeriesRateLimitIsABucketOfOneMinute) {
  limits_.max_new_series_per_minute = 5;
  Open();
  ResolvedSeries r;
  int created = 0;
  for (int i = 0; i < 8; ++i) {
    if (index_->Resolve(Key("m", {{"i", std::to_string(i)}}, "f"), ValueType::kFloat, &r).ok()) {
      ++created;
    } else {
      EXPECT_EQ(r.rejection, SeriesRejection::kRate);
    }
  }
  // The bucket starts full and refills at 5 per 60 s: the test takes far less than 12 s.
  EXPECT_EQ(created, 5);
  ASSERT_TRUE(index_->Resolve(Key("m", {{"i", "0"}}, "f"), ValueType::kFloat, &r).ok());
}

TEST_F(SeriesIndexTest, StatsRankMetricsLabelsAndPairs) {
  Open();
  ResolvedSeries r;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(index_->Resolve(Key("cpu", {{"dc", i < 7 ? "x" : "y"}, {"host", std::to_string(i)}},
                                    "usage"),
                                ValueType::kFloat, &r)
                    .ok());
  }
  ASSERT_TRUE(index_->Resolve(Key("mem", {{"dc", "x"}}, "free"), ValueType::kFloat, &r).ok());
  const IndexStats stats = index_->Stats(2);
  EXPECT_EQ(stats.series, 11u);
  ASSERT_EQ(stats.series_by_metric.size(), 2u);
  EXPECT_EQ(stats.series_by_metric[0].name, "cpu_usage");
  EXPECT_EQ(stats.series_by_metric[0].value, 10u);
  EXPECT_EQ(stats.series_by_metric[1].name, "mem_free");
  ASSERT_EQ(stats.series_by_pair.size(), 2u);
  EXPECT_EQ(stats.series_by_pair[0].name, "dc=x");
  EXPECT_EQ(stats.series_by_pair[0].value, 8u);
  EXPECT_EQ(stats.series_by_pair[1].name, "dc=y");
  ASSERT_EQ(stats.values_by_label.size(), 2u);
  EXPECT_EQ(stats.values_by_label[0].name, "host");
  EXPECT_EQ(stats.values_by_label[0].value, 10u);
  EXPECT_EQ(stats.series_by_label[0].name, "__name__");
  EXPECT_EQ(stats.series_by_label[0].value, 11u);
  EXPECT_GT(index_->memory_bytes(), 0u);
}

}  // namespace
}  // namespace ingot
