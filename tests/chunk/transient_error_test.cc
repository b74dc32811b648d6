// A storage error that passes clears without a restart: while RocksDB cannot create files (the
// way a full disk or an exhausted descriptor table looks to it), a shard whose write of sealed
// chunks failed refuses writes; once files can be created again the shard recovers by itself
// (Storage retries every second), takes writes again, and no acknowledged point is lost.
#include <atomic>
#include <chrono>
#include <limits>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include "chunk/storage.h"
#include "tests/chunk/test_util.h"
#include "tests/support/point_batch.h"

namespace ingot {
namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Fails the creation of files while `failing` is set, the way an exhausted descriptor table
// (EMFILE: every file, RocksDB's own log included) or a full disk (ENOSPC) does.
class FlakyFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FlakyFileSystem() : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FlakyFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (failing.load()) {
      if (no_space) return rocksdb::IOStatus::NoSpace(name, "No space left on device");
      return rocksdb::IOStatus::IOError("While open a file for appending: " + name,
                                        "Too many open files");
    }
    return target()->NewWritableFile(name, options, result, dbg);
  }
  std::atomic<bool> failing{false};
  bool no_space = false;
};

void RecoversWithoutARestart(bool no_space) {
  testing::TempDir dir;
  auto fs = std::make_shared<FlakyFileSystem>();
  fs->no_space = no_space;
  const std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  StorageOptions options = testing::TestStorageOptions(dir.path());
  options.rocksdb_env = env.get();
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(options, 1, SystemClock::Instance(), &storage).ok());
  std::string key;
  BuildSeriesKey("m", {}, "v", &key);
  SeriesId sid;
  ValueType stored;
  ASSERT_TRUE(storage->index().Resolve(key, ValueType::kFloat, &sid, &stored).ok());
  ShardEngine& shard = storage->shard(0);

  std::int64_t next_ts = 0;
  std::set<std::int64_t> acknowledged;  // timestamps of batches answered OK
  std::set<std::int64_t> logged;        // timestamps of a batch in the WAL but answered an error
  auto write = [&](int n, std::set<std::int64_t>* unacknowledged = nullptr) {
    std::vector<std::pair<std::int64_t, double>> pts;
    for (int i = 0; i < n; ++i, ++next_ts) pts.emplace_back(next_ts, static_cast<double>(next_ts));
    const Status st = shard.Append(testing::PointBatch(sid, pts, ValueType::kFloat), nullptr);
    for (const auto& [t, v] : pts) (st.ok() ? acknowledged : *unacknowledged).insert(t);
    return st;
  };
  ASSERT_TRUE(write(1500).ok());

  // The disk "fills": a flush cannot create its files, RocksDB stops taking writes, and the next
  // batch that seals a chunk cannot store it (that batch is in the shard's WAL, but the writer is
  // told it failed).
  fs->failing = true;
  EXPECT_FALSE(
      storage->chunks().db()->Flush(rocksdb::FlushOptions(), storage->chunks().chunks_cf()).ok());
  EXPECT_FALSE(write(1024, &logged).ok());
  EXPECT_TRUE(shard.failed());
  std::set<std::int64_t> refused;
  EXPECT_FALSE(write(10, &refused).ok());  // refused before the WAL
  // While the condition lasts, recovery fails and the shard keeps refusing.
  EXPECT_FALSE(shard.Recover().ok());
  EXPECT_TRUE(shard.failed());

  // Space is freed: the background retry (every second) clears the error.
  fs->failing = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (shard.failed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(shard.failed()) << "the shard did not recover by itself: "
                               << shard.Recover().ToString();
  ASSERT_TRUE(write(2000).ok());

  // Every acknowledged point is readable with its value, now and after a restart; the failed
  // batch's points may be there too (they reached the WAL), the refused ones are not.
  auto expect_all = [&] {
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    ASSERT_TRUE(storage->ReadSeries(sid, kMin, kMax, &ts, &values).ok());
    std::size_t found = 0;
    for (std::size_t i = 0; i < ts.size(); ++i) {
      EXPECT_EQ(values[i], static_cast<double>(ts[i]));
      EXPECT_EQ(refused.count(ts[i]), 0u) << ts[i];
      if (acknowledged.count(ts[i]) > 0) {
        ++found;
      } else {
        EXPECT_EQ(logged.count(ts[i]), 1u) << ts[i];
      }
    }
    EXPECT_EQ(found, acknowledged.size());
  };
  expect_all();
  ASSERT_TRUE(storage->Close().ok());
  storage.reset();
  ASSERT_TRUE(Storage::Open(options, 1, SystemClock::Instance(), &storage).ok());
  expect_all();
}

TEST(TransientStorageError, OutOfDescriptorsClearsWithoutARestart) {
  RecoversWithoutARestart(/*no_space=*/false);
}

TEST(TransientStorageError, FullDiskClearsWithoutARestart) {
  RecoversWithoutARestart(/*no_space=*/true);
}

}  // namespace
}  // namespace ingot
