// ALP as Rice codes (kAlpRice): the four streams it chooses between (offsets, zigzagged deltas,
// deltas above the smallest, second differences), the size it reaches on geometric gaps against ALP's packing, the
// compact chooser's use of it on a dictionary of coordinates, exceptions and floats, and named
// errors for corrupt blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using namespace compact;  // NOLINT(google-build-using-namespace): the flags
using testing::BitEqual;
using testing::EncodeExact;
using testing::ExpectCorruptNaming;
using testing::ExpectRoundTrip;
using testing::StreamFlags;
using testing::WithByte;

// Every truncation of `block` is refused, and a random bit flipped at each byte gives an error or
// a valid decode.
void ExpectEveryCutAndFlipSafe(const std::vector<std::uint8_t>& block, std::vector<double>& back,
                               Workspace& ws, std::uint64_t seed) {
  for (std::size_t len = 0; len < block.size(); ++len) {
    std::vector<std::uint8_t> cut(block.begin(), block.begin() + static_cast<long>(len));
    EXPECT_TRUE(DecodeDoubles(cut, back, ws).IsCorruption()) << "cut to " << len;
  }
  std::mt19937_64 rng(seed);
  for (std::size_t at = 0; at < block.size(); ++at) {
    std::vector<std::uint8_t> flipped = block;
    flipped[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    const Status st = DecodeDoubles(flipped, back, ws);
    EXPECT_TRUE(st.ok() || st.IsCorruption()) << st.ToString();
  }
}

// Sorted distinct coordinates with 13 decimals, gaps drawn from a geometric law: what a
// dictionary block holds for taxi zones' longitudes.
std::vector<double> SortedCoordinates(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<std::int64_t> gap(1.0 / 4.0e9);
  std::set<std::int64_t> ints;
  std::int64_t x = -740'159'272'589'091;  // -74.0159272589091 as 13-decimal ALP integers
  while (ints.size() < n) ints.insert(x += 1 + gap(rng));
  std::vector<double> v;
  for (std::int64_t i : ints) v.push_back(static_cast<double>(i) / 1e13);
  return v;
}

TEST(AlpRice, SortedGapsTakeTheirEntropyNotTheLargestGap) {
  auto ws = std::make_unique<Workspace>();
  const auto v = SortedCoordinates(560, 1);
  std::vector<std::uint8_t> rice, alp(MaxEncodedFloatBytes(v.size(), 8));
  const EncodeResult r = EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, rice);
  ASSERT_EQ(r.encoding, FloatEncoding::kAlpRice);
  EXPECT_EQ(StreamFlags(rice), kDeltaFlag);  // deltas above the smallest
  SeriesHint hint;
  const EncodeResult packed = EncodeDoublesAs(FloatEncoding::kAlpDelta, v, hint, *ws, alp);
  ASSERT_EQ(packed.encoding, FloatEncoding::kAlpDelta);
  // Geometric gaps of mean 4e9: about log2(4e9) + 1.5 = 33.4 bits each as Rice codes, against
  // the width of the largest gap (35 to 36 bits) when packed.
  EXPECT_LT(r.bytes * 8.0 / 559, 34.0);
  EXPECT_LT(r.bytes * 100, packed.bytes * 96) << packed.bytes;
  ExpectRoundTrip(v, rice, *ws);
  // The compact chooser picks it for such a block, and for the dictionary built on it.
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  SeriesHint compact_hint;
  EXPECT_EQ(EncodeDoublesCompact(v, compact_hint, *ws, buf).encoding, FloatEncoding::kAlpRice);
}

TEST(AlpRice, EachStreamRoundTripsWithExceptionsAndFloats) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(2);
  std::vector<std::uint8_t> block;
  // Offsets: values near a floor with a skewed spread (most small, a few large).
  std::vector<double> skewed(1000);
  std::geometric_distribution<int> small(0.05);
  for (double& x : skewed) x = 10.0 + small(rng) * 0.01;
  skewed[7] = std::nan("");
  skewed[500] = -std::numeric_limits<double>::infinity();
  skewed[999] = -0.0;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, skewed, *ws, block).encoding,
            FloatEncoding::kAlpRice);
  EXPECT_EQ(block[kAlpZstdFlagsOffset], 0);  // offsets
  EXPECT_GE(LoadLe<std::uint16_t>(block.data() + kAlpZstdExceptionCountOffset), 3u);
  ExpectRoundTrip(skewed, block, *ws);
  // A full block of offsets: the low bits in FFOR's interleaved layout, unpacked by the kernel.
  skewed.resize(1024, 10.5);
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, skewed, *ws, block).encoding,
            FloatEncoding::kAlpRice);
  EXPECT_EQ(block[kAlpZstdFlagsOffset], 0);
  ExpectRoundTrip(skewed, block, *ws);
  // Zigzagged deltas: a walk whose steps are mostly small, in both directions.
  std::vector<double> walk(777);
  std::int64_t cents = 0;
  for (double& x : walk) {
    const int step = small(rng);
    cents += (rng() & 1) ? step : -step;
    x = static_cast<double>(cents) / 100.0;
  }
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, walk, *ws, block).encoding,
            FloatEncoding::kAlpRice);
  EXPECT_EQ(block[kAlpZstdFlagsOffset], kDeltaFlag | kZigZagFlag);
  ExpectRoundTrip(walk, block, *ws);
  // Every count, including one value (no deltas) and two; blocks this short may come out raw
  // (the varint header costs more than it saves), longer ones are Rice.
  for (std::size_t n : {1, 2, 3, 63, 64, 65, 1023, 1024}) {
    std::vector<double> v(SortedCoordinates(n, n));
    const EncodeResult r = EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, block);
    if (n >= 63) {
      EXPECT_EQ(r.encoding, FloatEncoding::kAlpRice) << n;
      // Only a full block of deltas takes the placeholder code (and FFOR's interleaved layout),
      // and with it lane order.
      EXPECT_EQ(StreamFlags(block),
                n == 1024 ? kDeltaFlag | kPlaceholderFlag | kLaneFlag : kDeltaFlag);
    }
    ExpectRoundTrip(v, block, *ws);
  }
  // Floats.
  std::vector<float> f(300);
  for (float& x : f) x = static_cast<float>(small(rng)) * 0.5f - 3.f;
  std::vector<std::uint8_t> fbuf(MaxEncodedFloatBytes(f.size(), 4));
  SeriesHint hint;
  const EncodeResult fr = EncodeFloatsAs(FloatEncoding::kAlpRice, f, hint, *ws, fbuf);
  ASSERT_EQ(fr.encoding, FloatEncoding::kAlpRice);
  std::vector<float> fback(f.size());
  ASSERT_TRUE(DecodeFloats({fbuf.data(), fr.bytes}, fback, *ws).ok());
  EXPECT_TRUE(BitEqual(f, fback));
}

// A slowly turning reading (a sine with 3 decimals and a little noise): its deltas run to
// +-150 thousandths, but they change by a few from one value to the next, so a full block is
// written as second differences, a fifth smaller than its deltas' Rice codes would be. It
// decodes bit for bit, and every cut and bit flip of it is an error or a valid decode.
TEST(AlpRice, SmoothSeriesTakeSecondDifferences) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(5);
  std::vector<double> v(1024);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double x = 3 * std::sin(static_cast<double>(i) / 20.0) +
                     static_cast<double>(rng() % 3) * 1e-3;
    v[i] = std::round(x * 1e3) / 1e3;
  }
  std::vector<std::uint8_t> block;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, block).encoding,
            FloatEncoding::kAlpRice);
  EXPECT_EQ(StreamFlags(block),
            kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag | kLaneFlag);
  // The deltas of the thousandths as Rice codes with their best parameter: what the block would
  // take without second differences (exceptions and header left out).
  std::size_t first_order_bits = SIZE_MAX;
  for (unsigned k = 0; k < 20; ++k) {
    std::size_t bits = 0;
    for (std::size_t i = 1; i < v.size(); ++i) {
      const auto d = std::llround(v[i] * 1e3) - std::llround(v[i - 1] * 1e3);
      bits += (static_cast<std::uint64_t>(d < 0 ? -2 * d - 1 : 2 * d) >> k) + 1 + k;
    }
    first_order_bits = std::min(first_order_bits, bits);
  }
  EXPECT_LT(block.size() * 8 * 10, first_order_bits * 8) << block.size() << " " << first_order_bits;
  ExpectRoundTrip(v, block, *ws);
  // With exceptions (their slots repeat the previous integer, a jump of the second difference).
  v[0] = std::nan("");
  v[511] = 1e300;
  v[1023] = -0.0;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, block).encoding,
            FloatEncoding::kAlpRice);
  // Those jumps are escaped rather than written as long unary runs.
  EXPECT_EQ(StreamFlags(block), kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag |
                                    kEscapeFlag | kLaneFlag);
  ExpectRoundTrip(v, block, *ws);
  std::vector<double> back(v.size());
  ExpectEveryCutAndFlipSafe(block, back, *ws, rng());
  // The first delta's varint is there only with the flag: without it, the varints are misread.
  std::vector<std::uint8_t> first_order =
      WithByte(block, kAlpZstdFlagsOffset, kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kLaneFlag);
  const Status st = DecodeDoubles(first_order, back, *ws);
  EXPECT_TRUE(!st.ok() || !BitEqual(v, back));
}

// The compact chooser bounds each candidate by the best block so far: a room just large enough
// for the block must give the same block. (The search of the parameter once started from the
// mean of truncated quotients, k = 0 for small codes, and gave up when that k's unary part did
// not fit: the second differences of a smooth series were lost whenever the room was tight.)
TEST(AlpRice, ARoomJustLargeEnoughGivesTheSameBlock) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(9);
  std::vector<double> smooth(1024), skewed(1024);
  for (std::size_t i = 0; i < smooth.size(); ++i) {
    const double x =
        3 * std::sin(static_cast<double>(i) / 20.0) + static_cast<double>(rng() % 3) * 1e-3;
    smooth[i] = std::round(x * 1e3) / 1e3;
    skewed[i] = static_cast<double>(rng() % 16 == 0 ? rng() % 100000 : rng() % 40) / 100;
  }
  for (const auto* v : {&smooth, &skewed}) {
    std::vector<std::uint8_t> block;
    ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, *v, *ws, block).encoding,
              FloatEncoding::kAlpRice);
    // The block's own exponent and factor, as the chooser passes them, and a heap buffer of
    // exactly `room` bytes: a write past the room is an ASan report.
    const unsigned exponent = block[kBlockHeaderBytes], factor = block[kBlockHeaderBytes + 1];
    for (const std::size_t room : {block.size(), block.size() + 1, block.size() + 64}) {
      std::vector<std::uint8_t> scratch(room, 0);
      const std::size_t bytes = EncodeAlpRice<double>(*v, exponent, factor, *ws, scratch);
      ASSERT_EQ(bytes, block.size()) << "room " << room;
      EXPECT_TRUE(std::equal(block.begin(), block.end(), scratch.begin())) << "room " << room;
    }
    // One byte short of the block, or rooms too small for its header: refused, not cut, and
    // nothing written past the room.
    for (const std::size_t room : {block.size() - 1, std::size_t{1}, std::size_t{9},
                                   std::size_t{12}, std::size_t{20}, std::size_t{30}}) {
      std::vector<std::uint8_t> short_room(room, 0);
      EXPECT_EQ(EncodeAlpRice<double>(*v, exponent, factor, *ws, short_room), 0u) << room;
    }
  }
}

// A full block of deltas as written before the placeholder code: 1023 codes in a plain bit
// stream. Integers 3, 8, 13, ... (exponent 1): every delta is 5, the base, so every code is 0
// with k = 0: a 1 bit each.
TEST(AlpRice, FullBlockOfDeltasWithoutPlaceholderStillDecodes) {
  auto ws = std::make_unique<Workspace>();
  const std::uint8_t head[] = {static_cast<std::uint8_t>(FloatEncoding::kAlpRice),
                               0,
                               4,
                               /*e*/ 1,
                               /*f*/ 0,
                               kDeltaFlag,
                               0,
                               0,
                               /*zigzag(first 3)*/ 6,
                               /*zigzag(base 5)*/ 10,
                               /*k*/ 0};
  static_assert(sizeof head == kAlpRiceHeaderBytes + 3);
  std::vector<std::uint8_t> block(sizeof head + 128, 0xff);  // then the 1023 codes' 1 bits
  std::copy(std::begin(head), std::end(head), block.begin());
  block.back() = 0x7f;  // codes 1016..1022
  std::vector<double> back(1024);
  const Status st = DecodeDoubles(block, back, *ws);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (std::size_t i = 0; i < back.size(); ++i) {
    ASSERT_EQ(back[i], static_cast<double>(3 + 5 * static_cast<std::int64_t>(i)) * 0.1) << i;
  }
  block.back() = 0xff;  // a 1024th code
  ExpectCorruptNaming(block, back.size(), *ws, "bits after the last code");
}

TEST(AlpRice, CorruptBlocksNameTheField) {
  auto ws = std::make_unique<Workspace>();
  const auto v = SortedCoordinates(100, 3);
  std::vector<std::uint8_t> good;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, good).encoding,
            FloatEncoding::kAlpRice);
  ASSERT_EQ(good[kAlpZstdFlagsOffset] & ~kDividedFlag, kDeltaFlag);
  std::vector<double> back(v.size());
  auto expect_corrupt = [&](const std::vector<std::uint8_t>& block, const std::string& needle) {
    ExpectCorruptNaming(block, back.size(), *ws, needle);
  };
  auto with = [&](std::size_t offset, std::uint8_t byte) { return WithByte(good, offset, byte); };
  expect_corrupt(with(kAlpZstdExponentOffset, 40), "exponent 40");
  expect_corrupt(with(kAlpZstdFlagsOffset, 32), "unknown flags 32");
  expect_corrupt(with(kAlpZstdFlagsOffset, kSecondOrderFlag),
                 "second-difference flag without zigzag and placeholder flags");
  expect_corrupt(with(kAlpZstdFlagsOffset, kDeltaFlag | kPlaceholderFlag),
                 "placeholder flag without a full block of deltas");
  expect_corrupt(with(kAlpZstdFlagsOffset, kZigZagFlag), "zigzag flag without delta flag");
  expect_corrupt(with(kAlpZstdExceptionCountOffset, 200), "exception count 200");
  std::vector<std::uint8_t> varints = good;
  for (std::size_t i = kAlpRiceHeaderBytes; i < kAlpRiceHeaderBytes + 11; ++i) varints[i] = 0xff;
  expect_corrupt(varints, "varints truncated or too long");
  // The parameter byte follows the two varints (first integer, base).
  std::size_t k_offset = kAlpRiceHeaderBytes;
  for (int varint = 0; varint < 2; ++varint) {
    while (good[k_offset] & 0x80) ++k_offset;
    ++k_offset;
  }
  expect_corrupt(with(k_offset, 57), "Rice parameter 57");
  // A smaller parameter reads the stream as other codes: they end elsewhere or run past it.
  const Status shifted = DecodeDoubles(with(k_offset, static_cast<std::uint8_t>(good[k_offset] - 1)),
                                       back, *ws);
  EXPECT_TRUE(shifted.IsCorruption()) << shifted.ToString();
  // Cut short: the last code runs past the stream.
  expect_corrupt({good.begin(), good.end() - 1}, "past the stream");
  // One byte more: the codes end before the stream does.
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  expect_corrupt(longer, "codes end in byte");
  // All zero bits: no code ends.
  std::vector<std::uint8_t> zeros = good;
  std::fill(zeros.begin() + static_cast<long>(k_offset) + 1, zeros.end(), 0);
  expect_corrupt(zeros, "runs past the stream");
}

// A smooth reading with two steps (UT1-UTC's leap seconds: thousandths turning slowly, then a
// jump of a whole second). Its second differences are a few thousandths but for the steps' two
// each, about 2^10 times larger: as plain Rice codes each of those four costs a unary run of
// thousands of bits at the parameter that suits the rest, so the block escapes them instead.
std::vector<double> SteppedSmooth() {
  std::vector<double> v(1024);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double x = 0.3 * std::sin(static_cast<double>(i) / 40.0) + (i >= 300 ? 1.0 : 0.0) +
                     (i >= 700 ? 1.0 : 0.0);
    v[i] = std::round(x * 1e4) / 1e4;
  }
  return v;
}

// The fewest bits of the zigzagged second differences of v's 4-decimal integers as plain Rice
// codes: what the block would take without escapes (header and placeholders left out).
std::size_t PlainSecondDifferenceBits(const std::vector<double>& v) {
  std::size_t fewest = SIZE_MAX;
  for (unsigned k = 0; k < 40; ++k) {
    std::size_t bits = 0;
    for (std::size_t i = 2; i < v.size(); ++i) {
      const std::int64_t a = std::llround(v[i] * 1e4), b = std::llround(v[i - 1] * 1e4),
                         c = std::llround(v[i - 2] * 1e4);
      const std::int64_t d = (a - b) - (b - c);
      bits += (static_cast<std::uint64_t>(d < 0 ? -2 * d - 1 : 2 * d) >> k) + 1 + k;
    }
    fewest = std::min(fewest, bits);
  }
  return fewest;
}

TEST(AlpRice, JumpsAreEscapedNotWrittenInUnary) {
  auto ws = std::make_unique<Workspace>();
  const std::vector<double> v = SteppedSmooth();
  std::vector<std::uint8_t> block;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, block).encoding,
            FloatEncoding::kAlpRice);
  EXPECT_EQ(StreamFlags(block), kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag |
                                    kEscapeFlag | kLaneFlag);
  const std::size_t plain_bits = PlainSecondDifferenceBits(v);
  EXPECT_LT(block.size() * 8 * 2, plain_bits) << block.size() << " bytes, plain " << plain_bits;
  ExpectRoundTrip(v, block, *ws);
  // The compact choice takes these Rice codes, which decode about twice as fast as Huffman codes
  // of the same size would.
  SeriesHint hint;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8));
  const EncodeResult compact = EncodeDoublesCompact(v, hint, *ws, buf);
  EXPECT_EQ(compact.encoding, FloatEncoding::kAlpRice);
  buf.resize(compact.bytes);
  ExpectRoundTrip(v, buf, *ws);
  // Floats take the same codes.
  std::vector<float> f(v.begin(), v.end());
  std::vector<std::uint8_t> float_block;
  ASSERT_EQ(EncodeExact<float>(FloatEncoding::kAlpRice, f, *ws, float_block).encoding,
            FloatEncoding::kAlpRice);
  EXPECT_NE(StreamFlags(float_block) & kEscapeFlag, 0);
  ExpectRoundTrip(f, float_block, *ws);
}

// Short blocks of deltas (no placeholder code): every count around the kernels' steps, with jumps
// escaped (the first delta among them), zigzagged or above a base, decoded at every level.
TEST(AlpRice, ShortBlocksOfDeltasWithEscapesDecodeAtEveryLevel) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(41);
  const simd::IsaLevel detected = simd::DetectIsa();
  for (const bool zigzag : {false, true}) {
    for (const std::size_t n : {2, 3, 9, 17, 100, 999, 1023}) {
      // Small steps with a jump of about 2^30 hundredths first and every 50th step.
      std::vector<double> v(n);
      std::int64_t cents = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t step =
            i % 50 == 1 ? std::int64_t{1} << 30 : static_cast<std::int64_t>(rng() % 8);
        cents += zigzag && (rng() & 1) ? -step : step;
        v[i] = static_cast<double>(cents) / 100.0;
      }
      std::vector<std::uint8_t> block;
      const EncodeResult r = EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, block);
      if (r.encoding != FloatEncoding::kAlpRice) continue;  // too short to pay for its header
      const unsigned flags = StreamFlags(block);
      EXPECT_EQ(flags & (kDeltaFlag | kPlaceholderFlag), kDeltaFlag) << n;
      if (n >= 100) {
        EXPECT_NE(flags & kEscapeFlag, 0u) << n;
        EXPECT_EQ((flags & kZigZagFlag) != 0, zigzag) << n;
      }
      for (const simd::IsaLevel level :
           {simd::IsaLevel::kScalar, simd::IsaLevel::kAvx2, simd::IsaLevel::kAvx512}) {
        if (!simd::ForceIsa(level)) continue;
        ExpectRoundTrip(v, block, *ws);
      }
      ASSERT_TRUE(simd::ForceIsa(detected));
    }
  }
}

TEST(AlpRice, CorruptEscapesNameTheField) {
  auto ws = std::make_unique<Workspace>();
  const std::vector<double> v = SteppedSmooth();
  std::vector<std::uint8_t> good;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, good).encoding,
            FloatEncoding::kAlpRice);
  ASSERT_NE(good[kAlpZstdFlagsOffset] & kEscapeFlag, 0);
  std::vector<double> back(v.size());
  auto expect_corrupt = [&](const std::vector<std::uint8_t>& block, const std::string& needle) {
    ExpectCorruptNaming(block, back.size(), *ws, needle);
  };
  // After the varints (first integer, first delta; no base with zigzag) and k: Q, the count, then
  // a gap and a rest for each escape.
  std::size_t at = kAlpRiceHeaderBytes;
  for (int varint = 0; varint < 2; ++varint) {
    while (good[at] & 0x80) ++at;
    ++at;
  }
  const std::size_t q_offset = at + 1, count_offset = at + 2;
  const unsigned q = good[q_offset];
  ASSERT_GE(q, 1u);
  ASSERT_EQ(good[count_offset] & 0x80, 0);  // a one-byte count
  const unsigned escapes = good[count_offset];
  ASSERT_GE(escapes, 2u);
  expect_corrupt(WithByte(good, q_offset, 0), "escape quotient 0");
  expect_corrupt(WithByte(good, q_offset, 65), "escape quotient 65");
  expect_corrupt(WithByte(good, count_offset, 0), "escape count");
  // Another quotient: the escaped codes' unary parts are not it.
  expect_corrupt(WithByte(good, q_offset, static_cast<std::uint8_t>(q == 1 ? 2 : q - 1)),
                 "has quotient " + std::to_string(q));
  // The first escape's gap past the last code.
  std::vector<std::uint8_t> far(good.begin(), good.begin() + static_cast<long>(count_offset) + 1);
  far.insert(far.end(), {0x80, 0x08});  // 1024
  std::size_t first_gap_end = count_offset + 1;
  while (good[first_gap_end] & 0x80) ++first_gap_end;
  far.insert(far.end(), good.begin() + static_cast<long>(first_gap_end) + 1, good.end());
  expect_corrupt(far, "escape 0 past code 1023");
  // The first escape's rest as 2^64 - 1: its code would pass 64 bits.
  std::size_t rest_end = first_gap_end + 1;
  while (good[rest_end] & 0x80) ++rest_end;
  std::vector<std::uint8_t> wide(good.begin(), good.begin() + static_cast<long>(first_gap_end) + 1);
  wide.insert(wide.end(), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  wide.insert(wide.end(), good.begin() + static_cast<long>(rest_end) + 1, good.end());
  expect_corrupt(wide, "escape 0 past 64 bits");
  // More escapes than codes.
  std::vector<std::uint8_t> many(good.begin(), good.begin() + static_cast<long>(count_offset));
  many.insert(many.end(), {0x81, 0x08});  // 1025
  many.insert(many.end(), good.begin() + static_cast<long>(count_offset) + 1, good.end());
  expect_corrupt(many, "escape count missing or not in 1..1024");
  ExpectEveryCutAndFlipSafe(good, back, *ws, 5);
}

}  // namespace
}  // namespace ingot::codec

namespace ingot::codec {
namespace {

// Full blocks of deltas are written in lane order; blocks written before it, in block order,
// still decode. Both orders of the same codes round-trip bit for bit for each stream a full
// block takes (second differences with and without escapes, zigzagged deltas, deltas above the
// smallest), and have the same size but for the escape list's gaps.
TEST(AlpRice, LaneOrderAndBlockOrderDecodeAlike) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(12);
  std::vector<std::vector<double>> series;
  std::vector<double> smooth(1024), walk(1024), rising(1024);
  std::geometric_distribution<int> small(0.05);
  std::int64_t cents = 0, total = 0;
  for (std::size_t i = 0; i < smooth.size(); ++i) {
    smooth[i] = std::round((3 * std::sin(static_cast<double>(i) / 20.0) +
                            static_cast<double>(rng() % 3) * 1e-3) *
                           1e3) /
                1e3;
    const int step = small(rng);
    cents += (rng() & 1) ? step : -step;
    walk[i] = static_cast<double>(cents) / 100.0;
    total += 500 + small(rng);  // a counter: deltas above the smallest
    rising[i] = static_cast<double>(total) / 10.0;
  }
  const std::uint8_t streams[] = {kZigZagFlag | kSecondOrderFlag, kZigZagFlag | kSecondOrderFlag,
                                  kZigZagFlag, 0};
  std::vector<double> stepped = SteppedSmooth();
  const std::vector<double>* inputs[] = {&smooth, &stepped, &walk, &rising};
  std::vector<double> back(1024);
  for (std::size_t c = 0; c < std::size(inputs); ++c) {
    const std::vector<double>& v = *inputs[c];
    std::vector<std::uint8_t> lanes(MaxEncodedFloatBytes(v.size(), 8)), block(lanes.size());
    SeriesHint hint;
    const EncodeResult alp = EncodeDoublesAs(FloatEncoding::kAlp, v, hint, *ws, lanes);
    ASSERT_EQ(alp.encoding, FloatEncoding::kAlp) << c;
    const unsigned e = lanes[kAlpExponentOffset], f = lanes[kAlpFactorOffset];
    const std::size_t lane_bytes =
        EncodeAlpRiceOrdered<double>(v, e, f, *ws, lanes, RiceOrder::kLanes);
    const std::size_t block_bytes =
        EncodeAlpRiceOrdered<double>(v, e, f, *ws, block, RiceOrder::kBlock);
    ASSERT_GT(lane_bytes, 0u) << c;
    ASSERT_GT(block_bytes, 0u) << c;
    lanes.resize(lane_bytes);
    block.resize(block_bytes);
    const int flags = kDeltaFlag | kPlaceholderFlag | streams[c];
    EXPECT_EQ(StreamFlags(lanes) & ~kEscapeFlag, flags | kLaneFlag) << c;
    EXPECT_EQ(StreamFlags(block) & ~kEscapeFlag, flags) << c;
    if ((StreamFlags(lanes) & kEscapeFlag) == 0) {
      EXPECT_EQ(lane_bytes, block_bytes) << c;
    }
    EXPECT_NE(lanes, block) << c;
    ExpectRoundTrip(v, lanes, *ws);
    ExpectRoundTrip(v, block, *ws);
  }
  // The lane flag needs the placeholder, which only a full block of deltas has.
  std::vector<std::uint8_t> offsets;
  std::vector<double> skewed(1024);
  for (double& x : skewed) x = 10.0 + small(rng) * 0.01;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, skewed, *ws, offsets).encoding,
            FloatEncoding::kAlpRice);
  ASSERT_EQ(StreamFlags(offsets), 0);
  ExpectCorruptNaming(WithByte(offsets, kAlpZstdFlagsOffset, kLaneFlag), skewed.size(), *ws,
                      "lane flag without placeholder flag");
}

}  // namespace
}  // namespace ingot::codec
