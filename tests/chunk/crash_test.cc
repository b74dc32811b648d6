// Crash safety with a real process: the writer acknowledges batches on stdout and is killed with
// SIGKILL at random moments; every acknowledged point must survive.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/storage.h"
#include "tests/chunk/crash_workload.h"
#include "tests/chunk/test_util.h"

namespace ingot {
namespace {

constexpr std::uint64_t kSeed = 20240611;

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string buffered;
};

Child Spawn(const std::vector<std::string>& args) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  c.out_fd = fds[0];
  return c;
}

// Reads "ack N" lines until `deadline` or EOF; returns the highest acknowledged batch (or `acked`).
std::int64_t ReadAcks(Child& c, std::chrono::steady_clock::time_point deadline, std::int64_t acked,
                      bool* eof) {
  *eof = false;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    pollfd p{c.out_fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t n = ::read(c.out_fd, buf, sizeof buf);
    if (n <= 0) {
      *eof = true;
      break;
    }
    c.buffered.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = c.buffered.find('\n')) != std::string::npos) {
      const std::string line = c.buffered.substr(0, nl);
      c.buffered.erase(0, nl + 1);
      if (line.rfind("ack ", 0) == 0) acked = std::max<std::int64_t>(acked, std::stoll(line.substr(4)));
    }
  }
  return acked;
}

int Finish(Child& c, bool kill_it) {
  if (kill_it) ::kill(c.pid, SIGKILL);
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  ::close(c.out_fd);
  return status;
}

// Every point of batches [0, through] is readable with its exact value.
void VerifyBatches(Storage& storage, std::int64_t through) {
  std::vector<SeriesId> sids;
  for (int s = 0; s <= testing::kCrashSeries; ++s) {
    const SeriesId sid = storage.index().Find(testing::WorkloadKey(s));
    ASSERT_NE(sid, kInvalidSeriesId) << "series " << s << " lost";
    sids.push_back(sid);
  }
  std::vector<std::map<std::int64_t, double>> stored(sids.size());
  for (std::size_t s = 0; s < sids.size(); ++s) {
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    const Status read = storage.ReadSeries(sids[s], INT64_MIN, INT64_MAX, &ts, &values);
    ASSERT_TRUE(read.ok()) << read.ToString();
    for (std::size_t i = 0; i < ts.size(); ++i) {
      ASSERT_TRUE(i == 0 || ts[i] > ts[i - 1])
          << "series " << s << " point " << i << " of " << ts.size() << ": " << ts[i - 1]
          << " then " << ts[i];
      stored[s][ts[i]] = values[i];
    }
  }
  std::vector<testing::WorkloadPoint> points;
  for (std::int64_t b = 0; b <= through; ++b) {
    const SeriesId churn = storage.index().Find(testing::ChurnKey(b));
    ASSERT_NE(churn, kInvalidSeriesId) << "series created by acknowledged batch " << b << " lost";
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    ASSERT_TRUE(storage.ReadSeries(churn, INT64_MIN, INT64_MAX, &ts, &values).ok());
    ASSERT_EQ(ts, std::vector<std::int64_t>{testing::ChurnTs(b)}) << "batch " << b;
    ASSERT_EQ(values, std::vector<double>{testing::ChurnValue(b)}) << "batch " << b;
    testing::WorkloadBatch(kSeed, b, &points);
    for (const auto& p : points) {
      auto it = stored[static_cast<std::size_t>(p.series)].find(p.ts_ns);
      ASSERT_NE(it, stored[static_cast<std::size_t>(p.series)].end())
          << "acknowledged point lost: batch " << b << " series " << p.series << " ts " << p.ts_ns;
      ASSERT_EQ(it->second, p.value) << "batch " << b << " series " << p.series;
    }
  }
}

TEST(CrashTest, AcknowledgedPointsSurviveSigkill) {
  testing::TempDir dir;
  std::mt19937_64 rng(kSeed);
  std::int64_t acked = -1;
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    // Small WAL bound so that checkpoints (and their crash windows) happen during the run.
    Child c = Spawn({INGOT_CRASH_WRITER, dir.path(), std::to_string(1 + round % 3), "always",
                     std::to_string(kSeed), std::to_string(acked + 1), "100000", "hang",
                     "20000"});
    const auto kill_after = std::chrono::milliseconds(150 + rng() % 700);
    bool eof = false;
    if (round == 0) {
      // The first round runs until a batch is acknowledged, however slow the build (sanitizers),
      // so that there is something to check; later rounds are killed at any moment, start-up
      // and recovery included.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (acked < 0 && !eof && std::chrono::steady_clock::now() < give_up) {
        acked = ReadAcks(c, std::chrono::steady_clock::now() + std::chrono::milliseconds(20),
                         acked, &eof);
      }
    }
    if (!eof) acked = ReadAcks(c, std::chrono::steady_clock::now() + kill_after, acked, &eof);
    const int status = Finish(c, /*kill_it=*/true);
    ASSERT_FALSE(eof) << "writer exited early, status " << status;
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  ASSERT_GE(acked, 0) << "the writer never acknowledged a batch";
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir.path()), 2, SystemClock::Instance(), &storage)
                  .ok());
  EXPECT_GT(storage->recovery_stats().segments, 0u);
  VerifyBatches(*storage, acked);
  ASSERT_TRUE(storage->Close().ok());
}

TEST(CrashTest, AbandonedRunReplaysIntoADifferentShardCount) {
  testing::TempDir dir;
  Child c = Spawn({INGOT_CRASH_WRITER, dir.path(), "3", "none", std::to_string(kSeed), "0", "300",
                   "abandon", "8000"});
  bool eof = false;
  const std::int64_t acked =
      ReadAcks(c, std::chrono::steady_clock::now() + std::chrono::seconds(20), -1, &eof);
  ASSERT_EQ(Finish(c, false), 0);
  ASSERT_EQ(acked, 299);
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir.path()), 2, SystemClock::Instance(), &storage)
                  .ok());
  EXPECT_GT(storage->recovery_stats().points_replayed, 0u);
  EXPECT_GT(storage->recovery_stats().heads_restored, 0u);  // checkpoints ran (8000-byte bound)
  VerifyBatches(*storage, acked);
  ASSERT_TRUE(storage->Close().ok());
  // The shard-2 directory of the old layout is gone; a clean close leaves no segments to replay.
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/wal/shard-2"));
  ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir.path()), 2, SystemClock::Instance(), &storage)
                  .ok());
  EXPECT_EQ(storage->recovery_stats().segments, 0u);
  VerifyBatches(*storage, acked);
}

// A crash may lose RocksDB writes that were never synced (power loss, not just kill -9): the
// series definitions the index family lost must come back from the WAL, which holds them with
// their points. Modelled by deleting the family's entries after an abandoned run.
TEST(CrashTest, SeriesDefinitionsLostFromTheIndexComeBackFromTheWal) {
  testing::TempDir dir;
  // No checkpoint during the run (huge WAL bound): every definition is still in the WAL.
  Child c = Spawn({INGOT_CRASH_WRITER, dir.path(), "2", "always", std::to_string(kSeed), "0",
                   "200", "abandon", std::to_string(1ull << 30)});
  bool eof = false;
  const std::int64_t acked =
      ReadAcks(c, std::chrono::steady_clock::now() + std::chrono::seconds(20), -1, &eof);
  ASSERT_EQ(Finish(c, false), 0);
  ASSERT_EQ(acked, 199);
  {
    std::unique_ptr<ChunkStore> store;
    ASSERT_TRUE(ChunkStore::Open(dir.path() + "/db", testing::TestStorageOptions(dir.path()), &store)
                    .ok());
    const std::uint8_t lo[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const std::uint8_t hi[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    ASSERT_TRUE(store->db()
                    ->DeleteRange(rocksdb::WriteOptions(), store->series_by_id_cf(),
                                  rocksdb::Slice(reinterpret_cast<const char*>(lo), 8),
                                  rocksdb::Slice(reinterpret_cast<const char*>(hi), 8))
                    .ok());
    ASSERT_TRUE(store->Close().ok());
  }
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir.path()), 2, SystemClock::Instance(), &storage)
                  .ok());
  EXPECT_EQ(storage->recovery_stats().definitions_restored,
            static_cast<std::uint64_t>(testing::kCrashSeries + 1 + 200));
  EXPECT_EQ(storage->recovery_stats().corrupt_definitions, 0u);
  VerifyBatches(*storage, acked);
  ASSERT_TRUE(storage->Close().ok());
  // Restored definitions were written back: a second start finds them in the index family.
  ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir.path()), 2, SystemClock::Instance(), &storage)
                  .ok());
  EXPECT_EQ(storage->recovery_stats().definitions_restored, 0u);
  EXPECT_EQ(storage->index().size(), static_cast<std::size_t>(testing::kCrashSeries + 1 + 200));
  VerifyBatches(*storage, acked);
}

TEST(CrashTest, CleanShutdownNeedsNoReplay) {
  testing::TempDir dir;
  Child c = Spawn({INGOT_CRASH_WRITER, dir.path(), "2", "interval", std::to_string(kSeed), "0",
                   "200", "close"});
  bool eof = false;
  const std::int64_t acked =
      ReadAcks(c, std::chrono::steady_clock::now() + std::chrono::seconds(20), -1, &eof);
  ASSERT_EQ(Finish(c, false), 0);
  ASSERT_EQ(acked, 199);
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(testing::TestStorageOptions(dir.path()), 2, SystemClock::Instance(), &storage)
                  .ok());
  EXPECT_EQ(storage->recovery_stats().segments, 0u);
  EXPECT_GT(storage->recovery_stats().heads_restored, 0u);
  VerifyBatches(*storage, acked);
}

}  // namespace
}  // namespace ingot
