// Every compiled-in SIMD level agrees bit for bit with the scalar kernels, and the codec writes
// the same bytes whichever level is active.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codec/alp_constants.h"
#include "codec/codec.h"
#include "codec/simd/kernels.h"
#include "codec/simd/lane_ops.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using simd::IsaLevel;
using simd::Kernels;

std::vector<const Kernels*> VectorLevels() {
  std::vector<const Kernels*> levels;
  for (IsaLevel l : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (const Kernels* k = simd::KernelsFor(l)) levels.push_back(k);
  }
  if (const Kernels* k = simd::Avx512KernelsWithoutVbmi()) levels.push_back(k);
  return levels;
}

TEST(KernelsTest, DetectionAndForcing) {
  const IsaLevel detected = simd::DetectIsa();
  EXPECT_NE(simd::KernelsFor(IsaLevel::kScalar), nullptr);
  EXPECT_TRUE(simd::ForceIsa(IsaLevel::kScalar));
  EXPECT_EQ(simd::ActiveKernels().level, IsaLevel::kScalar);
  EXPECT_TRUE(simd::ForceIsa(detected));
  EXPECT_EQ(simd::ActiveKernels().level, detected);
  if (VectorLevels().empty()) GTEST_SKIP() << "no vector level on this CPU";
}

TEST(KernelsTest, FforAgreesForEveryWidth) {
  const Kernels& scalar = simd::ScalarKernels();
  std::mt19937_64 rng(3);
  alignas(64) std::uint64_t in[1024], out_a[1024], out_b[1024];
  // Packed blocks live inside encoded blocks: one byte off alignment on purpose.
  std::vector<std::uint8_t> packed_a(8 * 1024 + 1), packed_b(8 * 1024 + 1);
  for (const Kernels* k : VectorLevels()) {
    for (unsigned width = 0; width <= 64; ++width) {
      const std::uint64_t base = rng();
      const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
      for (auto& v : in) v = base + (rng() & mask);
      std::fill(packed_a.begin(), packed_a.end(), 0);
      std::fill(packed_b.begin(), packed_b.end(), 0);
      scalar.ffor_pack_1024(in, base, width, packed_a.data() + 1);
      k->ffor_pack_1024(in, base, width, packed_b.data() + 1);
      ASSERT_EQ(packed_a, packed_b) << k->name << " w=" << width;
      scalar.ffor_unpack_1024(packed_a.data() + 1, base, width, out_a);
      k->ffor_unpack_1024(packed_a.data() + 1, base, width, out_b);
      ASSERT_EQ(std::memcmp(in, out_a, sizeof(in)), 0) << "scalar w=" << width;
      ASSERT_EQ(std::memcmp(in, out_b, sizeof(in)), 0) << k->name << " w=" << width;
    }
  }
}

// The fused scalar encode against the one-value reference: integers, exceptions and the range of
// the good integers.
template <typename T>
void CheckAlpEncodeAgainstReference(const Kernels& k, const std::vector<T>& in, unsigned e,
                                    unsigned f) {
  std::vector<std::int64_t> ints(in.size());
  std::vector<std::uint64_t> exceptions((in.size() + 63) / 64, ~0ull);
  simd::AlpEncodeStats stats;
  if constexpr (sizeof(T) == 8) {
    stats = k.alp_encode_double(in.data(), in.size(), e, f, ints.data(), exceptions.data());
  } else {
    stats = k.alp_encode_float(in.data(), in.size(), e, f, ints.data(), exceptions.data());
  }
  std::size_t count = 0;
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::int64_t ref;
    const bool exc = simd::AlpEncodeOne(in[i], e, f, &ref);
    ASSERT_EQ(exc, static_cast<bool>((exceptions[i / 64] >> (i % 64)) & 1)) << k.name << " " << i;
    if (exc) {
      ++count;
      continue;
    }
    ASSERT_EQ(ints[i], ref) << k.name << " " << i;
    lo = std::min(lo, ref);
    hi = std::max(hi, ref);
  }
  if (in.size() % 64 != 0) {
    EXPECT_EQ(exceptions.back() >> (in.size() % 64), 0u) << k.name << ": bits past n are clear";
  }
  ASSERT_EQ(stats.exceptions, count) << k.name;
  if (count < in.size()) {
    ASSERT_EQ(stats.lo, lo) << k.name;
    ASSERT_EQ(stats.hi, hi) << k.name;
  }
}

template <typename T>
void CheckAlpKernels(const Kernels& scalar, const Kernels& k) {
  std::mt19937_64 rng(5);
  std::vector<T> in(1023);
  std::vector<std::int64_t> ints_a(1024), ints_b(1024);
  std::uint64_t exc_a[16], exc_b[16];
  std::vector<T> out_a(1024), out_b(1024);
  // 1023 ends in a short word; 32 and 17 are the exponent search's sample sizes, whose vectors
  // run inside a single short word.
  const std::size_t sizes[] = {1023, 32, 17};
  for (std::size_t s = 0; s < 3 * std::size(testing::kAllPatterns); ++s) {
    const std::size_t size = sizes[s % 3];
    in = testing::MakePattern<T>(testing::kAllPatterns[s / 3], size, 9);
    for (unsigned e = 0; e <= AlpConstants<T>::kMaxExponent; e += 1) {
      for (unsigned f = 0; f <= e; f += 3) {
        CheckAlpEncodeAgainstReference(scalar, in, e, f);
        CheckAlpEncodeAgainstReference(k, in, e, f);
        simd::AlpEncodeStats ca, cb;
        if constexpr (sizeof(T) == 8) {
          ca = scalar.alp_encode_double(in.data(), in.size(), e, f, ints_a.data(), exc_a);
          cb = k.alp_encode_double(in.data(), in.size(), e, f, ints_b.data(), exc_b);
        } else {
          ca = scalar.alp_encode_float(in.data(), in.size(), e, f, ints_a.data(), exc_a);
          cb = k.alp_encode_float(in.data(), in.size(), e, f, ints_b.data(), exc_b);
        }
        ASSERT_EQ(ca.exceptions, cb.exceptions) << k.name << " e=" << e << " f=" << f;
        ASSERT_EQ(ca.lo, cb.lo) << k.name << " e=" << e << " f=" << f;
        ASSERT_EQ(ca.hi, cb.hi) << k.name << " e=" << e << " f=" << f;
        ASSERT_EQ(std::memcmp(exc_a, exc_b, (size + 63) / 64 * 8), 0) << k.name << " n=" << size;
        for (std::size_t i = 0; i < in.size(); ++i) {
          if (!((exc_a[i / 64] >> (i % 64)) & 1)) {
            ASSERT_EQ(ints_a[i], ints_b[i]) << i;
          }
        }
      }
    }
  }
  // Decoding agrees for any integers, including ones no encoder writes.
  std::vector<std::int64_t> ints(1024);
  for (auto& v : ints) v = static_cast<std::int64_t>(rng() >> (rng() % 64));
  for (unsigned e = 0; e <= AlpConstants<T>::kMaxExponent; ++e) {
    if constexpr (sizeof(T) == 8) {
      scalar.alp_decode_double(ints.data(), 1021, e, e / 2, out_a.data());
      k.alp_decode_double(ints.data(), 1021, e, e / 2, out_b.data());
    } else {
      scalar.alp_decode_float(ints.data(), 1021, e, e / 2, out_a.data());
      k.alp_decode_float(ints.data(), 1021, e, e / 2, out_b.data());
    }
    ASSERT_EQ(std::memcmp(out_a.data(), out_b.data(), 1021 * sizeof(T)), 0) << k.name << " e=" << e;
  }
  std::vector<std::uint8_t> bytes(8 * 1024 + 3);
  const std::uint8_t* packed = bytes.data() + 3;  // unaligned, as inside a block
  for (unsigned width : {0u, 1u, 7u, 20u, 22u, 24u, 25u, 33u, 52u, 64u}) {
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    // Small bases keep float integers around +-2^24, the edge of the exact conversion.
    const std::uint64_t base = sizeof(T) == 8 ? rng() >> 20 : (0ull - (1ull << 24)) + (rng() % 64);
    if constexpr (sizeof(T) == 8) {
      scalar.alp_unpack_decode_double(packed, base, width, 14, 2, out_a.data());
      k.alp_unpack_decode_double(packed, base, width, 14, 2, out_b.data());
    } else {
      scalar.alp_unpack_decode_float(packed, base, width, 6, 2, out_a.data());
      k.alp_unpack_decode_float(packed, base, width, 6, 2, out_b.data());
    }
    ASSERT_EQ(std::memcmp(out_a.data(), out_b.data(), 1024 * sizeof(T)), 0)
        << k.name << " width " << width;
  }
}

TEST(KernelsTest, AlpKernelsAgree) {
  for (const Kernels* k : VectorLevels()) {
    CheckAlpKernels<double>(simd::ScalarKernels(), *k);
    CheckAlpKernels<float>(simd::ScalarKernels(), *k);
  }
}

// The exponent search's batched statistics: for every pair, exactly what alp_encode_* of the same
// level returns (including lo = INT64_MAX, hi = INT64_MIN when every value is an exception), and
// the same at every level.
template <typename T>
void CheckAlpSampleStats(const std::vector<const Kernels*>& levels) {
  constexpr unsigned kMax = AlpConstants<T>::kMaxExponent;
  std::vector<std::uint8_t> exponents, factors;
  for (unsigned e = 0; e <= kMax; ++e) {
    for (unsigned f = 0; f <= e; ++f) {
      exponents.push_back(static_cast<std::uint8_t>(e));
      factors.push_back(static_cast<std::uint8_t>(f));
    }
  }
  // A fixed shuffle: the kernel must not depend on the pairs' order.
  std::mt19937_64 rng(31);
  for (std::size_t i = exponents.size(); i-- > 1;) {
    const std::size_t j = rng() % (i + 1);
    std::swap(exponents[i], exponents[j]);
    std::swap(factors[i], factors[j]);
  }
  const std::size_t pairs = exponents.size();
  ASSERT_EQ(pairs, (kMax + 1) * (kMax + 2) / 2);
  std::vector<simd::AlpEncodeStats> expected(pairs), got(pairs), scalar_got(pairs);
  std::int64_t ints[64];
  std::uint64_t exceptions[1];
  std::size_t all_exceptions = 0, some_good = 0;
  for (std::size_t n : {8u, 16u, 17u, 31u, 32u, 64u}) {
    for (testing::Pattern pattern : testing::kAllPatterns) {
      // Exactly n values, so a read past the sample shows up under the address sanitizer.
      const std::vector<T> in = testing::MakePattern<T>(pattern, n, 12);
      for (const Kernels* k : levels) {
        for (std::size_t p = 0; p < pairs; ++p) {
          if constexpr (sizeof(T) == 8) {
            expected[p] =
                k->alp_encode_double(in.data(), n, exponents[p], factors[p], ints, exceptions);
          } else {
            expected[p] =
                k->alp_encode_float(in.data(), n, exponents[p], factors[p], ints, exceptions);
          }
        }
        std::fill(got.begin(), got.end(), simd::AlpEncodeStats{99, 7, 7});
        if constexpr (sizeof(T) == 8) {
          k->alp_sample_stats_double(in.data(), n, exponents.data(), factors.data(), pairs,
                                     got.data());
        } else {
          k->alp_sample_stats_float(in.data(), n, exponents.data(), factors.data(), pairs,
                                    got.data());
        }
        if (k->level == IsaLevel::kScalar) scalar_got = got;
        for (std::size_t p = 0; p < pairs; ++p) {
          const std::string where = std::string(k->name) + " " + testing::PatternName(pattern) +
                                    " n=" + std::to_string(n) +
                                    " e=" + std::to_string(exponents[p]) +
                                    " f=" + std::to_string(factors[p]);
          ASSERT_EQ(got[p].exceptions, expected[p].exceptions) << where;
          ASSERT_EQ(got[p].lo, expected[p].lo) << where;
          ASSERT_EQ(got[p].hi, expected[p].hi) << where;
          ASSERT_EQ(got[p].exceptions, scalar_got[p].exceptions) << where;
          ASSERT_EQ(got[p].lo, scalar_got[p].lo) << where;
          ASSERT_EQ(got[p].hi, scalar_got[p].hi) << where;
          if (got[p].exceptions == n) {
            ASSERT_EQ(got[p].lo, INT64_MAX) << where;
            ASSERT_EQ(got[p].hi, INT64_MIN) << where;
            ++all_exceptions;
          } else {
            ASSERT_LE(got[p].lo, got[p].hi) << where;
            ++some_good;
          }
        }
      }
    }
  }
  // Both outcomes are covered.
  EXPECT_GT(all_exceptions, 0u);
  EXPECT_GT(some_good, 0u);
}

TEST(KernelsTest, AlpSampleStatsMatchesEncodeForEveryPair) {
  std::vector<const Kernels*> levels = {&simd::ScalarKernels()};
  for (const Kernels* k : VectorLevels()) levels.push_back(k);
  CheckAlpSampleStats<double>(levels);
  CheckAlpSampleStats<float>(levels);
  // No pairs: nothing is written.
  simd::AlpEncodeStats untouched{5, 6, 7};
  const double one = 1.5;
  const std::uint8_t zero = 0;
  for (const Kernels* k : levels) {
    k->alp_sample_stats_double(&one, 1, &zero, &zero, 0, &untouched);
    EXPECT_EQ(untouched.exceptions, 5u) << k->name;
  }
}

// The native float path covers blocks whose integers stay inside +-2^22; its edges must agree too.
TEST(KernelsTest, FloatUnpackDecodeAgreesNearTheFastPathEdge) {
  std::mt19937_64 rng(21);
  std::vector<std::uint8_t> bytes(8 * 1024 + 5);
  const std::uint8_t* packed = bytes.data() + 5;
  std::vector<float> out_a(1024), out_b(1024);
  for (const Kernels* k : VectorLevels()) {
    for (unsigned width : {0u, 1u, 9u, 16u, 21u, 22u, 23u}) {
      const std::int64_t limit = 4194304;
      const std::int64_t span = static_cast<std::int64_t>(simd::WidthMask(width));
      for (std::int64_t base : {std::int64_t{0}, -limit + 1, limit - span - 1, limit - span, -limit,
                                std::int64_t{-1000}}) {
        for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
        for (unsigned e : {0u, 3u, 10u}) {
          simd::ScalarKernels().alp_unpack_decode_float(packed, static_cast<std::uint64_t>(base),
                                                        width, e, e / 2, out_a.data());
          k->alp_unpack_decode_float(packed, static_cast<std::uint64_t>(base), width, e, e / 2,
                                     out_b.data());
          ASSERT_EQ(std::memcmp(out_a.data(), out_b.data(), 1024 * sizeof(float)), 0)
              << k->name << " width " << width << " base " << base << " e " << e;
        }
      }
    }
  }
}

// Blocks whose integers provably lie in [-2^51, 2^51) decode through a fused multiply-add; it must
// give the one-value decode's bits for every exponent pair, up to the edges of that range, and
// blocks just outside it take the plain path.
TEST(KernelsTest, DoubleUnpackDecodeAgreesAcrossTheFusedPathEdge) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 51;
  EXPECT_TRUE(simd::FforMagicExact(static_cast<std::uint64_t>(-kLimit), 0));
  EXPECT_FALSE(simd::FforMagicExact(static_cast<std::uint64_t>(-kLimit - 1), 0));
  EXPECT_TRUE(simd::FforMagicExact(static_cast<std::uint64_t>(kLimit - (1 << 20)), 20));
  EXPECT_FALSE(simd::FforMagicExact(static_cast<std::uint64_t>(kLimit - (1 << 20) + 1), 20));
  EXPECT_FALSE(simd::FforMagicExact(0, 52));
  EXPECT_TRUE(simd::DeltaMagicExact(static_cast<std::uint64_t>(-5), 12, 123456789));
  EXPECT_FALSE(simd::DeltaMagicExact(0, 40, 0));
  EXPECT_FALSE(simd::DeltaMagicExact(0, 3, std::uint64_t{1} << 50));
  std::mt19937_64 rng(24);
  std::vector<std::uint8_t> bytes(8 * 1024 + 7);
  const std::uint8_t* packed = bytes.data() + 7;
  std::vector<double> out_a(1024), out_b(1024);
  const std::vector<const Kernels*> levels = VectorLevels();
  for (unsigned width : {0u, 1u, 20u, 38u, 50u, 51u, 52u, 64u}) {
    const std::int64_t span = static_cast<std::int64_t>(simd::WidthMask(width));
    for (std::int64_t base : {std::int64_t{0}, std::int64_t{-1000}, -kLimit, -kLimit - 1,
                              kLimit - span - 1, kLimit - span}) {
      for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
      for (unsigned e = 0; e <= AlpConstants<double>::kMaxExponent; ++e) {
        for (unsigned f = 0; f <= e; ++f) {
          simd::ScalarKernels().alp_unpack_decode_double(packed, static_cast<std::uint64_t>(base),
                                                         width, e, f, out_a.data());
          for (const Kernels* k : levels) {
            k->alp_unpack_decode_double(packed, static_cast<std::uint64_t>(base), width, e, f,
                                        out_b.data());
            ASSERT_EQ(std::memcmp(out_a.data(), out_b.data(), 1024 * sizeof(double)), 0)
                << k->name << " width " << width << " base " << base << " e " << e << " f " << f;
          }
        }
      }
    }
  }
}

template <typename T>
void CheckDeltaUnpackDecode(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> bytes(8 * 1024 + 3);
  const std::uint8_t* packed = bytes.data() + 3;
  std::vector<std::uint64_t> ints(1024);
  std::vector<T> expected(1024), out_a(1024), out_b(1024);
  const Kernels& scalar = simd::ScalarKernels();
  for (unsigned width : {0u, 1u, 5u, 13u, 31u, 47u, 64u}) {
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    const std::uint64_t base = width == 0 ? 3 : 0ull - (1ull << (width - 1) % 64);
    // Small starts take the fused decode of doubles; a start at 2^50 is outside its proof.
    const std::uint64_t first = width == 13 ? std::uint64_t{1} << 50 : rng() >> 44;
    const unsigned e = sizeof(T) == 8 ? 14 : 6;
    const unsigned f = 3;
    // The reference: unpack, running sum from `first`, one value at a time.
    scalar.ffor_unpack_1024(packed, base, width, ints.data());
    std::uint64_t acc = first;
    for (std::size_t i = 0; i < 1024; ++i) {
      if (i > 0) acc += ints[i];
      if constexpr (sizeof(T) == 8) {
        expected[i] = simd::AlpDecodeOneDouble(acc, e, f);
      } else {
        expected[i] = simd::AlpDecodeOneFloat(acc, e, f);
      }
    }
    if constexpr (sizeof(T) == 8) {
      scalar.alp_delta_unpack_decode_double(packed, base, width, first, e, f, out_a.data());
    } else {
      scalar.alp_delta_unpack_decode_float(packed, base, width, first, e, f, out_a.data());
    }
    ASSERT_EQ(std::memcmp(out_a.data(), expected.data(), 1024 * sizeof(T)), 0) << width;
    for (const Kernels* k : VectorLevels()) {
      if constexpr (sizeof(T) == 8) {
        k->alp_delta_unpack_decode_double(packed, base, width, first, e, f, out_b.data());
      } else {
        k->alp_delta_unpack_decode_float(packed, base, width, first, e, f, out_b.data());
      }
      ASSERT_EQ(std::memcmp(out_b.data(), expected.data(), 1024 * sizeof(T)), 0)
          << k->name << " width " << width;
    }
  }
}

TEST(KernelsTest, DeltaUnpackDecodeAgrees) {
  CheckDeltaUnpackDecode<double>(22);
  CheckDeltaUnpackDecode<float>(23);
}

TEST(KernelsTest, OutsideWindowAgrees) {
  std::mt19937_64 rng(24);
  std::vector<std::int64_t> v(1024);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() % 5000) - 2500;
  v[7] = INT64_MIN;
  v[500] = INT64_MAX;
  std::uint64_t na[16], wa[16], nb[16], wb[16];
  for (std::size_t n : {1u, 63u, 64u, 100u, 1024u}) {
    for (unsigned width : {0u, 5u, 11u, 12u, 63u}) {
      for (std::uint64_t sign : {0ull, ~0ull}) {
        const std::uint64_t anchor = sign == 0 ? static_cast<std::uint64_t>(-2500) : 2499;
        const simd::WindowCounts ca =
            simd::ScalarKernels().outside_window(v.data(), n, anchor, sign, width, na, wa);
        std::size_t want_narrow = 0, want_wider = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint64_t offset = sign == 0 ? static_cast<std::uint64_t>(v[i]) - anchor
                                                 : anchor - static_cast<std::uint64_t>(v[i]);
          ASSERT_EQ((na[i / 64] >> (i % 64)) & 1, (offset >> width) != 0 ? 1u : 0u) << i;
          ASSERT_EQ((wa[i / 64] >> (i % 64)) & 1,
                    width + 1 < 64 && (offset >> (width + 1)) != 0 ? 1u : 0u)
              << i;
          want_narrow += (offset >> width) != 0 ? 1 : 0;
          want_wider += width + 1 < 64 && (offset >> (width + 1)) != 0 ? 1 : 0;
        }
        EXPECT_EQ(ca.narrow, want_narrow) << "n " << n << " width " << width;
        EXPECT_EQ(ca.wider, want_wider) << "n " << n << " width " << width;
        for (const Kernels* k : VectorLevels()) {
          const simd::WindowCounts cb = k->outside_window(v.data(), n, anchor, sign, width, nb, wb);
          EXPECT_EQ(cb.narrow, want_narrow) << k->name << " n " << n;
          EXPECT_EQ(cb.wider, want_wider) << k->name << " n " << n;
          ASSERT_EQ(std::memcmp(na, nb, 8 * ((n + 63) / 64)), 0) << k->name << " n " << n;
          ASSERT_EQ(std::memcmp(wa, wb, 8 * ((n + 63) / 64)), 0) << k->name << " n " << n;
        }
      }
    }
  }
}

TEST(KernelsTest, MinMaxAgrees) {
  std::mt19937_64 rng(8);
  std::vector<std::int64_t> v(1024);
  for (auto& x : v) x = static_cast<std::int64_t>(rng());
  for (const Kernels* k : VectorLevels()) {
    for (std::size_t n : {1, 3, 4, 8, 9, 100, 1024}) {
      std::int64_t a_lo, a_hi, b_lo, b_hi;
      simd::ScalarKernels().min_max(v.data(), n, &a_lo, &a_hi);
      k->min_max(v.data(), n, &b_lo, &b_hi);
      EXPECT_EQ(a_lo, b_lo);
      EXPECT_EQ(a_hi, b_hi);
    }
  }
}

std::vector<const Kernels*> AllLevels() {
  std::vector<const Kernels*> levels = VectorLevels();
  levels.insert(levels.begin(), &simd::ScalarKernels());
  return levels;
}

// `count` Rice codes as the decoder's kernels take them: where each code's quotient ends in the
// stream (mostly short runs, every seventh up to 40 zero bits) and its `width` low bits, every
// fifth with an escaped quotient's rest above them, which the join adds.
void RandomRiceCodes(std::size_t count, unsigned width, std::mt19937_64& rng,
                     std::vector<std::uint32_t>* ends, std::vector<std::uint64_t>* lows) {
  ends->resize(count);
  lows->resize(count);
  std::uint32_t at = 0;
  for (std::size_t j = 0; j < count; ++j) {
    (*ends)[j] = at + static_cast<std::uint32_t>(rng() % (j % 7 == 0 ? 40 : 3));
    at = (*ends)[j] + 1;
    (*lows)[j] = width == 0 ? 0 : rng() >> (64 - width);
    if (j % 5 == 3) (*lows)[j] += (rng() % 1000) << width;
  }
}

// The Rice decoder's kernels against a direct computation at every level: set-bit positions of
// sparse, half and dense words (with the stop after the word that passes the limit), and codes
// joined from their quotients with each base/zigzag mode and no, one or two running sums, around
// the vector edges, with some codes' low bits carrying an escaped quotient's rest.
TEST(KernelsTest, RiceKernelsAgree) {
  std::mt19937_64 rng(9);
  for (const Kernels* k : AllLevels()) {
    for (int density : {1, 8, 32, 63, 64}) {
      std::vector<std::uint64_t> words(20);
      for (auto& w : words) {
        w = 0;
        for (int b = 0; b < 64; ++b) {
          w |= static_cast<std::uint64_t>(static_cast<int>(rng() % 64) < density) << b;
        }
      }
      for (std::size_t limit : {0, 5, 64, 300, 2000}) {
        std::vector<std::uint32_t> want;
        for (std::size_t w = 0; w < words.size() && want.size() <= limit; ++w) {
          for (unsigned b = 0; b < 64; ++b) {
            if ((words[w] >> b) & 1) want.push_back(static_cast<std::uint32_t>(64 * w + b));
          }
        }
        // Exactly the slots the kernels may write (a heap copy, so that ASan sees one more).
        auto slots = std::make_unique<std::uint32_t[]>(limit + simd::kSetBitSlack);
        const std::size_t n = k->set_bit_positions(words.data(), words.size(), limit, slots.get());
        ASSERT_EQ(n, want.size()) << k->name << " density " << density << " limit " << limit;
        const std::vector<std::uint32_t> got(slots.get(), slots.get() + n);
        EXPECT_EQ(got, want) << k->name;
      }
    }
    for (unsigned width : {0u, 3u, 17u, 56u}) {
      for (std::size_t count : {1, 2, 8, 9, 17, 100, 1023, 1024}) {
        std::vector<std::uint32_t> ends;
        std::vector<std::uint64_t> lows;
        RandomRiceCodes(count, width, rng, &ends, &lows);
        const std::uint64_t add = rng(), first = rng(), first2 = rng();
        for (bool zigzag : {false, true}) {
          for (unsigned sums : {0u, 1u, 2u}) {
            std::vector<std::uint64_t> want(count);
            std::uint64_t all = 0, sum1 = first;
            for (std::size_t j = 0; j < count; ++j) {
              const std::uint64_t quotient = ends[j] - (j == 0 ? 0 : ends[j - 1] + 1);
              all |= quotient;
              const std::uint64_t code = (quotient << width) + lows[j];
              const std::uint64_t v =
                  zigzag ? (code >> 1) ^ (0 - (code & 1)) : code + add;
              if (j > 0) sum1 += v;
              want[j] = sums == 0   ? v
                        : sums == 1 ? sum1
                        : j == 0    ? first2
                                    : want[j - 1] + sum1;
            }
            std::vector<std::uint64_t> got = lows;
            EXPECT_EQ(k->rice_join(ends.data(), count, width, add, zigzag, sums, first, first2,
                                   got.data()),
                      all);
            EXPECT_EQ(got, want) << k->name << " width " << width << " count " << count
                                 << " zigzag " << zigzag << " sums " << sums;
          }
        }
      }
    }
  }
}

// A full block's codes in lane order (code t is number 128 (t % 8) + t / 8) joined at every
// level: the same numbers as a direct computation over the codes moved to their numbers' places,
// with one and two running sums, zigzagged or with a base, and escaped rests above low bits.
TEST(KernelsTest, RiceLaneKernelsAgree) {
  constexpr std::size_t kCount = simd::kRiceLanes * simd::kRiceLaneRows;
  std::mt19937_64 rng(10);
  for (const Kernels* k : AllLevels()) {
    for (unsigned width : {0u, 3u, 17u, 56u}) {
      std::vector<std::uint32_t> ends;
      std::vector<std::uint64_t> lows;
      RandomRiceCodes(kCount, width, rng, &ends, &lows);
      const std::uint64_t add = rng(), first = rng(), first2 = rng();
      for (bool zigzag : {false, true}) {
        for (unsigned sums : {1u, 2u}) {
          // Each code's number, in block order, then the running sums as rice_join takes them.
          std::vector<std::uint64_t> number(kCount);
          std::uint64_t all = 0;
          for (std::size_t t = 0; t < kCount; ++t) {
            const std::uint64_t quotient = ends[t] - (t == 0 ? 0 : ends[t - 1] + 1);
            all |= quotient;
            const std::uint64_t code = (quotient << width) + lows[t];
            number[simd::kRiceLaneRows * (t % simd::kRiceLanes) + t / simd::kRiceLanes] =
                zigzag ? (code >> 1) ^ (0 - (code & 1)) : code + add;
          }
          std::vector<std::uint64_t> want(kCount);
          std::uint64_t sum1 = first;
          for (std::size_t i = 0; i < kCount; ++i) {
            if (i > 0) sum1 += number[i];
            want[i] = sums == 1 ? sum1 : i == 0 ? first2 : want[i - 1] + sum1;
          }
          std::vector<std::uint64_t> scratch = lows, got(kCount);
          EXPECT_EQ(k->rice_join_lanes(ends.data(), width, add, zigzag, sums, first, first2,
                                       scratch.data(), got.data()),
                    all);
          EXPECT_EQ(got, want) << k->name << " width " << width << " zigzag " << zigzag << " sums "
                               << sums;
        }
      }
    }
  }
}

// A kAlpRanked job (simd::RankedCodes) built from random ranks, with what the kernel must give
// for it: each code's index, the bit where its field starts (at[count] is the end of the last)
// and its number before `add`. Codes with `stray` quotients have indexes past the table, which
// the kernels take modulo its 64 entries (the decoder rejects them from max_index).
struct RankedCase {
  unsigned k = 0;
  alignas(64) std::uint8_t categories[simd::kRankedTable] = {};
  unsigned widest = 0;
  unsigned index_end = simd::kRankedTable;
  std::vector<std::uint32_t> ends;
  std::vector<std::uint8_t> lows;  // ceil(k count / 8) + 8 bytes, as the kernels may read
  std::vector<std::uint8_t> bits;  // the fields, then kRankedReadAhead random bytes
  std::vector<std::uint32_t> index;
  std::vector<std::uint64_t> at;
  std::vector<std::uint64_t> number;
};

// Bits [at, at + width) of `bytes`, bit 0 of byte 0 first, one at a time.
std::uint64_t BitsAt(const std::vector<std::uint8_t>& bytes, std::uint64_t at, unsigned width) {
  std::uint64_t v = 0;
  for (unsigned b = 0; b < width; ++b) {
    const std::uint64_t bit = at + b;
    v |= static_cast<std::uint64_t>((bytes[bit / 8] >> (bit % 8)) & 1) << b;
  }
  return v;
}

RankedCase MakeRankedCase(std::size_t count, unsigned k, bool wide, unsigned ranks, bool stray,
                          std::mt19937_64& rng) {
  RankedCase c;
  c.k = k;
  // Categories up to the narrow limit, or up to 47 with at least one past it, so that the
  // AVX-512 kernel takes its 32-bit or its 64-bit lanes.
  const unsigned top = wide ? simd::kRankedMaxCategory : simd::kRankedNarrowCategory;
  for (unsigned r = 0; r < ranks; ++r) {
    c.categories[r + (1u << k)] = static_cast<std::uint8_t>(rng() % (top + 1));
  }
  c.categories[(1u << k) + rng() % ranks] = static_cast<std::uint8_t>(
      wide ? simd::kRankedNarrowCategory + 1 + rng() % (top - simd::kRankedNarrowCategory) : top);
  for (std::uint8_t category : c.categories) c.widest = std::max<unsigned>(c.widest, category);
  // Stray indexes (past the ranks) are read as the decoder never passes them: with the whole
  // table valid, so that every level must agree on them too.
  if (!stray) c.index_end = ranks + (1u << k);
  c.ends.resize(count);
  c.index.resize(count);
  c.lows.resize((k * count + 7) / 8 + 8);
  for (auto& b : c.lows) b = static_cast<std::uint8_t>(rng());
  std::uint32_t next = 0;  // the unary stream's next bit
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t rank = static_cast<std::uint32_t>(rng() % ranks);
    if (stray && i % 37 == 5) rank += static_cast<std::uint32_t>(rng() % 200);
    const std::uint32_t quotient = rank >> k, low = rank & ((1u << k) - 1);
    c.ends[i] = next + quotient;
    next = c.ends[i] + 1;
    // The low bits at bit k i, over random bits that the kernels must mask off.
    for (unsigned b = 0; b < k; ++b) {
      const std::size_t bit = k * i + b;
      c.lows[bit / 8] = static_cast<std::uint8_t>((c.lows[bit / 8] & ~(1u << (bit % 8))) |
                                                  ((low >> b) & 1) << (bit % 8));
    }
    c.index[i] = ((quotient + 1) << k) | low;
  }
  // The fields are random bits: each code takes the next c - 1 of them.
  std::uint64_t field_bits = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned category = c.categories[c.index[i] % simd::kRankedTable];
    field_bits += category == 0 ? 0 : category - 1;
  }
  c.bits.resize((field_bits + 7) / 8 + simd::kRankedReadAhead);
  for (auto& b : c.bits) b = static_cast<std::uint8_t>(rng());
  std::uint64_t bit = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned category = c.categories[c.index[i] % simd::kRankedTable];
    c.at.push_back(bit);
    c.number.push_back(category == 0 ? 0
                                     : (std::uint64_t{1} << (category - 1)) |
                                           BitsAt(c.bits, bit, category - 1));
    bit += category == 0 ? 0 : category - 1;
  }
  c.at.push_back(bit);
  return c;
}

// What any level must return when `readable` bytes of the field stream may be read: the codes
// before the first whose field starts within 8 bytes of the end, the bit after them and their
// largest index.
simd::RankedResult ExpectedRanked(const RankedCase& c, std::size_t readable) {
  simd::RankedResult r;
  while (r.done < c.ends.size() && (c.at[r.done] >> 3) + 8 <= readable) {
    r.max_index = std::max(r.max_index, c.index[r.done]);
    ++r.done;
  }
  r.bit_end = c.at[r.done];
  return r;
}

// Runs `kernels`' ranked_codes on `c` with its streams in heap copies of exactly the bytes the
// kernel may read (`readable` of the fields), so that an over-read is an ASan report.
simd::RankedResult RunRanked(const Kernels& kernels, const RankedCase& c, std::size_t readable,
                             std::uint64_t add, unsigned sums, bool zigzag, std::uint64_t first,
                             std::uint64_t first2, std::vector<std::uint64_t>* out,
                             std::vector<std::uint64_t>* in_order) {
  const std::size_t count = c.ends.size();
  auto ends = std::make_unique<std::uint32_t[]>(count);
  std::copy(c.ends.begin(), c.ends.end(), ends.get());
  auto lows = std::make_unique<std::uint8_t[]>(c.lows.size());
  std::copy(c.lows.begin(), c.lows.end(), lows.get());
  auto bits = std::make_unique<std::uint8_t[]>(readable);
  std::copy(c.bits.begin(), c.bits.begin() + static_cast<std::ptrdiff_t>(readable), bits.get());
  out->assign(count, 0);
  simd::RankedCodes job{ends.get(), count,      c.k,      lows.get(), c.categories,
                        c.widest,   bits.get(), readable, add,        out->data()};
  job.sums = sums;
  job.zigzag = zigzag;
  job.first = first;
  job.first2 = first2;
  job.in_order = sums == 0 ? nullptr : in_order->data();
  job.index_end = c.index_end;
  return kernels.ranked_codes(job);
}

// The ranked-code kernel at every level against a direct computation: random rank tables of one
// to 48 ranks whose widest category is within the AVX-512 kernel's 32-bit lanes or past them,
// Rice parameters 0 to 3, counts around its sixteen-code steps, a base or none, and for full
// blocks in lane order the running sums (one or two, zigzagged or with a base) in block order.
// Fields read to the end of the stream with random bits past it (which must not leak into the
// numbers), and the early stop where the stream ends sooner: each level stops before the same
// code, without reading past the end or summing.
TEST(KernelsTest, RankedKernelsAgree) {
  constexpr std::size_t kFull = simd::kRiceLanes * simd::kRiceLaneRows;
  std::mt19937_64 rng(23);
  for (std::size_t count : {1, 15, 16, 17, 300, 1024}) {
    for (unsigned k = 0; k <= simd::kRankedMaxK; ++k) {
      for (bool wide : {false, true}) {
        // One rank, random ranks with stray codes, all 48, and tables whose valid indexes end
        // at 16 or within 17..32 (the AVX2 kernel's lookups of one or two 16-byte pieces).
        for (int variant = 0; variant < 5; ++variant) {
          const unsigned ranks = variant == 0   ? 1
                                 : variant == 1 ? 2 + static_cast<unsigned>(rng() % 46)
                                 : variant == 2 ? simd::kRankedMaxCategory + 1
                                 : variant == 3
                                     ? 16 - (1u << k)
                                     : 17 - (1u << k) + static_cast<unsigned>(rng() % 16);
          const RankedCase c = MakeRankedCase(count, k, wide, ranks, variant == 1, rng);
          const std::size_t full = c.bits.size();
          const std::string what = "count " + std::to_string(count) + " k " + std::to_string(k) +
                                   " widest " + std::to_string(c.widest) + " ranks " +
                                   std::to_string(ranks);
          // Each code's number (sums 0), with the stream read to its end or stopped early: at
          // once, before the middle or the last code, and just far enough for the last.
          const std::size_t last = c.at[count - 1] >> 3;
          for (const std::size_t readable : {full, std::size_t{0}, std::size_t{7},
                                             (c.at[count / 2] >> 3) + 7, last + 7, last + 8}) {
            const simd::RankedResult want = ExpectedRanked(c, readable);
            for (const std::uint64_t add : {std::uint64_t{0}, rng()}) {
              for (const Kernels* kernels : AllLevels()) {
                std::vector<std::uint64_t> out;
                const simd::RankedResult got =
                    RunRanked(*kernels, c, readable, add, 0, false, 0, 0, &out, nullptr);
                ASSERT_EQ(got.done, want.done)
                    << kernels->name << " " << what << " readable " << readable;
                EXPECT_EQ(got.bit_end, want.bit_end) << kernels->name << " " << what;
                EXPECT_EQ(got.max_index, want.max_index) << kernels->name << " " << what;
                for (std::size_t i = 0; i < want.done; ++i) {
                  ASSERT_EQ(out[i], c.number[i] + add)
                      << kernels->name << " " << what << " code " << i << " add " << add;
                }
              }
            }
          }
          if (count != kFull) continue;
          // Lane order: each sixteen codes are two rows of eight lanes of 128 numbers, even codes
          // the first row: code t = 16 g + p is number 128 (p / 2) + 2 g + p % 2. A base comes
          // only without zigzag, as the decoder passes them.
          for (const bool zigzag : {false, true}) {
            const std::uint64_t add = zigzag ? 0 : rng(), first = rng(), first2 = rng();
            std::vector<std::uint64_t> number(kFull);
            for (std::size_t t = 0; t < kFull; ++t) {
              const std::uint64_t v = c.number[t] + add;
              const std::size_t g = t / 16, p = t % 16;
              number[128 * (p / 2) + 2 * g + p % 2] = zigzag ? (v >> 1) ^ (0 - (v & 1)) : v;
            }
            for (const unsigned sums : {1u, 2u}) {
              std::vector<std::uint64_t> want_sums(kFull);
              std::uint64_t sum1 = first;
              for (std::size_t i = 0; i < kFull; ++i) {
                if (i > 0) sum1 += number[i];
                want_sums[i] = sums == 1 ? sum1 : i == 0 ? first2 : want_sums[i - 1] + sum1;
              }
              // Read to the end, stopped before the last code, or with just enough for the last
              // code but not for a vector kernel's last group: a level may then stop at a group
              // (never past the codes the stream allows), and a stopped kernel sums nothing.
              for (const std::size_t readable : {full, last + 7, last + 8}) {
                const simd::RankedResult allowed = ExpectedRanked(c, readable);
                for (const Kernels* kernels : AllLevels()) {
                  std::vector<std::uint64_t> out, in_order(kFull, 0x5a5a5a5a5a5a5a5aull);
                  const simd::RankedResult got = RunRanked(*kernels, c, readable, add, sums, zigzag,
                                                           first, first2, &out, &in_order);
                  ASSERT_LE(got.done, allowed.done) << kernels->name << " " << what;
                  if (readable == full) {
                    ASSERT_EQ(got.done, kFull) << kernels->name << " " << what;
                  }
                  // What the codes it did decode give.
                  simd::RankedResult want;
                  for (; want.done < got.done; ++want.done) {
                    want.max_index = std::max(want.max_index, c.index[want.done]);
                  }
                  want.bit_end = c.at[want.done];
                  EXPECT_EQ(got.bit_end, want.bit_end) << kernels->name << " " << what;
                  EXPECT_EQ(got.max_index, want.max_index) << kernels->name << " " << what;
                  EXPECT_EQ(in_order, got.done == kFull ? want_sums
                                                        : std::vector<std::uint64_t>(
                                                              kFull, 0x5a5a5a5a5a5a5a5aull))
                      << kernels->name << " " << what << " zigzag " << zigzag << " sums " << sums
                      << " readable " << readable;
                }
              }
            }
          }
        }
      }
    }
  }
}

// The running sum that turns deltas into integers, at every level, around the vector edges and
// with sums that wrap.
TEST(KernelsTest, PrefixSumAgrees) {
  std::mt19937_64 rng(13);
  for (const Kernels* k : AllLevels()) {
    for (std::size_t count : {1, 2, 8, 9, 15, 16, 17, 100, 1023, 1024}) {
      std::vector<std::uint64_t> deltas(count);
      for (auto& d : deltas) d = rng() >> (rng() % 64);
      const std::uint64_t first = rng();
      std::vector<std::uint64_t> want(count);
      for (std::size_t j = 0; j < count; ++j) want[j] = j == 0 ? first : want[j - 1] + deltas[j];
      std::vector<std::uint64_t> got = deltas;
      k->prefix_sum(got.data(), count, first);
      EXPECT_EQ(got, want) << k->name << " count " << count;
    }
  }
}

// The same sum over zigzagged deltas (both signs, the extremes of 64 bits among them), unzigzagged
// on the way, at every level.
TEST(KernelsTest, UnZigZagPrefixSumAgrees) {
  std::mt19937_64 rng(14);
  for (const Kernels* k : AllLevels()) {
    for (std::size_t count : {1, 2, 8, 9, 15, 16, 17, 100, 1023, 1024}) {
      std::vector<std::int64_t> deltas(count);
      for (auto& d : deltas) d = static_cast<std::int64_t>(rng()) >> (rng() % 64);
      if (count > 3) {
        deltas[1] = INT64_MIN;
        deltas[2] = INT64_MAX;
      }
      const std::uint64_t first = rng();
      std::vector<std::uint64_t> want(count);
      std::vector<std::uint64_t> got(count);
      for (std::size_t j = 0; j < count; ++j) {
        const auto d = static_cast<std::uint64_t>(deltas[j]);
        want[j] = j == 0 ? first : want[j - 1] + d;
        got[j] = (d << 1) ^ static_cast<std::uint64_t>(deltas[j] >> 63);
      }
      k->unzigzag_prefix_sum(got.data(), count, first);
      EXPECT_EQ(got, want) << k->name << " count " << count;
    }
  }
}

// Varints of every length from 1 to 8 bytes, in random order and across 64-byte chunk edges,
// decode at every level to the values written; streams that are not exactly n varints of at most
// 8 bytes are refused at every level: a 9-byte varint, a dangling continuation byte after the
// last varint, one varint too few or too many, and a last varint without its end byte.
TEST(KernelsTest, VarintKernelsAgree) {
  std::mt19937_64 rng(17);
  const auto put = [](std::uint64_t u, std::vector<std::uint8_t>* out) {
    while (u >= 0x80) {
      out->push_back(static_cast<std::uint8_t>(u | 0x80));
      u >>= 7;
    }
    out->push_back(static_cast<std::uint8_t>(u));
  };
  // The caller's buffer: the stream, then zeros up to what the kernels may read.
  const auto padded = [](std::vector<std::uint8_t> bytes) {
    bytes.resize(simd::VarintReadBytes(bytes.size()), 0);
    return bytes;
  };
  // Lengths: mixed, all one byte (64 varints to a 64-byte window), all eight bytes.
  for (const Kernels* k : AllLevels()) {
    for (const std::size_t n : {1, 2, 63, 64, 65, 1000, 1024}) {
      for (const unsigned fixed : {0u, 1u, 8u}) {
        std::vector<std::uint64_t> values(n);
        std::vector<std::uint8_t> stream;
        for (auto& v : values) {
          const unsigned bytes = fixed != 0 ? fixed : 1 + static_cast<unsigned>(rng() % 8);
          v = (rng() >> (64 - 7 * bytes)) |
              (std::uint64_t{1} << (7 * bytes - 1));          // 7 * bytes bits
          if (fixed == 0 && rng() % 4 == 0) v = rng() % 128;  // many one-byte values, as deltas
          put(v, &stream);
        }
        const std::vector<std::uint8_t> buffer = padded(stream);
        std::vector<std::uint64_t> got(n + 1, 7);
        ASSERT_TRUE(k->decode_varints(buffer.data(), stream.size(), n, got.data()))
            << k->name << " n " << n;
        got.pop_back();
        EXPECT_EQ(got, values) << k->name << " n " << n;
        // One too few, one too many, and a cut inside the last varint (it ends in a byte with the
        // continuation bit, or its end byte is missing).
        got.assign(n + 1, 0);
        EXPECT_FALSE(k->decode_varints(buffer.data(), stream.size(), n + 1, got.data())) << k->name;
        if (n > 1) {
          // Into exactly n - 1 slots: a kernel that wrote the extra varint before refusing would
          // write past them (AddressSanitizer).
          std::vector<std::uint64_t> fewer(n - 1);
          EXPECT_FALSE(k->decode_varints(buffer.data(), stream.size(), n - 1, fewer.data()))
              << k->name;
        }
        std::vector<std::uint8_t> cut = stream;
        cut.back() |= 0x80;  // the last varint never ends
        EXPECT_FALSE(k->decode_varints(padded(cut).data(), cut.size(), n, got.data())) << k->name;
        std::vector<std::uint8_t> dangling = stream;
        dangling.push_back(0x80);  // n varints, then a byte that starts one more
        EXPECT_FALSE(k->decode_varints(padded(dangling).data(), dangling.size(), n, got.data()))
            << k->name;
        // A 9-byte varint in the middle.
        std::vector<std::uint8_t> long_one;
        for (std::size_t i = 0; i + 1 < n; ++i) put(values[i], &long_one);
        for (int b = 0; b < 8; ++b) long_one.push_back(0x81);
        long_one.push_back(0x01);
        EXPECT_FALSE(k->decode_varints(padded(long_one).data(), long_one.size(), n, got.data()))
            << k->name << " n " << n;
      }
    }
  }
}

// Grouped XOR's scan and field kernels against a direct computation, at every level, for block
// lengths around the group and vector edges and XORs that are mostly zero, half zero or never.
TEST(KernelsTest, XorGroupKernelsAgree) {
  std::mt19937_64 rng(21);
  const std::vector<const Kernels*> levels = [] {
    std::vector<const Kernels*> all = VectorLevels();
    all.insert(all.begin(), &simd::ScalarKernels());
    return all;
  }();
  for (unsigned repeat_in_8 : {0u, 4u, 7u}) {
    std::vector<double> v(1024);
    std::uint64_t bits = rng();
    for (auto& x : v) {
      if (rng() % 8 >= repeat_in_8) bits ^= rng() >> (rng() % 64);
      x = std::bit_cast<double>(bits);
    }
    for (std::size_t n : {2, 3, 9, 32, 33, 34, 40, 64, 65, 1000, 1024}) {
      const std::size_t groups = (n - 1 + simd::kXorGroupSize - 1) / simd::kXorGroupSize;
      for (const Kernels* k : levels) {
        std::vector<std::uint64_t> xors(n), ors(groups);
        std::vector<std::uint32_t> nonzero(groups);
        k->xor_groups_scan(v.data(), n, xors.data(), ors.data(), nonzero.data());
        for (std::size_t g = 0; g < groups; ++g) {
          const std::size_t count = std::min(simd::kXorGroupSize, n - 1 - g * simd::kXorGroupSize);
          std::uint64_t all = 0;
          std::uint32_t mask = 0;
          std::vector<std::uint64_t> expect_all, expect_compact;
          const unsigned shift = static_cast<unsigned>(rng() % 8);
          for (std::size_t j = 0; j < count; ++j) {
            const std::size_t i = 1 + g * simd::kXorGroupSize + j;
            const std::uint64_t x =
                std::bit_cast<std::uint64_t>(v[i]) ^ std::bit_cast<std::uint64_t>(v[i - 1]);
            ASSERT_EQ(xors[i - 1], x) << k->name << " n=" << n << " i=" << i;
            all |= x;
            mask |= static_cast<std::uint32_t>(x != 0) << j;
            expect_all.push_back(x >> shift);
            if (x != 0) expect_compact.push_back(x >> shift);
          }
          EXPECT_EQ(ors[g], all) << k->name << " n=" << n << " g=" << g;
          EXPECT_EQ(nonzero[g], mask) << k->name << " n=" << n << " g=" << g;
          for (bool compact : {false, true}) {
            std::uint64_t fields[simd::kXorGroupSize + 8];
            const std::size_t written = k->xor_group_fields(xors.data() + g * simd::kXorGroupSize,
                                                            count, mask, shift, compact, fields);
            const std::vector<std::uint64_t>& expect = compact ? expect_compact : expect_all;
            ASSERT_EQ(written, expect.size()) << k->name << " compact=" << compact;
            EXPECT_TRUE(std::equal(expect.begin(), expect.end(), fields))
                << k->name << " n=" << n << " g=" << g << " compact=" << compact;
          }
        }
      }
    }
  }
}

TEST(KernelsTest, DeltaMinMaxAgrees) {
  std::mt19937_64 rng(9);
  std::vector<std::int64_t> v(1024), da(1024), db(1024);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() >> (rng() % 64));
  for (const Kernels* k : VectorLevels()) {
    for (std::size_t n : {2, 3, 9, 100, 1024}) {
      std::int64_t a_lo, a_hi, b_lo, b_hi;
      ASSERT_TRUE(
          simd::ScalarKernels().delta_min_max(v.data(), n, UINT64_MAX, da.data(), &a_lo, &a_hi));
      ASSERT_TRUE(k->delta_min_max(v.data(), n, UINT64_MAX, db.data(), &b_lo, &b_hi));
      EXPECT_EQ(a_lo, b_lo);
      EXPECT_EQ(a_hi, b_hi);
      for (std::size_t i = 1; i < n; ++i) ASSERT_EQ(da[i], db[i]) << k->name << " " << i;
      EXPECT_EQ(da[1], static_cast<std::int64_t>(static_cast<std::uint64_t>(v[1]) -
                                                 static_cast<std::uint64_t>(v[0])));
    }
  }
}

// A level may stop once the deltas span `give_up`, and only then: a completed pass gives the whole
// range, and a stopped one leaves a range that really is that wide. Narrow walks with one wide
// step at various places (early, late, in the tail) and a lane-crossing pair of steps.
TEST(KernelsTest, DeltaMinMaxStopsOnlyWhenTheRangeIsThatWide) {
  std::mt19937_64 rng(10);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  std::vector<std::int64_t> v(1024), full(1024), part(1024);
  for (std::size_t jump :
       {std::size_t{3}, std::size_t{70}, std::size_t{500}, std::size_t{1020}, std::size_t{5000}}) {
    std::int64_t x = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      x += static_cast<std::int64_t>(rng() % 16) - 8;
      if (i == jump) x += 1 << 20;
      if (jump == 5000 && (i == 200 || i == 203)) x += i == 200 ? 1 << 20 : -(1 << 20);
      v[i] = x;
    }
    for (std::size_t n : {std::size_t{2}, std::size_t{64}, std::size_t{66}, std::size_t{1024}}) {
      std::int64_t lo, hi;
      ASSERT_TRUE(
          simd::ScalarKernels().delta_min_max(v.data(), n, UINT64_MAX, full.data(), &lo, &hi));
      const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
      for (const Kernels* k : levels) {
        for (std::uint64_t give_up : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{16},
                                      std::uint64_t{1} << 19, span, span + 1, UINT64_MAX}) {
          std::int64_t plo = 0, phi = 0;
          if (k->delta_min_max(v.data(), n, give_up, part.data(), &plo, &phi)) {
            ASSERT_EQ(plo, lo) << k->name << " jump " << jump << " n " << n;
            ASSERT_EQ(phi, hi) << k->name << " jump " << jump << " n " << n;
            for (std::size_t i = 1; i < n; ++i) ASSERT_EQ(part[i], full[i]) << i;
            // An early wide step must stop the pass (that is its point).
            EXPECT_FALSE(jump == 3 && n == 1024 && give_up == std::uint64_t{1} << 19) << k->name;
          } else {
            ASSERT_GE(span, give_up) << k->name << " jump " << jump << " n " << n;
          }
        }
      }
    }
  }
}

// The outlier search's sample: every stride-th value's leading zeros above lo and below hi, at
// every level, over counts 0 to 64.
TEST(KernelsTest, SampleLeadingZerosGiveEverySamplesCounts) {
  std::mt19937_64 rng(12);
  std::vector<std::int64_t> v(1024);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() >> (rng() % 64));
  v[8] = 1000;  // v - lo is 0: 64 leading zeros
  const std::uint64_t lo = 1000, hi = ~std::uint64_t{0} >> 1;
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  for (const Kernels* k : levels) {
    for (std::size_t n : {1, 2, 9, 100, 1023, 1024}) {
      for (std::size_t stride : {1, 8}) {
        std::vector<std::uint8_t> low(n), high(n), want_low, want_high;
        for (std::size_t i = 0; i < n; i += stride) {
          const auto x = static_cast<std::uint64_t>(v[i]);
          want_low.push_back(static_cast<std::uint8_t>(64 - std::bit_width(x - lo)));
          want_high.push_back(static_cast<std::uint8_t>(64 - std::bit_width(hi - x)));
        }
        k->sample_leading_zeros(v.data(), n, stride, lo, hi, low.data(), high.data());
        low.resize(want_low.size());
        high.resize(want_high.size());
        ASSERT_EQ(low, want_low) << k->name << " n " << n << " stride " << stride;
        ASSERT_EQ(high, want_high) << k->name << " n " << n << " stride " << stride;
      }
    }
  }
}

// Counting the bytes below a limit agrees with a plain count at every level, for counts that end
// inside a vector, with the bytes past the count set to values that would be counted.
TEST(KernelsTest, CountBelowCountsOnlyTheGivenBytes) {
  std::mt19937_64 rng(15);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  for (std::size_t count : {0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 1000, 1024}) {
    std::vector<std::uint8_t> bytes(count + 64, 0);
    for (std::size_t i = 0; i < count; ++i) bytes[i] = static_cast<std::uint8_t>(rng() % 65);
    for (unsigned limit : {0u, 1u, 7u, 33u, 63u, 64u}) {
      std::size_t want = 0;
      for (std::size_t i = 0; i < count; ++i) want += bytes[i] < limit ? 1 : 0;
      for (const Kernels* k : levels) {
        EXPECT_EQ(k->count_below(bytes.data(), count, limit), want)
            << k->name << " count " << count << " limit " << limit;
      }
    }
  }
}

// Every level expands a dictionary block's runs to the run each value's bit count names, whatever
// the bitmap, reading only the runs its contract allows (the slack holds NaNs no value may take).
TEST(KernelsTest, ExpandRunsGivesEachValueItsRun) {
  std::mt19937_64 rng(14);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  constexpr std::size_t kSlack = simd::kExpandRunsSlack;
  for (const double density : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    for (std::size_t n : {1, 7, 8, 9, 63, 64, 100, 1023, 1024}) {
      std::vector<std::uint8_t> bitmap((n + 7) / 8, 0);
      std::size_t runs = 0;
      std::vector<std::size_t> want(n);
      for (std::size_t i = 0; i < n; ++i) {
        const bool start = i == 0 || std::uniform_real_distribution<double>(0, 1)(rng) < density;
        if (start) bitmap[i / 8] = static_cast<std::uint8_t>(bitmap[i / 8] | (1u << (i % 8)));
        runs += start ? 1 : 0;
        want[i] = runs - 1;
      }
      std::vector<double> storage(runs + 2 * kSlack, std::numeric_limits<double>::quiet_NaN());
      for (std::size_t r = 0; r < runs; ++r) storage[kSlack + r] = static_cast<double>(r) + 0.5;
      for (const Kernels* k : levels) {
        std::vector<double> dst(n, -1.0);
        k->expand_runs(bitmap.data(), storage.data() + kSlack, n, dst.data());
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(dst[i], static_cast<double>(want[i]) + 0.5)
              << k->name << " n " << n << " density " << density << " value " << i;
        }
      }
    }
  }
}

// Every level reads a plain bit stream field by field, for every width, in a buffer that ends
// where the contract's readable bytes end (an exact-size heap copy: ASan sees a read past it).
TEST(KernelsTest, UnpackStreamReadsEveryField) {
  std::mt19937_64 rng(15);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  for (unsigned width = 1; width <= 64; ++width) {
    for (std::size_t count : {1, 7, 8, 9, 17, 100, 533, 1023}) {
      const std::size_t bytes = (count * width + 7) / 8;
      for (const std::size_t extra : {std::size_t{8}, std::size_t{200}}) {
        const std::size_t readable = bytes + extra;
        auto stream = std::make_unique<std::uint8_t[]>(readable);
        for (std::size_t b = 0; b < readable; ++b) stream[b] = static_cast<std::uint8_t>(rng());
        const std::uint64_t base = rng();
        std::vector<std::uint64_t> want(count);
        for (std::size_t i = 0; i < count; ++i) {
          std::uint64_t field = 0;
          for (unsigned j = 0; j < width; ++j) {
            const std::size_t bit = i * width + j;
            field |= std::uint64_t{(stream[bit / 8] >> (bit % 8)) & 1u} << j;
          }
          want[i] = field + base;
        }
        for (const Kernels* k : levels) {
          std::vector<std::uint64_t> got(count);
          k->unpack_stream(stream.get(), readable, count, width, base, got.data());
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(got[i], want[i]) << k->name << " width " << width << " count " << count
                                       << " readable " << readable << " field " << i;
          }
        }
      }
    }
  }
}

// Every level splits radix fields into the digits plain division gives, for every digit count a
// range allows, with fields at the edges (0, multiples of the range's powers and one below, the
// largest) as well as random ones.
TEST(KernelsTest, RadixDigitsMatchDivision) {
  std::mt19937_64 rng(16);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  const std::uint64_t limit = std::uint64_t{1} << 32;
  for (const std::uint64_t range :
       {std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{10}, std::uint64_t{141},
        std::uint64_t{201}, std::uint64_t{533}, std::uint64_t{65537}, std::uint64_t{4294967291}}) {
    std::uint64_t power = 1;
    for (unsigned digits = 1; power * range <= limit && digits <= 32; ++digits) {
      power *= range;  // range^digits
      for (const std::size_t count :
           {std::size_t{1}, std::size_t{digits}, std::size_t{8}, std::size_t{9}, std::size_t{100},
            std::size_t{533}, std::size_t{1024}}) {
        const std::size_t field_count = (count + digits - 1) / digits;
        std::vector<std::uint64_t> fields(field_count + simd::kRadixFieldSlack, 0);
        std::vector<std::uint64_t> want(count);
        for (std::size_t f = 0; f < field_count; ++f) {
          const std::size_t here = std::min<std::size_t>(digits, count - f * digits);
          std::uint64_t top = 1;
          for (std::size_t d = 0; d < here; ++d) top *= range;
          std::uint64_t x = rng() % top;
          switch (rng() % 4) {
            case 0:
              x = top - 1;
              break;
            case 1:
              x = (rng() % here == 0) ? 0 : top / range * (rng() % range);
              break;
            case 2:
              x = x / range * range;
              break;
            default:
              break;
          }
          fields[f] = x;
          for (std::size_t d = 0; d < here; ++d, x /= range) want[f * digits + d] = x % range + 7;
        }
        for (const Kernels* k : levels) {
          std::vector<std::uint64_t> got(count);
          k->radix_digits(fields.data(), count, range, digits, 7, got.data());
          for (std::size_t i = 0; i < count; ++i) {
            ASSERT_EQ(got[i], want[i]) << k->name << " range " << range << " digits " << digits
                                       << " count " << count << " digit " << i;
          }
        }
      }
    }
  }
}

// Every level joins ALP-RD's left parts (looked up by index) and right parts into the same
// doubles, and reports the largest index, which may name a slot past the real dictionary.
TEST(KernelsTest, AlpRdJoinMatchesTheLookup) {
  std::mt19937_64 rng(17);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  std::uint64_t dictionary[8];
  for (auto& d : dictionary) d = (rng() & 0xffff) << 48;
  for (const std::size_t n : {1, 7, 8, 9, 100, 1023, 1024}) {
    for (const std::uint64_t top : {0, 3, 7}) {
      std::vector<std::uint64_t> rights(n), indexes(n);
      for (std::size_t i = 0; i < n; ++i) {
        rights[i] = rng() >> 16;
        indexes[i] = rng() % (top + 1);
      }
      if (n > 0) indexes[rng() % n] = top;
      for (const Kernels* k : levels) {
        std::vector<double> out(n);
        EXPECT_EQ(k->alp_rd_join_double(rights.data(), indexes.data(), n, dictionary, out.data()),
                  top)
            << k->name << " n " << n;
        for (std::size_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::bit_cast<std::uint64_t>(out[i]), dictionary[indexes[i]] | rights[i])
              << k->name << " n " << n << " value " << i;
        }
      }
    }
  }
}

// Every level folds a grouped-XOR group's fields, spread by its bitmap and shifted, into the same
// values, for every count and bitmaps from empty to full.
TEST(KernelsTest, XorGroupMatchesTheSequentialFold) {
  std::mt19937_64 rng(18);
  std::vector<const Kernels*> levels = VectorLevels();
  levels.push_back(&simd::ScalarKernels());
  for (std::size_t count = 0; count <= 32; ++count) {
    for (int trial = 0; trial < 6; ++trial) {
      const std::uint32_t all = count == 32 ? ~0u : (1u << count) - 1;
      std::uint32_t present = trial == 0   ? 0u
                              : trial == 1 ? all
                                           : static_cast<std::uint32_t>(rng());
      present &= all;
      const unsigned shift = static_cast<unsigned>(rng() % 64);
      const std::uint64_t prev = rng();
      std::uint64_t fields[32];
      for (auto& f : fields) f = rng() >> (rng() % 64);
      std::vector<std::uint64_t> want(count);
      std::uint64_t x = prev;
      for (std::size_t j = 0, k = 0; j < count; ++j) {
        if ((present >> j) & 1) x ^= fields[k++] << shift;
        want[j] = x;
      }
      for (const Kernels* k : levels) {
        std::vector<double> out(count);
        const std::uint64_t got_last =
            k->xor_group_double(fields, present, count, shift, prev, out.data());
        EXPECT_EQ(got_last, count == 0 ? prev : want[count - 1]) << k->name << " count " << count;
        for (std::size_t j = 0; j < count; ++j) {
          ASSERT_EQ(std::bit_cast<std::uint64_t>(out[j]), want[j])
              << k->name << " count " << count << " value " << j;
        }
      }
    }
  }
}

template <typename T>
void CheckAlpRdSplit(const Kernels& k) {
  using Bits = typename AlpConstants<T>::Bits;
  std::mt19937_64 rng(10);
  const std::uint16_t dictionary[8] = {3, 7, 1, 0, 12, 9, 15, 2};
  std::vector<T> in(1000);
  const unsigned right_bits = sizeof(T) * 8 - 4;
  for (auto& v : in) v = std::bit_cast<T>(static_cast<Bits>(rng()));
  std::vector<std::uint64_t> ra(1024), rb(1024), ia(1024), ib(1024), ea(16), eb(16);
  for (unsigned size : {1u, 3u, 8u}) {
    std::size_t a, b;
    if constexpr (sizeof(T) == 8) {
      a = simd::ScalarKernels().alp_rd_split_double(in.data(), in.size(), right_bits, dictionary,
                                                    size, ra.data(), ia.data(), ea.data());
      b = k.alp_rd_split_double(in.data(), in.size(), right_bits, dictionary, size, rb.data(),
                                ib.data(), eb.data());
    } else {
      a = simd::ScalarKernels().alp_rd_split_float(in.data(), in.size(), right_bits, dictionary,
                                                   size, ra.data(), ia.data(), ea.data());
      b = k.alp_rd_split_float(in.data(), in.size(), right_bits, dictionary, size, rb.data(),
                               ib.data(), eb.data());
    }
    ASSERT_EQ(a, b) << k.name;
    std::size_t expected = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto bits = std::bit_cast<Bits>(in[i]);
      const auto left = static_cast<std::uint16_t>(bits >> right_bits);
      std::size_t index = size;
      for (std::size_t d = size; d-- > 0;) index = dictionary[d] == left ? d : index;
      const bool exc = index == size;
      expected += exc;
      ASSERT_EQ(exc, static_cast<bool>((ea[i / 64] >> (i % 64)) & 1)) << i;
      ASSERT_EQ(ra[i], bits & ((Bits{1} << right_bits) - 1)) << i;
      ASSERT_EQ(ia[i], exc ? 0 : index) << i;
      ASSERT_EQ(rb[i], ra[i]) << k.name << " " << i;
      ASSERT_EQ(ib[i], ia[i]) << k.name << " " << i;
    }
    ASSERT_EQ(a, expected);
    ASSERT_EQ(ea, eb) << k.name;
  }
}

TEST(KernelsTest, AlpRdSplitAgrees) {
  CheckAlpRdSplit<double>(simd::ScalarKernels());
  CheckAlpRdSplit<float>(simd::ScalarKernels());
  for (const Kernels* k : VectorLevels()) {
    CheckAlpRdSplit<double>(*k);
    CheckAlpRdSplit<float>(*k);
  }
}

template <typename T>
void CheckCodecBytesIdentical() {
  auto ws = std::make_unique<Workspace>();
  const IsaLevel detected = simd::DetectIsa();
  for (testing::Pattern p : testing::kAllPatterns) {
    // Several blocks of one series, so the remembered-encoding path runs too; then a short block.
    const auto v = testing::MakePattern<T>(p, 4 * 1024 + 500, 4);
    std::vector<std::vector<std::uint8_t>> reference;
    for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
      if (!simd::ForceIsa(l)) continue;
      SeriesHint hint;
      std::vector<std::vector<std::uint8_t>> blocks;
      for (std::size_t start = 0; start < v.size(); start += 1024) {
        const std::size_t n = std::min<std::size_t>(1024, v.size() - start);
        const std::span<const T> in(v.data() + start, n);
        std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(n, sizeof(T)));
        if constexpr (sizeof(T) == 8) {
          buf.resize(EncodeDoubles(in, hint, *ws, buf).bytes);
        } else {
          buf.resize(EncodeFloats(in, hint, *ws, buf).bytes);
        }
        std::vector<T> back(n);
        if constexpr (sizeof(T) == 8) {
          ASSERT_TRUE(DecodeDoubles(buf, back, *ws).ok());
        } else {
          ASSERT_TRUE(DecodeFloats(buf, back, *ws).ok());
        }
        EXPECT_TRUE(testing::BitEqual(std::vector<T>(in.begin(), in.end()), back))
            << testing::PatternName(p) << " at " << simd::IsaName(l);
        blocks.push_back(std::move(buf));
      }
      if (reference.empty()) reference = blocks;
      EXPECT_EQ(blocks, reference) << testing::PatternName(p) << " at " << simd::IsaName(l);
    }
  }
  simd::ForceIsa(detected);
}

TEST(KernelsTest, CodecBytesIdenticalAtEveryLevel) {
  CheckCodecBytesIdentical<double>();
  CheckCodecBytesIdentical<float>();
}

}  // namespace
}  // namespace ingot::codec
