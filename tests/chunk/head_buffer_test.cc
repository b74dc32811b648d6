#include "chunk/head_buffer.h"

#include <bit>
#include <map>
#include <random>

#include <gtest/gtest.h>

namespace ingot {
namespace {

using IR = HeadBuffer::InsertResult;

TEST(HeadBufferTest, KeepsPointsSortedWithLastWriteWins) {
  HeadBuffer h(ValueType::kInteger, HeadBuffer::kNoSealedTs);
  EXPECT_EQ(h.Insert(10, 1), IR::kAppended);
  EXPECT_EQ(h.Insert(30, 3), IR::kAppended);
  EXPECT_EQ(h.Insert(20, 2), IR::kInserted);
  EXPECT_EQ(h.Insert(5, 0), IR::kInserted);
  EXPECT_EQ(h.Insert(20, 22), IR::kReplaced);
  EXPECT_EQ(h.Insert(30, 33), IR::kReplaced);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(std::vector<std::int64_t>(h.ts().begin(), h.ts().end()),
            (std::vector<std::int64_t>{5, 10, 20, 30}));
  EXPECT_EQ(std::vector<std::uint64_t>(h.values_bits().begin(), h.values_bits().end()),
            (std::vector<std::uint64_t>{0, 1, 22, 33}));
}

TEST(HeadBufferTest, RejectsPointsAtOrBeforeNewestSealed) {
  HeadBuffer h(ValueType::kFloat, 100);
  EXPECT_EQ(h.Insert(100, 1), IR::kTooOld);
  EXPECT_EQ(h.Insert(-5, 1), IR::kTooOld);
  EXPECT_EQ(h.Insert(101, 1), IR::kAppended);
  EXPECT_EQ(h.Insert(99, 1), IR::kTooOld);
  h.DropFront(1, /*sealed=*/true);
  EXPECT_EQ(h.newest_sealed_ts_ns(), 101);
  EXPECT_EQ(h.Insert(101, 1), IR::kTooOld);
  EXPECT_TRUE(h.empty());
}

TEST(HeadBufferTest, GrowsOnDemandAndCapsAtOneChunkPlusOne) {
  HeadBuffer h(ValueType::kFloat, HeadBuffer::kNoSealedTs);
  EXPECT_EQ(h.heap_bytes(), 0u);
  h.Insert(0, 0);
  EXPECT_LE(h.heap_bytes(), 2u * 16);
  for (int i = 1; i <= static_cast<int>(kChunkCapacity); ++i) h.Insert(i, 0);
  EXPECT_TRUE(h.overfull());
  EXPECT_EQ(h.heap_bytes(), (kChunkCapacity + 1) * 16);
  h.DropFront(kChunkCapacity, true);
  EXPECT_EQ(h.size(), 1u);
  h.DropFront(1, true);
  h.ReleaseMemoryIfEmpty();
  EXPECT_EQ(h.heap_bytes(), 0u);
  EXPECT_LT(sizeof(HeadBuffer), 128u);
}

TEST(HeadBufferTest, RandomOrderMatchesSortedModel) {
  std::mt19937_64 rng(7);
  HeadBuffer h(ValueType::kFloat, HeadBuffer::kNoSealedTs);
  std::map<std::int64_t, std::uint64_t> model;
  for (int i = 0; i < 900; ++i) {
    const std::int64_t ts = static_cast<std::int64_t>(rng() % 700) - 350;
    const std::uint64_t v = rng();
    h.Insert(ts, v);
    model[ts] = v;
  }
  ASSERT_EQ(h.size(), model.size());
  std::size_t i = 0;
  for (const auto& [ts, v] : model) {
    EXPECT_EQ(h.ts()[i], ts);
    EXPECT_EQ(h.values_bits()[i], v);
    ++i;
  }
}

}  // namespace
}  // namespace ingot
