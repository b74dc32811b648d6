// GCC 12 reports a false -Wrestrict on "literal" + std::to_string(...) (GCC bug 105329).
#if !defined(__clang__)  // clang has no -Wrestrict (and rejects the unknown group)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "chunk/chunk_grouper.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "chunk/chunk_format.h"
#include "chunk/storage.h"
#include "chunk/storage_metrics.h"
#include "tests/chunk/test_util.h"
#include "tests/support/chunk_damage.h"
#include "tests/support/file_damage.h"
#include "tests/support/point_batch.h"

namespace ingot {
namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kSec = 1'000'000'000;

using Points = std::map<std::int64_t, double>;

class ChunkGrouperTest : public ::testing::Test {
 protected:
  void Open(const Clock& clock = SystemClock::Instance()) {
    ASSERT_TRUE(Storage::Open(options_, 2, clock, &storage_).ok());
  }
  void Reopen() {
    ASSERT_TRUE(storage_->Close().ok());
    storage_.reset();
    Open();
  }
  SeriesId Series(const std::string& name, ValueType type = ValueType::kFloat) {
    std::string key;
    BuildSeriesKey("m", {}, name, &key);
    SeriesId sid;
    ValueType stored;
    EXPECT_TRUE(storage_->index().Resolve(key, type, &sid, &stored).ok());
    return sid;
  }
  void Write(SeriesId sid, const Points& points, ValueType type = ValueType::kFloat) {
    const std::vector<std::pair<std::int64_t, double>> pts(points.begin(), points.end());
    AppendResult r;
    ASSERT_TRUE(storage_->shard(storage_->ShardOf(sid))
                    .Append(testing::PointBatch(sid, pts, type), &r)
                    .ok());
    ASSERT_EQ(r.accepted, pts.size());
  }
  // The blocks of each stored chunk of `sid`, in time order.
  std::vector<int> Blocks(SeriesId sid) {
    std::vector<int> blocks;
    EXPECT_TRUE(storage_
                    ->ForEachChunk(sid, kMin, kMax,
                                   [&](const ChunkView& view) {
                                     EXPECT_TRUE(view.header_ok);
                                     blocks.push_back(view.header.blocks);
                                     return Status::OK();
                                   })
                    .ok());
    return blocks;
  }
  // Every range whose ends fall on, beside and between the points at each block edge (every
  // 1024th point and its neighbours) reads exactly what `model` holds.
  void ExpectReads(SeriesId sid, const Points& model) {
    std::vector<std::int64_t> keys;
    for (const auto& [t, v] : model) keys.push_back(t);
    const auto expect = [&](std::int64_t start, std::int64_t end) {
      std::vector<std::int64_t> ts;
      std::vector<double> values;
      ASSERT_TRUE(storage_->ReadSeries(sid, start, end, &ts, &values).ok());
      std::vector<std::int64_t> want_ts;
      std::vector<double> want_values;
      for (auto p = model.lower_bound(start); p != model.end() && p->first <= end; ++p) {
        want_ts.push_back(p->first);
        want_values.push_back(p->second);
      }
      ASSERT_EQ(ts, want_ts) << "[" << start << ", " << end << "]";
      ASSERT_EQ(values, want_values) << "[" << start << ", " << end << "]";
    };
    expect(kMin, kMax);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (i % 1024 > 1 && i % 1024 != 1023 && i + 1 != keys.size()) continue;
      expect(keys[i], keys[i]);
      expect(keys[i] + 1, kMax);
      expect(kMin, keys[i] - 1);
      expect(keys[i] - 1, keys[i] + 1);
      if (i + 1 < keys.size()) expect(keys[i] + 1, keys[i + 1] - 1);
    }
  }

  testing::TempDir dir_;
  StorageOptions options_ = testing::TestStorageOptions(dir_.path());
  std::unique_ptr<Storage> storage_;
};

// A 2-decimal walk at `step`, or at random gaps when step is 0.
Points Walk(std::size_t n, std::int64_t first, std::int64_t step, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Points p;
  std::int64_t t = first;
  double v = 50;
  for (std::size_t i = 0; i < n; ++i) {
    v += static_cast<double>(static_cast<int>(rng() % 201) - 100) / 100.0;
    p[t] = std::round(v * 100) / 100;
    t += step > 0 ? step : 1 + static_cast<std::int64_t>(rng() % 5000);
  }
  return p;
}

TEST_F(ChunkGrouperTest, FullRunsBecomeGroupsAndEveryRangeReadsTheSame) {
  Open();
  const SeriesId regular = Series("regular");
  const SeriesId irregular = Series("irregular");
  const SeriesId counter = Series("counter", ValueType::kInteger);
  const SeriesId few = Series("few");
  const Points a = Walk(20 * 1024 + 5, 1000 * kSec, 10 * kSec, 1);
  const Points b = Walk(9 * 1024 + 7, -5 * kSec, 0, 2);  // crosses zero
  Points c;
  for (int i = 0; i < 9 * 1024 + 1; ++i) c[i * 15 * kSec] = i * 3;
  const Points d = Walk(3 * 1024 + 1, 0, kSec, 3);
  const std::uint64_t groups_before = Metrics().chunk_groups_written->Value();
  Write(regular, a);
  Write(irregular, b);
  Write(counter, c, ValueType::kInteger);
  Write(few, d);
  ChunkGroupStats stats;
  ASSERT_TRUE(storage_->GroupChunks(&stats).ok());
  EXPECT_EQ(stats.errors, 0u);
  // Full runs of eight chunks become groups; a series' newest chunks wait for more.
  EXPECT_EQ(Blocks(regular), (std::vector<int>{8, 8, 1, 1, 1, 1}));
  EXPECT_EQ(Blocks(irregular), (std::vector<int>{8, 1}));
  EXPECT_EQ(Blocks(counter), (std::vector<int>{8, 1}));
  EXPECT_EQ(Blocks(few), (std::vector<int>{1, 1, 1}));
  // Written now or already by the background scan: four groups in all.
  EXPECT_EQ(Metrics().chunk_groups_written->Value() - groups_before, 4u);
  // A regular group keeps no timestamps; an irregular one keeps its blocks'.
  ASSERT_TRUE(storage_
                  ->ForEachChunk(regular, kMin, kMax,
                                 [&](const ChunkView& view) {
                                   if (view.header.blocks == 8) {
                                     EXPECT_EQ(view.header.ts_encoding,
                                               kTimestampEncodingRegular);
                                     EXPECT_EQ(view.header.ts_bytes, 8u * 4u);
                                     EXPECT_EQ(view.header.count, 8192u);
                                   }
                                   return Status::OK();
                                 })
                  .ok());
  ExpectReads(regular, a);
  ExpectReads(irregular, b);
  ExpectReads(counter, c);
  ExpectReads(few, d);
  // Nothing left to join.
  ChunkGroupStats again;
  ASSERT_TRUE(storage_->GroupChunks(&again).ok());
  EXPECT_EQ(again.groups_written, 0u);
  EXPECT_GT(again.chunks_scanned, 0u);
  Reopen();
  ExpectReads(regular, a);
  ExpectReads(irregular, b);
  ExpectReads(counter, c);
}

TEST_F(ChunkGrouperTest, LatePointsInsideAGroupMergeAndTheRunIsGroupedAgain) {
  options_.late_compaction_points_per_s = 0;  // merged below, not by the background thread
  Open();
  const SeriesId sid = Series("late");
  Points model = Walk(17 * 1024 + 1, 0, 10 * kSec, 4);
  Write(sid, model);
  ASSERT_TRUE(storage_->GroupChunks().ok());
  ASSERT_EQ(Blocks(sid), (std::vector<int>{8, 8, 1}));
  // Replaced points and new points between them, inside the first group and across the second.
  Points late;
  for (int i = 0; i < 3000; ++i) {
    const std::int64_t t = (100 + i * 3) * 10 * kSec + (i % 2) * 5 * kSec;
    late[t] = -i;
    model[t] = -i;
  }
  Write(sid, late);
  EXPECT_TRUE(storage_->MayHaveLateData(sid));
  ExpectReads(sid, model);  // the late buffer over the groups
  ASSERT_TRUE(storage_->Checkpoint().ok());
  ExpectReads(sid, model);  // late chunks over the groups
  LateCompactionStats merged;
  ASSERT_TRUE(storage_->CompactLate(&merged).ok());
  EXPECT_GE(merged.points_written, 8192u + 1500u);
  EXPECT_FALSE(storage_->MayHaveLateData(sid));
  ExpectReads(sid, model);
  // The merge wrote single chunks; the next scan joins them again.
  ASSERT_TRUE(storage_->GroupChunks().ok());
  const std::vector<int> blocks = Blocks(sid);
  ASSERT_FALSE(blocks.empty());
  EXPECT_GE(blocks[0], 2);
  ExpectReads(sid, model);
  Reopen();
  ExpectReads(sid, model);
}

TEST_F(ChunkGrouperTest, CompactionsRewriteAGroupsBlocksCompactlyAndExactly) {
  Open();
  const SeriesId sid = Series("compact");
  const Points model = Walk(8 * 1024 + 3, 0, 10 * kSec, 5);
  Write(sid, model);
  ASSERT_TRUE(storage_->GroupChunks().ok());
  std::size_t before = 0;
  ASSERT_TRUE(storage_
                  ->ForEachChunk(sid, kMin, kMax,
                                 [&](const ChunkView& view) {
                                   if (view.header.blocks == 8) before = view.bytes.size();
                                   return Status::OK();
                                 })
                  .ok());
  ASSERT_GT(before, 0u);
  ASSERT_TRUE(storage_->chunks().CompactChunks().ok());
  std::size_t after = 0;
  int compact_blocks = 0;
  ASSERT_TRUE(storage_
                  ->ForEachChunk(sid, kMin, kMax,
                                 [&](const ChunkView& view) {
                                   if (view.header.blocks != 8) return Status::OK();
                                   after = view.bytes.size();
                                   ChunkBlocks blocks;
                                   ListChunkBlocks(view.bytes, view.header, blocks);
                                   for (std::size_t b = 0; b < 8; ++b) {
                                     const auto e =
                                         static_cast<codec::FloatEncoding>(blocks[b].values[0]);
                                     compact_blocks += e == codec::FloatEncoding::kAlpZstd ||
                                                       e == codec::FloatEncoding::kAlpRadix ||
                                                       e == codec::FloatEncoding::kAlpRice ||
                                                       e == codec::FloatEncoding::kAlpHuffman ||
                                                       e == codec::FloatEncoding::kAlpRanked ||
                                                       e == codec::FloatEncoding::kDictionary;
                                   }
                                   return Status::OK();
                                 })
                  .ok());
  EXPECT_GT(after, 0u);
  EXPECT_LT(after, before);
  EXPECT_GE(compact_blocks, 4);  // blocks are kept as sealed only where that is smaller
  ExpectReads(sid, model);
}

TEST_F(ChunkGrouperTest, ACorruptChunkLeavesItsRunAsItIs) {
  options_.group_chunks = false;  // no background scan until the damage is done
  Open();
  const SeriesId bad = Series("bad");
  const SeriesId good = Series("good");
  const Points a = Walk(8 * 1024 + 1, 0, kSec, 6);
  Write(bad, a);
  Write(good, a);
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  // One flipped byte in the bad series' third chunk.
  ASSERT_TRUE(testing::FlipStoredChunkByte(dir_.path() + "/db", options_, bad, 2 * 1024 * kSec));
  Open();
  EXPECT_EQ(Blocks(bad).size(), 8u);
  ChunkGroupStats off;
  ASSERT_TRUE(storage_->GroupChunks(&off).ok());
  EXPECT_EQ(off.chunks_scanned, 0u);  // switched off: nothing is read
  EXPECT_EQ(Blocks(good).size(), 8u);
  const std::uint64_t errors_before = Metrics().chunk_grouping_errors->Value();
  options_.group_chunks = true;
  Reopen();
  ASSERT_TRUE(storage_->GroupChunks().ok());
  EXPECT_EQ(Blocks(bad), std::vector<int>(8, 1));
  EXPECT_EQ(Blocks(good), std::vector<int>{8});
  EXPECT_GE(Metrics().chunk_grouping_errors->Value() - errors_before, 1u);
  // The damaged chunk fails only the reads that touch it.
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  EXPECT_TRUE(storage_->ReadSeries(bad, 2 * 1024 * kSec, 3 * 1024 * kSec - 1, &ts, &values)
                  .IsCorruption());
  ASSERT_TRUE(storage_->ReadSeries(bad, 0, 2 * 1024 * kSec - 1, &ts, &values).ok());
  EXPECT_EQ(ts.size(), 2048u);
  ExpectReads(good, a);
}

// A damaged table block stops neither a scan nor a force merge: the series after it are grouped.
TEST_F(ChunkGrouperTest, TheScanStepsOverAnUnreadableBlock) {
  options_.group_chunks = false;
  Open();
  std::vector<SeriesId> sids;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> noise(0, 1000);
  for (int s = 0; s < 12; ++s) {
    sids.push_back(Series("d" + std::to_string(s)));
    Points p;
    for (int i = 0; i < 8 * 1024 + 1; ++i) p[i * kSec] = noise(rng);  // real doubles: big chunks
    Write(sids.back(), p);
  }
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  std::uint64_t size = 0;
  const std::string sst = testing::LargestFile(dir_.path() + "/db", ".sst", &size);
  ASSERT_GT(size, 500'000u);
  ASSERT_TRUE(testing::FlipByte(sst, size / 3));
  options_.group_chunks = true;
  const std::uint64_t errors_before = Metrics().chunk_grouping_errors->Value();
  Open();
  ChunkGroupStats stats;
  ASSERT_TRUE(storage_->GroupChunks(&stats).ok());
  EXPECT_GE(Metrics().chunk_grouping_errors->Value() - errors_before, 1u);
  EXPECT_EQ(Blocks(sids.back()), std::vector<int>{8});  // past the damage
}

TEST_F(ChunkGrouperTest, RetentionDropsAGroupOnceItsNewestPointExpires) {
  options_.retention_s = 3 * 3600;
  ManualClock clock(100'000 * kSec);
  Open(clock);
  const SeriesId sid = Series("r");
  // Two groups of 8 x 1024 s and one chunk: [90000, 98191], [98192, 106383], [106384, ...].
  Write(sid, Walk(17 * 1024 + 1, 90'000 * kSec, kSec, 7));
  ASSERT_TRUE(storage_->GroupChunks().ok());
  ASSERT_EQ(Blocks(sid), (std::vector<int>{8, 8, 1}));
  // Cutoff 110000 - 10800 = 99200 s: the first group ends before it; the second straddles it.
  clock.Set(110'000 * kSec);
  ASSERT_TRUE(storage_->chunks().CompactChunks().ok());
  EXPECT_EQ(Blocks(sid), (std::vector<int>{8, 1}));
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  ASSERT_TRUE(storage_->ReadSeries(sid, kMin, kMax, &ts, &values).ok());
  ASSERT_EQ(ts.size(), 8192u + 1024u + 1u);
  EXPECT_EQ(ts.front(), 98'192 * kSec);
}

TEST_F(ChunkGrouperTest, TheBackgroundScanGroupsNewlySealedRuns) {
  Open();
  const SeriesId sid = Series("bg");
  const Points model = Walk(8 * 1024 + 1, 0, kSec, 8);
  Write(sid, model);
  // The background thread notices the new chunks within a tick or two.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Blocks(sid) != std::vector<int>{8} && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Blocks(sid), std::vector<int>{8});
  ExpectReads(sid, model);
}

}  // namespace
}  // namespace ingot
