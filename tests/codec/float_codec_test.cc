// Round trips of the adaptive float codec and of every single encoding, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <memory>
#include <random>

#include "codec/bit_packing.h"
#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using testing::BitEqual;
using testing::Decode;
using testing::Encode;
using testing::EncodeAs;
using testing::MakePattern;
using testing::Pattern;

constexpr std::size_t kSizes[] = {1, 2, 3, 7, 31, 32, 33, 100, 1000, 1023, 1024};
constexpr FloatEncoding kForced[] = {
    FloatEncoding::kRaw,       FloatEncoding::kConstant,   FloatEncoding::kAlp,
    FloatEncoding::kAlpDelta,  FloatEncoding::kAlpRd,      FloatEncoding::kGorilla,
    FloatEncoding::kXorGroups, FloatEncoding::kDictionary, FloatEncoding::kAlpRadix,
    FloatEncoding::kAlpRice,   FloatEncoding::kAlpHuffman, FloatEncoding::kAlpRanked};

template <typename T>
class FloatCodecTest : public ::testing::Test {
 protected:
  void ExpectRoundTrip(const std::vector<T>& values, const std::string& what) {
    std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(values.size(), sizeof(T)));
    const EncodeResult r = Encode<T>(values, hint_, *ws_, buf);
    ASSERT_GT(r.bytes, 0u) << what;
    ASSERT_LE(r.bytes, values.size() * sizeof(T) + 16) << what;
    FloatEncoding peeked;
    ASSERT_TRUE(PeekFloatEncoding({buf.data(), r.bytes}, &peeked).ok());
    EXPECT_EQ(peeked, r.encoding) << what;
    std::vector<T> back(values.size());
    const Status st = Decode<T>({buf.data(), r.bytes}, back, *ws_);
    ASSERT_TRUE(st.ok()) << what << ": " << st.ToString();
    EXPECT_TRUE(BitEqual(values, back)) << what << " via " << FloatEncodingName(r.encoding);
    for (FloatEncoding e : kForced) {
      SeriesHint hint;
      const EncodeResult f = EncodeAs<T>(e, values, hint, *ws_, buf);
      ASSERT_LE(f.bytes, values.size() * sizeof(T) + 16) << what;
      std::vector<T> back2(values.size());
      const Status st2 = Decode<T>({buf.data(), f.bytes}, back2, *ws_);
      ASSERT_TRUE(st2.ok()) << what << " forced " << FloatEncodingName(e) << ": " << st2.ToString();
      EXPECT_TRUE(BitEqual(values, back2)) << what << " forced " << FloatEncodingName(e)
                                           << " wrote " << FloatEncodingName(f.encoding);
    }
  }

  std::unique_ptr<Workspace> ws_ = std::make_unique<Workspace>();
  SeriesHint hint_;
};

using ValueTypes = ::testing::Types<double, float>;
TYPED_TEST_SUITE(FloatCodecTest, ValueTypes);

TYPED_TEST(FloatCodecTest, PatternMatrixRoundTrips) {
  for (Pattern p : testing::kAllPatterns) {
    for (std::size_t n : kSizes) {
      for (std::uint64_t seed = 1; seed <= 2; ++seed) {
        this->ExpectRoundTrip(MakePattern<TypeParam>(p, n, seed),
                              std::string(testing::PatternName(p)) + " n=" + std::to_string(n));
      }
    }
  }
}

TYPED_TEST(FloatCodecTest, SpecialValuesRoundTrip) {
  std::vector<TypeParam> v;
  for (double d : testing::SpecialDoubles()) v.push_back(static_cast<TypeParam>(d));
  if constexpr (sizeof(TypeParam) == 4) {
    v.push_back(std::bit_cast<float>(0x7fa00001u));  // signalling NaN with payload
    v.push_back(std::bit_cast<float>(0xffc00abcu));
    v.push_back(std::numeric_limits<float>::denorm_min());
    v.push_back(16777216.0f);
    v.push_back(16777215.0f);
  }
  this->ExpectRoundTrip(v, "specials");
  // Specials inside otherwise ALP-friendly blocks become exceptions.
  std::vector<TypeParam> block = MakePattern<TypeParam>(Pattern::kWalk2, 1024, 5);
  for (std::size_t i = 0; i < v.size(); ++i) block[i * 37 % 1024] = v[i];
  this->ExpectRoundTrip(block, "specials in walk2");
  std::vector<TypeParam> zeros(1024, TypeParam(0));
  zeros[5] = -TypeParam(0);
  this->ExpectRoundTrip(zeros, "zeros with -0");
}

TYPED_TEST(FloatCodecTest, HintCarriesAcrossBlocksOfOneSeries) {
  // A series that changes shape mid-stream: the hint must follow without hurting exactness.
  for (int block = 0; block < 80; ++block) {
    const Pattern p = block < 40 ? Pattern::kWalk2 : Pattern::kWalk4;
    this->ExpectRoundTrip(MakePattern<TypeParam>(p, 1024, block), "series block");
  }
  EXPECT_NE(this->hint_.exponent[0], 0xff);
}

TEST(FloatCodecSizes, ConstantBlocksTakeAtMostSixteenBytes) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  std::vector<double> v(1024, 3.14159);
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
  EXPECT_EQ(r.encoding, FloatEncoding::kConstant);
  EXPECT_LE(r.bytes, 16u);
}

// A first block that is one value but for a few (a counter at zero with rare events) costs the
// few values and their positions, also when the first value is one of the few; and it decodes.
// A dozen is the limit for doubles (at most a bit per value); beyond it the usual choice runs.
TEST(FloatCodecSizes, NearlyConstantFirstBlocksStoreOnlyTheOddValues) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  for (const double constant : {0.0, 37.5, -1.25}) {
    for (const std::size_t odd : {1u, 4u, 12u, 13u}) {
      std::vector<double> v(1024, constant);
      std::mt19937_64 rng(odd);
      for (std::size_t k = 0; k < odd; ++k) {
        v[k == 0 ? 0 : rng() % 1024] = static_cast<double>(rng() % 100000) / 7;
      }
      std::size_t different = 0;
      for (const double x : v) different += x != constant;
      SeriesHint hint;
      const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
      std::string where = "constant ";
      where.append(std::to_string(constant)).append(", odd ").append(std::to_string(odd));
      if (different <= 12) {
        EXPECT_EQ(r.encoding, FloatEncoding::kAlp) << where;
        EXPECT_EQ(r.bytes, kAlpHeaderBytes + different * (2 + sizeof(double))) << where;
        EXPECT_EQ(hint.last_encoding, static_cast<std::uint8_t>(FloatEncoding::kAlp)) << where;
      } else {
        EXPECT_GT(r.bytes, kAlpHeaderBytes + 12 * (2 + sizeof(double))) << where;
      }
      std::vector<double> back(v.size());
      ASSERT_TRUE(Decode<double>(std::span<const std::uint8_t>(buf.data(), r.bytes),
                                 std::span<double>(back), *ws)
                      .ok())
          << where;
      EXPECT_TRUE(BitEqual<double>(v, back)) << where;
    }
  }
}

// A first block's search hands the chooser its own estimate (a 64-value sample, and a window of
// neighbours for delta coding) with the mode: near the block's real ALP size for a decimal walk
// (delta) and for values whose neighbours are unrelated (plain), and none when the coarse ranking
// already put ALP far behind the rival encoding.
TEST(FloatCodecSizes, FirstBlockSearchEstimatesTheBlock) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(3);
  std::vector<double> walk(1024), scattered(1024), noise(1024);
  double x = 100;
  for (std::size_t i = 0; i < walk.size(); ++i) {
    x += static_cast<double>(static_cast<int>(rng() % 201) - 100) / 100;
    walk[i] = std::round(x * 100) / 100;
    scattered[i] = static_cast<double>(rng() % 100000) / 100;
    noise[i] = std::bit_cast<double>((rng() >> 12) | 0x3ff0000000000000ull);
  }
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  // The first block's search, its estimate against the block ALP writes with its pair and mode.
  const auto estimated = [&](const std::vector<double>& v, FloatEncoding written) {
    SeriesHint hint;
    const AlpChoice c = SearchAlpExponents<double>(v, hint, *ws, 64, true);
    EXPECT_GT(c.sampled_bits_per_value, 0);
    FloatEncoding chosen{};
    const std::size_t bytes =
        EncodeAlp<double, false>(v, c.exponent, c.factor, c.mode, *ws, buf, &chosen);
    EXPECT_EQ(chosen, written);
    const double real = static_cast<double>(bytes - kAlpHeaderBytes) * 8 / 1024;
    EXPECT_NEAR(c.sampled_bits_per_value, real, real / 4);
    return c;
  };
  EXPECT_EQ(estimated(walk, FloatEncoding::kAlpDelta).mode, AlpMode::kSmaller);
  estimated(scattered, FloatEncoding::kAlp);
  {
    SeriesHint hint;
    const AlpChoice c = SearchAlpExponents<double>(noise, hint, *ws, 8, true);
    EXPECT_EQ(c.sampled_bits_per_value, 0);
  }
}

// A first block of integers (counts with a long tail, also all multiples of ten) takes the pair
// that multiplies by one without ranking the others, and it packs them as small as the pair the
// ranked search takes for integers; a sample with one fraction or a -0.0 is ranked as before.
TEST(FloatCodecSizes, IntegerFirstBlocksMultiplyByOne) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(11);
  std::vector<double> counts(1024), tens(1024);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const auto c = static_cast<double>((rng() % 200) * (rng() % 16 == 0 ? 50 : 1));
    counts[i] = c;
    tens[i] = c * 10;
  }
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  SeriesHint hint;
  const AlpChoice c = SearchAlpExponents<double>(counts, hint, *ws, 64, true);
  EXPECT_EQ(c.exponent, 0);
  EXPECT_EQ(c.factor, 0);
  EXPECT_GT(c.sampled_bits_per_value, 0);
  FloatEncoding chosen{};
  const std::size_t bytes =
      EncodeAlp<double, false>(counts, c.exponent, c.factor, c.mode, *ws, buf, &chosen);
  const std::size_t ranked_pair =
      EncodeAlp<double, false>(counts, 14, 14, AlpMode::kSmaller, *ws, buf, &chosen);
  EXPECT_LE(bytes, ranked_pair);
  SeriesHint tens_hint;
  const AlpChoice t = SearchAlpExponents<double>(tens, tens_hint, *ws, 64, true);
  EXPECT_EQ(t.exponent, 0);
  EXPECT_EQ(t.factor, 0);
  for (const double odd : {0.5, -0.0}) {
    std::vector<double> mixed = counts;
    for (std::size_t i = 0; i < mixed.size(); i += 16) mixed[i] = odd;  // every sampled slot
    SeriesHint mixed_hint;
    const AlpChoice m = SearchAlpExponents<double>(mixed, mixed_hint, *ws, 64, true);
    EXPECT_FALSE(m.exponent == 0 && m.factor == 0) << odd;
  }
  std::vector<double> back(counts.size());
  SeriesHint fresh;
  const EncodeResult r = EncodeDoubles(counts, fresh, *ws, buf);
  ASSERT_TRUE(
      Decode<double>(std::span<const std::uint8_t>(buf.data(), r.bytes), std::span(back), *ws).ok());
  EXPECT_TRUE(BitEqual<double>(counts, back));
}

// A hint saved with a checkpointed head loads back field for field; bytes of another format, a
// short buffer or values no encoder writes are refused and leave the caller's hint alone.
TEST(SavedHint, RoundTripsAndRefusesWhatNoEncoderWrites) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  SeriesHint hint;
  for (int b = 0; b < 3; ++b) {
    (void)EncodeDoubles(MakePattern<double>(Pattern::kWalk2, 1024, b), hint, *ws, buf);
  }
  std::array<std::uint8_t, kSavedHintBytes> saved{};
  SaveHint(hint, saved);
  SeriesHint loaded;
  ASSERT_TRUE(LoadHint(saved, &loaded));
  std::array<std::uint8_t, kSavedHintBytes> again{};
  SaveHint(loaded, again);
  EXPECT_EQ(saved, again);
  EXPECT_EQ(loaded.exponent[0], hint.exponent[0]);
  EXPECT_EQ(loaded.last_bytes, hint.last_bytes);

  auto refused = [&](std::span<const std::uint8_t> bytes) {
    SeriesHint h;
    h.last_bytes = 1234;
    const bool ok = LoadHint(bytes, &h);
    return !ok && h.last_bytes == 1234;
  };
  EXPECT_TRUE(refused(std::span<const std::uint8_t>(saved).first(kSavedHintBytes - 1)));
  auto bad = saved;
  bad[0] = 99;  // format
  EXPECT_TRUE(refused(bad));
  bad = saved;
  bad[1] = 19;  // exponent beyond double's
  EXPECT_TRUE(refused(bad));
  bad = saved;
  bad[1] = 3;
  bad[4] = 4;  // factor above its exponent
  EXPECT_TRUE(refused(bad));
  bad = saved;
  bad[7] = 42;  // no such encoding
  EXPECT_TRUE(refused(bad));
}

TEST(FloatCodecSizes, RandomBitsStayWithinRawPlusHeader) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  const auto v = MakePattern<double>(Pattern::kRandomBits, 1024, 3);
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
  EXPECT_LE(r.bytes, 1024u * 8 + 16);
}

TEST(FloatCodecSizes, AlpDeltaWinsOnSmallStepGauges) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  std::vector<double> v(1024);
  double x = 5000;
  for (std::size_t i = 0; i < v.size(); ++i) {
    x += (i % 7 == 0) ? 0.1 : ((i % 5 == 0) ? -0.1 : 0.0);
    v[i] = std::round(x * 10) / 10;
  }
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
  EXPECT_EQ(r.encoding, FloatEncoding::kAlpDelta);
  EXPECT_LT(r.bytes, 1024u * 3 / 8 + 64);
}

// ALP's choice between plain and delta packing skips the pass over all deltas when a sample of
// them is already as wide as the plain integers; the choice must stay the smaller of the two, on
// series where delta wins, where it loses and where they are close.
TEST(FloatCodecSizes, AlpTakesTheSmallerOfPlainAndDelta) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  std::size_t delta_wins = 0, plain_wins = 0;
  for (Pattern p : testing::kAllPatterns) {
    for (std::uint64_t seed : {1, 2, 3}) {
      const auto v = MakePattern<double>(p, 1024, seed);
      SeriesHint hint;
      const AlpChoice alp = SearchAlpExponents<double>(v, hint, *ws);
      FloatEncoding chosen;
      const std::size_t smaller = EncodeAlp<double, true>(v, alp.exponent, alp.factor,
                                                          AlpMode::kSmaller, *ws, buf, &chosen);
      const std::size_t plain =
          EncodeAlp<double, true>(v, alp.exponent, alp.factor, AlpMode::kPlain, *ws, buf, nullptr);
      const std::size_t delta =
          EncodeAlp<double, true>(v, alp.exponent, alp.factor, AlpMode::kDelta, *ws, buf, nullptr);
      if (plain == 0) continue;  // every value an exception
      EXPECT_EQ(smaller, std::min(plain, delta)) << testing::PatternName(p) << " seed " << seed;
      delta_wins += delta < plain ? 1 : 0;
      plain_wins += plain < delta ? 1 : 0;
    }
  }
  EXPECT_GT(delta_wins, 0u);
  EXPECT_GT(plain_wins, 0u);
}

// A few values far from the rest become exceptions and the others pack at their own width, at
// either end of the range (the window anchored at the low or the high end); the search walks the
// widths down past all those the far values span. Many far values keep the full width.
TEST(FloatCodecSizes, AlpWritesFarOutliersAsExceptions) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  std::mt19937_64 rng(21);
  for (const double far : {1e6, -1e6}) {
    for (const std::size_t outliers : {std::size_t{3}, std::size_t{300}}) {
      std::vector<double> v(1024);
      // Two decimals in [10, 20]: integers 1000 .. 2000 at exponent 14, factor 12 (10 bits).
      for (double& x : v) x = static_cast<double>(1000 + rng() % 1001) / 100;
      // On the outlier search's sample (every 8th value) and spread over the block.
      for (std::size_t k = 0; k < outliers; ++k) v[(k * 8 * 37) % 1024 / 8 * 8] = far;
      FloatEncoding chosen;
      const std::size_t bytes =
          EncodeAlp<double, false>(v, 14, 12, AlpMode::kPlain, *ws, buf, &chosen);
      ASSERT_GT(bytes, 0u);
      ASSERT_EQ(chosen, FloatEncoding::kAlp);
      const unsigned width = buf[kAlpWidthOffset];
      const std::size_t exceptions = LoadLe<std::uint16_t>(buf.data() + kAlpExceptionCountOffset);
      if (outliers == 3) {
        EXPECT_EQ(width, 10u) << far;
        EXPECT_EQ(exceptions, 3u) << far;
      } else {
        EXPECT_EQ(width, 27u) << far;  // 10^8 - 1000 and 10^8 + 2000 take 27 bits
        EXPECT_EQ(exceptions, 0u) << far;
      }
      std::vector<double> back(v.size());
      ASSERT_TRUE(DecodeDoubles({buf.data(), bytes}, back, *ws).ok());
      EXPECT_TRUE(BitEqual<double>(v, back)) << far << " " << outliers;
    }
  }
}

TEST(FloatCodecSizes, DecimalsUseAlp) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  std::vector<double> v(1024);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((i * 7919) % 100000) * 0.01 - 1;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
  EXPECT_EQ(r.encoding, FloatEncoding::kAlp);
  EXPECT_LE(r.bytes, 16u + 17 * 128 + 16 * 10);  // 17 bits, a few exceptions
}

// Gorilla into a buffer shorter than its stream must report that it does not fit, also when the
// stream ends in a long run of repeats (written a word at a time) that crosses the limit.
TEST(FloatCodecSizes, GorillaReportsTooSmallBuffers) {
  auto ws = std::make_unique<Workspace>();
  std::vector<double> v(1024, 2.5);
  for (std::size_t i = 0; i < 100; ++i) v[i] = static_cast<double>(i * i) * 1.37;
  std::vector<std::uint8_t> full(MaxEncodedFloatBytes(1024, 8));
  const std::size_t needed = EncodeGorilla<double, false>(v, full);
  ASSERT_GT(needed, 0u);
  EXPECT_EQ(needed, (EncodeGorilla<double, true>(v, {})));
  for (std::size_t room = needed - 40; room < needed + 24; ++room) {
    std::vector<std::uint8_t> small(room);
    const std::size_t bytes = EncodeGorilla<double, false>(v, small);
    if (room >= needed + 16) {
      EXPECT_EQ(bytes, needed) << room;
    }
    if (bytes == 0) continue;  // did not fit (or came too close to the end)
    ASSERT_LE(bytes, room);
    std::vector<double> back(1024);
    ASSERT_TRUE(DecodeDoubles({small.data(), bytes}, back, *ws).ok()) << room;
    EXPECT_TRUE(BitEqual<double>(v, back)) << room;
  }
}

// Grouped XOR: the exact size of its dry run, its layout (one window per 32 XORs, a bitmap for
// groups of repeats, byte-aligned payloads) and round trips at every group boundary.
TEST(XorGroups, DryRunSizeMatchesAndLayoutIsAsDocumented) {
  auto ws = std::make_unique<Workspace>();
  // 1 + 64 values: two full groups. Group 0 varies in bits 8..15 only; group 1 repeats except
  // for one value.
  std::vector<double> v(65);
  for (std::size_t i = 0; i < 33; ++i) {
    v[i] = std::bit_cast<double>(0x4000000000000000ull | ((i * 37 % 251) << 8));
  }
  for (std::size_t i = 33; i < 65; ++i) v[i] = v[32];
  v[50] = std::bit_cast<double>(std::bit_cast<std::uint64_t>(v[32]) ^ 0x30);
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8));
  const std::size_t bytes = EncodeXorGroups<double, false>(v, buf);
  EXPECT_EQ(bytes, (EncodeXorGroups<double, true>(v, {})));
  ASSERT_GT(bytes, 0u);
  EXPECT_EQ(buf[0], static_cast<std::uint8_t>(FloatEncoding::kXorGroups));
  const std::size_t descriptors = kBlockHeaderBytes + 8;
  const auto d0 = LoadLe<std::uint16_t>(buf.data() + descriptors);
  const auto d1 = LoadLe<std::uint16_t>(buf.data() + descriptors + 2);
  EXPECT_EQ(d0 & kXorBitmapFlag, 0);  // dense: 32 fields
  EXPECT_EQ(d0 >> kXorShiftOffset, 8u);
  EXPECT_EQ(d0 & kXorWidthMask, 8u);
  EXPECT_NE(d1 & kXorBitmapFlag, 0);  // two non-zero XORs (into and out of v[50]) of 32
  EXPECT_EQ(d1 >> kXorShiftOffset, 4u);
  EXPECT_EQ(d1 & kXorWidthMask, 2u);
  // header + first value + 2 descriptors + 32 bytes (32 x 8 bits) + bitmap + 1 byte (2 x 2 bits)
  EXPECT_EQ(bytes, kBlockHeaderBytes + 8 + 4 + 32 + 4 + 1);
  std::vector<double> back(v.size());
  ASSERT_TRUE(DecodeDoubles({buf.data(), bytes}, back, *ws).ok());
  EXPECT_TRUE(BitEqual<double>(v, back));
}

TEST(XorGroups, RoundTripsAtGroupBoundariesAndFullWidth) {
  auto ws = std::make_unique<Workspace>();
  for (std::size_t n : {1, 2, 32, 33, 34, 64, 65, 66, 1023, 1024}) {
    for (Pattern p : {Pattern::kRandomBits, Pattern::kSmooth, Pattern::kConstant, Pattern::kWalk2,
                      Pattern::kSpecials}) {
      const auto v = MakePattern<double>(p, n, 3);
      std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(n, 8) + 512);
      const std::size_t bytes = EncodeXorGroups<double, false>(v, buf);  // room past raw
      ASSERT_GT(bytes, 0u) << n;
      EXPECT_EQ(bytes, (EncodeXorGroups<double, true>(v, {})));
      std::vector<double> back(n);
      const Status st = DecodeDoubles({buf.data(), bytes}, back, *ws);
      ASSERT_TRUE(st.ok()) << testing::PatternName(p) << " n=" << n << ": " << st.ToString();
      EXPECT_TRUE(BitEqual<double>(v, back)) << testing::PatternName(p) << " n=" << n;
      // A buffer one byte short is refused rather than overrun.
      std::vector<std::uint8_t> small(bytes - 1);
      EXPECT_EQ((EncodeXorGroups<double, false>(v, small)), 0u);
    }
  }
}

// Every field width, packed densely and behind a bitmap (a few, about half, and most XORs zero):
// values whose XORs with their predecessors span exactly `width` bits round-trip bit for bit.
TEST(XorGroups, RoundTripsEveryWidthDenseAndSparse) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(11);
  for (unsigned width = 1; width <= 64; ++width) {
    for (unsigned zero_in_8 : {0u, 2u, 4u, 7u}) {
      const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
      std::vector<double> v(1024);
      std::uint64_t bits = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0 && rng() % 8 >= zero_in_8) {
          // Top and bottom bit set: the group's XORs span exactly `width` bits.
          const std::uint64_t x = (rng() & mask) | 1 | (1ull << (width - 1));
          bits ^= x;
        }
        v[i] = std::bit_cast<double>(bits);
      }
      std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8) + 512);
      const std::size_t bytes = EncodeXorGroups<double, false>(v, buf);
      ASSERT_GT(bytes, 0u) << width;
      std::vector<double> back(v.size());
      const Status st = DecodeDoubles({buf.data(), bytes}, back, *ws);
      ASSERT_TRUE(st.ok()) << "width " << width << ": " << st.ToString();
      EXPECT_TRUE(BitEqual<double>(v, back)) << "width " << width << ", zeros " << zero_in_8;
      // Into a heap buffer of exactly the block's size (ASan sees a write past it): the packer
      // writes whole words only where they end inside the buffer. Same bytes.
      std::vector<std::uint8_t> exact(bytes);
      ASSERT_EQ((EncodeXorGroups<double, false>(v, exact)), bytes) << width;
      EXPECT_TRUE(std::equal(exact.begin(), exact.end(), buf.begin())) << "width " << width;
    }
  }
}

// Corrupt descriptors, bitmaps and lengths give Corruption naming what is wrong.
TEST(XorGroups, CorruptBlocksNameTheField) {
  auto ws = std::make_unique<Workspace>();
  const auto v = MakePattern<double>(Pattern::kSmooth, 100, 2);  // 99 XORs: 4 groups
  std::vector<std::uint8_t> good(MaxEncodedFloatBytes(v.size(), 8));
  good.resize(EncodeXorGroups<double, false>(v, good));
  ASSERT_GT(good.size(), 0u);
  std::vector<double> back(v.size());
  ASSERT_TRUE(DecodeDoubles(good, back, *ws).ok());
  const std::size_t d0 = kBlockHeaderBytes + 8;  // first descriptor
  auto expect_corrupt = [&](std::vector<std::uint8_t> block, const std::string& needle) {
    const Status st = DecodeDoubles(block, back, *ws);
    EXPECT_TRUE(st.IsCorruption()) << needle << ": " << st.ToString();
    EXPECT_NE(st.ToString().find(needle), std::string::npos) << st.ToString();
  };
  auto with_descriptor = [&](std::uint16_t d) {
    std::vector<std::uint8_t> b = good;
    StoreLe<std::uint16_t>(b.data() + d0, d);
    return b;
  };
  expect_corrupt(with_descriptor(0x4000 | 8), "descriptor 0x4008");           // reserved bit
  expect_corrupt(with_descriptor(65), "width 65");                            // too wide
  expect_corrupt(with_descriptor((60 << kXorShiftOffset) | 10), "shift 60");  // past 64 bits
  expect_corrupt(with_descriptor(kXorBitmapFlag), "descriptor 0x0080");       // flag, width 0
  expect_corrupt({good.begin(), good.end() - 1}, "past the payload end");
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  expect_corrupt(longer, "groups use");
  expect_corrupt({good.begin(), good.begin() + static_cast<std::ptrdiff_t>(d0) + 3},
                 "group descriptors");
  // A group of 3 XORs whose bitmap marks a fourth value is refused.
  const std::vector<double> repeats = {1.5, 1.5, 1.5, 1.2345678901234};  // 3 XORs, 2 zero
  std::vector<std::uint8_t> sparse(MaxEncodedFloatBytes(repeats.size(), 8) + 64);
  const std::size_t bytes = EncodeXorGroups<double, false>(repeats, sparse);
  sparse.resize(bytes);
  std::vector<double> back4(repeats.size());
  ASSERT_TRUE(DecodeDoubles(sparse, back4, *ws).ok());
  const auto descriptor = LoadLe<std::uint16_t>(sparse.data() + d0);
  if ((descriptor & kXorBitmapFlag) != 0) {
    const std::size_t bitmap_at = d0 + kXorDescriptorBytes;
    sparse[bitmap_at] |= 0x08;  // value 3 of a 3-value group
    const Status st = DecodeDoubles(sparse, back4, *ws);
    EXPECT_TRUE(st.IsCorruption());
    EXPECT_NE(st.ToString().find("marks values past the block"), std::string::npos)
        << st.ToString();
  } else {
    ADD_FAILURE() << "expected a bitmap group for mostly repeated values";
  }
}

// A series leaves ALP for real doubles and comes back as decimals of another precision and
// magnitude: the hint's old exponent pairs no longer fit, and ALP must be searched again rather
// than judged with them.
TEST(FloatCodecSizes, AlpReturnsAfterAStretchOfRealDoubles) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  std::mt19937_64 rng(9);
  std::size_t adaptive = 0;
  std::size_t best_alp = 0;
  std::size_t alp_blocks = 0;
  for (int b = 0; b < 40; ++b) {
    std::vector<double> v(1024);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (b < 6) {
        v[i] = static_cast<double>(100000 + rng() % 1000) / 100;  // 2 decimals
      } else if (b < 12) {
        v[i] = std::sin(static_cast<double>(b * 1024 + static_cast<int>(i)) * 0.01) * 3;
      } else {
        v[i] = static_cast<double>(rng() % 100000) / 1000000;  // 6 decimals, below 0.1
      }
    }
    const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
    if (b < 12) continue;
    adaptive += r.bytes;
    alp_blocks += r.encoding == FloatEncoding::kAlp || r.encoding == FloatEncoding::kAlpDelta;
    SeriesHint fresh;
    best_alp += EncodeDoublesAs(FloatEncoding::kAlp, v, fresh, *ws, buf).bytes;
  }
  // Back on ALP within a few blocks (the estimates run every few blocks, and pause a little after
  // far ones), and from then on as small as a fresh search makes it.
  EXPECT_GE(alp_blocks, 20u);
  EXPECT_LE(adaptive, best_alp + best_alp / 2);
}

// A counter that resets: the block holding the reset stays ALP with delta, the reset's one wide
// delta stored apart (kAlpDeltaPatchFlag) instead of widening every other delta: the block takes
// the patch's bytes more than the blocks around it (grouped XOR took 1,918 bytes where these take
// 1,048), and the next block goes on as before.
TEST(FloatCodecSizes, CounterResetIsOneDeltaApart) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  std::mt19937_64 rng(5);
  double counter = 17815;
  for (int b = 0; b < 6; ++b) {
    std::vector<double> v(1024);
    for (std::size_t i = 0; i < v.size(); ++i) {
      counter = b == 2 && i == 187 ? 918 : counter + static_cast<double>(90 + rng() % 180);
      v[i] = counter;
    }
    const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
    ASSERT_EQ(r.encoding, FloatEncoding::kAlpDelta) << "block " << b;
    const bool patched = (buf[kAlpWidthOffset] & kAlpDeltaPatchFlag) != 0;
    EXPECT_EQ(patched, b == 2) << "block " << b;
    // Increments of 90 .. 269 take 8 bits.
    EXPECT_EQ(buf[kAlpWidthOffset] & ~kAlpDeltaPatchFlag, 8) << "block " << b;
    EXPECT_EQ(r.bytes, kAlpDeltaHeaderBytes + (patched ? kAlpDeltaPatchBytes : 0) + 1024)
        << "block " << b;
    std::vector<double> back(v.size());
    ASSERT_TRUE(DecodeDoubles({buf.data(), r.bytes}, back, *ws).ok());
    EXPECT_TRUE(BitEqual<double>(v, back)) << "block " << b;
  }
}

// One jump costs 10 bytes wherever it is: stored apart in the middle of a block (a jump up as
// well as a reset down, and in a short block: the decoder's unfused path), or as an exception
// when it comes first or last (the plain search has already taken the value at the block's end
// out of the range). At every vector level. Two equal resets are not stored apart (neither is
// alone at the end of the range), and a patch position outside [1, count) is refused.
TEST(FloatCodecSizes, DeltaApartRoundTripsAndIsChecked) {
  auto ws = std::make_unique<Workspace>();
  struct Case {
    std::size_t n, at;
    double jump;
    std::size_t second_at;  // 0: none
  };
  const Case cases[] = {{1024, 1, -5e6, 0},
                        {1024, 1023, -5e6, 0},
                        {1024, 500, 7e6, 0},
                        {100, 37, -5e6, 0},
                        {1024, 300, -5e6, 700}};
  const simd::IsaLevel detected = simd::DetectIsa();
  for (const simd::IsaLevel level :
       {simd::IsaLevel::kScalar, simd::IsaLevel::kAvx2, simd::IsaLevel::kAvx512}) {
    if (!simd::ForceIsa(level)) continue;
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(simd::IsaName(level)) + " n " + std::to_string(c.n) + " at " +
                   std::to_string(c.at));
      std::mt19937_64 rng(c.n + c.at);
      std::vector<double> v(c.n);
      double x = 6e6;
      for (std::size_t i = 0; i < c.n; ++i) {
        x += static_cast<double>(rng() % 100);
        if (i == c.at) x += c.jump - static_cast<double>(rng() % 100);
        if (c.second_at != 0 && i == c.second_at) x += c.jump - static_cast<double>(rng() % 100);
        v[i] = x;
      }
      // The second reset repeats the first delta exactly.
      if (c.second_at != 0) {
        const double first_delta = v[c.at] - v[c.at - 1];
        const double shift = v[c.second_at - 1] + first_delta - v[c.second_at];
        for (std::size_t i = c.second_at; i < c.n; ++i) v[i] += shift;
      }
      SeriesHint hint;
      std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(c.n, 8));
      const EncodeResult r = EncodeDoublesAs(FloatEncoding::kAlpDelta, v, hint, *ws, buf);
      ASSERT_EQ(r.encoding, FloatEncoding::kAlpDelta);
      const bool patched = (buf[kAlpWidthOffset] & kAlpDeltaPatchFlag) != 0;
      const bool at_end = c.at == 1 || c.at == c.n - 1;
      EXPECT_EQ(patched, c.second_at == 0 && !at_end);
      if (c.second_at == 0) {
        // Increments of 0 .. 99 take 7 bits; the jump 10 bytes, apart or as an exception.
        EXPECT_EQ(buf[kAlpWidthOffset] & ~kAlpDeltaPatchFlag, 7);
        EXPECT_EQ(r.bytes, kAlpDeltaHeaderBytes + PackedBytes(c.n, 7) + 10);
        EXPECT_EQ(LoadLe<std::uint16_t>(buf.data() + kAlpExceptionCountOffset), at_end ? 1 : 0);
      }
      if (patched) {
        EXPECT_EQ(LoadLe<std::uint16_t>(buf.data() + kAlpDeltaHeaderBytes), c.at);
      }
      std::vector<double> back(c.n);
      ASSERT_TRUE(DecodeDoubles({buf.data(), r.bytes}, back, *ws).ok());
      EXPECT_TRUE(BitEqual<double>(v, back));
      if (!patched) continue;
      for (const std::uint16_t pos : {std::uint16_t{0}, static_cast<std::uint16_t>(c.n)}) {
        std::vector<std::uint8_t> bad(buf.begin(),
                                      buf.begin() + static_cast<std::ptrdiff_t>(r.bytes));
        StoreLe<std::uint16_t>(bad.data() + kAlpDeltaHeaderBytes, pos);
        const Status st = DecodeDoubles(bad, back, *ws);
        ASSERT_TRUE(st.IsCorruption());
        EXPECT_NE(st.ToString().find("patched delta at position " + std::to_string(pos)),
                  std::string::npos)
            << st.ToString();
      }
    }
  }
  simd::ForceIsa(detected);
}

TEST(XorGroups, SmallerThanGorillaOnSmoothAndRepeatingData) {
  const auto smooth = MakePattern<double>(Pattern::kSmooth, 1024, 1);
  EXPECT_LT((EncodeXorGroups<double, true>(smooth, {})), (EncodeGorilla<double, true>(smooth, {})));
  // Long runs of repeats: a group of zero XORs costs its descriptor only.
  std::vector<double> steps(1024);
  for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<double>(i / 100) * 1.7;
  EXPECT_LT((EncodeXorGroups<double, true>(steps, {})), (EncodeGorilla<double, true>(steps, {})));
}

TEST(XorGroups, AdaptiveChoosesItForRealDoubles) {
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
  std::size_t xor_blocks = 0;
  for (int b = 0; b < 8; ++b) {
    const auto v = MakePattern<double>(Pattern::kSmooth, 1024, static_cast<std::uint64_t>(b));
    const EncodeResult r = EncodeDoubles(v, hint, *ws, buf);
    xor_blocks += r.encoding == FloatEncoding::kXorGroups;
    EXPECT_LE(r.bytes, (EncodeGorilla<double, true>(v, {})));
  }
  EXPECT_GT(xor_blocks, 4u);
}

}  // namespace
}  // namespace ingot::codec
