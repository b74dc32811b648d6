// One-value versions of the ALP and FFOR steps. The scalar kernels are loops over these, and the
// vector kernels use them for tails, so every level computes exactly the same bits.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "codec/alp_constants.h"

namespace ingot::codec::simd {

inline constexpr std::uint64_t kAbsMask = 0x7fffffffffffffffull;

inline std::uint64_t WidthMask(unsigned width) {
  return width >= 64 ? ~0ull : (1ull << width) - 1;
}

// Returns true when `v` is an exception; *out gets the integer (0 for exceptions out of range).
inline bool AlpEncodeOne(double v, unsigned e, unsigned f, std::int64_t* out) {
  using C = AlpConstants<double>;
  const double r = v * C::kExp10[e] * C::kFrac10[f];
  const bool valid = (std::bit_cast<std::uint64_t>(r) & kAbsMask) <
                     std::bit_cast<std::uint64_t>(C::kMaxMagnitude);
  const double t = (valid ? r : 0.0) + kRoundMagic;
  *out = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(t) - kRoundMagicBits);
  const double dec = (t - kRoundMagic) * C::kExp10[f] * C::kFrac10[e];
  return !valid || std::bit_cast<std::uint64_t>(dec) != std::bit_cast<std::uint64_t>(v);
}

inline bool AlpEncodeOne(float v, unsigned e, unsigned f, std::int64_t* out) {
  using C = AlpConstants<float>;
  const float r = v * C::kExp10[e] * C::kFrac10[f];
  const double rd = static_cast<double>(r);
  const bool valid = (std::bit_cast<std::uint64_t>(rd) & kAbsMask) <
                     std::bit_cast<std::uint64_t>(C::kMaxMagnitude);
  const double t = (valid ? rd : 0.0) + kRoundMagic;
  *out = static_cast<std::int64_t>(std::bit_cast<std::uint64_t>(t) - kRoundMagicBits);
  const float dec = static_cast<float>(t - kRoundMagic) * C::kExp10[f] * C::kFrac10[e];
  return !valid || std::bit_cast<std::uint32_t>(dec) != std::bit_cast<std::uint32_t>(v);
}

// Any integer decodes without undefined behaviour; integers the encoder produced decode exactly.
inline double AlpDecodeOneDouble(std::uint64_t n, unsigned e, unsigned f) {
  using C = AlpConstants<double>;
  const double d = std::bit_cast<double>(n + kRoundMagicBits) - kRoundMagic;
  return d * C::kExp10[f] * C::kFrac10[e];
}

// True when every integer of a 1024-value FFOR block (base + a `width`-bit field, wrapping) lies in
// [-2^51, 2^51), where adding kRoundMagicBits gives exactly the double kRoundMagic + n. Decoders
// may then take the fused multiply-add, which gives the same bits as AlpDecodeOneDouble there.
inline bool FforMagicExact(std::uint64_t base, unsigned width) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 51;
  const auto lo = static_cast<std::int64_t>(base);
  return width <= 51 && lo >= -kLimit && lo < kLimit - static_cast<std::int64_t>(WidthMask(width));
}

// The same for a delta block's running sums from `first`: each of the 1023 steps moves by at most
// the larger magnitude of the step range [base, base + 2^width).
inline bool DeltaMagicExact(std::uint64_t base, unsigned width, std::uint64_t first) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 51;
  constexpr std::int64_t kStepLimit = std::int64_t{1} << 40;  // 1023 steps stay below 2^50
  const auto lo = static_cast<std::int64_t>(base);
  const auto start = static_cast<std::int64_t>(first);
  if (width > 39 || lo <= -kStepLimit || lo >= kStepLimit) return false;
  const std::int64_t hi = lo + static_cast<std::int64_t>(WidthMask(width));
  const std::int64_t step = std::max(lo < 0 ? -lo : lo, hi < 0 ? -hi : hi);
  return start > -kLimit / 2 && start < kLimit / 2 && step * 1023 < kLimit / 2;
}

inline float AlpDecodeOneFloat(std::uint64_t n, unsigned e, unsigned f) {
  using C = AlpConstants<float>;
  double d = std::bit_cast<double>(n + kRoundMagicBits) - kRoundMagic;
  // Only corrupt input gets here with a large value; keep the narrowing conversion defined.
  const bool in_range = (std::bit_cast<std::uint64_t>(d) & kAbsMask) <
                        std::bit_cast<std::uint64_t>(16777216.0);
  d = in_range ? d : 0.0;
  return static_cast<float>(d) * C::kExp10[f] * C::kFrac10[e];
}

}  // namespace ingot::codec::simd
