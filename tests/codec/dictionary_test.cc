// The dictionary encoding (kDictionary): round trips of repeated values in both index layouts, the
// values that must survive bit for bit, the compact chooser's use of it, and named errors for
// every header field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using testing::BitEqual;
using testing::ExpectCorruptNaming;
using testing::WithByte;

// Encodes `values` as a dictionary block (forced), checks that it is one, and round-trips it from
// an exact-size copy.
template <typename T>
std::vector<std::uint8_t> DictionaryRoundTrip(const std::vector<T>& values, Workspace& ws) {
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(values.size(), sizeof(T)));
  SeriesHint hint;
  const EncodeResult r = testing::EncodeAs<T>(FloatEncoding::kDictionary, values, hint, ws, buf);
  EXPECT_EQ(r.encoding, FloatEncoding::kDictionary);
  buf.resize(r.bytes);
  std::vector<T> back(values.size());
  const Status st = testing::Decode<T>(std::vector<std::uint8_t>(buf), back, ws);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(BitEqual(values, back));
  return buf;
}

bool HasRunBitmap(const std::vector<std::uint8_t>& block) {
  return (block[kDictionaryFlagsOffset] & kDictionaryRunsFlag) != 0;
}

TEST(Dictionary, ScatteredRepeatsUseOneIndexPerValue) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(7);
  // 40 distinct prices drawn at random: few runs, so one index per value is smaller.
  std::vector<double> palette(40);
  for (std::size_t k = 0; k < palette.size(); ++k) palette[k] = 1.25 * static_cast<double>(k) - 3.1;
  std::vector<double> v(1024);
  for (double& x : v) x = palette[rng() % palette.size()];
  const auto block = DictionaryRoundTrip(v, *ws);
  EXPECT_FALSE(HasRunBitmap(block));
  EXPECT_EQ(LoadLe<std::uint16_t>(block.data() + kDictionarySizeOffset), 40u);
  // 6-bit indexes and a small dictionary: well under a byte per value.
  EXPECT_LT(block.size(), 1024u * 6 / 8 + 200);
}

TEST(Dictionary, RunsOfRepeatsUseABitmapAndOneIndexPerRun) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(8);
  std::vector<double> v;
  // Coordinates that recur, each held for a while (a vehicle waiting at a stop).
  std::vector<double> places(300);
  for (double& p : places) p = -73.9 - static_cast<double>(rng() % 1000000) * 1e-7;
  while (v.size() < 1000) {
    const double p = places[rng() % places.size()];
    for (std::size_t k = 0, len = 1 + rng() % 6; k < len && v.size() < 1000; ++k) v.push_back(p);
  }
  const auto block = DictionaryRoundTrip(v, *ws);
  EXPECT_TRUE(HasRunBitmap(block));
}

TEST(Dictionary, ValuesThatMustSurviveBitForBit) {
  auto ws = std::make_unique<Workspace>();
  const double nan1 = std::bit_cast<double>(0x7ff8000000000001ull);
  const double nan2 = std::bit_cast<double>(0xfff0000000000abcull);
  const std::vector<double> specials = {0.0,  -0.0, nan1, nan2, std::numeric_limits<double>::infinity(),
                                        -std::numeric_limits<double>::infinity(),
                                        std::numeric_limits<double>::denorm_min(), -1e308, 1e-300, 42.5};
  std::vector<double> v;
  std::mt19937_64 rng(9);
  for (std::size_t i = 0; i < 777; ++i) v.push_back(specials[rng() % specials.size()]);
  DictionaryRoundTrip(v, *ws);
  // One distinct value: indexes of width 0.
  const auto one = DictionaryRoundTrip(std::vector<double>(100, -0.0), *ws);
  EXPECT_EQ(LoadLe<std::uint16_t>(one.data() + kDictionarySizeOffset), 1u);
  // Floats: the same with 32-bit patterns.
  std::vector<float> f;
  for (std::size_t i = 0; i < 1024; ++i) {
    f.push_back(i % 3 == 0 ? std::bit_cast<float>(0x7fc00001u) : static_cast<float>(i % 17) * -0.5f);
  }
  DictionaryRoundTrip(f, *ws);
}

TEST(Dictionary, SortedDictionaryAndIndexesAgree) {
  const std::vector<double> v = {3.0, -1.0, 3.0, 0.0, -0.0, -2.5, 3.0, 0.0};
  double distinct[8];
  std::uint16_t indexes[8];
  const std::size_t d = FindDistinct<double>(v, distinct, indexes);
  ASSERT_EQ(d, 5u);
  SortDictionary<double>(distinct, d, indexes);
  const std::vector<double> sorted(distinct, distinct + d);
  EXPECT_TRUE(BitEqual(sorted, std::vector<double>{-2.5, -1.0, -0.0, 0.0, 3.0}));
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(sorted[indexes[i]]), std::bit_cast<std::uint64_t>(v[i]))
        << i;
  }
  EXPECT_EQ(CountRuns(std::span<const std::uint16_t>(indexes, 8)), 8u);
}

TEST(Dictionary, CompactChoosesItOnlyWhenSmaller) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(10);
  std::vector<double> places(200);
  for (double& p : places) p = 40.7 + static_cast<double>(rng() % 10000000000ull) * 1e-13;
  std::vector<double> v(1024);
  for (double& x : v) x = places[rng() % places.size()];
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  SeriesHint ingest_hint, compact_hint;
  const EncodeResult ingest = EncodeDoubles(v, ingest_hint, *ws, buf);
  const EncodeResult compact = EncodeDoublesCompact(v, compact_hint, *ws, buf);
  EXPECT_EQ(compact.encoding, FloatEncoding::kDictionary);
  EXPECT_LT(compact.bytes * 2, ingest.bytes) << FloatEncodingName(ingest.encoding);
  std::vector<double> back(1024);
  ASSERT_TRUE(DecodeDoubles({buf.data(), compact.bytes}, back, *ws).ok());
  EXPECT_TRUE(BitEqual(v, back));
  // Every value distinct: never a dictionary.
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1 * static_cast<double>(i) + 1e-9;
  SeriesHint fresh;
  EXPECT_NE(EncodeDoublesCompact(v, fresh, *ws, buf).encoding, FloatEncoding::kDictionary);
}

// The dictionary's own block is decoded with every dictionary block, so it is written with the
// encodings that decode fast: a table or a zstd frame per block would cost more than the bytes it
// saves there. Temperatures at 0.1 degree with a -99 sentinel: 150 distinct values whose sorted
// gaps are mostly one step, which Huffman codes write in half the bytes of Rice codes.
TEST(Dictionary, OwnBlockIsWrittenWithFastDecodingEncodings) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(11);
  std::vector<double> places{-99.0};
  std::int64_t tenths = 200;
  while (places.size() < 150) {
    tenths += rng() % 8 == 0 ? 2 + static_cast<std::int64_t>(rng() % 40) : 1;
    places.push_back(static_cast<double>(tenths) / 10);
  }
  std::vector<double> v(1024);
  for (double& x : v) x = places[rng() % places.size()];
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  SeriesHint hint;
  const EncodeResult r = EncodeDoublesCompact(v, hint, *ws, buf);
  ASSERT_EQ(r.encoding, FloatEncoding::kDictionary);
  const std::size_t own_bytes = LoadLe<std::uint16_t>(buf.data() + kDictionaryBlockBytesOffset);
  const auto own = static_cast<FloatEncoding>(buf[kDictionaryHeaderBytes]);
  EXPECT_NE(own, FloatEncoding::kAlpHuffman);
  EXPECT_NE(own, FloatEncoding::kAlpRanked);
  EXPECT_NE(own, FloatEncoding::kAlpZstd);
  std::vector<double> back(1024);
  ASSERT_TRUE(DecodeDoubles({buf.data(), r.bytes}, back, *ws).ok());
  EXPECT_TRUE(BitEqual(v, back));
  // Ranked bit lengths would have been smaller by more than the margin a slower encoding must save.
  std::vector<double> sorted = places;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint8_t> ranked(MaxEncodedFloatBytes(sorted.size(), 8));
  SeriesHint fresh;
  const EncodeResult h = EncodeDoublesAs(FloatEncoding::kAlpRanked, sorted, fresh, *ws, ranked);
  ASSERT_EQ(h.encoding, FloatEncoding::kAlpRanked);
  EXPECT_LT(h.bytes + own_bytes / 32, own_bytes) << FloatEncodingName(own);
}

TEST(Dictionary, CorruptBlocksNameTheField) {
  auto ws = std::make_unique<Workspace>();
  std::vector<double> v;
  for (std::size_t i = 0; i < 200; ++i) v.push_back(static_cast<double>((i / 3) % 9) * 0.5);
  const auto good = DictionaryRoundTrip(v, *ws);
  ASSERT_TRUE(HasRunBitmap(good));
  std::vector<double> back(v.size());
  auto expect_corrupt = [&](const std::vector<std::uint8_t>& block, const std::string& needle) {
    ExpectCorruptNaming(block, back.size(), *ws, needle);
  };
  auto with = [&](std::size_t offset, std::uint8_t byte) { return WithByte(good, offset, byte); };
  auto with16 = [&](std::size_t offset, std::uint16_t value) {
    std::vector<std::uint8_t> b = good;
    StoreLe<std::uint16_t>(b.data() + offset, value);
    return b;
  };
  expect_corrupt(with16(kDictionarySizeOffset, 0), "dictionary of 0 values");
  expect_corrupt(with16(kDictionarySizeOffset, 201), "dictionary of 201 values");
  expect_corrupt(with(kDictionaryFlagsOffset, 4), "unknown flags 4");
  expect_corrupt(with16(kDictionaryBlockBytesOffset, 0xffff), "past the block");
  expect_corrupt(with(kDictionaryHeaderBytes, static_cast<std::uint8_t>(FloatEncoding::kDictionary)),
                 "itself a dictionary");
  expect_corrupt(with(kDictionaryHeaderBytes, 0xee), "dictionary: ");  // nested block's error
  const std::size_t nested = LoadLe<std::uint16_t>(good.data() + kDictionaryBlockBytesOffset);
  const std::size_t bitmap = kDictionaryHeaderBytes + nested;
  expect_corrupt(with(bitmap, good[bitmap] & 0xfe), "does not start a run");
  // 200 values: the bitmap's last byte holds values 192..199, all 8 bits used; a bit past them
  // needs a count that is not a multiple of 8.
  std::vector<double> odd(v.begin(), v.begin() + 197);
  const auto odd_block = DictionaryRoundTrip(odd, *ws);
  ASSERT_TRUE(HasRunBitmap(odd_block));
  std::vector<std::uint8_t> past = odd_block;
  past[kDictionaryHeaderBytes + LoadLe<std::uint16_t>(past.data() + kDictionaryBlockBytesOffset) +
       196 / 8] |= 0x80;
  std::vector<double> back_odd(odd.size());
  const Status st = DecodeDoubles(past, back_odd, *ws);
  EXPECT_NE(st.ToString().find("bits past the 197 values"), std::string::npos) << st.ToString();
  expect_corrupt({good.begin(), good.end() - 1}, "bytes of indexes");
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  expect_corrupt(longer, "bytes of indexes");
  // FFOR indexes (three runs of three values: radix digits would not be smaller): 2-bit indexes,
  // so 3 is past the dictionary.
  std::vector<double> three(150, 1.0);
  std::fill(three.begin() + 50, three.end(), 2.0);
  std::fill(three.begin() + 100, three.end(), 3.0);
  const auto ffor = DictionaryRoundTrip(three, *ws);
  ASSERT_EQ(ffor[kDictionaryFlagsOffset], kDictionaryRunsFlag);
  std::vector<std::uint8_t> high = ffor;
  high.back() |= 0x03;  // the first run's index
  std::vector<double> back_three(three.size());
  const Status high_st = DecodeDoubles(high, back_three, *ws);
  EXPECT_NE(high_st.ToString().find(">= dictionary size 3"), std::string::npos)
      << high_st.ToString();
}

}  // namespace
}  // namespace ingot::codec
