// The offline check (`ingotd --check`): a clean directory checks clean; a damaged chunk, an
// unreadable SST block and a damaged WAL record are each found and named, and the walk goes on past
// them; a directory a node holds is refused. GCC 12 reports a false -Wrestrict on "literal" +
// std::string chains (GCC bug 105329).
#if !defined(__clang__)  // clang has no -Wrestrict (and rejects the unknown group)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "chunk/data_check.h"

#include <filesystem>
#include <random>

#include <gtest/gtest.h>
#include <rocksdb/metadata.h>

#include "chunk/data_dir_lock.h"
#include "chunk/storage.h"
#include "tests/chunk/test_util.h"
#include "tests/support/chunk_damage.h"
#include "tests/support/file_damage.h"
#include "tests/support/point_batch.h"

namespace ingot {
namespace {

namespace fs = std::filesystem;

bool AnyProblemContains(const DataCheckReport& r, std::string_view text) {
  for (const std::string& p : r.problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

class DataCheckTest : public ::testing::Test {
 protected:
  void Open() { ASSERT_TRUE(Storage::Open(options_, 2, SystemClock::Instance(), &storage_).ok()); }
  void Close() {
    ASSERT_TRUE(storage_->Close().ok());
    storage_.reset();
  }
  SeriesId Series(const std::string& field) {
    std::string key;
    BuildSeriesKey("m", {}, field, &key);
    SeriesId sid;
    ValueType stored;
    EXPECT_TRUE(storage_->index().Resolve(key, ValueType::kFloat, &sid, &stored).ok());
    return sid;
  }
  void Write(SeriesId sid, const std::vector<std::pair<std::int64_t, double>>& points) {
    const std::vector<PointRecord> batch = testing::PointBatch(sid, points, ValueType::kFloat);
    ASSERT_TRUE(storage_->shard(storage_->ShardOf(sid)).Append(batch, nullptr).ok());
  }
  DataCheckReport Check() {
    DataCheckReport report;
    const Status st = CheckDataDir(options_, &report);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return report;
  }

  testing::TempDir dir_;
  StorageOptions options_ = testing::TestStorageOptions(dir_.path());
  std::unique_ptr<Storage> storage_;
};

TEST_F(DataCheckTest, CleanDirectoryIsClean) {
  Open();
  const SeriesId a = Series("a");
  const SeriesId b = Series("b");
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i < 3 * 1024 + 10; ++i) pts.emplace_back(1000 + i, i * 0.5);
  Write(a, pts);
  Write(b, pts);
  Write(a, {{5, 1.5}});  // older than a's sealed chunks: a late point
  Close();
  const DataCheckReport r = Check();
  EXPECT_TRUE(r.clean()) << r.ToText();
  EXPECT_EQ(r.series, 2u);
  EXPECT_EQ(r.chunks, 6u);
  EXPECT_EQ(r.late_chunks, 1u);
  EXPECT_EQ(r.heads, 2u);
  EXPECT_EQ(r.points, 2u * (3 * 1024 + 10) + 1);
  EXPECT_NE(r.ToText().find("result: clean"), std::string::npos);
}

TEST_F(DataCheckTest, DamagedChunkIsNamedWithItsSeries) {
  Open();
  const SeriesId a = Series("a");
  const SeriesId b = Series("b");
  std::vector<std::pair<std::int64_t, double>> pts;
  for (int i = 0; i < 2048 + 10; ++i) pts.emplace_back(i, i * 0.25);
  Write(a, pts);
  Write(b, pts);
  Close();
  ASSERT_TRUE(testing::FlipStoredChunkByte(dir_.path() + "/db", options_, a, 1024));
  const DataCheckReport r = Check();
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(r.chunks, 4u);
  EXPECT_EQ(r.bad_chunks, 1u);
  EXPECT_EQ(r.points, 2u * (2048 + 10) - 1024);
  EXPECT_TRUE(AnyProblemContains(r, "chunk of series m_a")) << r.ToText();
  EXPECT_NE(r.ToText().find("result: DAMAGED"), std::string::npos);
}

TEST_F(DataCheckTest, UnreadableBlockCostsOnlyItsRangeAndTheWalkGoesOn) {
  Open();
  constexpr int kSeries = 40;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> noise(0, 1000);
  for (int s = 0; s < kSeries; ++s) {
    const SeriesId sid = Series("f" + std::to_string(s));
    std::vector<std::pair<std::int64_t, double>> pts;
    for (int i = 0; i < 4096; ++i) pts.emplace_back(i, noise(rng));
    Write(sid, pts);
  }
  Close();
  // The largest chunks SST, damaged a third of the way in (inside its data blocks).
  std::uint64_t largest = 0;
  const std::string target = testing::LargestFile(dir_.path() + "/db", ".sst", &largest);
  ASSERT_GT(largest, 100'000u);
  const DataCheckReport before = Check();
  ASSERT_TRUE(before.clean()) << before.ToText();
  ASSERT_TRUE(testing::FlipByte(target, largest / 3));
  const DataCheckReport r = Check();
  EXPECT_FALSE(r.clean());
  EXPECT_GE(r.unreadable_blocks + r.bad_chunks, 1u) << r.ToText();
  // One block holds at most a few of these chunks; the walk resumes after the damage.
  EXPECT_LT(r.chunks - r.bad_chunks, before.chunks);
  EXPECT_GE(r.chunks + 4, before.chunks) << r.ToText();
  EXPECT_EQ(r.series, static_cast<std::uint64_t>(kSeries));
}

TEST_F(DataCheckTest, WalRecordsAreVerified) {
  Open();
  const SeriesId a = Series("a");
  for (int i = 0; i < 20; ++i) Write(a, {{i, i * 1.0}});
  // A copy of the WAL as a crash would leave it (Close() replays nothing and deletes it).
  const std::string wal = dir_.path() + "/wal";
  const std::string saved = dir_.path() + "-wal";
  fs::copy(wal, saved, fs::copy_options::recursive);
  Close();
  fs::remove_all(wal);
  fs::copy(saved, wal, fs::copy_options::recursive);
  fs::remove_all(saved);

  DataCheckReport r = Check();
  EXPECT_TRUE(r.clean()) << r.ToText();
  EXPECT_GE(r.wal_records, 20u);
  EXPECT_GE(r.wal_segments, 1u);

  // Damage a byte inside the first record's payload.
  std::string segment;
  for (const auto& entry : fs::recursive_directory_iterator(wal)) {
    if (entry.is_regular_file() && entry.file_size() > 64) segment = entry.path();
  }
  ASSERT_FALSE(segment.empty());
  ASSERT_TRUE(testing::FlipByte(segment, fs::file_size(segment) / 2));
  r = Check();
  EXPECT_FALSE(r.clean());
  EXPECT_GE(r.wal_corrupt_records, 1u) << r.ToText();
  EXPECT_TRUE(AnyProblemContains(r, segment)) << r.ToText();
}

TEST_F(DataCheckTest, RefusesAHeldOrMissingDirectory) {
  Open();
  Close();
  {
    std::unique_ptr<DataDirLock> lock;
    ASSERT_TRUE(DataDirLock::Acquire(dir_.path(), &lock).ok());
    DataCheckReport r;
    EXPECT_FALSE(CheckDataDir(options_, &r).ok());
  }
  StorageOptions missing = options_;
  missing.data_dir = dir_.path() + "/nothing-here";
  DataCheckReport r;
  const Status st = CheckDataDir(missing, &r);
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_FALSE(fs::exists(missing.data_dir));
}

}  // namespace
}  // namespace ingot
