#include "chunk/head_buffer.h"

#include <bit>
#include <map>
#include <memory>
#include <random>
#include <vector>

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

// What ShardEngine does around Insert: a point among frozen ones thaws the buffer first, and a
// full raw tail is frozen.
IR EngineInsert(HeadBuffer& h, std::int64_t ts, std::uint64_t bits, codec::Workspace& ws,
                std::vector<std::uint8_t>& scratch) {
  IR r = h.Insert(ts, bits);
  if (r == IR::kFrozenRange) {
    EXPECT_TRUE(h.Thaw(ws).ok());
    EXPECT_FALSE(h.frozen());
    r = h.Insert(ts, bits);
  }
  if (h.tail_full()) h.Freeze(ws, scratch);
  return r;
}

void ExpectHolds(const HeadBuffer& h, const std::map<std::int64_t, std::uint64_t>& model,
                 codec::Workspace& ws) {
  ASSERT_EQ(h.size(), model.size());
  std::vector<std::int64_t> ts(h.size());
  std::vector<std::uint64_t> bits(h.size());
  ASSERT_TRUE(h.Materialize(ws, ts, bits).ok());
  std::size_t i = 0;
  for (const auto& [t, v] : model) {
    ASSERT_EQ(ts[i], t) << i;
    ASSERT_EQ(bits[i], v) << i;
    ++i;
  }
  if (!model.empty()) {
    EXPECT_EQ(h.first_ts(), model.begin()->first);
  }
}

// Frozen segments hold a head's older points in a few bytes each; every point reads back bit
// for bit, whole (Materialize) or by range, and thawing restores the raw arrays.
TEST(HeadBufferTest, FrozenSegmentsKeepEveryPointInAFractionOfTheMemory) {
  auto ws = std::make_unique<codec::Workspace>();
  std::vector<std::uint8_t> scratch(MaxSealedChunkBytes(kChunkCapacity));
  HeadBuffer h(ValueType::kFloat, HeadBuffer::kNoSealedTs);
  std::map<std::int64_t, std::uint64_t> model;
  std::mt19937_64 rng(11);
  std::int64_t cents = 2000;
  for (int i = 0; i < 1000; ++i) {
    cents += static_cast<std::int64_t>(rng() % 201) - 100;
    const double v = static_cast<double>(cents) / 100;  // a gauge with two decimals
    const std::int64_t t = 1'700'000'000'000'000'000 + i * 10'000'000'000LL;
    // A staleness marker now and then, whose exact bits must survive.
    const std::uint64_t bits =
        i % 97 == 5 ? 0x7ff0000000000002ULL : std::bit_cast<std::uint64_t>(v);
    ASSERT_EQ(EngineInsert(h, t, bits, *ws, scratch), IR::kAppended);
    model[t] = bits;
  }
  EXPECT_TRUE(h.frozen());
  EXPECT_LT(h.heap_bytes(), 1000u * 16 / 3) << "raw points would take " << 1000 * 16;
  ExpectHolds(h, model, *ws);
  // Ranges: inside one segment, across segments and the tail, before and after everything.
  std::vector<std::int64_t> keys;
  for (const auto& [t, b] : model) keys.push_back(t);
  for (int k = 0; k < 300; ++k) {
    const std::size_t a = rng() % keys.size();
    const std::size_t b = std::min(keys.size() - 1, a + rng() % 300);
    const std::int64_t start = keys[a] - static_cast<std::int64_t>(rng() % 3);
    const std::int64_t end = keys[b] + static_cast<std::int64_t>(rng() % 3);
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    ASSERT_TRUE(h.ReadRange(start, end, *ws, &ts, &values).ok());
    std::vector<std::int64_t> want_ts;
    std::vector<std::uint64_t> want_bits;
    for (auto it = model.lower_bound(start); it != model.end() && it->first <= end; ++it) {
      want_ts.push_back(it->first);
      want_bits.push_back(it->second);
    }
    ASSERT_EQ(ts, want_ts);
    ASSERT_EQ(values.size(), want_bits.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint64_t>(values[i]), want_bits[i]);
    }
  }
  ASSERT_TRUE(h.Thaw(*ws).ok());
  EXPECT_FALSE(h.frozen());
  ExpectHolds(h, model, *ws);
  std::size_t i = 0;
  for (const auto& [t, b] : model) {
    ASSERT_EQ(h.ts()[i], t);
    ASSERT_EQ(h.values_bits()[i], b);
    ++i;
  }
}

// A point among frozen points is refused as kFrozenRange with nothing changed; after Thaw it
// lands as in a raw buffer. Random order, duplicates and integer values against a model.
TEST(HeadBufferTest, InsertsAmongFrozenPointsMatchTheModel) {
  auto ws = std::make_unique<codec::Workspace>();
  std::vector<std::uint8_t> scratch(MaxSealedChunkBytes(kChunkCapacity));
  HeadBuffer h(ValueType::kInteger, HeadBuffer::kNoSealedTs);
  std::map<std::int64_t, std::uint64_t> model;
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(EngineInsert(h, i * 10, static_cast<std::uint64_t>(i * 3), *ws, scratch),
              IR::kAppended);
    model[i * 10] = static_cast<std::uint64_t>(i * 3);
  }
  ASSERT_TRUE(h.frozen());
  EXPECT_EQ(h.Insert(55, 1), IR::kFrozenRange);
  EXPECT_EQ(h.Insert(50, 1), IR::kFrozenRange);
  ExpectHolds(h, model, *ws);  // unchanged
  std::mt19937_64 rng(3);
  for (int i = 0; i < 600; ++i) {
    const std::int64_t t = static_cast<std::int64_t>(rng() % 5000);
    const auto v = static_cast<std::uint64_t>(-static_cast<std::int64_t>(rng() % 1000));
    EngineInsert(h, t, v, *ws, scratch);
    model[t] = v;
    if (h.size() > kChunkCapacity) break;
  }
  ExpectHolds(h, model, *ws);
}

}  // namespace
}  // namespace ingot
