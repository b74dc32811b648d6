// GCC 12 reports a false -Wrestrict on "literal" + std::to_string(...) (GCC bug 105329).
#if !defined(__clang__)  // clang has no -Wrestrict (and rejects the unknown group)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "chunk/storage.h"

#include <array>
#include <atomic>
#include <bit>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "chunk/chunk_format.h"
#include "chunk/series_reader.h"
#include "chunk/storage_metrics.h"
#include "codec/bit_packing.h"
#include "tests/chunk/test_util.h"
#include "tests/support/point_batch.h"

namespace ingot {
namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kSec = 1'000'000'000;

using Model = std::map<SeriesId, std::map<std::int64_t, double>>;

class StorageTest : public ::testing::Test {
 protected:
  void Open(int shards = 2, const Clock& clock = SystemClock::Instance()) {
    ASSERT_TRUE(Storage::Open(options_, shards, clock, &storage_).ok());
  }
  void Reopen(int shards = 2, const Clock& clock = SystemClock::Instance()) {
    ASSERT_TRUE(storage_->Close().ok());
    storage_.reset();
    Open(shards, clock);
  }
  SeriesId Series(const std::string& name, ValueType type = ValueType::kFloat) {
    std::string key;
    BuildSeriesKey("m", {}, name, &key);
    SeriesId sid;
    ValueType stored;
    EXPECT_TRUE(storage_->index().Resolve(key, type, &sid, &stored).ok());
    return sid;
  }
  // Appends one batch per shard; updates the model with accepted points.
  AppendResult Write(SeriesId sid, const std::vector<std::pair<std::int64_t, double>>& points,
                     ValueType type = ValueType::kFloat) {
    const std::vector<PointRecord> batch = testing::PointBatch(sid, points, type);
    AppendResult r;
    EXPECT_TRUE(storage_->shard(storage_->ShardOf(sid)).Append(batch, &r).ok());
    return r;
  }
  void ExpectRange(const Model& model, SeriesId sid, std::int64_t start, std::int64_t end) {
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    ASSERT_TRUE(storage_->ReadSeries(sid, start, end, &ts, &values).ok());
    std::vector<std::int64_t> want_ts;
    std::vector<double> want_values;
    auto it = model.find(sid);
    if (it != model.end() && start <= end) {
      for (auto p = it->second.lower_bound(start); p != it->second.end() && p->first <= end; ++p) {
        want_ts.push_back(p->first);
        want_values.push_back(p->second);
      }
    }
    ASSERT_EQ(ts, want_ts) << "series " << sid << " [" << start << ", " << end << "]";
    ASSERT_EQ(values, want_values) << "series " << sid << " [" << start << ", " << end << "]";
  }
  // Full range, every point edge (±1) of every 1024-point boundary, empty and reversed ranges.
  void ExpectAllRanges(const Model& model) {
    for (const auto& [sid, points] : model) {
      ExpectRange(model, sid, kMin, kMax);
      ExpectRange(model, sid, 5, 4);
      std::vector<std::int64_t> keys;
      for (const auto& [ts, v] : points) keys.push_back(ts);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i % 1024 != 0 && i % 1024 != 1023 && i + 1 != keys.size() && i != 1) continue;
        const std::int64_t t = keys[i];
        ExpectRange(model, sid, t, t);
        ExpectRange(model, sid, t + 1, kMax);
        ExpectRange(model, sid, kMin, t - 1);
        ExpectRange(model, sid, t - 1, t + 1);
        if (i + 1 < keys.size()) ExpectRange(model, sid, t + 1, keys[i + 1] - 1);  // gap: empty
      }
    }
  }

  testing::TempDir dir_;
  StorageOptions options_ = testing::TestStorageOptions(dir_.path());
  std::unique_ptr<Storage> storage_;
};

// Head reads search from the newest point backwards: every range over an unsealed head (short
// and long, at its end, inside, before and past it, on and between points) reads what the model
// holds.
TEST_F(StorageTest, HeadRangesReadExactly) {
  Open();
  Model model;
  std::mt19937_64 rng(3);
  const SeriesId sid = Series("head");
  std::vector<std::pair<std::int64_t, double>> pts;
  std::int64_t t = 1000 * kSec;
  for (int i = 0; i < 700; ++i) {  // fewer than a chunk: all in the head
    t += 1 + static_cast<std::int64_t>(rng() % kSec);
    pts.emplace_back(t, static_cast<double>(i));
    model[sid][t] = static_cast<double>(i);
  }
  Write(sid, pts);
  const std::int64_t first = pts.front().first, last = pts.back().first;
  for (int k = 0; k < 400; ++k) {
    const std::int64_t span = last - first + 4;
    const std::int64_t a =
        first - 2 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span));
    const std::int64_t len =
        k % 2 == 0 ? static_cast<std::int64_t>(rng() % (20 * kSec))
                   : static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span));
    ExpectRange(model, sid, a, a + len);
    ExpectRange(model, sid, last - len, last);  // windows ending at the newest point
  }
  ExpectRange(model, sid, last + 1, kMax);
  ExpectRange(model, sid, kMin, first - 1);
}

TEST_F(StorageTest, RoundTripsAcrossChunkEdgesAndReopen) {
  Open();
  Model model;
  std::mt19937_64 rng(11);
  for (int n : {1, 1023, 1024, 1025, 2048, 2049, 3000}) {
    const SeriesId sid = Series("s" + std::to_string(n));
    std::vector<std::pair<std::int64_t, double>> pts;
    std::int64_t t = -1500 * kSec;  // negative timestamps, crossing zero
    for (int i = 0; i < n; ++i) {
      t += 1 + static_cast<std::int64_t>(rng() % (2 * kSec));
      const double v = static_cast<double>(static_cast<int>(rng() % 100000) - 50000) / 100.0;
      pts.emplace_back(t, v);
      model[sid][t] = v;
    }
    // Several batches of varying size.
    for (std::size_t i = 0; i < pts.size(); i += 300) {
      std::vector<std::pair<std::int64_t, double>> part(
          pts.begin() + static_cast<long>(i),
          pts.begin() + static_cast<long>(std::min(i + 300, pts.size())));
      const AppendResult r = Write(sid, part);
      EXPECT_EQ(r.accepted, part.size());
    }
  }
  ExpectAllRanges(model);
  Reopen();
  ExpectAllRanges(model);
  Reopen(3);  // a different shard count routes heads elsewhere
  ExpectAllRanges(model);
}

TEST_F(StorageTest, OutOfOrderAndDuplicatesWithinOpenChunk) {
  Open();
  Model model;
  const SeriesId sid = Series("ooo");
  std::mt19937_64 rng(5);
  // 3000 points shuffled within windows of 256, with duplicates overwriting. Windows divide the
  // chunk size, so every point arrives before the buffer that would hold it is sealed.
  std::vector<std::int64_t> order;
  for (int i = 0; i < 3000; ++i) order.push_back(i * 10);
  for (std::size_t w = 0; w < order.size(); w += 256) {
    std::shuffle(order.begin() + static_cast<long>(w),
                 order.begin() + static_cast<long>(std::min(w + 256, order.size())), rng);
  }
  std::uint64_t rejected = 0;
  for (std::size_t i = 0; i < order.size(); i += 50) {
    std::vector<std::pair<std::int64_t, double>> batch;
    for (std::size_t j = i; j < i + 50; ++j) {
      batch.emplace_back(order[j], static_cast<double>(j));
      if (j % 7 == 0) batch.emplace_back(order[j], static_cast<double>(j) + 0.5);  // overwrite
    }
    // The model accepts exactly what storage accepted: too-old points are those at or before the
    // newest sealed point, which the test mirrors through the reads below.
    const AppendResult r = Write(sid, batch);
    rejected += r.rejected_too_old;
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    for (const auto& [t, v] : batch) {
      ASSERT_TRUE(storage_->ReadSeries(sid, t, t, &ts, &values).ok());
      if (!ts.empty() && values[0] == v) model[sid][t] = v;
    }
  }
  EXPECT_EQ(rejected, 0u) << "windows of 256 never reach back past a sealed chunk";
  EXPECT_EQ(model[sid].size(), 3000u);
  ExpectAllRanges(model);
  Reopen();
  ExpectAllRanges(model);
}

TEST_F(StorageTest, PointsAtOrBeforeSealedChunkAreStoredLateAndTheLastWriteWins) {
  Open();
  const SeriesId sid = Series("old");
  Model model;
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i < 1025; ++i) {
    pts.emplace_back(i * 2, i);
    model[sid][i * 2] = i;
  }
  AppendResult r = Write(sid, pts);
  EXPECT_EQ(r.chunks_sealed, 1u);
  const std::uint64_t late_before = Metrics().points_late->Value();
  // Replaces a sealed point, fills a gap between sealed points, and one in-order point.
  r = Write(sid, {{1022, 9.0}, {501, 7.5}, {4000, 1.0}});
  EXPECT_EQ(r.rejected_too_old, 0u);
  EXPECT_EQ(r.late, 2u);
  EXPECT_EQ(r.accepted, 3u);
  EXPECT_EQ(Metrics().points_late->Value() - late_before, 2u);
  model[sid][1022] = 9.0;
  model[sid][501] = 7.5;
  model[sid][4000] = 1.0;
  EXPECT_TRUE(storage_->MayHaveLateData(sid));
  ExpectAllRanges(model);  // from the late buffer
  ASSERT_TRUE(storage_->Checkpoint().ok());
  ExpectAllRanges(model);  // from a late chunk
  // A newer write of the same timestamp wins over the late chunk.
  EXPECT_EQ(Write(sid, {{1022, -3.0}}).late, 1u);
  model[sid][1022] = -3.0;
  ExpectAllRanges(model);
  Reopen();  // late chunks and the sealed bound are found again after a restart
  EXPECT_TRUE(storage_->MayHaveLateData(sid));
  ExpectAllRanges(model);
  EXPECT_EQ(Write(sid, {{1023, 4.0}}).late, 1u);
  model[sid][1023] = 4.0;
  ExpectAllRanges(model);
  LateCompactionStats stats;
  ASSERT_TRUE(storage_->CompactLate(&stats).ok());
  EXPECT_GT(stats.points_written, 0u);
  EXPECT_FALSE(storage_->MayHaveLateData(sid));
  EXPECT_EQ(storage_->late_series(), 0u);
  ExpectAllRanges(model);
  Reopen();
  EXPECT_FALSE(storage_->MayHaveLateData(sid));
  ExpectAllRanges(model);
}

TEST_F(StorageTest, LateMaxAgeRefusesOlderLatePointsOnly) {
  options_.late_max_age_s = 3600;
  ManualClock clock(100'000 * kSec);
  Open(2, clock);
  const SeriesId sid = Series("bounded");
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i < 1025; ++i) pts.emplace_back((50'000 + i) * kSec, i);
  EXPECT_EQ(Write(sid, pts).accepted, pts.size());  // in order: no age bound
  const std::uint64_t counted_before = Metrics().points_rejected_too_old->Value();
  // Late and within the hour: stored. Late and older: refused and counted.
  const SeriesId fresh = Series("fresh");
  std::vector<std::pair<std::int64_t, double>> recent;
  for (int i = 0; i < 1025; ++i) recent.emplace_back((99'000 + i) * kSec, i);
  EXPECT_EQ(Write(fresh, recent).accepted, recent.size());
  AppendResult r = Write(fresh, {{95'000 * kSec, 1.0}, {99'500 * kSec, 2.0}});
  EXPECT_EQ(r.late, 1u);
  EXPECT_EQ(r.rejected_too_old, 1u);
  r = Write(sid, {{50'001 * kSec, 5.0}});
  EXPECT_EQ(r.rejected_too_old, 1u);
  EXPECT_EQ(Metrics().points_rejected_too_old->Value() - counted_before, 2u);
}

// A head left unchanged is rewritten with the compact encodings: by the checkpoint after the one
// that wrote it, or by CompactHeads (force_merge) at once; once only, until it changes. The
// points come back after a restart either way.
TEST_F(StorageTest, UnchangedHeadsAreCheckpointedCompactly) {
  Open();
  const SeriesId a = Series("idle_a");
  const SeriesId b = Series("idle_b");
  Model model;
  for (SeriesId sid : {a, b}) {
    std::vector<std::pair<std::int64_t, double>> pts;
    for (int i = 0; i < 700; ++i) {
      const double v = static_cast<double>((i * 37) % 11) / 4;  // few distinct values
      pts.emplace_back(i * 10, v);
      model[sid][i * 10] = v;
    }
    EXPECT_EQ(Write(sid, pts).accepted, pts.size());
  }
  ASSERT_TRUE(storage_->Checkpoint().ok());  // writes both heads as they changed
  std::size_t heads = 99;
  ASSERT_TRUE(storage_->CompactHeads(&heads).ok());
  EXPECT_EQ(heads, 2u);
  ASSERT_TRUE(storage_->CompactHeads(&heads).ok());
  EXPECT_EQ(heads, 0u) << "already compact";
  ExpectAllRanges(model);
  // A changed head is checkpointed as usual, then compacted by the next checkpoint that finds it
  // unchanged.
  EXPECT_EQ(Write(a, {{7000, 1.5}}).accepted, 1u);
  model[a][7000] = 1.5;
  ASSERT_TRUE(storage_->Checkpoint().ok());
  ASSERT_TRUE(storage_->Checkpoint().ok());
  ASSERT_TRUE(storage_->CompactHeads(&heads).ok());
  EXPECT_EQ(heads, 0u) << "the second checkpoint compacted it";
  Reopen();
  ExpectAllRanges(model);
}

TEST_F(StorageTest, RandomOrderWritesMatchALastWriteWinsModel) {
  options_.late_buffer_points = 1024;  // small buffers: many late chunks, overlapping each other
  options_.group_chunks = false;       // the merge's own chunks are checked below
  Open(3);
  std::mt19937_64 rng(42);
  std::vector<SeriesId> sids;
  for (int s = 0; s < 4; ++s) sids.push_back(Series("rand" + std::to_string(s)));
  Model model;
  for (int round = 0; round < 12; ++round) {
    for (SeriesId sid : sids) {
      std::vector<std::pair<std::int64_t, double>> pts;
      // Mostly moving forward, some points far back, some rewrites of earlier timestamps.
      for (int i = 0; i < 700; ++i) {
        std::int64_t t;
        const auto dice = rng() % 10;
        if (dice < 6) {
          t = round * 1000 + static_cast<std::int64_t>(rng() % 1000);
        } else if (dice < 9) {
          t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(round * 1000 + 1));
        } else {
          t = -static_cast<std::int64_t>(rng() % 5000);
        }
        const double v = static_cast<double>(rng() % 100000) / 8;
        pts.emplace_back(t, v);
        model[sid][t] = v;
      }
      EXPECT_EQ(Write(sid, pts).accepted, pts.size());
    }
    if (round % 3 == 1) {
      ASSERT_TRUE(storage_->Checkpoint().ok());
    }
    if (round % 4 == 2) {
      ASSERT_TRUE(storage_->CompactLate().ok());
    }
    if (round % 5 == 3) Reopen(3);
  }
  ExpectAllRanges(model);
  ASSERT_TRUE(storage_->CompactLate().ok());
  ExpectAllRanges(model);
  // Merged chunks do not overlap and are at most full.
  for (SeriesId sid : sids) {
    std::int64_t previous_max = kMin;
    bool first = true;
    ASSERT_TRUE(storage_
                    ->ForEachChunk(sid, kMin, kMax,
                                   [&](const ChunkView& view) {
                                     EXPECT_TRUE(view.header_ok);
                                     EXPECT_LE(view.count(), kChunkCapacity);
                                     if (!first) {
                                       EXPECT_GT(view.first_ts_ns, previous_max);
                                     }
                                     first = false;
                                     previous_max = view.last_ts_ns();
                                     return Status::OK();
                                   })
                    .ok());
  }
  Reopen(2);
  ExpectAllRanges(model);
}

TEST_F(StorageTest, IntegerAndBooleanSeriesReadAsDoublesAndTypesAreEnforced) {
  Open();
  Model model;
  const SeriesId ints = Series("i", ValueType::kInteger);
  const SeriesId bools = Series("b", ValueType::kBoolean);
  std::vector<std::pair<std::int64_t, double>> ip, bp;
  for (int i = 0; i < 1500; ++i) {
    ip.emplace_back(i, static_cast<double>(i * 1000 - 700000));
    bp.emplace_back(i, static_cast<double>(i % 3 == 0));
    model[ints][i] = static_cast<double>(i * 1000 - 700000);
    model[bools][i] = static_cast<double>(i % 3 == 0);
  }
  EXPECT_EQ(Write(ints, ip, ValueType::kInteger).accepted, 1500u);
  EXPECT_EQ(Write(bools, bp, ValueType::kBoolean).accepted, 1500u);
  EXPECT_EQ(Write(ints, {{5000, 1.5}}, ValueType::kFloat).rejected_type, 1u);
  ExpectAllRanges(model);
  Reopen();
  ExpectAllRanges(model);
  // Raw access keeps the exact int64.
  auto ws = std::make_unique<codec::Workspace>();
  int chunks = 0;
  ASSERT_TRUE(storage_
                  ->ForEachChunk(ints, kMin, kMax,
                                 [&](const ChunkView& view) {
                                   std::vector<std::int64_t> ts(view.count()), raw(view.count());
                                   INGOT_RETURN_IF_ERROR(
                                       Storage::DecodeChunkRaw(view, ts, raw, *ws));
                                   for (std::size_t i = 0; i < ts.size(); ++i)
                                     EXPECT_EQ(raw[i], ts[i] * 1000 - 700000);
                                   ++chunks;
                                   return Status::OK();
                                 })
                  .ok());
  EXPECT_EQ(chunks, 1);
}

TEST_F(StorageTest, ForEachChunkUsesStraddlingChunkAndBounds) {
  Open();
  const SeriesId a = Series("a");
  const SeriesId b = Series("b");
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i < 4 * 1024 + 1; ++i) pts.emplace_back(i * 10, i);
  Write(a, pts);
  Write(b, pts);
  auto firsts = [&](std::int64_t start, std::int64_t end) {
    std::vector<std::int64_t> out;
    EXPECT_TRUE(storage_
                    ->ForEachChunk(a, start, end,
                                   [&](const ChunkView& v) {
                                     EXPECT_EQ(v.sid, a);
                                     out.push_back(v.first_ts_ns);
                                     return Status::OK();
                                   })
                    .ok());
    return out;
  };
  EXPECT_EQ(firsts(kMin, kMax), (std::vector<std::int64_t>{0, 10240, 20480, 30720}));
  EXPECT_EQ(firsts(10235, 10235), (std::vector<std::int64_t>{}));  // between chunks 0 and 1
  EXPECT_EQ(firsts(10230, 10240), (std::vector<std::int64_t>{0, 10240}));
  EXPECT_EQ(firsts(15000, 20480), (std::vector<std::int64_t>{10240, 20480}));
  EXPECT_EQ(firsts(kMin, -1), (std::vector<std::int64_t>{}));
  EXPECT_EQ(firsts(40950, kMax), (std::vector<std::int64_t>{30720}));
  EXPECT_EQ(firsts(40960, kMax), (std::vector<std::int64_t>{}));  // only in the head
}

// A cursor walks as a fresh iterator and a seek per call would, whether the calls come in
// increasing series order (where it skips the seek when it already stands on the next series'
// chunks) or in any order, over ranges that start inside, between and around chunks.
TEST_F(StorageTest, ChunkCursorWalksAsASeekPerSeriesWould) {
  Open();
  std::vector<SeriesId> sids;
  for (int s = 0; s < 6; ++s) sids.push_back(Series("s" + std::to_string(s)));
  // Series 0..4 hold 0, 1, 2, 3 and 4 sealed chunks (plus a head); series 5 is never written.
  for (int s = 0; s < 5; ++s) {
    std::vector<std::pair<std::int64_t, double>> pts;
    for (int i = 0; i < s * 1024 + 100; ++i) pts.emplace_back(1000 + i * 10, i);
    Write(sids[static_cast<std::size_t>(s)], pts);
  }
  auto firsts = [&](ChunkCursor* cursor, SeriesId sid, std::int64_t start, std::int64_t end) {
    std::vector<std::int64_t> out;
    auto take = [&](const ChunkView& v) {
      EXPECT_EQ(v.sid, sid);
      out.push_back(v.first_ts_ns);
      return Status::OK();
    };
    const Status st = cursor != nullptr ? storage_->ForEachChunk(*cursor, sid, start, end, take)
                                        : storage_->ForEachChunk(sid, start, end, take);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  };
  const std::vector<std::int64_t> edges = {kMin, 0,     999,   1000,  1001,  11230, 11235,
                                           11240, 20000, 30720, 41950, 42000, 60000, kMax};
  std::mt19937_64 rng(7);
  auto pick = [&] { return edges[rng() % edges.size()]; };
  int walks = 0;
  for (int round = 0; round < 200; ++round) {
    ChunkCursor cursor;
    const bool ascending = round % 2 == 0;
    std::vector<SeriesId> order = sids;
    if (!ascending) std::shuffle(order.begin(), order.end(), rng);
    // One range for the whole round (as a query's block) or one per call.
    const std::int64_t a = pick(), b = pick();
    for (const SeriesId sid : order) {
      std::int64_t start = std::min(a, b), end = std::max(a, b);
      if (round % 4 == 1) {
        start = pick();
        end = pick();
      }
      const auto want = firsts(nullptr, sid, start, end);
      ASSERT_EQ(firsts(&cursor, sid, start, end), want)
          << "round " << round << " series " << sid << " [" << start << ", " << end << "]";
      walks += !want.empty();
    }
  }
  EXPECT_GT(walks, 100);
}

// A prepared block of series reads what single reads do (sealed chunks, heads, a series with late
// data, one never written), in order and after a read out of order ends the block; and it reads
// as of its preparation: chunks sealed afterwards from its heads neither add nor repeat points.
TEST_F(StorageTest, BlockReadsMatchSingleReadsAndHoldTheirSnapshot) {
  Open();
  std::vector<SeriesId> sids;
  Model model;
  for (int s = 0; s < 5; ++s) {
    const SeriesId sid = Series("b" + std::to_string(s));
    sids.push_back(sid);
    std::vector<std::pair<std::int64_t, double>> pts;
    for (int i = 0; i < s * 700 + 50; ++i) {
      pts.emplace_back(i * 10, s * 1e6 + i);
      model[sid][i * 10] = s * 1e6 + i;
    }
    if (s != 3) Write(sid, pts);
  }
  model.erase(sids[3]);
  // Series 2 gets a late point, before its sealed chunk's end.
  EXPECT_EQ(Write(sids[2], {{5, -1.0}}).late, 1u);
  model[sids[2]][5] = -1.0;
  ASSERT_TRUE(storage_->MayHaveLateData(sids[2]));
  auto want = [&](SeriesId sid, std::int64_t start, std::int64_t end) {
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    if (auto it = model.find(sid); it != model.end()) {
      for (auto p = it->second.lower_bound(start); p != it->second.end() && p->first <= end; ++p) {
        ts.push_back(p->first);
        values.push_back(p->second);
      }
    }
    return std::make_pair(ts, values);
  };
  SeriesReader reader(*storage_);
  auto got = [&](SeriesId sid, std::int64_t start, std::int64_t end) {
    EXPECT_TRUE(reader.Read(sid, start, end).ok());
    return std::make_pair(
        std::vector<std::int64_t>(reader.ts().begin(), reader.ts().end()),
        std::vector<double>(reader.values().begin(), reader.values().end()));
  };
  for (const auto& [start, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {kMin, kMax}, {5, 5}, {3000, 20000}, {10235, 10245}, {20000, 10}}) {
    ASSERT_TRUE(reader.PrepareBlock(sids, start, end).ok());
    for (const SeriesId sid : sids) {
      EXPECT_EQ(got(sid, start, end), want(sid, start, end)) << sid << " [" << start << ", " << end << "]";
    }
    // Out of order: the block ends, reads stay right.
    ASSERT_TRUE(reader.PrepareBlock(sids, start, end).ok());
    EXPECT_EQ(got(sids[4], start, end), want(sids[4], start, end));
    for (const SeriesId sid : sids) EXPECT_EQ(got(sid, start, end), want(sid, start, end));
  }
  // Prepared, then series 4's head (its last 812 points) is sealed with more points.
  ASSERT_TRUE(reader.PrepareBlock(sids, kMin, kMax).ok());
  const auto before = want(sids[4], kMin, kMax);
  std::vector<std::pair<std::int64_t, double>> more;
  for (int i = 0; i < 1500; ++i) more.emplace_back(100000 + i * 10, i);
  ASSERT_GE(Write(sids[4], more).chunks_sealed, 1u);
  for (std::size_t i = 0; i + 1 < sids.size(); ++i) {
    EXPECT_EQ(got(sids[i], kMin, kMax), want(sids[i], kMin, kMax));
  }
  EXPECT_EQ(got(sids[4], kMin, kMax), before);
}

// Blocks prepared over and over while a writer seals chunks: each read sees a prefix of the
// writes, without a gap or a repeat, as single reads do.
TEST_F(StorageTest, BlockReadsNeitherLoseNorDuplicateWhileSealing) {
  Open(1);
  const std::vector<SeriesId> sids = {Series("x"), Series("y")};
  constexpr int kPoints = 12000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < kPoints; i += 7) {
      std::vector<PointRecord> batch;
      for (const SeriesId sid : sids) {
        for (int j = i; j < std::min(i + 7, kPoints); ++j) {
          batch.push_back(
              {sid, j, std::bit_cast<std::uint64_t>(static_cast<double>(j)), ValueType::kFloat});
        }
      }
      ASSERT_TRUE(storage_->shard(0).Append(batch, nullptr).ok());
    }
    done = true;
  });
  SeriesReader reader(*storage_);
  std::size_t last_seen = 0;
  int reads = 0;
  std::string wrong;  // the first read that was not a prefix
  while ((!done || reads == 0) && wrong.empty()) {
    if (!reader.PrepareBlock(sids, kMin, kMax).ok()) wrong = "prepare failed";
    for (const SeriesId sid : sids) {
      if (!reader.Read(sid, kMin, kMax).ok()) wrong = "read failed";
      const auto ts = reader.ts();
      const auto values = reader.values();
      for (std::size_t i = 0; i < ts.size() && wrong.empty(); ++i) {
        if (ts[i] != static_cast<std::int64_t>(i) || values[i] != static_cast<double>(i)) {
          wrong = "series " + std::to_string(sid) + " point " + std::to_string(i) + " is at " +
                  std::to_string(ts[i]);
        }
      }
      if (sid == sids[0] && wrong.empty()) {
        if (ts.size() < last_seen) wrong = "fewer points than the read before";
        last_seen = ts.size();
      }
    }
    ++reads;
  }
  writer.join();
  EXPECT_EQ(wrong, "");
  EXPECT_GT(reads, 0);
}

TEST_F(StorageTest, ReadsNeitherLoseNorDuplicateWhileSealing) {
  Open(1);
  const SeriesId sid = Series("live");
  constexpr int kPoints = 12000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < kPoints; i += 7) {
      std::vector<PointRecord> batch;
      for (int j = i; j < std::min(i + 7, kPoints); ++j) {
        batch.push_back(
            {sid, j, std::bit_cast<std::uint64_t>(static_cast<double>(j)), ValueType::kFloat});
      }
      ASSERT_TRUE(storage_->shard(0).Append(batch, nullptr).ok());
    }
    done = true;
  });
  std::size_t last_seen = 0;
  int reads = 0;
  while (!done || reads == 0) {
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    ASSERT_TRUE(storage_->ReadSeries(sid, kMin, kMax, &ts, &values).ok());
    // Appends complete in order, so every read must see exactly a prefix 0..n-1.
    ASSERT_GE(ts.size(), last_seen);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      ASSERT_EQ(ts[i], static_cast<std::int64_t>(i));
      ASSERT_EQ(values[i], static_cast<double>(i));
    }
    last_seen = ts.size();
    ++reads;
  }
  writer.join();
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  ASSERT_TRUE(storage_->ReadSeries(sid, kMin, kMax, &ts, &values).ok());
  EXPECT_EQ(ts.size(), static_cast<std::size_t>(kPoints));
}

TEST_F(StorageTest, CheckpointsKeepTheWalBounded) {
  options_.wal_max_bytes = 16 * 1024;
  Open(1);
  Model model;
  std::vector<SeriesId> sids;
  for (int s = 0; s < 20; ++s) sids.push_back(Series("c" + std::to_string(s)));
  std::uintmax_t max_wal_bytes = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<PointRecord> batch;
    for (std::size_t s = 0; s < sids.size(); ++s) {
      // Series 0 writes rarely: its open buffer must not pin old WAL segments.
      if (s == 0 && round % 50 != 0) continue;
      const double v = round * 0.25 + static_cast<double>(s);
      batch.push_back({sids[s], round, std::bit_cast<std::uint64_t>(v), ValueType::kFloat});
      model[sids[s]][round] = v;
    }
    ASSERT_TRUE(storage_->shard(0).Append(batch, nullptr).ok());
    std::uintmax_t bytes = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path() + "/wal")) {
      if (e.is_regular_file()) bytes += e.file_size();
    }
    max_wal_bytes = std::max(max_wal_bytes, bytes);
  }
  EXPECT_LT(max_wal_bytes, 2 * options_.wal_max_bytes);
  ExpectAllRanges(model);
  Reopen(1);
  ExpectAllRanges(model);
}

TEST_F(StorageTest, RetentionDropsExactlyTheExpiredChunks) {
  options_.retention_s = 3600;
  ManualClock clock(10'000 * kSec);
  Open(2, clock);
  const SeriesId sid = Series("r");
  const SeriesId other = Series("fresh");
  // Three chunks: [0, 1023 s], [1024, 2047 s], [2048, 3071 s] plus one head point at 3072 s.
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i <= 3072; ++i) pts.emplace_back((7'000 + i) * kSec, i);
  EXPECT_EQ(Write(sid, pts).accepted, pts.size());
  EXPECT_EQ(Write(other, {{9'999 * kSec, 1.0}}).accepted, 1u);
  EXPECT_EQ(Write(sid, {{6'000 * kSec, 1.0}}).rejected_expired, 1u);  // already past retention
  // Now the first chunk's newest point (8023 s) is older than 12000 - 3600 = 8400 s; the second
  // chunk straddles the cutoff and stays whole.
  clock.Set(12'000 * kSec);
  ASSERT_TRUE(storage_->chunks().CompactChunks().ok());
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  ASSERT_TRUE(storage_->ReadSeries(sid, kMin, kMax, &ts, &values).ok());
  ASSERT_EQ(ts.size(), 3072u - 1024u + 1u);
  EXPECT_EQ(ts.front(), 8'024 * kSec);
  EXPECT_EQ(ts.back(), 10'072 * kSec);
  ASSERT_TRUE(storage_->ReadSeries(other, kMin, kMax, &ts, &values).ok());
  EXPECT_EQ(ts.size(), 1u);
}

TEST_F(StorageTest, HeadPointsPastRetentionAreDroppedAtSeal) {
  options_.retention_s = 100;
  ManualClock clock(1'000 * kSec);
  Open(1, clock);
  const SeriesId sid = Series("h");
  std::vector<std::pair<std::int64_t, double>> old_pts, new_pts;
  for (int i = 0; i < 500; ++i) old_pts.emplace_back(950 * kSec + i, i);
  EXPECT_EQ(Write(sid, old_pts).accepted, 500u);
  clock.Set(2'000 * kSec);
  for (int i = 0; i < 600; ++i) new_pts.emplace_back(1'990 * kSec + i, i);
  const AppendResult r = Write(sid, new_pts);
  EXPECT_EQ(r.accepted, 600u);
  EXPECT_EQ(r.chunks_sealed, 1u);
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  ASSERT_TRUE(storage_->ReadSeries(sid, kMin, kMax, &ts, &values).ok());
  ASSERT_EQ(ts.size(), 600u);  // 524 sealed + 76 in the head; the 500 expired ones are gone
  EXPECT_EQ(ts.front(), 1'990 * kSec);
}

TEST_F(StorageTest, CorruptChunkFailsOnlyReadsThatTouchIt) {
  Open();
  Model model;
  const SeriesId a = Series("a");
  const SeriesId b = Series("b");
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i < 3 * 1024 + 10; ++i) {
    pts.emplace_back(i, i * 0.5);
    model[a][i] = i * 0.5;
    model[b][i] = i * 0.5;
  }
  Write(a, pts);
  Write(b, pts);
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  {
    // Flip one payload byte of a's second chunk behind the storage's back.
    std::unique_ptr<ChunkStore> store;
    ASSERT_TRUE(ChunkStore::Open(dir_.path() + "/db", options_, &store).ok());
    const ChunkKey key = EncodeChunkKey(a, 1024);
    std::string value;
    ASSERT_TRUE(
        store->db()->Get(rocksdb::ReadOptions(), store->chunks_cf(), key.slice(), &value).ok());
    value[value.size() / 2] ^= 0x10;
    ASSERT_TRUE(
        store->db()->Put(rocksdb::WriteOptions(), store->chunks_cf(), key.slice(), value).ok());
    // And an unreadable header (unknown version) on b's third chunk.
    const ChunkKey key_b = EncodeChunkKey(b, 2048);
    ASSERT_TRUE(
        store->db()->Get(rocksdb::ReadOptions(), store->chunks_cf(), key_b.slice(), &value).ok());
    value[0] = 99;
    ASSERT_TRUE(
        store->db()->Put(rocksdb::WriteOptions(), store->chunks_cf(), key_b.slice(), value).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  Open();
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  const Status st = storage_->ReadSeries(a, kMin, kMax, &ts, &values);
  ASSERT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("series " + std::to_string(a) + " chunk [1024, 2047]"),
            std::string::npos)
      << st.ToString();
  ExpectRange(model, a, 0, 1023);
  ExpectRange(model, a, 2048, kMax);
  ExpectRange(model, b, kMin, 2047);
  ExpectRange(model, b, 3072, kMax);
  const Status st_b = storage_->ReadSeries(b, 3000, 3000, &ts, &values);
  ASSERT_TRUE(st_b.IsCorruption()) << st_b.ToString();
  EXPECT_NE(st_b.message().find("unknown format version 99"), std::string::npos) << st_b.ToString();
  std::vector<CorruptChunk> skipped;
  auto ws = std::make_unique<codec::Workspace>();
  ASSERT_TRUE(storage_->ReadSeries(a, kMin, kMax, &ts, &values, &skipped, *ws).ok());
  EXPECT_EQ(ts.size(), 2u * 1024 + 10);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].first_ts_ns, 1024);
  EXPECT_EQ(skipped[0].last_ts_ns, 2047);
  EXPECT_TRUE(skipped[0].status.IsCorruption());
}

TEST_F(StorageTest, UnreadableCheckpointedHeadIsSkippedAtRecovery) {
  Open(1);
  const SeriesId a = Series("a");
  const SeriesId b = Series("b");
  Write(a, {{1, 1.0}, {2, 2.0}});
  Write(b, {{1, 3.0}});
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  {
    std::unique_ptr<ChunkStore> store;
    ASSERT_TRUE(ChunkStore::Open(dir_.path() + "/db", options_, &store).ok());
    std::string value;
    const HeadKey key = EncodeHeadKey(a);
    ASSERT_TRUE(
        store->db()->Get(rocksdb::ReadOptions(), store->meta_cf(), key.slice(), &value).ok());
    // A byte of the chunk, before the saved hint.
    value[value.size() - codec::kSavedHintBytes - 1] ^= 0x01;
    ASSERT_TRUE(
        store->db()->Put(rocksdb::WriteOptions(), store->meta_cf(), key.slice(), value).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  Open(1);
  EXPECT_EQ(storage_->recovery_stats().heads_restored, 1u);
  EXPECT_EQ(storage_->recovery_stats().heads_corrupt, 1u);
  ExpectRange(Model{{b, {{1, 3.0}}}}, b, kMin, kMax);
}

// The codec hint a series learned from its sealed chunks is saved with its checkpointed head, so
// the first chunk after a restart is encoded warm rather than searched as for a new series.
TEST_F(StorageTest, SeriesHintSurvivesARestartWithTheHead) {
  Open(1);
  const SeriesId a = Series("a");
  std::vector<std::pair<std::int64_t, double>> points;
  for (int i = 0; i < 1500; ++i) points.emplace_back(i + 1, 20 + (i * 37 % 1000) * 0.01);
  Write(a, points);
  codec::SeriesHint before;
  ASSERT_TRUE(storage_->shard(storage_->ShardOf(a)).HeadHint(a, &before));
  ASSERT_NE(before.last_encoding, codec::SeriesHint::kNoEncoding);  // a chunk was sealed
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  Open(1);
  codec::SeriesHint after;
  ASSERT_TRUE(storage_->shard(storage_->ShardOf(a)).HeadHint(a, &after));
  std::array<std::uint8_t, codec::kSavedHintBytes> saved_before{};
  std::array<std::uint8_t, codec::kSavedHintBytes> saved_after{};
  codec::SaveHint(before, saved_before);
  codec::SaveHint(after, saved_after);
  EXPECT_EQ(saved_before, saved_after);
  Model model;
  for (const auto& [t, v] : points) model[a][t] = v;
  ExpectRange(model, a, kMin, kMax);
}

// A checkpointed head is written often and read only at recovery, so its values take the
// smaller radix form of ALP when the chooser writes them as ALP: a 2-decimal walk whose steps take
// 201 values packs 3 steps into 23 bits instead of 8 bits each.
TEST_F(StorageTest, CheckpointedHeadOfAWalkIsStoredAsRadixDigitsAndRestoresExactly) {
  Open(1);
  const SeriesId a = Series("walk");
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::int64_t, double>> points;
  std::int64_t cents = 5000;
  for (int i = 0; i < 1000; ++i) {  // under a chunk: all of it stays in the head
    cents += static_cast<std::int64_t>(rng() % 201) - 100;
    points.emplace_back(i + 1, static_cast<double>(cents) / 100.0);
  }
  Write(a, points);
  ASSERT_TRUE(storage_->Close().ok());
  storage_.reset();
  {
    std::unique_ptr<ChunkStore> store;
    ASSERT_TRUE(ChunkStore::Open(dir_.path() + "/db", options_, &store).ok());
    std::string value;
    ASSERT_TRUE(store->db()
                    ->Get(rocksdb::ReadOptions(), store->meta_cf(), EncodeHeadKey(a).slice(),
                          &value)
                    .ok());
    const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(value.data()), value.size());
    ChunkHeader h;
    codec::SeriesHint hint;
    ASSERT_TRUE(ValidateChunk(SplitHeadValue(bytes, &hint), &h).ok());
    EXPECT_EQ(h.value_encoding, static_cast<std::uint8_t>(codec::FloatEncoding::kAlpRadix));
    EXPECT_EQ(h.count, 1000);
    // 999 deltas as radix digits of 201 (23 bits per 3), plus the block's varint header.
    EXPECT_LE(h.value_bytes, codec::RadixPackedBytes(999, 201) + 20u);
    ASSERT_TRUE(store->Close().ok());
  }
  Open(1);
  EXPECT_EQ(storage_->recovery_stats().heads_restored, 1u);
  Model model;
  for (const auto& [t, v] : points) model[a][t] = v;
  ExpectRange(model, a, kMin, kMax);
}

TEST_F(StorageTest, MisroutedBatchIsRejectedWhole) {
  Open(2);
  const SeriesId a = Series("a");  // sid 1 -> shard 1
  const SeriesId b = Series("b");  // sid 2 -> shard 0
  ASSERT_EQ(storage_->ShardOf(a), 1);
  std::vector<PointRecord> batch = {{b, 1, 0, ValueType::kFloat}, {a, 1, 0, ValueType::kFloat}};
  AppendResult r;
  EXPECT_TRUE(storage_->shard(0).Append(batch, &r).IsInvalidArgument());
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  ASSERT_TRUE(storage_->ReadSeries(b, kMin, kMax, &ts, &values).ok());
  EXPECT_TRUE(ts.empty());
}

TEST_F(StorageTest, InvalidOptionsAreRejected) {
  options_.wal_sync = "sometimes";
  std::unique_ptr<Storage> s;
  EXPECT_TRUE(Storage::Open(options_, 1, SystemClock::Instance(), &s).IsInvalidArgument());
  options_.wal_sync = "none";
  EXPECT_TRUE(Storage::Open(options_, 0, SystemClock::Instance(), &s).IsInvalidArgument());
}

}  // namespace
}  // namespace ingot
