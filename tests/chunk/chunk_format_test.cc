#include "chunk/chunk_format.h"

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ingot {
namespace {

struct Sealed {
  std::vector<std::int64_t> ts;
  std::vector<std::uint64_t> bits;
  std::vector<std::uint8_t> bytes;
};

Sealed Seal(ValueType type, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Sealed s;
  std::int64_t t = -static_cast<std::int64_t>(n) * 500;  // crosses zero
  double walk = 100;
  for (std::size_t i = 0; i < n; ++i) {
    t += 1 + static_cast<std::int64_t>(rng() % 1000);
    s.ts.push_back(t);
    if (type == ValueType::kFloat) {
      walk += static_cast<double>(static_cast<int>(rng() % 201) - 100) / 100.0;
      s.bits.push_back(std::bit_cast<std::uint64_t>(std::round(walk * 100) / 100));
    } else if (type == ValueType::kInteger) {
      s.bits.push_back(rng());
    } else {
      s.bits.push_back(rng() & 1);
    }
  }
  if (type == ValueType::kFloat && n >= 4) {
    s.bits[0] = std::bit_cast<std::uint64_t>(-0.0);
    s.bits[1] = std::bit_cast<std::uint64_t>(std::numeric_limits<double>::infinity());
    s.bits[2] = 0x7ff8dead00000001ull;  // NaN with payload
    s.bits[3] = std::bit_cast<std::uint64_t>(std::numeric_limits<double>::denorm_min());
  }
  auto ws = std::make_unique<codec::Workspace>();
  codec::SeriesHint hint;
  s.bytes.resize(MaxSealedChunkBytes(n));
  s.bytes.resize(SealChunk(type, s.ts, s.bits, hint, *ws, s.bytes));
  return s;
}

TEST(ChunkFormatTest, RoundTripsEveryTypeAndSize) {
  auto ws = std::make_unique<codec::Workspace>();
  for (ValueType type : {ValueType::kFloat, ValueType::kInteger, ValueType::kBoolean}) {
    for (std::size_t n : {1u, 2u, 5u, 1023u, 1024u}) {
      const Sealed s = Seal(type, n, n);
      ChunkHeader h;
      ASSERT_TRUE(ValidateChunk(s.bytes, &h).ok());
      EXPECT_EQ(h.count, n);
      EXPECT_EQ(h.type, type);
      EXPECT_EQ(h.min_ts_ns, s.ts.front());
      EXPECT_EQ(h.max_ts_ns, s.ts.back());
      std::vector<std::int64_t> ts(n), raw(n);
      std::vector<double> values(n);
      ASSERT_TRUE(DecodeChunkRaw(s.bytes, ts, raw, *ws).ok());
      EXPECT_EQ(ts, s.ts);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(static_cast<std::uint64_t>(raw[i]), s.bits[i]) << i;
      }
      ASSERT_TRUE(DecodeChunk(s.bytes, ts, values, *ws).ok());
      for (std::size_t i = 0; i < n; ++i) {
        const double expected = type == ValueType::kFloat
                                    ? std::bit_cast<double>(s.bits[i])
                                    : static_cast<double>(static_cast<std::int64_t>(s.bits[i]));
        ASSERT_EQ(std::bit_cast<std::uint64_t>(values[i]), std::bit_cast<std::uint64_t>(expected));
      }
    }
  }
}

TEST(ChunkFormatTest, WrongOutputSizeIsInvalidArgument) {
  auto ws = std::make_unique<codec::Workspace>();
  const Sealed s = Seal(ValueType::kFloat, 10, 1);
  std::vector<std::int64_t> ts(9);
  std::vector<double> values(9);
  EXPECT_TRUE(DecodeChunk(s.bytes, ts, values, *ws).IsInvalidArgument());
}

TEST(ChunkFormatTest, TruncationAtEveryByteIsCorruption) {
  auto ws = std::make_unique<codec::Workspace>();
  const Sealed s = Seal(ValueType::kFloat, 100, 3);
  std::vector<std::int64_t> ts(100);
  std::vector<double> values(100);
  for (std::size_t len = 0; len < s.bytes.size(); ++len) {
    std::vector<std::uint8_t> cut(s.bytes.begin(), s.bytes.begin() + static_cast<long>(len));
    EXPECT_TRUE(DecodeChunk(cut, ts, values, *ws).IsCorruption()) << len;
  }
}

TEST(ChunkFormatTest, EveryBitFlipIsDetected) {
  auto ws = std::make_unique<codec::Workspace>();
  for (ValueType type : {ValueType::kFloat, ValueType::kInteger}) {
    const Sealed s = Seal(type, 64, 4);
    std::vector<std::int64_t> ts(64);
    std::vector<double> values(64);
    for (std::size_t bit = 0; bit < s.bytes.size() * 8; ++bit) {
      std::vector<std::uint8_t> bad = s.bytes;
      bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
      const Status st = DecodeChunk(bad, ts, values, *ws);
      // The count field may now disagree with the output size: that is reported too.
      EXPECT_FALSE(st.ok()) << "bit " << bit;
    }
  }
}

}  // namespace
}  // namespace ingot
