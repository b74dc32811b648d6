// Divided exceptions of the compact ALP encodings (kAlpZstd, kAlpRadix, kAlpRice, kAlpHuffman,
// kAlpRanked):
// values that ALP's multiplications do not give back, but their integer over 10^(exponent - factor)
// does, stay in the integer stream and cost two bytes each instead of ten; corrupt lists are named.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/alp_constants.h"
#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using testing::BitEqual;
using testing::ExpectCorruptNaming;

using compact::kDividedFlag;

using Encoder = std::size_t (*)(std::span<const double>, unsigned, unsigned, Workspace&,
                                std::span<std::uint8_t>) noexcept;
struct Case {
  const char* name;
  Encoder encode;
};
const Case kCases[] = {{"alp_zstd", EncodeAlpZstd<double>},
                       {"alp_radix", EncodeAlpRadix<double>},
                       {"alp_rice", EncodeAlpRice<double>},
                       {"alp_huffman", EncodeAlpHuffman<double>},
                       {"alp_ranked", EncodeAlpRanked<double>}};

// A slow walk with 6 decimals, as the IERS pole coordinates are printed.
std::vector<double> SixDecimals(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(1024);
  std::int64_t micro = -12'700;
  for (double& x : v) {
    micro += static_cast<std::int64_t>(rng() % 601) - 300;
    x = static_cast<double>(micro) / 1e6;  // the parse of its 6-decimal text
  }
  return v;
}

std::vector<std::uint8_t> Encode(const Case& c, const std::vector<double>& v, unsigned e,
                                 unsigned f, Workspace& ws) {
  std::vector<std::uint8_t> block(MaxEncodedFloatBytes(v.size(), 8));
  const std::size_t bytes = c.encode(v, e, f, ws, block);
  block.resize(bytes);  // exact size: an over-read is an ASan report
  return block;
}

// The positions the block lists as divided (its last two bytes count them).
std::vector<std::size_t> DividedPositions(const std::vector<std::uint8_t>& block) {
  const std::size_t d = LoadLe<std::uint16_t>(block.data() + block.size() - 2);
  std::vector<std::size_t> at;
  for (std::size_t k = 0; k < d; ++k) {
    at.push_back(LoadLe<std::uint16_t>(block.data() + block.size() - 2 - 2 * d + 2 * k));
  }
  return at;
}

TEST(CompactAlp, DividedExceptionsStayInTheStream) {
  auto ws = std::make_unique<Workspace>();
  auto v = SixDecimals(1);
  using C = AlpConstants<double>;
  for (const Case& c : kCases) {
    // Exponent 14, factor 8 (what ALP's search picks for such data): ALP's multiplications miss
    // about one value in a hundred; every one of them is its integer over 10^6.
    auto block = Encode(c, v, 14, 8, *ws);
    ASSERT_GT(block.size(), 0u) << c.name;
    EXPECT_EQ(block[kAlpZstdFlagsOffset] & kDividedFlag, kDividedFlag) << c.name;
    EXPECT_EQ(LoadLe<std::uint16_t>(block.data() + kAlpZstdExceptionCountOffset), 0) << c.name;
    const auto divided = DividedPositions(block);
    ASSERT_GE(divided.size(), 3u) << c.name;
    for (std::size_t i : divided) {
      const double integer = std::round(v[i] * 1e6);
      EXPECT_NE(integer * C::kExp10[8] * C::kFrac10[14], v[i]) << c.name << " at " << i;
    }
    std::vector<double> back(v.size());
    ASSERT_TRUE(DecodeDoubles(block, back, *ws).ok()) << c.name;
    EXPECT_TRUE(BitEqual(v, back)) << c.name;
  }
  // True exceptions beside them keep their ten bytes, and both kinds decode.
  v[0] = std::nan("");
  v[400] = 1e300;
  v[1023] = -0.0;
  for (const Case& c : kCases) {
    auto block = Encode(c, v, 14, 8, *ws);
    ASSERT_GT(block.size(), 0u) << c.name;
    EXPECT_EQ(LoadLe<std::uint16_t>(block.data() + kAlpZstdExceptionCountOffset), 3) << c.name;
    EXPECT_FALSE(DividedPositions(block).empty()) << c.name;
    std::vector<double> back(v.size());
    ASSERT_TRUE(DecodeDoubles(block, back, *ws).ok()) << c.name;
    EXPECT_TRUE(BitEqual(v, back)) << c.name;
  }
}

TEST(CompactAlp, CorruptDividedListsAreNamed) {
  auto ws = std::make_unique<Workspace>();
  const auto v = SixDecimals(2);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto good = Encode(c, v, 14, 8, *ws);
    ASSERT_EQ(good[kAlpZstdFlagsOffset] & kDividedFlag, kDividedFlag);
    const std::size_t d = DividedPositions(good).size();
    auto with_count = [&](std::size_t count) {
      auto block = good;
      StoreLe<std::uint16_t>(block.data() + block.size() - 2, static_cast<std::uint16_t>(count));
      return block;
    };
    ExpectCorruptNaming(with_count(0), v.size(), *ws, "divided value count 0");
    ExpectCorruptNaming(with_count(1025), v.size(), *ws, "divided value count 1025");
    // A count that reaches into the streams: the layout no longer adds up.
    std::vector<double> back(v.size());
    EXPECT_TRUE(DecodeDoubles(with_count(d + 1), back, *ws).IsCorruption());
    auto far = good;
    StoreLe<std::uint16_t>(far.data() + far.size() - 2 - 2 * d, 1024);
    ExpectCorruptNaming(far, v.size(), *ws, "divided value 0 at position 1024");
    // Without the flag the trailer is read as part of the streams: never a crash.
    auto unflagged = good;
    unflagged[kAlpZstdFlagsOffset] &= static_cast<std::uint8_t>(~kDividedFlag);
    const Status st = DecodeDoubles(unflagged, back, *ws);
    EXPECT_TRUE(!st.ok() || !BitEqual(v, back));
  }
}

}  // namespace
}  // namespace ingot::codec
