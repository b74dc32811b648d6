// Corrupt input: truncations at every byte and random bit flips of blocks of every encoding give an
// error or a valid decode, never a crash or an out-of-bounds access (run under ASan+UBSan).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include "codec/codec.h"
#include "codec/format.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using testing::MakePattern;
using testing::Pattern;

constexpr FloatEncoding kEncodings[] = {
    FloatEncoding::kRaw,       FloatEncoding::kConstant, FloatEncoding::kAlp,
    FloatEncoding::kAlpDelta,  FloatEncoding::kAlpRd,    FloatEncoding::kGorilla,
    FloatEncoding::kXorGroups, FloatEncoding::kAlpZstd,  FloatEncoding::kDictionary,
    FloatEncoding::kAlpRadix,  FloatEncoding::kAlpRice,  FloatEncoding::kAlpHuffman,
    FloatEncoding::kAlpRanked};

template <typename T>
std::vector<std::vector<std::uint8_t>> EncodedBlocks(Workspace& ws) {
  std::vector<std::vector<std::uint8_t>> blocks;
  // kResetCounter: ALP with delta and one delta stored apart. Short blocks of 77 and 300 values:
  // Huffman codes split into two and eight segments.
  for (Pattern p : {Pattern::kConstant, Pattern::kWalk2, Pattern::kSmooth, Pattern::kSpecials,
                    Pattern::kRandomBits, Pattern::kResetCounter}) {
    for (std::size_t n : {std::size_t{1024}, std::size_t{77}, std::size_t{300}}) {
      const auto v = MakePattern<T>(p, n, 11);
      for (FloatEncoding e : kEncodings) {
        SeriesHint hint;
        std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(n, sizeof(T)));
        EncodeResult r;
        if constexpr (sizeof(T) == 8) {
          r = EncodeDoublesAs(e, v, hint, ws, buf);
        } else {
          r = EncodeFloatsAs(e, v, hint, ws, buf);
        }
        if (r.encoding != e) continue;
        buf.resize(r.bytes);
        blocks.push_back(buf);
      }
    }
  }
  return blocks;
}

template <typename T>
Status DecodeInto(const std::vector<std::uint8_t>& src, std::size_t n, Workspace& ws) {
  // Decode from an exact-size heap copy so ASan sees any over-read.
  auto copy = std::make_unique<std::uint8_t[]>(src.size() + 1);
  if (!src.empty()) std::memcpy(copy.get(), src.data(), src.size());
  std::vector<T> out(n);
  if constexpr (sizeof(T) == 8) {
    return DecodeDoubles({copy.get(), src.size()}, out, ws);
  } else {
    return DecodeFloats({copy.get(), src.size()}, out, ws);
  }
}

template <typename T>
void Torture() {
  auto ws = std::make_unique<Workspace>();
  const auto blocks = EncodedBlocks<T>(*ws);
  ASSERT_GE(blocks.size(), 20u);
  // Among them ALP with delta and a delta stored apart (kResetCounter).
  EXPECT_TRUE(std::any_of(blocks.begin(), blocks.end(), [](const auto& b) {
    return b[0] == static_cast<std::uint8_t>(FloatEncoding::kAlpDelta) &&
           (b[kAlpWidthOffset] & kAlpDeltaPatchFlag) != 0;
  }));
  // And Rice codes with escapes (kResetCounter's reset among small deltas).
  EXPECT_TRUE(std::any_of(blocks.begin(), blocks.end(), [](const auto& b) {
    return b[0] == static_cast<std::uint8_t>(FloatEncoding::kAlpRice) &&
           (b[kAlpZstdFlagsOffset] & compact::kEscapeFlag) != 0;
  }));
  // And Huffman codes of a short block split into segments.
  EXPECT_TRUE(std::any_of(blocks.begin(), blocks.end(), [](const auto& b) {
    return b[0] == static_cast<std::uint8_t>(FloatEncoding::kAlpHuffman) &&
           (b[kAlpZstdFlagsOffset] & compact::kSplitFlag) != 0;
  }));
  // And ranked bit lengths of a full block of deltas (lane order) and of a short block.
  for (const std::size_t n : {std::size_t{1024}, std::size_t{300}}) {
    EXPECT_TRUE(std::any_of(blocks.begin(), blocks.end(), [n](const auto& b) {
      return b[0] == static_cast<std::uint8_t>(FloatEncoding::kAlpRanked) &&
             (b[kAlpZstdFlagsOffset] & compact::kDeltaFlag) != 0 &&
             static_cast<std::size_t>(b[1] | b[2] << 8) == n;
    })) << n;
  }
  std::mt19937_64 rng(42);
  for (const auto& block : blocks) {
    const std::size_t n = block[1] | (block[2] << 8);
    ASSERT_TRUE(DecodeInto<T>(block, n, *ws).ok());
    for (std::size_t len = 0; len < block.size(); ++len) {
      std::vector<std::uint8_t> cut(block.begin(), block.begin() + len);
      const Status st = DecodeInto<T>(cut, n, *ws);
      EXPECT_FALSE(st.ok()) << "truncated to " << len << " of " << block.size();
      if (!st.ok()) {
        EXPECT_TRUE(st.IsCorruption()) << st.ToString();
      }
    }
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<std::uint8_t> flipped = block;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < flips; ++k) {
        flipped[rng() % flipped.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      }
      (void)DecodeInto<T>(flipped, n, *ws);  // any status; must not crash
    }
    // A wrong expected count is always reported.
    EXPECT_TRUE(DecodeInto<T>(block, n == 1024 ? 1000 : 1024, *ws).IsCorruption());
  }
}

TEST(CorruptionTest, DoubleBlocks) { Torture<double>(); }
TEST(CorruptionTest, FloatBlocks) { Torture<float>(); }

TEST(CorruptionTest, HeaderFieldsAreNamed) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  const auto v = MakePattern<double>(Pattern::kWalk2, 1024, 3);
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  const EncodeResult r = EncodeDoublesAs(FloatEncoding::kAlp, v, hint, *ws, buf);
  ASSERT_EQ(r.encoding, FloatEncoding::kAlp);
  buf.resize(r.bytes);
  std::vector<double> out(1024);
  auto bad = buf;
  bad[3] = 40;  // exponent
  Status st = DecodeDoubles(bad, out, *ws);
  ASSERT_TRUE(st.IsCorruption());
  EXPECT_NE(st.ToString().find("exponent 40"), std::string::npos) << st.ToString();
  bad = buf;
  bad[5] = 65;  // bit width
  st = DecodeDoubles(bad, out, *ws);
  EXPECT_NE(st.ToString().find("bit width 65"), std::string::npos) << st.ToString();
  bad = buf;
  bad[0] = 77;  // encoding
  st = DecodeDoubles(bad, out, *ws);
  EXPECT_NE(st.ToString().find("unknown encoding 77"), std::string::npos) << st.ToString();
  bad = buf;
  bad[6] = 0xff;  // exception count
  bad[7] = 0xff;
  st = DecodeDoubles(bad, out, *ws);
  EXPECT_NE(st.ToString().find("exception count 65535"), std::string::npos) << st.ToString();
  std::vector<double> small(10);
  st = DecodeDoubles(buf, small, *ws);
  EXPECT_NE(st.ToString().find("count 1024, expected 10"), std::string::npos) << st.ToString();
}

TEST(CorruptionTest, IntBlocks) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(9);
  std::vector<std::vector<std::int64_t>> inputs;
  std::vector<std::int64_t> ts(1024), walk(1024), random(1024), small(5);
  for (std::size_t i = 0; i < 1024; ++i) {
    ts[i] = 1700000000000000000 + static_cast<std::int64_t>(i) * 1000000000;
    walk[i] = (i ? walk[i - 1] : 0) + static_cast<std::int64_t>(rng() % 100) - 50;
    random[i] = static_cast<std::int64_t>(rng());
  }
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<std::int64_t>(i * i);
  for (const auto* in : {&ts, &walk, &random, &small}) {
    std::vector<std::uint8_t> buf(MaxEncodedIntBytes(in->size()));
    buf.resize(EncodeInts(*in, *ws, buf));
    std::vector<std::int64_t> out(in->size());
    ASSERT_TRUE(DecodeInts(buf, out, *ws).ok());
    for (std::size_t len = 0; len < buf.size(); ++len) {
      auto cut = std::make_unique<std::uint8_t[]>(len + 1);
      if (len > 0) std::memcpy(cut.get(), buf.data(), len);
      EXPECT_TRUE(DecodeInts({cut.get(), len}, out, *ws).IsCorruption()) << len;
    }
    for (int trial = 0; trial < 300; ++trial) {
      auto flipped = buf;
      flipped[rng() % flipped.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      (void)DecodeInts(flipped, out, *ws);
    }
  }
}

}  // namespace
}  // namespace ingot::codec
