// ALP integers as Huffman-coded bit lengths (kAlpHuffman): the four streams it chooses between,
// short blocks and floats, a code of one category, sizes against zstd and Rice on skewed deltas
// and on the real city temperatures, exact rooms, the segment kernel at every ISA level, and named
// errors for corrupt blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using namespace compact;  // NOLINT(google-build-using-namespace): the flags
using testing::EncodeExact;
using testing::ExpectCorruptNaming;
using testing::ExpectRoundTrip;
using testing::FromInts;
using testing::StreamFlags;
using testing::WithByte;

// Integers whose best stream is each of the four: unrelated neighbours (offsets), a walk with
// steps near 0 (zigzagged deltas), a rise by at least 5,000 a step (deltas above the smallest), a
// slow curve (second differences; full blocks only).
std::vector<std::int64_t> StreamInts(int stream, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::int64_t> ints(n);
  std::int64_t x = 1000;
  for (std::size_t i = 0; i < n; ++i) {
    switch (stream) {
      case 0:
        ints[i] = static_cast<std::int64_t>(rng() % 300);
        break;
      case 1:  // mostly small steps either way, now and then a large one
        ints[i] = x += (rng() % 2 == 0 ? 1 : -1) *
                       static_cast<std::int64_t>(rng() % 16 == 0 ? rng() % 500 : rng() % 4);
        break;
      case 2:
        ints[i] = x += 5000 + static_cast<std::int64_t>(rng() % 8);
        break;
      default:
        ints[i] = std::llround(40000 * std::sin(static_cast<double>(i) / 150.0)) +
                  static_cast<std::int64_t>(rng() % 3);
    }
  }
  return ints;
}

template <typename T>
void EachStreamRoundTrips() {
  auto ws = std::make_unique<Workspace>();
  // The block lengths added for split blocks draw from their own generator, so that the others
  // keep their data (stream 2 as floats nears float precision, and some draws give raw blocks).
  std::mt19937_64 rng(5), split_rng(11);
  const int kFlags[] = {0, kDeltaFlag | kZigZagFlag | kPlaceholderFlag,
                        kDeltaFlag | kPlaceholderFlag,
                        kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag};
  // Short blocks split into 1, 2, 4 and 8 segments (their last one shorter or not), full ones.
  const std::vector<std::size_t> kLengths = {1, 2, 77, 128, 129, 1000, 1024};
  const std::vector<std::size_t> kSplitLengths = {63, 64, 255, 256, 300, 575};
  for (int stream = 0; stream < 4; ++stream) {
    for (const bool added : {false, true}) {
      for (const std::size_t n : added ? kSplitLengths : kLengths) {
        const auto v = FromInts<T>(StreamInts(stream, n, added ? split_rng : rng), 100);
        std::vector<std::uint8_t> block;
        const EncodeResult r = EncodeExact<T>(FloatEncoding::kAlpHuffman, v, *ws, block);
        ExpectRoundTrip(v, block, *ws);
        // One or two values are smaller raw.
        if (n > 2) {
          ASSERT_EQ(r.encoding, FloatEncoding::kAlpHuffman) << stream << " n " << n;
        }
        // The intended stream where the block is long enough to tell them apart.
        if (n >= 128 && (stream != 3 || n == kBlockCapacity)) {
          EXPECT_EQ(StreamFlags(block), kFlags[stream]) << stream << " n " << n;
        }
        // Short blocks of 64 codes or more are split.
        if (n > 2) {
          EXPECT_EQ((block[kAlpZstdFlagsOffset] & compact::kSplitFlag) != 0,
                    n >= 64 && n < kBlockCapacity)
              << stream << " n " << n;
        }
      }
    }
  }
}

TEST(AlpHuffman, EachStreamRoundTripsInEveryBlockLength) { EachStreamRoundTrips<double>(); }
TEST(AlpHuffman, FloatsRoundTrip) { EachStreamRoundTrips<float>(); }

TEST(AlpHuffman, ExceptionsAndDividedValuesComeBack) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(6);
  auto v = FromInts<double>(StreamInts(1, 1024, rng), 100);
  v[0] = 1.0 / 3.0;  // exceptions: first, middle, last, and a NaN
  v[500] = std::nan("7");
  v[1023] = 1e300;
  v[700] = 0.1234567;  // more decimals than the block's pair: divided or an exception
  std::vector<std::uint8_t> block;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpHuffman, v, *ws, block).encoding,
            FloatEncoding::kAlpHuffman);
  ExpectRoundTrip(v, block, *ws);
}

TEST(AlpHuffman, OneCategoryGetsAPartnerForACompleteCode) {
  auto ws = std::make_unique<Workspace>();
  // Steps of exactly 0.07: every delta above the smallest is 0, one category alone.
  std::vector<std::int64_t> ints(1024);
  for (std::size_t i = 0; i < ints.size(); ++i) ints[i] = 7 * static_cast<std::int64_t>(i);
  const auto v = FromInts<double>(ints, 100);
  std::vector<std::uint8_t> block;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpHuffman, v, *ws, block).encoding,
            FloatEncoding::kAlpHuffman);
  ExpectRoundTrip(v, block, *ws);
  // One bit a value, the eight segments' lengths and a few header bytes.
  EXPECT_LT(block.size(), 1024 / 8 + 40u);
}

// Temperature-like readings in tenths: small steps, a -99 sentinel now and then (a jump of
// thousands each way), which no one-parameter law fits.
std::vector<double> SkewedWithSentinels(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> step(0.35);
  std::vector<std::int64_t> ints(1024);
  std::int64_t t = 650;
  for (std::size_t i = 0; i < ints.size(); ++i) {
    t += (rng() % 2 == 0 ? 1 : -1) * step(rng);
    ints[i] = rng() % 40 == 0 ? -990 : t;
  }
  return FromInts<double>(ints, 10);
}

TEST(AlpHuffman, SkewedDeltasTakeLessThanZstdOrRice) {
  auto ws = std::make_unique<Workspace>();
  for (std::uint64_t seed : {1, 2, 3}) {
    const auto v = SkewedWithSentinels(seed);
    std::vector<std::uint8_t> huffman, zstd, rice;
    ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpHuffman, v, *ws, huffman).encoding,
              FloatEncoding::kAlpHuffman);
    ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpZstd, v, *ws, zstd).encoding,
              FloatEncoding::kAlpZstd);
    ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRice, v, *ws, rice).encoding,
              FloatEncoding::kAlpRice);
    ExpectRoundTrip(v, huffman, *ws);
    EXPECT_LT(huffman.size() * 100, zstd.size() * 97) << "seed " << seed << " zstd " << zstd.size();
    EXPECT_LT(huffman.size() * 100, rice.size() * 90) << "seed " << seed << " rice " << rice.size();
  }
}

TEST(AlpHuffman, RealTemperaturesTakeLessThanZstd) {
  std::vector<double> v;
  const std::string path = testing::DatasetsDir() + "/alp-rowgroups/city_temperature_f_tw.bin";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  ASSERT_TRUE(testing::ReadBin(path, &v));
  auto ws = std::make_unique<Workspace>();
  std::size_t huffman_bytes = 0, zstd_bytes = 0;
  for (std::size_t at = 0; at + kBlockCapacity <= v.size(); at += kBlockCapacity) {
    const std::vector<double> block_values(
        v.begin() + static_cast<std::ptrdiff_t>(at),
        v.begin() + static_cast<std::ptrdiff_t>(at + kBlockCapacity));
    std::vector<std::uint8_t> huffman, zstd;
    EncodeExact<double>(FloatEncoding::kAlpHuffman, block_values, *ws, huffman);
    EncodeExact<double>(FloatEncoding::kAlpZstd, block_values, *ws, zstd);
    ExpectRoundTrip(block_values, huffman, *ws);
    huffman_bytes += huffman.size();
    zstd_bytes += zstd.size();
  }
  // 6.9 against 7.3 bits per value when measured: the category code is near the deltas'
  // entropy where zstd's byte-wise code is not.
  EXPECT_LT(huffman_bytes * 100, zstd_bytes * 97) << huffman_bytes << " vs " << zstd_bytes;
}

TEST(AlpHuffman, ARoomJustLargeEnoughGivesTheSameBlock) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(9);
  for (int stream = 0; stream < 4; ++stream) {
    const auto v = FromInts<double>(StreamInts(stream, 1024, rng), 1000);
    std::vector<std::uint8_t> block;
    ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpHuffman, v, *ws, block).encoding,
              FloatEncoding::kAlpHuffman);
    const unsigned exponent = block[kBlockHeaderBytes], factor = block[kBlockHeaderBytes + 1];
    for (const std::size_t room : {block.size(), block.size() + 1, block.size() + 64}) {
      std::vector<std::uint8_t> scratch(room, 0);
      ASSERT_EQ(EncodeAlpHuffman<double>(v, exponent, factor, *ws, scratch), block.size()) << room;
      EXPECT_TRUE(std::equal(block.begin(), block.end(), scratch.begin())) << "room " << room;
    }
    for (const std::size_t room : {block.size() - 1, std::size_t{1}, std::size_t{12}}) {
      std::vector<std::uint8_t> short_room(room, 0);
      EXPECT_EQ(EncodeAlpHuffman<double>(v, exponent, factor, *ws, short_room), 0u) << room;
    }
  }
}

TEST(AlpHuffman, EveryKernelLevelDecodesTheSame) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(10);
  const simd::IsaLevel detected = simd::DetectIsa();
  for (int stream = 0; stream < 4; ++stream) {
    // Whole segments in every grouping the kernel advances together (8, 4, 2 and 1 at a time),
    // with and without a shorter last one.
    for (std::size_t n : {std::size_t{200}, std::size_t{256}, std::size_t{640}, std::size_t{773},
                          std::size_t{896}, std::size_t{1024}}) {
      const auto v = FromInts<double>(StreamInts(stream, n, rng), 100);
      std::vector<std::uint8_t> block;
      ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpHuffman, v, *ws, block).encoding,
                FloatEncoding::kAlpHuffman);
      for (simd::IsaLevel level :
           {simd::IsaLevel::kScalar, simd::IsaLevel::kAvx2, simd::IsaLevel::kAvx512}) {
        if (!simd::ForceIsa(level)) continue;
        ExpectRoundTrip(v, block, *ws);
      }
      ASSERT_TRUE(simd::ForceIsa(detected));
    }
  }
}

// The offset of the code table (K): after the fixed fields and the varints the flags call for.
std::size_t TableOffset(const std::vector<std::uint8_t>& block) {
  const int flags = StreamFlags(block);
  const int varints = ((flags & kDeltaFlag) != 0 ? 1 : 0) +
                      ((flags & kSecondOrderFlag) != 0 ? 1 : 0) +
                      ((flags & kZigZagFlag) == 0 ? 1 : 0);
  std::size_t at = kAlpHuffmanHeaderBytes;
  for (int i = 0; i < varints; ++i) {
    while (block[at] & 0x80) ++at;
    ++at;
  }
  return at;
}

TEST(AlpHuffman, CorruptBlocksNameTheField) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(11);
  const auto v = FromInts<double>(StreamInts(1, 1024, rng), 100);
  std::vector<std::uint8_t> block;
  ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpHuffman, v, *ws, block).encoding,
            FloatEncoding::kAlpHuffman);
  ASSERT_NE(StreamFlags(block) & kDeltaFlag, 0);
  const std::size_t n = v.size();
  const std::size_t k_at = TableOffset(block);
  const unsigned k = block[k_at];
  ExpectCorruptNaming(WithByte(block, k_at, 0), n, *ws, "0 categories");
  ExpectCorruptNaming(WithByte(block, k_at, 49), n, *ws, "49 categories");
  // A length of 9, then a length made one longer (the code no longer complete).
  ExpectCorruptNaming(
      WithByte(block, k_at + 1, static_cast<std::uint8_t>(0x90 | (block[k_at + 1] & 0xf))), n, *ws,
      "code length 9 > 8");
  {
    std::vector<std::uint8_t> longer = block;
    std::size_t at = k_at + 1;
    while ((longer[at] & 0xf) == 0 || (longer[at] & 0xf) == 8) ++at;  // a used length below 8
    longer[at] = static_cast<std::uint8_t>(longer[at] + 1);
    ExpectCorruptNaming(longer, n, *ws, "complete code");
  }
  // The first segment's length one byte more: it no longer ends where the next begins.
  const std::size_t lengths_at = k_at + 1 + (k + 1) / 2;
  ExpectCorruptNaming(WithByte(block, lengths_at, static_cast<std::uint8_t>(block[lengths_at] + 1)),
                      n, *ws, "segment 0 ends");
  // Segment lengths past the stream.
  ExpectCorruptNaming(WithByte(block, lengths_at + 1, 0xff), n, *ws, "segments of");
  // Flags: deltas without the placeholder; second differences without zigzag.
  ExpectCorruptNaming(WithByte(block, kAlpZstdFlagsOffset, kDeltaFlag | kZigZagFlag), n, *ws,
                      "disagree");
  ExpectCorruptNaming(
      WithByte(block, kAlpZstdFlagsOffset, kDeltaFlag | kPlaceholderFlag | kSecondOrderFlag), n,
      *ws, "second differences");
  // The split flag on a full block, whose segments are 128 codes each.
  ExpectCorruptNaming(WithByte(block, kAlpZstdFlagsOffset,
                               static_cast<std::uint8_t>(block[kAlpZstdFlagsOffset] | kSplitFlag)),
                      n, *ws, "split segments in a block of 1024 codes");
  // A header cut before the table.
  ExpectCorruptNaming(std::vector<std::uint8_t>(block.begin(), block.begin() + k_at), n, *ws,
                      "alp_huffman");
}

}  // namespace
}  // namespace ingot::codec
