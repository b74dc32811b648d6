// Decompress phase of the float codec. Every header field is checked before it is used and every
// length is checked against the block, so corrupt bytes give Status::Corruption, never a crash or
// an access outside `src` and `out`.
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>

#include "codec/alp_constants.h"
#include "codec/bit_packing.h"
#include "codec/bit_stream.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {
namespace {

template <typename T>
using BitsOf = typename AlpConstants<T>::Bits;

std::string N(std::size_t v) { return std::to_string(v); }

Status Corrupt(const char* encoding, const std::string& what) {
  return Status::Corruption(std::string(encoding) + " block: " + what);
}

Status CheckSize(const char* encoding, std::size_t actual, std::size_t expected) {
  if (actual == expected) return Status::OK();
  return Corrupt(encoding, "size " + N(actual) + " bytes, header implies " + N(expected));
}

Status CheckHeader(std::span<const std::uint8_t> src, std::size_t expected_count,
                   std::size_t value_bytes) {
  if (src.size() < kBlockHeaderBytes) {
    return Status::Corruption("value block: " + N(src.size()) + " bytes < header " +
                              N(kBlockHeaderBytes));
  }
  const std::size_t count = LoadLe<std::uint16_t>(src.data() + kBlockCountOffset);
  if (count == 0 || count > kBlockCapacity || count != expected_count) {
    return Status::Corruption("value block: count " + N(count) + ", expected " + N(expected_count) +
                              " (capacity " + N(kBlockCapacity) + ")");
  }
  if (value_bytes != 4 && value_bytes != 8) {
    return Status::InvalidArgument("value block: value size " + N(value_bytes));
  }
  return Status::OK();
}

template <typename T>
Status DecodeConstant(std::span<const std::uint8_t> src, std::span<T> out) {
  INGOT_RETURN_IF_ERROR(CheckSize("constant", src.size(), kBlockHeaderBytes + sizeof(T)));
  const auto bits = LoadLe<BitsOf<T>>(src.data() + kBlockHeaderBytes);
  const T value = std::bit_cast<T>(bits);
  T* __restrict dst = out.data();
  for (std::size_t i = 0; i < out.size(); ++i) dst[i] = value;  // memset speed, bits preserved
  return Status::OK();
}

template <typename T>
Status DecodeRaw(std::span<const std::uint8_t> src, std::span<T> out) {
  INGOT_RETURN_IF_ERROR(CheckSize("raw", src.size(), kBlockHeaderBytes + out.size_bytes()));
  std::memcpy(out.data(), src.data() + kBlockHeaderBytes, out.size_bytes());
  return Status::OK();
}

// Exceptions: `count` positions (u16) then `count` values or left parts; positions < n.
Status CheckPositions(const char* encoding, const std::uint8_t* p, std::size_t count,
                      std::size_t n) {
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t pos = LoadLe<std::uint16_t>(p + 2 * k);
    if (pos >= n) {
      return Corrupt(encoding,
                     "exception " + N(k) + " at position " + N(pos) + " >= count " + N(n));
    }
  }
  return Status::OK();
}

}  // namespace

template <typename T>
Status DecodeAlp(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept {
  const char* name = "alp";
  const std::size_t n = out.size();
  const bool delta = src[0] == static_cast<std::uint8_t>(FloatEncoding::kAlpDelta);
  // A patched delta block (kAlpDeltaPatchFlag) holds one delta apart after the first integer.
  const bool patched =
      delta && src.size() > kAlpWidthOffset && (src[kAlpWidthOffset] & kAlpDeltaPatchFlag) != 0;
  const std::size_t header =
      delta ? kAlpDeltaHeaderBytes + (patched ? kAlpDeltaPatchBytes : 0) : kAlpHeaderBytes;
  if (src.size() < header) {
    return Corrupt(name, N(src.size()) + " bytes < header " + N(header));
  }
  const unsigned exponent = src[kAlpExponentOffset];
  const unsigned factor = src[kAlpFactorOffset];
  const unsigned width = src[kAlpWidthOffset] & (patched ? ~unsigned{kAlpDeltaPatchFlag} : ~0u);
  const std::size_t exception_count = LoadLe<std::uint16_t>(src.data() + kAlpExceptionCountOffset);
  const auto base = LoadLe<std::uint64_t>(src.data() + kAlpBaseOffset);
  if (exponent > AlpConstants<T>::kMaxExponent || factor > exponent) {
    return Corrupt(name, "exponent " + N(exponent) + " factor " + N(factor) +
                             " out of range (max " + N(AlpConstants<T>::kMaxExponent) +
                             ", factor <= exponent)");
  }
  if (width > 64) return Corrupt(name, "bit width " + N(width) + " > 64");
  std::size_t patch_pos = 0;
  if (patched) {
    patch_pos = LoadLe<std::uint16_t>(src.data() + kAlpDeltaHeaderBytes);
    if (patch_pos == 0 || patch_pos >= n) {
      return Corrupt(
          name, "patched delta at position " + N(patch_pos) + " outside [1, count " + N(n) + ")");
    }
  }
  if (exception_count > n) {
    return Corrupt(name, "exception count " + N(exception_count) + " > count " + N(n));
  }
  const std::size_t packed_bytes = PackedBytes(n, width);
  INGOT_RETURN_IF_ERROR(
      CheckSize(name, src.size(), header + packed_bytes + exception_count * (2 + sizeof(T))));
  const std::uint8_t* packed = src.data() + header;
  const std::uint8_t* positions = packed + packed_bytes;
  const std::uint8_t* exception_values = positions + 2 * exception_count;

  const simd::Kernels& kernels = simd::ActiveKernels();
  if (!delta && n == simd::kFullBlock) {
    // The common case: unFFOR fused with the multiply, from the block straight into the
    // caller's buffer.
    if constexpr (sizeof(T) == 8) {
      kernels.alp_unpack_decode_double(packed, base, width, exponent, factor, out.data());
    } else {
      kernels.alp_unpack_decode_float(packed, base, width, exponent, factor, out.data());
    }
  } else if (n == simd::kFullBlock && !patched) {
    // Delta blocks: unFFOR, running sum and multiply fused the same way.
    const auto first = LoadLe<std::uint64_t>(src.data() + kAlpHeaderBytes);
    if constexpr (sizeof(T) == 8) {
      kernels.alp_delta_unpack_decode_double(packed, base, width, first, exponent, factor,
                                             out.data());
    } else {
      kernels.alp_delta_unpack_decode_float(packed, base, width, first, exponent, factor,
                                            out.data());
    }
  } else {
    std::uint64_t* __restrict ints = ws.bits;
    UnpackInts(packed, n, base, width, ws.packed, ints);
    if (delta) {
      if (patched) ints[patch_pos] = LoadLe<std::uint64_t>(src.data() + kAlpDeltaHeaderBytes + 2);
      // Wrapping sums: corrupt deltas give wrong values, never undefined behaviour.
      kernels.prefix_sum(ints, n, LoadLe<std::uint64_t>(src.data() + kAlpHeaderBytes));
    }
    const auto* signed_ints = reinterpret_cast<const std::int64_t*>(ints);
    if constexpr (sizeof(T) == 8) {
      kernels.alp_decode_double(signed_ints, n, exponent, factor, out.data());
    } else {
      kernels.alp_decode_float(signed_ints, n, exponent, factor, out.data());
    }
  }
  // Patching visits the exceptions only and validates each position as it goes (one pass instead
  // of a separate check): a bad position stops before it is written, and the caller treats the
  // partly decoded output as garbage once the result is an error.
  T* __restrict dst = out.data();
  for (std::size_t k = 0; k < exception_count; ++k) {
    const std::size_t pos = LoadLe<std::uint16_t>(positions + 2 * k);
    if (pos >= n) [[unlikely]] {
      return Corrupt(name, "exception " + N(k) + " at position " + N(pos) + " >= count " + N(n));
    }
    std::memcpy(dst + pos, exception_values + sizeof(T) * k, sizeof(T));
  }
  return Status::OK();
}

template <typename T>
Status DecodeAlpRd(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept {
  using Bits = BitsOf<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  const char* name = "alp_rd";
  const std::size_t n = out.size();
  if (src.size() < kAlpRdHeaderBytes) {
    return Corrupt(name, N(src.size()) + " bytes < header " + N(kAlpRdHeaderBytes));
  }
  const unsigned right_bits = src[kAlpRdRightBitsOffset];
  const unsigned dictionary_size = src[kAlpRdDictionarySizeOffset];
  const std::size_t exception_count =
      LoadLe<std::uint16_t>(src.data() + kAlpRdExceptionCountOffset);
  if (right_bits < kBits - kAlpRdMaxLeftBits || right_bits >= kBits) {
    return Corrupt(name, "right bit width " + N(right_bits) + " outside [" +
                             N(kBits - kAlpRdMaxLeftBits) + ", " + N(kBits - 1) + "]");
  }
  if (dictionary_size == 0 || dictionary_size > kAlpRdMaxDictionary) {
    return Corrupt(name, "dictionary size " + N(dictionary_size) + " outside [1, " +
                             N(kAlpRdMaxDictionary) + "]");
  }
  if (exception_count > n) {
    return Corrupt(name, "exception count " + N(exception_count) + " > count " + N(n));
  }
  const unsigned left_bits = kBits - right_bits;
  const unsigned index_bits = dictionary_size <= 1 ? 0 : BitWidth(dictionary_size - 1);
  const std::size_t right_bytes = PackedBytes(n, right_bits);
  const std::size_t index_bytes = PackedBytes(n, index_bits);
  INGOT_RETURN_IF_ERROR(CheckSize(
      name, src.size(),
      kAlpRdHeaderBytes + 2 * dictionary_size + right_bytes + index_bytes + 4 * exception_count));
  const std::uint8_t* p = src.data() + kAlpRdHeaderBytes;
  Bits dictionary[kAlpRdMaxDictionary] = {};
  for (unsigned d = 0; d < dictionary_size; ++d) {
    const unsigned left = LoadLe<std::uint16_t>(p + 2 * d);
    if (left >> left_bits != 0) {
      return Corrupt(name, "dictionary entry " + N(d) + " = " + N(left) + " wider than " +
                               N(left_bits) + " bits");
    }
    dictionary[d] = static_cast<Bits>(static_cast<Bits>(left) << right_bits);
  }
  p += 2 * dictionary_size;
  std::uint64_t* __restrict rights = ws.bits;
  auto* __restrict indexes = reinterpret_cast<std::uint64_t*>(ws.ints);
  UnpackInts(p, n, 0, right_bits, ws.packed, rights);
  p += right_bytes;
  UnpackInts(p, n, 0, index_bits, ws.packed, indexes);
  p += index_bytes;
  // Doubles join in a kernel that also finds the largest index (a dictionary lookup per value
  // and the check, which the baseline build runs one value at a time).
  T* __restrict dst = out.data();
  std::uint64_t max_index = 0;
  if constexpr (sizeof(T) == 8) {
    std::uint64_t lefts[kAlpRdMaxDictionary] = {};
    static_assert(kAlpRdMaxDictionary == 8);
    for (unsigned d = 0; d < dictionary_size; ++d) lefts[d] = dictionary[d];
    max_index = simd::ActiveKernels().alp_rd_join_double(rights, indexes, n, lefts, dst);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      max_index = indexes[i] > max_index ? indexes[i] : max_index;
    }
  }
  if (max_index >= dictionary_size) {
    return Corrupt(name, "dictionary index " + N(max_index) + " >= size " + N(dictionary_size));
  }
  const std::uint8_t* positions = p;
  const std::uint8_t* lefts = p + 2 * exception_count;
  INGOT_RETURN_IF_ERROR(CheckPositions(name, positions, exception_count, n));
  for (std::size_t k = 0; k < exception_count; ++k) {
    const unsigned left = LoadLe<std::uint16_t>(lefts + 2 * k);
    if (left >> left_bits != 0) {
      return Corrupt(name,
                     "exception left part " + N(left) + " wider than " + N(left_bits) + " bits");
    }
  }
  if constexpr (sizeof(T) == 4) {
    for (std::size_t i = 0; i < n; ++i) {
      dst[i] = std::bit_cast<T>(
          static_cast<Bits>(dictionary[indexes[i]] | static_cast<Bits>(rights[i])));
    }
  }
  for (std::size_t k = 0; k < exception_count; ++k) {
    const std::size_t pos = LoadLe<std::uint16_t>(positions + 2 * k);
    const Bits left = LoadLe<std::uint16_t>(lefts + 2 * k);
    dst[pos] =
        std::bit_cast<T>(static_cast<Bits>((left << right_bits) | static_cast<Bits>(rights[pos])));
  }
  return Status::OK();
}

template <typename T>
Status DecodeGorilla(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept {
  using Bits = BitsOf<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  const char* name = "gorilla";
  const std::size_t n = out.size();
  const std::size_t stream_bytes = src.size() - kBlockHeaderBytes;
  constexpr std::size_t kPadBytes = 24;
  if (stream_bytes + kPadBytes > sizeof(ws.bytes)) {
    return Corrupt(name, "stream of " + N(stream_bytes) + " bytes exceeds the largest block");
  }
  if (stream_bytes < sizeof(T)) {
    return Corrupt(name, "stream of " + N(stream_bytes) + " bytes has no first value");
  }
  std::memcpy(ws.bytes, src.data() + kBlockHeaderBytes, stream_bytes);
  std::memset(ws.bytes + stream_bytes, 0, kPadBytes);
  const std::size_t stream_bits = stream_bytes * 8;
  BitReader reader(ws.bytes);
  T* __restrict dst = out.data();
  auto prev = static_cast<Bits>(reader.Get(kBits));
  dst[0] = std::bit_cast<T>(prev);
  unsigned prev_trailing = 0;
  unsigned prev_length = 0;
  std::size_t i = 1;
  while (i < n) {
    const std::uint64_t peek = reader.Peek();
    if ((peek & 1) == 0) {
      // Fast path: a run of zero bits is a run of repeated values.
      std::size_t run = static_cast<std::size_t>(std::countr_zero(peek | (1ull << 56)));
      run = run < n - i ? run : n - i;
      reader.Skip(static_cast<unsigned>(run));
      const T repeated = std::bit_cast<T>(prev);
      for (std::size_t k = 0; k < run; ++k) dst[i + k] = repeated;
      i += run;
    } else if (((peek >> 1) & 1) == 0) {
      reader.Skip(2);
      if (prev_length == 0) return Corrupt(name, "value " + N(i) + " reuses a window never set");
      prev ^= static_cast<Bits>(reader.Get(prev_length) << prev_trailing);
      dst[i++] = std::bit_cast<T>(prev);
    } else {
      reader.Skip(2);
      const auto leading = static_cast<unsigned>(reader.Get(kGorillaLeadingBits));
      const auto length = static_cast<unsigned>(reader.Get(kGorillaLengthBits<T>)) + 1;
      if (leading + length > kBits) {
        return Corrupt(name, "value " + N(i) + ": leading " + N(leading) + " + length " +
                                 N(length) + " > " + N(kBits));
      }
      prev_trailing = kBits - leading - length;
      prev_length = length;
      prev ^= static_cast<Bits>(reader.Get(length) << prev_trailing);
      dst[i++] = std::bit_cast<T>(prev);
    }
    if (reader.position() > stream_bits) {
      return Corrupt(name,
                     "stream ends inside value " + N(i - 1) + " (" + N(stream_bits) + " bits)");
    }
  }
  const std::size_t used_bytes = (reader.position() + 7) / 8;
  if (used_bytes != stream_bytes) {
    return Corrupt(name, "stream has " + N(stream_bytes) + " bytes, values use " + N(used_bytes));
  }
  return Status::OK();
}

namespace {

// Unpacks count (<= 32) fields of `width` (1..64) bits from a byte-aligned run, shifted left by
// `shift`. REQUIRES: 9 readable bytes from every field's first byte (the zero-padded copy).
inline void UnpackFields(const std::uint8_t* __restrict p, std::size_t count, unsigned width,
                         unsigned shift, std::uint64_t* __restrict fields) {
  const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
  if (width <= 56) {
    // One unaligned load holds the whole field, wherever it starts in its byte.
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t pos = j * width;
      std::uint64_t word;
      std::memcpy(&word, p + pos / 8, 8);
      fields[j] = ((word >> (pos % 8)) & mask) << shift;
    }
  } else {
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t pos = j * width;
      std::uint64_t word;
      std::memcpy(&word, p + pos / 8, 8);
      const unsigned offset = pos % 8;
      const std::uint64_t high = static_cast<std::uint64_t>(p[pos / 8 + 8]);
      word = (word >> offset) | ((high << 1) << (63 - offset));
      fields[j] = (word & mask) << shift;
    }
  }
}

std::string Hex16(std::uint16_t v) {
  char hex[8];
  std::snprintf(hex, sizeof(hex), "%04x", v);
  return hex;
}

}  // namespace

template <typename T>
Status DecodeXorGroups(std::span<const std::uint8_t> src, std::span<T> out,
                       Workspace& ws) noexcept {
  using Bits = BitsOf<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  const char* name = "xor_groups";
  const std::size_t n = out.size();
  const std::size_t xors = n - 1;
  const std::size_t groups = (xors + kXorGroupValues - 1) / kXorGroupValues;
  const std::size_t fixed = kBlockHeaderBytes + sizeof(T) + groups * kXorDescriptorBytes;
  if (src.size() < fixed) {
    return Corrupt(name, "size " + N(src.size()) + " bytes < " + N(fixed) +
                             " for the first value and " + N(groups) + " group descriptors");
  }
  // The payloads are read from a zero-padded copy, so a field's 9-byte read at the very end stays
  // in bounds; every group's length is checked against the real payload before it is read.
  const std::size_t payload_bytes = src.size() - fixed;
  constexpr std::size_t kPadBytes = 16;
  if (payload_bytes + kPadBytes > sizeof(ws.bytes)) {
    return Corrupt(name, "payload of " + N(payload_bytes) + " bytes exceeds the largest block");
  }
  std::memcpy(ws.bytes, src.data() + fixed, payload_bytes);
  std::memset(ws.bytes + payload_bytes, 0, kPadBytes);
  const std::uint8_t* descriptors = src.data() + kBlockHeaderBytes + sizeof(T);
  T* __restrict dst = out.data();
  auto prev = LoadLe<Bits>(src.data() + kBlockHeaderBytes);
  dst[0] = std::bit_cast<T>(prev);
  std::size_t at = 0;  // payload offset of the current group
  for (std::size_t g = 0; g < groups; ++g) {
    const auto d = LoadLe<std::uint16_t>(descriptors + g * kXorDescriptorBytes);
    const unsigned width = d & kXorWidthMask;
    const unsigned shift = d >> kXorShiftOffset;
    const bool bitmap = (d & kXorBitmapFlag) != 0;
    const std::size_t from = 1 + g * kXorGroupValues;
    const std::size_t count = std::min(kXorGroupValues, n - from);
    if ((d & kXorReservedMask) != 0 || width > kBits || shift + width > kBits ||
        (width == 0 && d != 0)) {
      return Corrupt(name, "group " + N(g) + ": descriptor 0x" + Hex16(d) + " (width " + N(width) +
                               ", shift " + N(shift) + ") does not fit " + N(kBits) +
                               "-bit values");
    }
    if (width == 0) {
      const T repeated = std::bit_cast<T>(prev);
      for (std::size_t j = 0; j < count; ++j) dst[from + j] = repeated;
      continue;
    }
    std::uint32_t present = static_cast<std::uint32_t>((count == 32 ? 0ull : 1ull << count) - 1);
    std::size_t fields = count;
    if (bitmap) {
      if (at + kXorBitmapBytes > payload_bytes) {
        return Corrupt(name, "group " + N(g) + ": bitmap past the payload end (" +
                                 N(payload_bytes) + " bytes)");
      }
      const auto stored = LoadLe<std::uint32_t>(ws.bytes + at);
      if ((stored & ~present) != 0) {
        return Corrupt(name, "group " + N(g) + ": bitmap 0x" + Hex16(stored >> 16) +
                                 Hex16(stored & 0xffff) + " marks values past the block");
      }
      present = stored;
      fields = CountBits32(present);
      at += kXorBitmapBytes;
    }
    const std::size_t field_bytes = (fields * width + 7) / 8;
    if (at + field_bytes > payload_bytes) {
      return Corrupt(name, "group " + N(g) + ": " + N(field_bytes) + " bytes of fields past the " +
                               "payload end (" + N(payload_bytes) + " bytes, at " + N(at) + ")");
    }
    std::uint64_t x[kXorGroupValues + 1];
    if constexpr (sizeof(T) == 8) {
      // Doubles through kernels: the fields (the payload has 16 zero bytes after it), then the
      // XORs spread by the bitmap and folded into the values.
      const simd::Kernels& kernels = simd::ActiveKernels();
      kernels.unpack_stream(ws.bytes + at, sizeof ws.bytes - at, fields, width, 0, x);
      prev = kernels.xor_group_double(x, present, count, shift, prev, dst + from);
      at += field_bytes;
      continue;
    }
    UnpackFields(ws.bytes + at, fields, width, shift, x);
    x[fields] = 0;  // read (and discarded) after the last field of a bitmap group
    if (bitmap) {
      // The fields belong to the marked values; the others repeat their predecessor.
      std::size_t k = 0;
      for (std::size_t j = 0; j < count; ++j) {
        const bool here = ((present >> j) & 1) != 0;
        prev ^= static_cast<Bits>(here ? x[k] : 0);
        k += here;
        dst[from + j] = std::bit_cast<T>(prev);
      }
    } else {
      for (std::size_t j = 0; j < count; ++j) {
        prev ^= static_cast<Bits>(x[j]);
        dst[from + j] = std::bit_cast<T>(prev);
      }
    }
    at += field_bytes;
  }
  if (at != payload_bytes) {
    return Corrupt(name, "payload has " + N(payload_bytes) + " bytes, groups use " + N(at));
  }
  return Status::OK();
}

namespace {

template <typename T>
Status DecodeBlock(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) {
  INGOT_RETURN_IF_ERROR(CheckHeader(src, out.size(), sizeof(T)));
  switch (static_cast<FloatEncoding>(src[0])) {
    case FloatEncoding::kRaw:
      return DecodeRaw(src, out);
    case FloatEncoding::kConstant:
      return DecodeConstant(src, out);
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta:
      return DecodeAlp(src, out, ws);
    case FloatEncoding::kAlpRd:
      return DecodeAlpRd(src, out, ws);
    case FloatEncoding::kGorilla:
      return DecodeGorilla(src, out, ws);
    case FloatEncoding::kXorGroups:
      return DecodeXorGroups(src, out, ws);
    case FloatEncoding::kAlpZstd:
      return DecodeAlpZstd(src, out, ws);
    case FloatEncoding::kDictionary:
      return DecodeDictionary(src, out, ws);
    case FloatEncoding::kAlpRadix:
      return DecodeAlpRadix(src, out, ws);
    case FloatEncoding::kAlpRice:
      return DecodeAlpRice(src, out, ws);
    case FloatEncoding::kAlpHuffman:
      return DecodeAlpHuffman(src, out, ws);
    case FloatEncoding::kAlpRanked:
      return DecodeAlpRanked(src, out, ws);
  }
  return Status::Corruption("value block: unknown encoding " + N(src[0]));
}

}  // namespace

Status DecodeDoubles(std::span<const std::uint8_t> src, std::span<double> out,
                     Workspace& ws) noexcept {
  return DecodeBlock(src, out, ws);
}

Status DecodeFloats(std::span<const std::uint8_t> src, std::span<float> out,
                    Workspace& ws) noexcept {
  return DecodeBlock(src, out, ws);
}

Status PeekFloatEncoding(std::span<const std::uint8_t> src, FloatEncoding* encoding) noexcept {
  if (src.empty()) return Status::Corruption("value block: empty");
  if (src[0] >= kFloatEncodingCount) {
    return Status::Corruption("value block: unknown encoding " + N(src[0]));
  }
  *encoding = static_cast<FloatEncoding>(src[0]);
  return Status::OK();
}

template Status DecodeAlp<double>(std::span<const std::uint8_t>, std::span<double>,
                                  Workspace&) noexcept;
template Status DecodeAlp<float>(std::span<const std::uint8_t>, std::span<float>,
                                 Workspace&) noexcept;
template Status DecodeAlpRd<double>(std::span<const std::uint8_t>, std::span<double>,
                                    Workspace&) noexcept;
template Status DecodeAlpRd<float>(std::span<const std::uint8_t>, std::span<float>,
                                   Workspace&) noexcept;
template Status DecodeXorGroups<double>(std::span<const std::uint8_t>, std::span<double>,
                                        Workspace&) noexcept;
template Status DecodeXorGroups<float>(std::span<const std::uint8_t>, std::span<float>,
                                       Workspace&) noexcept;
template Status DecodeGorilla<double>(std::span<const std::uint8_t>, std::span<double>,
                                      Workspace&) noexcept;
template Status DecodeGorilla<float>(std::span<const std::uint8_t>, std::span<float>,
                                     Workspace&) noexcept;

}  // namespace ingot::codec
