#include "codec/bit_packing.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "codec/simd/kernels.h"
#include "codec/simd/lane_ops.h"

namespace ingot::codec {

void PackInts(const std::uint64_t* in, std::size_t count, std::uint64_t base, unsigned width,
              std::uint64_t* scratch, std::uint8_t* out) noexcept {
  const std::size_t bytes = PackedBytes(count, width);
  if (bytes == 0) return;
  if (count == simd::kFullBlock) {
    simd::ActiveKernels().ffor_pack_1024(in, base, width, out);  // straight into the block
    return;
  }
  // Short blocks: a plain bit stream; they are rare (the last block of a chunk).
  const std::uint64_t mask = simd::WidthMask(width);
  const std::size_t words = (count * width + 63) / 64;
  std::memset(scratch, 0, (words + 1) * sizeof(std::uint64_t));
  std::size_t bit = 0;
  for (std::size_t i = 0; i < count; ++i, bit += width) {
    const std::uint64_t v = (in[i] - base) & mask;
    const std::size_t w = bit / 64;
    const unsigned s = bit % 64;
    scratch[w] |= v << s;
    if (s != 0 && s + width > 64) scratch[w + 1] |= v >> (64 - s);
  }
  std::memcpy(out, scratch, bytes);
}

// Zeros after a short stream's copy for the vector kernels' windows (simd::Kernels::unpack_stream).
constexpr std::size_t kUnpackPadBytes = 128;

void UnpackInts(const std::uint8_t* in, std::size_t count, std::uint64_t base, unsigned width,
                std::uint64_t* scratch, std::uint64_t* out) noexcept {
  const std::size_t bytes = PackedBytes(count, width);
  if (count == simd::kFullBlock) {
    simd::ActiveKernels().ffor_unpack_1024(in, base, width, out);  // straight from the block
    return;
  }
  if (width == 0) {
    for (std::size_t i = 0; i < count; ++i) out[i] = base;
    return;
  }
  // A copy with zeroed words past the stream: the scalar kernel reads 8 bytes from a field's
  // first byte (or word); the vector kernels read 64- or 128-byte windows while they fit, so up to
  // kUnpackPadBytes more of zeros (as many as the scratch holds) let them run to the end.
  const std::size_t words = (count * width + 63) / 64;
  const std::size_t readable =
      std::min((words + 1) * 8 + kUnpackPadBytes, (simd::kFullBlock + 1) * sizeof *scratch);
  std::memset(reinterpret_cast<std::uint8_t*>(scratch) + (words > 0 ? words - 1 : 0) * 8, 0,
              readable - (words > 0 ? words - 1 : 0) * 8);
  std::memcpy(scratch, in, bytes);
  simd::ActiveKernels().unpack_stream(reinterpret_cast<const std::uint8_t*>(scratch), readable,
                                      count, width, base, out);
}

namespace {

// range^digits, or 0 when it passes 2^32.
std::uint64_t RadixPower(std::uint64_t range, unsigned digits) {
  std::uint64_t p = 1;
  for (unsigned d = 0; d < digits; ++d) {
    p *= range;
    if (p > kMaxRadixRange) return 0;
  }
  return p;
}

}  // namespace

RadixGroup ChooseRadixGroup(std::uint64_t range) noexcept {
  if (range <= 1) return {1, 0};
  RadixGroup best{1, static_cast<unsigned>(std::bit_width(range - 1))};
  for (unsigned digits = 2; digits <= 32; ++digits) {
    const std::uint64_t p = RadixPower(range, digits);
    if (p == 0) break;
    const auto bits = static_cast<unsigned>(std::bit_width(p - 1));
    if (bits * best.digits < best.bits * digits) best = {digits, bits};
  }
  return best;
}

std::size_t RadixPackedBytes(std::size_t count, std::uint64_t range) noexcept {
  const RadixGroup g = ChooseRadixGroup(range);
  const std::size_t fields = (count + g.digits - 1) / g.digits;
  return (fields * g.bits + 7) / 8;
}

void PackRadix(const std::uint64_t* in, std::size_t count, std::uint64_t base,
               std::uint64_t range, std::uint8_t* out) noexcept {
  const RadixGroup g = ChooseRadixGroup(range);
  if (g.bits == 0) return;
  std::uint64_t acc = 0;  // bits not yet written, from bit 0
  unsigned pending = 0;
  for (std::size_t i = 0; i < count; i += g.digits) {
    const std::size_t end = std::min(count, i + g.digits);
    std::uint64_t field = 0;
    for (std::size_t j = end; j-- > i;) field = field * range + (in[j] - base);
    acc |= field << pending;
    pending += g.bits;
    while (pending >= 8) {
      *out++ = static_cast<std::uint8_t>(acc);
      acc >>= 8;
      pending -= 8;
    }
  }
  if (pending > 0) *out = static_cast<std::uint8_t>(acc);
}

bool UnpackRadix(const std::uint8_t* in, std::size_t count, std::uint64_t base,
                 std::uint64_t range, std::uint64_t* scratch, std::uint64_t* out) noexcept {
  const RadixGroup g = ChooseRadixGroup(range);
  if (g.bits == 0) {
    for (std::size_t i = 0; i < count; ++i) out[i] = base;
    return true;
  }
  if (count == 0) return true;
  const std::size_t fields = (count + g.digits - 1) / g.digits;
  const std::size_t bytes = (fields * g.bits + 7) / 8;
  const std::uint64_t full_limit = RadixPower(range, g.digits);
  const unsigned tail = static_cast<unsigned>(fields * g.bits % 8);
  const bool clean_tail = tail == 0 || (in[bytes - 1] >> tail) == 0;
  const std::size_t last_digits = count - (fields - 1) * g.digits;
  const std::uint64_t last_limit =
      last_digits == g.digits ? full_limit : RadixPower(range, static_cast<unsigned>(last_digits));
  const simd::Kernels& kernels = simd::ActiveKernels();
  // The stream is copied, with a zeroed word past it, into `out` (digits take 8 bytes each and a
  // field at most 4 per digit, so it fits whenever there are two digits or more), and the fields
  // come out of it into `scratch` by the bit-stream kernel (eight at a time with AVX-512); the
  // digits then overwrite the copy. A single digit is one field, read in place.
  static_assert(simd::kRadixFieldSlack <= 8);  // scratch holds 1024 + 8 words
  if (count >= 2) {
    auto* copy = reinterpret_cast<std::uint8_t*>(out);
    std::memcpy(copy, in, bytes);
    std::memset(copy + bytes, 0, sizeof(std::uint64_t));
    kernels.unpack_stream(copy, count * sizeof(std::uint64_t), fields, g.bits, 0, scratch);
  } else {
    std::uint64_t w = 0;
    std::memcpy(&w, in, bytes);
    scratch[0] = w & simd::WidthMask(g.bits);
  }
  // Every field below range^digits, the last below range^(its digits). Fields are below 2^32, so
  // the signed min/max kernel finds the largest; full_limit is 2^32 only for one 32-bit digit,
  // which no field can pass.
  bool past = scratch[fields - 1] >= last_limit;
  if (fields > 1) {
    std::int64_t smallest = 0, largest = 0;
    kernels.min_max(reinterpret_cast<const std::int64_t*>(scratch), fields - 1, &smallest,
                    &largest);
    past = past || static_cast<std::uint64_t>(largest) >= full_limit;
  }
  if (past || !clean_tail) return false;
  std::memset(scratch + fields, 0, simd::kRadixFieldSlack * sizeof(std::uint64_t));
  kernels.radix_digits(scratch, count, range, g.digits, base, out);
  return true;
}

}  // namespace ingot::codec
