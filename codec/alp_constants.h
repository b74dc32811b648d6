// Constants of the ALP encoding: powers of ten, rounding magic numbers and search limits.
//
// ALP turns a value v into the integer round(v * 10^e * 10^-f) and back into
// n * 10^f * 10^-e, in the value type's own arithmetic. Rounding adds and subtracts
// 1.5 * 2^52 (2^23 for float arithmetic would lose the integers above 2^22, so floats are rounded
// after an exact widening to double): for |x| < 2^51 the sum's mantissa holds round-half-even(x),
// so the integer is a bit subtraction and the way back is an add plus one float subtraction. Every
// ISA computes exactly this, which is why all kernels agree bit for bit.
#pragma once

#include <bit>
#include <cstdint>

namespace ingot::codec {

template <typename T>
struct AlpConstants;

template <>
struct AlpConstants<double> {
  using Bits = std::uint64_t;
  static constexpr unsigned kMaxExponent = 18;
  // Integers at or above this magnitude are exceptions; keeps deltas and the magic trick exact.
  static constexpr double kMaxMagnitude = 1125899906842624.0;  // 2^50
  static constexpr double kExp10[19] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,
                                        1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13,
                                        1e14, 1e15, 1e16, 1e17, 1e18};
  static constexpr double kFrac10[19] = {1e0,   1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,
                                         1e-7,  1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13,
                                         1e-14, 1e-15, 1e-16, 1e-17, 1e-18};
};

template <>
struct AlpConstants<float> {
  using Bits = std::uint32_t;
  static constexpr unsigned kMaxExponent = 10;
  static constexpr double kMaxMagnitude = 2097152.0;  // 2^21
  static constexpr float kExp10[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                       1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
  static constexpr float kFrac10[11] = {1e0f,  1e-1f, 1e-2f, 1e-3f, 1e-4f, 1e-5f,
                                        1e-6f, 1e-7f, 1e-8f, 1e-9f, 1e-10f};
};

// 1.5 * 2^52: adding it to |x| < 2^51 leaves round-half-even(x) in the low mantissa bits.
inline constexpr double kRoundMagic = 6755399441055744.0;
inline constexpr std::uint64_t kRoundMagicBits = 0x4338000000000000ull;
static_assert(std::bit_cast<std::uint64_t>(kRoundMagic) == kRoundMagicBits);

}  // namespace ingot::codec
