#include "codec/bit_packing.h"

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
  const std::size_t words = (count * width + 63) / 64;
  scratch[words] = 0;
  scratch[words > 0 ? words - 1 : 0] = 0;
  std::memcpy(scratch, in, bytes);
  const std::uint64_t mask = simd::WidthMask(width);
  std::size_t bit = 0;
  for (std::size_t i = 0; i < count; ++i, bit += width) {
    const std::size_t w = bit / 64;
    const unsigned s = bit % 64;
    std::uint64_t v = scratch[w] >> s;
    if (s != 0 && s + width > 64) v |= scratch[w + 1] << (64 - s);
    out[i] = (v & mask) + base;
  }
}

}  // namespace ingot::codec
