// Every compiled-in SIMD level agrees bit for bit with the scalar kernels, and the codec writes
// the same bytes whichever level is active.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "codec/alp_constants.h"
#include "codec/codec.h"
#include "codec/simd/kernels.h"
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
  alignas(64) std::uint64_t in[1024], packed_a[1024], packed_b[1024], out_a[1024], out_b[1024];
  for (const Kernels* k : VectorLevels()) {
    for (unsigned width = 0; width <= 64; ++width) {
      const std::uint64_t base = rng();
      const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
      for (auto& v : in) v = base + (rng() & mask);
      std::memset(packed_a, 0, sizeof(packed_a));
      std::memset(packed_b, 0, sizeof(packed_b));
      scalar.ffor_pack_1024(in, base, width, packed_a);
      k->ffor_pack_1024(in, base, width, packed_b);
      ASSERT_EQ(std::memcmp(packed_a, packed_b, 16 * 8 * width), 0) << k->name << " w=" << width;
      scalar.ffor_unpack_1024(packed_a, base, width, out_a);
      k->ffor_unpack_1024(packed_a, base, width, out_b);
      ASSERT_EQ(std::memcmp(in, out_a, sizeof(in)), 0) << "scalar w=" << width;
      ASSERT_EQ(std::memcmp(in, out_b, sizeof(in)), 0) << k->name << " w=" << width;
    }
  }
}

template <typename T>
void CheckAlpKernels(const Kernels& scalar, const Kernels& k) {
  std::mt19937_64 rng(5);
  std::vector<T> in(1023);
  std::vector<std::int64_t> ints_a(1024), ints_b(1024);
  std::uint64_t exc_a[16], exc_b[16];
  std::vector<T> out_a(1024), out_b(1024);
  for (testing::Pattern p : testing::kAllPatterns) {
    in = testing::MakePattern<T>(p, 1023, 9);
    for (unsigned e = 0; e <= AlpConstants<T>::kMaxExponent; e += 1) {
      for (unsigned f = 0; f <= e; f += 3) {
        std::size_t ca, cb;
        if constexpr (sizeof(T) == 8) {
          ca = scalar.alp_encode_double(in.data(), in.size(), e, f, ints_a.data(), exc_a);
          cb = k.alp_encode_double(in.data(), in.size(), e, f, ints_b.data(), exc_b);
        } else {
          ca = scalar.alp_encode_float(in.data(), in.size(), e, f, ints_a.data(), exc_a);
          cb = k.alp_encode_float(in.data(), in.size(), e, f, ints_b.data(), exc_b);
        }
        ASSERT_EQ(ca, cb) << k.name << " e=" << e << " f=" << f;
        ASSERT_EQ(std::memcmp(exc_a, exc_b, 16 * 8), 0) << k.name;
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
  alignas(64) std::uint64_t packed[1024];
  for (unsigned width : {0u, 1u, 7u, 20u, 33u, 52u, 64u}) {
    for (auto& w : packed) w = rng();
    const std::uint64_t base = rng() >> 20;
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

TEST(KernelsTest, CodecBytesIdenticalAtEveryLevel) {
  auto ws = std::make_unique<Workspace>();
  const IsaLevel detected = simd::DetectIsa();
  for (testing::Pattern p : testing::kAllPatterns) {
    for (std::size_t n : {1024, 500}) {
      const auto v = testing::MakePattern<double>(p, n, 4);
      std::vector<std::uint8_t> reference;
      for (IsaLevel l : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
        if (!simd::ForceIsa(l)) continue;
        SeriesHint hint;
        std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(n, 8));
        buf.resize(EncodeDoubles(v, hint, *ws, buf).bytes);
        if (reference.empty()) reference = buf;
        EXPECT_EQ(buf, reference) << testing::PatternName(p) << " at " << simd::IsaName(l);
        std::vector<double> back(n);
        ASSERT_TRUE(DecodeDoubles(reference, back, *ws).ok());
        EXPECT_TRUE(testing::BitEqual(v, back));
      }
    }
  }
  simd::ForceIsa(detected);
}

}  // namespace
}  // namespace ingot::codec
