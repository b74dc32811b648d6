// Byte layout constants of value and integer blocks (drawn in docs/codec-format.md).
//
// Every block starts with a 3-byte header: the encoding byte, then the value count as a
// little-endian uint16 (1..1024). The rest depends on the encoding; all multi-byte fields are
// little-endian. The encoding enums are persisted: new encodings get new numbers, existing
// numbers never change meaning.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ingot::codec {

static_assert(std::endian::native == std::endian::little, "block layout assumes little-endian");

// Format version of the encodings below; bumped only if an existing encoding's layout changes.
inline constexpr std::uint8_t kCodecFormatVersion = 1;

inline constexpr std::size_t kBlockHeaderBytes = 3;  // encoding, count
inline constexpr std::size_t kBlockCountOffset = 1;  // the value count (u16)

// Integer blocks (codec/int_codec.cc), header bytes per encoding: frame of reference (bit width,
// base), delta (first value, then the frame), delta of delta (first value, first delta, frame).
inline constexpr std::size_t kForHeaderBytes = kBlockHeaderBytes + 1 + 8;
inline constexpr std::size_t kDeltaHeaderBytes = kBlockHeaderBytes + 8 + 1 + 8;
inline constexpr std::size_t kDeltaOfDeltaHeaderBytes = kBlockHeaderBytes + 8 + 8 + 1 + 8;

// ALP: header, exponent, factor, bit width, exception count (u16), FFOR base (i64).
inline constexpr std::size_t kAlpHeaderBytes = kBlockHeaderBytes + 1 + 1 + 1 + 2 + 8;
// Byte offsets of the ALP header's fields (the same in ALP with delta).
inline constexpr std::size_t kAlpExponentOffset = kBlockHeaderBytes;
inline constexpr std::size_t kAlpFactorOffset = kAlpExponentOffset + 1;
inline constexpr std::size_t kAlpWidthOffset = kAlpFactorOffset + 1;
inline constexpr std::size_t kAlpExceptionCountOffset = kAlpWidthOffset + 1;
inline constexpr std::size_t kAlpBaseOffset = kAlpExceptionCountOffset + 2;
static_assert(kAlpBaseOffset + 8 == kAlpHeaderBytes);
// ALP with delta: the ALP header plus the first integer (i64).
inline constexpr std::size_t kAlpDeltaHeaderBytes = kAlpHeaderBytes + 8;
// ALP with delta, width byte's top bit: one delta is stored apart (a counter's reset, a jump),
// after the first integer: its position (u16, 1 .. count - 1) and value (i64). Its packed slot
// holds the base (packs as zero). The width is the byte's low 7 bits.
inline constexpr std::uint8_t kAlpDeltaPatchFlag = 0x80;
inline constexpr std::size_t kAlpDeltaPatchBytes = 2 + 8;
// ALP through zstd: header, exponent, factor, flags, exception count (u16), base (i64), frame
// bytes (u32); then the zstd frame and the exceptions.
inline constexpr std::size_t kAlpZstdHeaderBytes = kBlockHeaderBytes + 1 + 1 + 1 + 2 + 8 + 4;
// Byte offsets of the ALP-through-zstd header's fields (exponent and factor where ALP has them).
inline constexpr std::size_t kAlpZstdExponentOffset = kAlpExponentOffset;
inline constexpr std::size_t kAlpZstdFactorOffset = kAlpFactorOffset;
inline constexpr std::size_t kAlpZstdFlagsOffset = kAlpZstdFactorOffset + 1;
inline constexpr std::size_t kAlpZstdExceptionCountOffset = kAlpZstdFlagsOffset + 1;
inline constexpr std::size_t kAlpZstdBaseOffset = kAlpZstdExceptionCountOffset + 2;
inline constexpr std::size_t kAlpZstdFrameBytesOffset = kAlpZstdBaseOffset + 8;
static_assert(kAlpZstdFrameBytesOffset + 4 == kAlpZstdHeaderBytes);
// ALP as radix digits: the ALP-through-zstd fields up to the exception count, then varints (see
// codec/alp_compact.cc).
inline constexpr std::size_t kAlpRadixHeaderBytes = kAlpZstdBaseOffset;
// ALP Rice-coded: the same fixed fields, then varints, the Rice parameter and the bit stream (see
// codec/alp_compact.cc).
inline constexpr std::size_t kAlpRiceHeaderBytes = kAlpZstdBaseOffset;
// ALP Huffman-coded: the same fixed fields, then varints, the code and the segments (see
// codec/alp_huffman.cc).
inline constexpr std::size_t kAlpHuffmanHeaderBytes = kAlpZstdBaseOffset;
// ALP with ranked bit lengths: the same fixed fields, then varints, the ranks and three streams
// (see codec/alp_ranked.cc).
inline constexpr std::size_t kAlpRankedHeaderBytes = kAlpZstdBaseOffset;

// ALP-RD: header, right bit width, dictionary size, exception count (u16); then the dictionary.
inline constexpr std::size_t kAlpRdHeaderBytes = kBlockHeaderBytes + 1 + 1 + 2;
// Byte offsets of the ALP-RD header's fields.
inline constexpr std::size_t kAlpRdRightBitsOffset = kBlockHeaderBytes;
inline constexpr std::size_t kAlpRdDictionarySizeOffset = kAlpRdRightBitsOffset + 1;
inline constexpr std::size_t kAlpRdExceptionCountOffset = kAlpRdDictionarySizeOffset + 1;
static_assert(kAlpRdExceptionCountOffset + 2 == kAlpRdHeaderBytes);
inline constexpr unsigned kAlpRdMaxLeftBits = 16;
inline constexpr unsigned kAlpRdMaxDictionary = 8;
// Gorilla: header, then one bit stream: the first value's bits, then per value "0" (a repeat),
// "10" and the meaningful bits in the previous window, or "11", the leading zero count, the
// meaningful length minus one, and the meaningful bits (a new window).
inline constexpr unsigned kGorillaLeadingBits = 5;
// The largest leading zero count the field holds; a value with more zeros is stored with this many
// and the rest counted as meaningful bits.
inline constexpr unsigned kGorillaMaxLeading = 31;
static_assert(kGorillaMaxLeading == (1u << kGorillaLeadingBits) - 1);
// Width of the length field, which holds 1..64 (double) or 1..32 (float) meaningful bits as
// length minus one.
template <typename T>
inline constexpr unsigned kGorillaLengthBits = sizeof(T) == 8 ? 6 : 5;
// Grouped XOR: header, the first value, then one u16 descriptor per group of XORs (see
// docs/codec-format.md): bits 0-6 the width, bit 7 the bitmap flag, bits 8-13 the shift. Each
// group's payload (a u32 bitmap when flagged, then the packed fields) starts on a byte.
inline constexpr std::size_t kXorGroupValues = 32;
inline constexpr std::size_t kXorDescriptorBytes = 2;
inline constexpr std::uint16_t kXorWidthMask = 0x7f;
inline constexpr std::uint16_t kXorBitmapFlag = 0x80;
inline constexpr unsigned kXorShiftOffset = 8;
inline constexpr std::uint16_t kXorReservedMask = 0xc000;
inline constexpr std::size_t kXorBitmapBytes = 4;
// Dictionary: header, distinct value count D (u16), flags (bit 0: a run bitmap follows the
// dictionary; bit 1: radix-packed indexes), the dictionary block's bytes (u16); then the dictionary (a nested value block of D
// values, never itself a dictionary), the run bitmap when flagged, and the packed indexes.
inline constexpr std::size_t kDictionaryHeaderBytes = kBlockHeaderBytes + 2 + 1 + 2;
inline constexpr std::size_t kDictionarySizeOffset = kBlockHeaderBytes;
inline constexpr std::size_t kDictionaryFlagsOffset = kDictionarySizeOffset + 2;
inline constexpr std::size_t kDictionaryBlockBytesOffset = kDictionaryFlagsOffset + 1;
static_assert(kDictionaryBlockBytesOffset + 2 == kDictionaryHeaderBytes);
inline constexpr std::uint8_t kDictionaryRunsFlag = 1;
// Flag bit 1: the indexes are radix-packed digits of D (codec/bit_packing.h) instead of FFOR.
inline constexpr std::uint8_t kDictionaryRadixFlag = 2;

// The encoding of an integer block. Stored as the first byte of every integer block.
// persisted: never renumber
enum class IntEncoding : std::uint8_t {
  kRaw = 0,
  kFor = 1,           // width, base, FFOR(values)
  kDelta = 2,         // first, width, base, FFOR(deltas)
  kDeltaOfDelta = 3,  // first, first delta, width, base, FFOR(delta-of-deltas)
};

template <typename T>
inline void StoreLe(std::uint8_t* p, T v) noexcept {
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
inline T LoadLe(const std::uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

inline unsigned BitWidth(std::uint64_t range) noexcept {
  return static_cast<unsigned>(std::bit_width(range));
}

}  // namespace ingot::codec
