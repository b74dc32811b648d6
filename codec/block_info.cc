#include "codec/block_info.h"

#include <bit>
#include <string>

#include "codec/format.h"

namespace ingot::codec {
namespace {

Status TooShort(FloatEncoding encoding, std::size_t size, std::size_t header) {
  return Status::Corruption(std::string("value block (") + FloatEncodingName(encoding) + "): " +
                            std::to_string(size) + " bytes < header " + std::to_string(header));
}

}  // namespace

Status InspectFloatBlock(std::span<const std::uint8_t> src, FloatBlockInfo* info) noexcept {
  *info = FloatBlockInfo{};
  if (src.size() < kBlockHeaderBytes) {
    return Status::Corruption("value block: " + std::to_string(src.size()) + " bytes < header " +
                              std::to_string(kBlockHeaderBytes));
  }
  if (src[0] >= kFloatEncodingCount) {
    return Status::Corruption("value block: unknown encoding " + std::to_string(src[0]));
  }
  info->encoding = static_cast<FloatEncoding>(src[0]);
  info->count = LoadLe<std::uint16_t>(src.data() + kBlockCountOffset);
  switch (info->encoding) {
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: {
      const bool delta = info->encoding == FloatEncoding::kAlpDelta;
      const bool patched =
          delta && src.size() > kAlpWidthOffset && (src[kAlpWidthOffset] & kAlpDeltaPatchFlag) != 0;
      const std::size_t header =
          delta ? kAlpDeltaHeaderBytes + (patched ? kAlpDeltaPatchBytes : 0) : kAlpHeaderBytes;
      if (src.size() < header) return TooShort(info->encoding, src.size(), header);
      info->has_alp_params = true;
      info->alp_exponent = src[kAlpExponentOffset];
      info->alp_factor = src[kAlpFactorOffset];
      info->has_bit_width = true;
      info->bit_width =
          static_cast<std::uint8_t>(src[kAlpWidthOffset] & ~(patched ? kAlpDeltaPatchFlag : 0));
      info->exception_count = LoadLe<std::uint16_t>(src.data() + kAlpExceptionCountOffset);
      break;
    }
    case FloatEncoding::kAlpZstd:
    case FloatEncoding::kAlpRadix:
    case FloatEncoding::kAlpRice:
    case FloatEncoding::kAlpHuffman:
    case FloatEncoding::kAlpRanked: {
      static_assert(kAlpRadixHeaderBytes == kAlpRiceHeaderBytes);
      static_assert(kAlpRadixHeaderBytes == kAlpHuffmanHeaderBytes);
      static_assert(kAlpRadixHeaderBytes == kAlpRankedHeaderBytes);
      const std::size_t header = info->encoding == FloatEncoding::kAlpZstd ? kAlpZstdHeaderBytes
                                                                           : kAlpRadixHeaderBytes;
      if (src.size() < header) return TooShort(info->encoding, src.size(), header);
      info->has_alp_params = true;
      info->alp_exponent = src[kAlpZstdExponentOffset];
      info->alp_factor = src[kAlpZstdFactorOffset];
      info->exception_count = LoadLe<std::uint16_t>(src.data() + kAlpZstdExceptionCountOffset);
      break;
    }
    case FloatEncoding::kAlpRd:
      if (src.size() < kAlpRdHeaderBytes) {
        return TooShort(info->encoding, src.size(), kAlpRdHeaderBytes);
      }
      info->has_bit_width = true;
      info->bit_width = src[kAlpRdRightBitsOffset];
      info->dictionary_size = src[kAlpRdDictionarySizeOffset];
      info->exception_count = LoadLe<std::uint16_t>(src.data() + kAlpRdExceptionCountOffset);
      break;
    case FloatEncoding::kDictionary: {
      if (src.size() < kDictionaryHeaderBytes) {
        return TooShort(info->encoding, src.size(), kDictionaryHeaderBytes);
      }
      const std::size_t distinct = LoadLe<std::uint16_t>(src.data() + kDictionarySizeOffset);
      info->dictionary_size = distinct;
      info->has_bit_width = true;
      info->bit_width =
          distinct <= 1 ? 0 : static_cast<std::uint8_t>(std::bit_width(distinct - 1));
      break;
    }
    case FloatEncoding::kRaw:
    case FloatEncoding::kConstant:
    case FloatEncoding::kGorilla:
    case FloatEncoding::kXorGroups:
      break;
  }
  return Status::OK();
}

const char* IntEncodingName(std::uint8_t encoding) noexcept {
  switch (static_cast<IntEncoding>(encoding)) {
    case IntEncoding::kRaw:
      return "raw";
    case IntEncoding::kFor:
      return "for";
    case IntEncoding::kDelta:
      return "delta";
    case IntEncoding::kDeltaOfDelta:
      return "delta_of_delta";
  }
  return "unknown";
}

}  // namespace ingot::codec
