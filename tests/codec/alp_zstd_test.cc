// ALP through zstd (kAlpZstd): the varint stream inside the frame gives back varints of every
// length (1 to 8 bytes, in random order) exactly, and a stream with too few or too many varints,
// a varint past 8 bytes or a dangling continuation byte is Corruption naming what is wrong. The blocks are built by hand around
// zstd frames of chosen content, so each case reaches the varint decoder.
#include <zstd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/format.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using testing::ExpectCorruptNaming;

constexpr std::size_t kCount = 1024;

void PutVarint(std::uint64_t u, std::vector<std::uint8_t>* out) {
  while (u >= 0x80) {
    out->push_back(static_cast<std::uint8_t>(u | 0x80));
    u >>= 7;
  }
  out->push_back(static_cast<std::uint8_t>(u));
}

// A kAlpZstd block of kCount values with exponent and factor 0, offsets from base 0 and no
// exceptions, whose frame holds `stream`. The 3-byte block header comes from a real block.
std::vector<std::uint8_t> BlockAround(const std::vector<std::uint8_t>& stream, Workspace& ws) {
  std::vector<double> ints(kCount);
  for (std::size_t i = 0; i < kCount; ++i) ints[i] = static_cast<double>((i * 7919) % 1000);
  std::vector<std::uint8_t> real(MaxEncodedFloatBytes(kCount, 8));
  SeriesHint hint;
  const EncodeResult r = EncodeDoublesAs(FloatEncoding::kAlpZstd, ints, hint, ws, real);
  EXPECT_EQ(r.encoding, FloatEncoding::kAlpZstd);
  std::vector<std::uint8_t> block(real.begin(), real.begin() + kAlpZstdHeaderBytes);
  block[kAlpZstdExponentOffset] = 0;
  block[kAlpZstdFactorOffset] = 0;
  block[kAlpZstdFlagsOffset] = 0;
  std::memset(block.data() + kAlpZstdExceptionCountOffset, 0, 2);
  std::memset(block.data() + kAlpZstdBaseOffset, 0, 8);
  std::vector<std::uint8_t> frame(ZSTD_compressBound(stream.size()));
  const std::size_t z = ZSTD_compress(frame.data(), frame.size(), stream.data(), stream.size(), 3);
  EXPECT_FALSE(ZSTD_isError(z));
  const auto z32 = static_cast<std::uint32_t>(z);
  std::memcpy(block.data() + kAlpZstdFrameBytesOffset, &z32, 4);  // little-endian hosts
  block.insert(block.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(z));
  return block;  // exact size: an over-read is an ASan report
}

// kCount integers below 2^50 (ALP's integers stay well inside 2^51) whose varints take 1 to 8 bytes, in random order.
std::vector<std::uint64_t> IntsOfEveryLength(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> ints(kCount);
  for (auto& x : ints) {
    const unsigned bytes = 1 + static_cast<unsigned>(rng() % 8);
    const unsigned bits = bytes == 8 ? 50 : 7 * bytes;
    const std::uint64_t low = bytes == 1 ? 0 : std::uint64_t{1} << (7 * (bytes - 1));
    x = low + rng() % ((std::uint64_t{1} << bits) - low);
  }
  return ints;
}

// The compact choice for `v`, which must decode back exactly, beside `v` forced to `encoding`.
struct CompactBesideForced {
  EncodeResult compact, forced;
};
CompactBesideForced EncodeBoth(const std::vector<double>& v, FloatEncoding encoding) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::uint8_t> compact(MaxEncodedFloatBytes(v.size(), 8));
  std::vector<std::uint8_t> forced(compact.size());
  SeriesHint hint, fresh;
  const CompactBesideForced both{EncodeDoublesCompact(v, hint, *ws, compact),
                                 EncodeDoublesAs(encoding, v, fresh, *ws, forced)};
  std::vector<double> back(v.size());
  const Status st = DecodeDoubles({compact.data(), both.compact.bytes}, back, *ws);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(std::memcmp(back.data(), v.data(), v.size() * sizeof(double)), 0);
  return both;
}

// A series whose values come back in the same order (a schedule, a replayed pattern) is where
// zstd's matches pay: the compact choice keeps it among its candidates for that, although the
// code of bit lengths beats it on every real data set measured.
TEST(AlpZstd, CompactChoiceTakesItForARepeatingPattern) {
  std::mt19937_64 rng(3);
  std::vector<double> pattern(97);
  for (double& x : pattern) x = static_cast<double>(1000 + rng() % 8000) / 100;  // 2 decimals
  std::vector<double> v(1024);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = pattern[i % pattern.size()];
  const CompactBesideForced both = EncodeBoth(v, FloatEncoding::kAlpRanked);
  EXPECT_EQ(both.compact.encoding, FloatEncoding::kAlpZstd);
  EXPECT_LT(both.compact.bytes * 3, both.forced.bytes)
      << both.compact.bytes << " against " << both.forced.bytes;
}

// A run of sentinels with a temperature every 32 values: zstd's frame is the smallest block, but
// it saves under 64 bytes and would decode about ten times slower than the alternatives, so the
// compact choice writes a faster encoding and gives up fewer than 64 bytes for it.
TEST(AlpZstd, CompactChoiceSkipsItForAFewBytes) {
  std::mt19937_64 rng(5);
  std::vector<double> v(1024, -99.0);
  for (std::size_t i = 0; i < v.size(); i += 32) {
    v[i] = static_cast<double>(300 + static_cast<int>(rng() % 700)) / 10;  // 1 decimal
  }
  const CompactBesideForced both = EncodeBoth(v, FloatEncoding::kAlpZstd);
  ASSERT_EQ(both.forced.encoding, FloatEncoding::kAlpZstd);
  EXPECT_NE(both.compact.encoding, FloatEncoding::kAlpZstd);
  EXPECT_LT(both.forced.bytes, both.compact.bytes);
  EXPECT_LT(both.compact.bytes, both.forced.bytes + 64)
      << both.compact.bytes << " against " << both.forced.bytes;
}

// A counter whose steps follow a 97-step schedule, with a random jump one step in eight: zstd's
// frame saves a fifth of the block, from its matches and its literals' entropy tables. A frame
// that saves less than a quarter decodes at about Gorilla's speed or slower, so the compact choice
// writes the faster encoding (Huffman codes here), giving up less than a third more bytes.
TEST(AlpZstd, CompactChoiceSkipsItForLessThanAQuarter) {
  std::mt19937_64 rng(7);
  std::vector<bool> schedule(97);
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    schedule[i] = static_cast<double>(1000 + rng() % 8000) / 100 > 50;
  }
  std::vector<double> v(1024);
  double counter = 1000;
  for (std::size_t i = 0; i < v.size(); ++i) {
    counter += rng() % 8 == 0 ? static_cast<double>(rng() % 500) : schedule[i % 97] ? 60.0 : 0.0;
    v[i] = counter;
  }
  const CompactBesideForced both = EncodeBoth(v, FloatEncoding::kAlpZstd);
  ASSERT_EQ(both.forced.encoding, FloatEncoding::kAlpZstd);
  EXPECT_NE(both.compact.encoding, FloatEncoding::kAlpZstd);
  // Saved more than the 1/32 any slower decoder must save, less than a quarter.
  EXPECT_LT(both.forced.bytes + both.compact.bytes / 32, both.compact.bytes);
  EXPECT_LT(both.compact.bytes * 3, both.forced.bytes * 4)
      << both.compact.bytes << " against " << both.forced.bytes;
}

TEST(AlpZstd, VarintsOfEveryLengthComeBackExactly) {
  auto ws = std::make_unique<Workspace>();
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<std::uint64_t> ints = IntsOfEveryLength(seed);
    std::vector<std::uint8_t> stream;
    for (std::uint64_t x : ints) PutVarint(x, &stream);
    std::vector<double> back(kCount);
    const Status st = DecodeDoubles(BlockAround(stream, *ws), back, *ws);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(back[i], static_cast<double>(ints[i])) << "value " << i << ", seed " << seed;
    }
  }
}

TEST(AlpZstd, MalformedVarintStreamsAreNamed) {
  auto ws = std::make_unique<Workspace>();
  const std::vector<std::uint64_t> ints = IntsOfEveryLength(9);
  auto stream_of = [&](std::size_t count) {
    std::vector<std::uint8_t> s;
    for (std::size_t i = 0; i < count; ++i) PutVarint(ints[i], &s);
    return s;
  };
  ExpectCorruptNaming(BlockAround(stream_of(kCount - 1), *ws), kCount, *ws, "varint 1023 truncated");
  std::vector<std::uint8_t> more = stream_of(kCount);
  more.push_back(5);
  ExpectCorruptNaming(BlockAround(more, *ws), kCount, *ws, "bytes after the varints");
  // A continuation byte after the last varint: it starts one that never ends.
  std::vector<std::uint8_t> dangling = stream_of(kCount);
  dangling.push_back(0x80);
  ExpectCorruptNaming(BlockAround(dangling, *ws), kCount, *ws, "bytes after the varints");
  // The last varint loses its end byte.
  std::vector<std::uint8_t> open = stream_of(kCount);
  open.back() |= 0x80;
  ExpectCorruptNaming(BlockAround(open, *ws), kCount, *ws, "varint 1023 truncated");
  // Varint 500 takes 9 bytes (8 continuation bytes, then its end).
  std::vector<std::uint8_t> nine = stream_of(500);
  for (int i = 0; i < 8; ++i) nine.push_back(0x81);
  nine.push_back(1);
  for (std::size_t i = 501; i < kCount; ++i) PutVarint(ints[i], &nine);
  ExpectCorruptNaming(BlockAround(nine, *ws), kCount, *ws, "varint 500 truncated or too long");
}

}  // namespace
}  // namespace ingot::codec
