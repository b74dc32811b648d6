// Radix packing (bit_packing.h) and its two users: ALP as radix digits (kAlpRadix) and the
// dictionary's radix-packed indexes. Round trips over ranges and counts, the sizes the packing
// promises, the compact chooser's use of it on a random walk, and named errors for corrupt blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "codec/bit_packing.h"
#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using testing::BitEqual;
using testing::ExpectCorruptNaming;
using testing::WithByte;

TEST(RadixPacking, ChoosesTheFewestBitsPerValue) {
  // 201 step values: 3 digits in 23 bits (7.67 bits each) beat 4 in 31 and 1 in 8.
  EXPECT_EQ(ChooseRadixGroup(201).digits, 3u);
  EXPECT_EQ(ChooseRadixGroup(201).bits, 23u);
  // Powers of two gain nothing from grouping: one digit, plain width.
  EXPECT_EQ(ChooseRadixGroup(256).digits, 1u);
  EXPECT_EQ(ChooseRadixGroup(256).bits, 8u);
  EXPECT_EQ(ChooseRadixGroup(1).bits, 0u);
  EXPECT_EQ(ChooseRadixGroup(kMaxRadixRange).bits, 32u);
  // 3 values: 17 digits in 27 bits (3^17 < 2^27), 1.59 bits each.
  EXPECT_EQ(ChooseRadixGroup(3).digits, 17u);
  EXPECT_EQ(ChooseRadixGroup(3).bits, 27u);
  EXPECT_EQ(RadixPackedBytes(1024, 201), (342u * 23 + 7) / 8);  // 342 fields, the last of 1 digit
  for (std::uint64_t r = 2; r < 5000; ++r) {
    const RadixGroup g = ChooseRadixGroup(r);
    EXPECT_LE(g.bits * 1.0 / g.digits, std::ceil(std::log2(static_cast<double>(r))) + 1e-9) << r;
    EXPECT_GE(g.bits * 1.0 / g.digits, std::log2(static_cast<double>(r)) - 1e-9) << r;
  }
}

TEST(RadixPacking, RoundTripsEveryCountAndManyRanges) {
  std::mt19937_64 rng(21);
  std::vector<std::uint64_t> in(1024), scratch(1024 + 8);
  const std::uint64_t ranges[] = {1, 2, 3, 5, 7, 10, 201, 255, 256, 257, 1000, 65535, 65537,
                                  1u << 20, 3000000000ull, kMaxRadixRange};
  for (std::uint64_t range : ranges) {
    for (std::size_t count : {0, 1, 2, 3, 4, 5, 22, 23, 341, 342, 1000, 1023, 1024}) {
      const std::uint64_t base = rng();
      for (std::size_t i = 0; i < count; ++i) in[i] = base + rng() % range;
      if (count > 0) in[count - 1] = base + range - 1;  // the top digit occurs
      const std::size_t bytes = RadixPackedBytes(count, range);
      // Exact-size heap copies: an over-read past the stream is an ASan report.
      std::vector<std::uint8_t> packed(bytes + 1, 0xee);
      PackRadix(in.data(), count, base, range, packed.data());
      EXPECT_EQ(packed[bytes], 0xee) << "wrote past " << bytes << " bytes";
      const std::vector<std::uint8_t> exact(packed.begin(), packed.begin() + static_cast<long>(bytes));
      // The output is exact-size too: the unpacking stages the stream in it.
      std::vector<std::uint64_t> out(count);
      ASSERT_TRUE(UnpackRadix(exact.data(), count, base, range, scratch.data(), out.data()))
          << range << " x " << count;
      for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], in[i]) << range << " " << i;
    }
  }
}

TEST(RadixPacking, RejectsFieldsPastTheirDigitsAndBitsAfterTheLastField) {
  std::vector<std::uint64_t> in(10, 200), out(10), scratch(1024 + 8);
  // 10 digits of 201: 4 fields of 23 bits = 92 bits in 12 bytes, 4 spare bits.
  std::vector<std::uint8_t> packed(RadixPackedBytes(10, 201));
  ASSERT_EQ(packed.size(), 12u);
  PackRadix(in.data(), 10, 0, 201, packed.data());
  ASSERT_TRUE(UnpackRadix(packed.data(), 10, 0, 201, scratch.data(), out.data()));
  std::vector<std::uint8_t> high = packed;
  high[0] = high[1] = 0xff;
  high[2] |= 0x7f;  // the first field all ones: 2^23 - 1 > 201^3
  EXPECT_FALSE(UnpackRadix(high.data(), 10, 0, 201, scratch.data(), out.data()));
  std::vector<std::uint8_t> tail = packed;
  tail[11] |= 0x80;
  EXPECT_FALSE(UnpackRadix(tail.data(), 10, 0, 201, scratch.data(), out.data()));
  // The last field (bits 69..91) holds one digit: 201 there (200 and its lowest bit) is past it,
  // though below 201^3.
  std::vector<std::uint8_t> last = packed;
  last[8] |= 0x20;
  EXPECT_FALSE(UnpackRadix(last.data(), 10, 0, 201, scratch.data(), out.data()));
  // A middle field past its digits: field 2 (bits 46..68) is 200 * (1 + 201 + 201^2) =
  // 201^3 - 1; its low 16 bits all ones make it larger.
  std::vector<std::uint8_t> middle = packed;
  middle[5] |= 0xc0;
  middle[6] = 0xff;
  middle[7] |= 0x3f;
  EXPECT_FALSE(UnpackRadix(middle.data(), 10, 0, 201, scratch.data(), out.data()));
}

// A TSBS-like series: a 2-decimal random walk whose steps are uniform over [-1.00, +1.00].
std::vector<double> Walk(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(n);
  std::int64_t cents = 5000;
  for (double& x : v) {
    cents += static_cast<std::int64_t>(rng() % 201) - 100;
    x = static_cast<double>(cents) / 100.0;
  }
  return v;
}

TEST(AlpRadix, CompactWritesAWalkAsRadixDigits) {
  auto ws = std::make_unique<Workspace>();
  const auto v = Walk(1024, 3);
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  SeriesHint ingest_hint, compact_hint;
  const EncodeResult ingest = EncodeDoubles(v, ingest_hint, *ws, buf);
  const EncodeResult compact = EncodeDoublesCompact(v, compact_hint, *ws, buf);
  ASSERT_EQ(compact.encoding, FloatEncoding::kAlpRadix) << FloatEncodingName(compact.encoding);
  // 1023 deltas of 201 values in 23 bits per 3, plus a 14-byte header at most.
  EXPECT_LE(compact.bytes, RadixPackedBytes(1023, 201) + 14);
  EXPECT_LT(compact.bytes * 100, ingest.bytes * 97) << FloatEncodingName(ingest.encoding);
  EXPECT_EQ(buf[kAlpZstdFlagsOffset] & 1, 1);  // deltas
  std::vector<double> back(1024);
  const std::vector<std::uint8_t> exact(buf.begin(), buf.begin() + static_cast<long>(compact.bytes));
  ASSERT_TRUE(DecodeDoubles(exact, back, *ws).ok());
  EXPECT_TRUE(BitEqual(v, back));
}

// Heads are stored with EncodeDoublesForHead: radix digits when the ingest choice is ALP and
// radix is smaller, the ingest choice (and its exact bytes) otherwise.
TEST(AlpRadix, HeadEncodingTakesRadixDigitsOnlyOverAnAlpChoice) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::uint8_t> ingest_buf(MaxEncodedFloatBytes(1024, 8));
  std::vector<std::uint8_t> head_buf(MaxEncodedFloatBytes(1024, 8));
  const auto walk = Walk(1000, 8);
  SeriesHint ingest_hint, head_hint;
  const EncodeResult ingest = EncodeDoubles(walk, ingest_hint, *ws, ingest_buf);
  const EncodeResult head = EncodeDoublesForHead(walk, head_hint, *ws, head_buf);
  ASSERT_EQ(ingest.encoding, FloatEncoding::kAlpDelta) << FloatEncodingName(ingest.encoding);
  ASSERT_EQ(head.encoding, FloatEncoding::kAlpRadix) << FloatEncodingName(head.encoding);
  EXPECT_LT(head.bytes * 100, ingest.bytes * 97);
  std::vector<double> back(walk.size());
  const std::vector<std::uint8_t> exact(head_buf.begin(), head_buf.begin() + static_cast<long>(head.bytes));
  ASSERT_TRUE(DecodeDoubles(exact, back, *ws).ok());
  EXPECT_TRUE(BitEqual(walk, back));
  // Real doubles (not decimals): the ingest choice is not ALP, and the head writes it unchanged.
  std::mt19937_64 rng(9);
  std::vector<double> noisy(1024);
  double x = 1.0;
  for (double& v : noisy) v = (x += std::ldexp(static_cast<double>(rng() >> 11), -60));
  SeriesHint ingest_noisy, head_noisy;
  const EncodeResult a = EncodeDoubles(noisy, ingest_noisy, *ws, ingest_buf);
  const EncodeResult b = EncodeDoublesForHead(noisy, head_noisy, *ws, head_buf);
  ASSERT_NE(a.encoding, FloatEncoding::kAlp);
  ASSERT_NE(a.encoding, FloatEncoding::kAlpDelta);
  EXPECT_EQ(a.encoding, b.encoding);
  ASSERT_EQ(a.bytes, b.bytes);
  EXPECT_TRUE(std::equal(ingest_buf.begin(), ingest_buf.begin() + static_cast<long>(a.bytes),
                         head_buf.begin()));
}

TEST(AlpRadix, OffsetsExceptionsAndFloatsRoundTrip) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(4);
  // Readings spread evenly over 0.0 .. 99.9 (offsets beat deltas), with NaN and infinity slots.
  std::vector<double> v(1000);
  for (double& x : v) x = static_cast<double>(rng() % 1000) / 10.0;
  v[0] = std::nan("");
  v[500] = std::numeric_limits<double>::infinity();
  v[999] = -0.0;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8));
  SeriesHint hint;
  const EncodeResult r = EncodeDoublesAs(FloatEncoding::kAlpRadix, v, hint, *ws, buf);
  ASSERT_EQ(r.encoding, FloatEncoding::kAlpRadix);
  EXPECT_EQ(buf[kAlpZstdFlagsOffset] & 1, 0);  // offsets
  EXPECT_EQ(LoadLe<std::uint16_t>(buf.data() + kAlpZstdExceptionCountOffset), 3u);
  std::vector<double> back(v.size());
  ASSERT_TRUE(DecodeDoubles({buf.data(), r.bytes}, back, *ws).ok());
  EXPECT_TRUE(BitEqual(v, back));

  std::vector<float> f(300);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(rng() % 600) * 0.5f - 20.f;
  std::vector<std::uint8_t> fbuf(MaxEncodedFloatBytes(f.size(), 4));
  const EncodeResult fr = EncodeFloatsAs(FloatEncoding::kAlpRadix, f, hint, *ws, fbuf);
  ASSERT_EQ(fr.encoding, FloatEncoding::kAlpRadix);
  std::vector<float> fback(f.size());
  ASSERT_TRUE(DecodeFloats({fbuf.data(), fr.bytes}, fback, *ws).ok());
  EXPECT_TRUE(BitEqual(f, fback));
}

TEST(AlpRadix, CorruptBlocksNameTheField) {
  auto ws = std::make_unique<Workspace>();
  const auto v = Walk(100, 5);
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8));
  SeriesHint hint;
  const EncodeResult r = EncodeDoublesAs(FloatEncoding::kAlpRadix, v, hint, *ws, buf);
  ASSERT_EQ(r.encoding, FloatEncoding::kAlpRadix);
  const std::vector<std::uint8_t> good(buf.begin(), buf.begin() + static_cast<long>(r.bytes));
  std::vector<double> back(v.size());
  auto expect_corrupt = [&](const std::vector<std::uint8_t>& block, const std::string& needle) {
    ExpectCorruptNaming(block, back.size(), *ws, needle);
  };
  auto with = [&](std::size_t offset, std::uint8_t byte) { return WithByte(good, offset, byte); };
  expect_corrupt(with(kAlpZstdExponentOffset, 40), "exponent 40");
  expect_corrupt(with(kAlpZstdFlagsOffset, 3), "unknown flags 3");
  expect_corrupt(with(kAlpZstdExceptionCountOffset, 200), "exception count 200");
  // The header's varints: all continuation bytes run past ten bytes or the block.
  std::vector<std::uint8_t> varints = good;
  for (std::size_t i = kAlpRadixHeaderBytes; i < kAlpRadixHeaderBytes + 11; ++i) varints[i] = 0xff;
  expect_corrupt(varints, "varints truncated or too long");
  expect_corrupt({good.begin(), good.end() - 1}, "layout needs");
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  expect_corrupt(longer, "layout needs");
  // The last byte holds the last field's top bits and the spare bits after it.
  std::vector<std::uint8_t> tail = good;
  tail.back() = 0xff;
  expect_corrupt(tail, "past its digits, or bits after the last field");
}

TEST(DictionaryRadix, IndexesIntoThreeValuesTakeUnderTwoBitsEach) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(6);
  // Three states in no order: runs are short, so one index per value; 2-bit FFOR would take 256
  // bytes, radix digits 206.
  std::vector<double> v(1024);
  for (double& x : v) x = 0.5 * static_cast<double>(rng() % 3) + 1.0;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8));
  SeriesHint hint;
  const EncodeResult r = EncodeDoublesAs(FloatEncoding::kDictionary, v, hint, *ws, buf);
  ASSERT_EQ(r.encoding, FloatEncoding::kDictionary);
  EXPECT_EQ(buf[kDictionaryFlagsOffset], kDictionaryRadixFlag);
  const std::size_t nested = LoadLe<std::uint16_t>(buf.data() + kDictionaryBlockBytesOffset);
  EXPECT_EQ(r.bytes, kDictionaryHeaderBytes + nested + RadixPackedBytes(1024, 3));
  std::vector<double> back(v.size());
  const std::vector<std::uint8_t> exact(buf.begin(), buf.begin() + static_cast<long>(r.bytes));
  ASSERT_TRUE(DecodeDoubles(exact, back, *ws).ok());
  EXPECT_TRUE(BitEqual(v, back));
  // A field past 3^17.
  std::vector<std::uint8_t> high = exact;
  for (std::size_t i = 0; i < 4; ++i) high[kDictionaryHeaderBytes + nested + i] = 0xff;
  const Status st = DecodeDoubles(high, back, *ws);
  EXPECT_NE(st.ToString().find("field past their digits"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace ingot::codec
