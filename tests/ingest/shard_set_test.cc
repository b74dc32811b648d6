// ShardSet over a real Storage (RocksDB and WALs in a temp dir): batches are applied one at a time
// per shard and in the order they were submitted, whether the shard's thread or the submitting
// thread (SubmitOrApply on an idle shard) applies them.
#include "ingest/shard_set.h"

#include <gtest/gtest.h>

#include <bit>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/logging.h"
#include "tests/ingest/ingest_test_util.h"

namespace ingot::ingest {
namespace {

using testutil::ReadAll;
using testutil::ScratchDir;
using testutil::SeriesKeyOf;

constexpr int kShards = 2;
constexpr std::int64_t kNowNs = 1'700'000'000'000'000'000;
// An hour before the clock: inside retention and the late-data window.
constexpr std::int64_t kFirstNs = kNowNs - 3600'000'000'000LL;

class ShardSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Logger("ingest")->set_level(spdlog::level::off);
    ASSERT_TRUE(Storage::Open(testutil::TestStorageOptions(dir_.path() + "/data"), kShards, clock_,
                              &storage_)
                    .ok());
    shards_ = std::make_unique<ShardSet>(*storage_, 4);
  }
  void TearDown() override {
    shards_->Stop();
    shards_.reset();
    if (storage_) {
      EXPECT_TRUE(storage_->Close().ok());
    }
    Logger("ingest")->set_level(spdlog::level::info);
  }

  // A new float series (its definition logged with the first batch that carries `definitions`).
  SeriesId NewSeries(const std::string& field, std::vector<std::uint8_t>* definitions) {
    ResolvedSeries resolved;
    EXPECT_TRUE(
        storage_->index().Resolve(SeriesKeyOf("ss", {}, field), ValueType::kFloat, &resolved).ok());
    if (resolved.definition_pending) storage_->index().AppendDefinition(resolved.sid, definitions);
    return resolved.sid;
  }

  // A batch of `count` points of `sid`, a second apart from kFirstNs, all with `value`.
  std::unique_ptr<Batch> Points(SeriesId sid, int count, double value, Completion* completion) {
    std::unique_ptr<Batch> batch = shards_->Acquire();
    for (int i = 1; i <= count; ++i) {
      batch->points.push_back(PointRecord{sid, kFirstNs + i * 1'000'000'000LL,
                                          std::bit_cast<std::uint64_t>(value), ValueType::kFloat});
    }
    batch->completion = completion;
    return batch;
  }

  ScratchDir dir_;
  ManualClock clock_{kNowNs};
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<ShardSet> shards_;
};

TEST_F(ShardSetTest, AnIdleShardIsAppliedByTheCallerAndABusyOneKeepsItsOrder) {
  // The set is not started: only a caller can apply, and what is queued waits for the threads.
  Completion completion(WriteProtocol::kRemoteWrite);
  std::vector<std::uint8_t> definitions;
  const SeriesId sid = NewSeries("idle", &definitions);
  const int shard = shards_->ShardOf(sid);
  std::unique_ptr<Batch> first = Points(sid, 10, 1.0, &completion);
  first->definitions = definitions;
  shards_->SubmitOrApply(shard, std::move(first));
  EXPECT_EQ(completion.accepted(), 10u)
      << "an idle shard's batch is applied before the call returns";

  // Queued behind a batch, a second one must not overtake it: both wait for the shard's thread.
  shards_->Submit(shard, Points(sid, 10, 2.0, &completion));
  shards_->SubmitOrApply(shard, Points(sid, 10, 3.0, &completion));
  EXPECT_EQ(completion.accepted(), 10u);
  EXPECT_EQ(shards_->queue_depth(shard), 2u);
  shards_->Start();
  ASSERT_TRUE(completion.Wait().ok());
  EXPECT_EQ(completion.accepted(), 30u);
  const auto stored = ReadAll(*storage_, SeriesKeyOf("ss", {}, "idle"));
  ASSERT_EQ(stored.values.size(), 10u);
  for (double v : stored.values) EXPECT_EQ(v, 3.0) << "the last submitted batch wins";
}

TEST_F(ShardSetTest, ProducersMixingBothWaysKeepEachOnesOrder) {
  // Each producer rewrites the same timestamps of its own series with a growing value, half of
  // its batches queued and half offered for inline apply, while the others do the same on the
  // same two shards. A later write replaces an earlier one, so a batch applied out of order
  // leaves a value other than the producer's last.
  shards_->Start();
  constexpr int kProducers = 4;
  constexpr int kRounds = 300;
  constexpr int kPointsPerBatch = 50;
  std::vector<SeriesId> sids;
  std::vector<std::vector<std::uint8_t>> definitions(kProducers);
  for (int p = 0; p < kProducers; ++p)
    sids.push_back(NewSeries(fmt::format("p{}", p), &definitions[p]));
  std::vector<std::thread> producers;
  std::vector<Status> status(kProducers);
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      Completion completion(WriteProtocol::kRemoteWrite);
      const int shard = shards_->ShardOf(sids[p]);
      for (int round = 1; round <= kRounds; ++round) {
        std::unique_ptr<Batch> batch = Points(sids[p], kPointsPerBatch, round, &completion);
        if (round == 1) batch->definitions = definitions[p];
        if ((round + p) % 2 == 0) {
          shards_->Submit(shard, std::move(batch));
        } else {
          shards_->SubmitOrApply(shard, std::move(batch));
        }
        // Now and then a producer waits, as a request does, so that shards go idle.
        if (round % 7 == 0) status[p] = completion.Wait();
      }
      if (status[p].ok()) status[p] = completion.Wait();
    });
  }
  for (auto& t : producers) t.join();
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_TRUE(status[p].ok()) << status[p].ToString();
    const auto stored = ReadAll(*storage_, SeriesKeyOf("ss", {}, fmt::format("p{}", p)));
    ASSERT_EQ(stored.values.size(), static_cast<std::size_t>(kPointsPerBatch)) << p;
    for (double v : stored.values) ASSERT_EQ(v, kRounds) << "producer " << p;
  }
}

}  // namespace
}  // namespace ingot::ingest
