// Frame-of-reference bit packing (FFOR) of up to 1024 integers into caller bytes.
//
// A full block of 1024 values uses the interleaved 16-lane layout of the SIMD kernels
// (codec/simd/kernels.h); a shorter block packs value i at bits [i * width, (i + 1) * width) of a
// little-endian bit stream. Either way the packed size is PackedBytes(count, width).
//
// Thread safety: reentrant; the scratch pointers must not be shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ingot::codec {

// Bytes taken by `count` values of `width` bits (0..64).
inline std::size_t PackedBytes(std::size_t count, unsigned width) noexcept {
  return count == 1024 ? 128 * static_cast<std::size_t>(width) : (count * width + 7) / 8;
}

// Writes PackedBytes(count, width) bytes to `out`: (in[i] - base) in `width` bits.
// `scratch` (short blocks only) holds 1024 + 1 words.
// REQUIRES: 1 <= count <= 1024, width <= 64, every value fits.
void PackInts(const std::uint64_t* in, std::size_t count, std::uint64_t base, unsigned width,
              std::uint64_t* scratch, std::uint8_t* out) noexcept;

// Reads PackedBytes(count, width) bytes from `in`: out[i] = unpacked + base (mod 2^64).
// `scratch` (short blocks only) holds 1024 + 1 words.
void UnpackInts(const std::uint8_t* in, std::size_t count, std::uint64_t base, unsigned width,
                std::uint64_t* scratch, std::uint64_t* out) noexcept;

// Radix packing: values in [0, range) written `digits` at a time as one `bits`-bit field holding
// the base-`range` number v[0] + v[1]·range + ... (the last group may hold fewer digits). Fields
// follow each other in a little-endian bit stream. It spends log2(range) bits per value where
// plain packing spends ⌈log2(range)⌉: 201 step values take 23 bits per 3 instead of 24.
struct RadixGroup {
  unsigned digits = 1;  // values per field (1..32)
  unsigned bits = 0;    // field width (0..32)
};

// The largest range radix packing takes: fields are at most 32 bits.
inline constexpr std::uint64_t kMaxRadixRange = std::uint64_t{1} << 32;

// The grouping with the fewest bits per value (the fewest digits among equals).
// REQUIRES: 1 <= range <= kMaxRadixRange.
RadixGroup ChooseRadixGroup(std::uint64_t range) noexcept;

// Bytes taken by `count` values of the given range. REQUIRES: as ChooseRadixGroup.
std::size_t RadixPackedBytes(std::size_t count, std::uint64_t range) noexcept;

// Writes RadixPackedBytes(count, range) bytes to `out`: in[i] - base as digits of `range`.
// REQUIRES: count <= 1024, as ChooseRadixGroup, every in[i] - base < range.
void PackRadix(const std::uint64_t* in, std::size_t count, std::uint64_t base,
               std::uint64_t range, std::uint8_t* out) noexcept;

// Reads RadixPackedBytes(count, range) bytes from `in`: out[i] = digit + base (mod 2^64).
// `scratch` holds 1024 + 8 words; out[0 .. count) also stages a copy of the stream, so neither may
// overlap `in`. False when a field holds a number past its digits (range^digits or more) or the
// bits after the last field are not zero: corrupt input.
// REQUIRES: count <= 1024, as ChooseRadixGroup.
[[nodiscard]] bool UnpackRadix(const std::uint8_t* in, std::size_t count, std::uint64_t base,
                               std::uint64_t range, std::uint64_t* scratch,
                               std::uint64_t* out) noexcept;

// Bits set in v, without relying on a popcount instruction (the baseline build has none).
inline unsigned CountBits32(std::uint32_t v) noexcept {
  v = v - ((v >> 1) & 0x55555555u);
  v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
  return (((v + (v >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

}  // namespace ingot::codec
