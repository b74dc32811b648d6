#include "chunk/chunk_format.h"

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ingot {
namespace {

struct Sealed {
  std::vector<std::int64_t> ts;
  std::vector<std::uint64_t> bits;
  std::vector<std::uint8_t> bytes;
};

// `step` > 0: timestamps at that fixed interval (from `first`); otherwise random gaps.
Sealed Seal(ValueType type, std::size_t n, std::uint64_t seed, std::int64_t step = 0,
            std::int64_t first = 0) {
  std::mt19937_64 rng(seed);
  Sealed s;
  std::int64_t t = -static_cast<std::int64_t>(n) * 500;  // crosses zero
  double walk = 100;
  for (std::size_t i = 0; i < n; ++i) {
    t += 1 + static_cast<std::int64_t>(rng() % 1000);
    s.ts.push_back(step > 0 ? first + static_cast<std::int64_t>(i) * step : t);
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

// Points at a fixed interval store no timestamp block: the header's range and count give them.
TEST(ChunkFormatTest, RegularTimestampsTakeNoBytesAndRoundTrip) {
  auto ws = std::make_unique<codec::Workspace>();
  constexpr std::int64_t kTenSeconds = 10'000'000'000;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const struct {
    std::int64_t step;
    std::int64_t first;
  } cases[] = {
      {kTenSeconds, 1'700'000'000'000'000'000},
      {1, -3},                                                  // crosses zero, the smallest step
      {std::numeric_limits<std::int64_t>::max() / 1100, kMin},  // spans most of int64
  };
  for (const auto& c : cases) {
    for (std::size_t n : {1u, 2u, 3u, 1023u, 1024u}) {
      const Sealed s = Seal(ValueType::kFloat, n, n, c.step, c.first);
      const Sealed irregular = Seal(ValueType::kFloat, n, n);
      ChunkHeader h;
      ASSERT_TRUE(ValidateChunk(s.bytes, &h).ok());
      EXPECT_EQ(h.ts_encoding, kTimestampEncodingRegular);
      EXPECT_EQ(h.ts_bytes, 0u);
      EXPECT_EQ(s.bytes.size(), kChunkHeaderBytes + h.value_bytes);
      std::vector<std::int64_t> ts(n), raw(n);
      ASSERT_TRUE(DecodeChunkRaw(s.bytes, ts, raw, *ws).ok()) << c.step << " x " << n;
      EXPECT_EQ(ts, s.ts) << c.step << " x " << n;
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<std::uint64_t>(raw[i]), s.bits[i]);
      ChunkHeader hi;
      ASSERT_TRUE(ValidateChunk(irregular.bytes, &hi).ok());
      EXPECT_EQ(hi.ts_encoding, n <= 2 ? kTimestampEncodingRegular : kTimestampEncodingInt) << n;
    }
  }
  // One point off the grid: the block keeps its timestamps.
  Sealed s = Seal(ValueType::kFloat, 100, 1, kTenSeconds, 0);
  s.ts[50] += 1;
  codec::SeriesHint hint;
  s.bytes.resize(MaxSealedChunkBytes(s.ts.size()));
  s.bytes.resize(SealChunk(ValueType::kFloat, s.ts, s.bits, hint, *ws, s.bytes));
  ChunkHeader h;
  ASSERT_TRUE(ValidateChunk(s.bytes, &h).ok());
  EXPECT_EQ(h.ts_encoding, kTimestampEncodingInt);
  std::vector<std::int64_t> ts(100);
  std::vector<double> values(100);
  ASSERT_TRUE(DecodeChunk(s.bytes, ts, values, *ws).ok());
  EXPECT_EQ(ts, s.ts);
}

// A regular chunk's header must describe whole steps and no timestamp block; the checks are
// structural (ParseChunkHeader), before any checksum.
TEST(ChunkFormatTest, RegularHeaderWithBlockOrUnevenRangeIsCorruption) {
  const Sealed s = Seal(ValueType::kFloat, 10, 2, 1000, 0);  // range 9000 over 9 steps
  ChunkHeader h;
  ASSERT_TRUE(ParseChunkHeader(s.bytes, &h).ok());
  ASSERT_EQ(h.ts_encoding, kTimestampEncodingRegular);
  std::vector<std::uint8_t> uneven = s.bytes;
  uneven[16] += 1;  // max 9001: not 9 equal steps
  const Status st = ParseChunkHeader(uneven, &h);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.ToString().find("equal steps"), std::string::npos) << st.ToString();
  // A timestamp block that a regular chunk does not have: one byte moved from the values.
  std::vector<std::uint8_t> with_block = s.bytes;
  with_block[24] = 1;
  with_block[28] -= 1;
  const Status st2 = ParseChunkHeader(with_block, &h);
  EXPECT_TRUE(st2.IsCorruption());
  EXPECT_NE(st2.ToString().find("timestamp block"), std::string::npos) << st2.ToString();
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
  for (std::int64_t step : {0, 10}) {
    const Sealed s = Seal(ValueType::kFloat, 100, 3, step);
    std::vector<std::int64_t> ts(100);
    std::vector<double> values(100);
    for (std::size_t len = 0; len < s.bytes.size(); ++len) {
      std::vector<std::uint8_t> cut(s.bytes.begin(), s.bytes.begin() + static_cast<long>(len));
      EXPECT_TRUE(DecodeChunk(cut, ts, values, *ws).IsCorruption()) << len << " step " << step;
    }
  }
}

TEST(ChunkFormatTest, EveryBitFlipIsDetected) {
  auto ws = std::make_unique<codec::Workspace>();
  for (ValueType type : {ValueType::kFloat, ValueType::kInteger}) {
    for (std::int64_t step : {0, 10}) {  // random gaps, then a regular interval
      const Sealed s = Seal(type, 64, 4, step);
      std::vector<std::int64_t> ts(64);
      std::vector<double> values(64);
      for (std::size_t bit = 0; bit < s.bytes.size() * 8; ++bit) {
        std::vector<std::uint8_t> bad = s.bytes;
        bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        const Status st = DecodeChunk(bad, ts, values, *ws);
        // The count field may now disagree with the output size: that is reported too.
        EXPECT_FALSE(st.ok()) << "bit " << bit << " step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace ingot
