// Reading a value block's parameters without decoding it: the encoding and, per encoding, the
// header fields that explain its size (ALP's exponent, factor, bit width and exceptions; ALP-RD's
// split and dictionary). For reports (the codec inspector), not for the read path.
//
// Every field read is checked to lie inside `src`; a block too short for its encoding's header is
// Corruption naming the sizes. Values are reported as stored: the full validation stays with the
// decoders.
//
// Thread safety: free functions over caller buffers; reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/codec.h"
#include "config/status.h"

namespace ingot::codec {

struct FloatBlockInfo {
  FloatEncoding encoding = FloatEncoding::kRaw;
  std::size_t count = 0;
  // Set for the ALP encodings (kAlp, kAlpDelta, kAlpZstd, kAlpRadix).
  bool has_alp_params = false;
  std::uint8_t alp_exponent = 0;
  std::uint8_t alp_factor = 0;
  // Bits per packed integer: ALP's FFOR width (kAlp, kAlpDelta), ALP-RD's right part width, a
  // dictionary block's index width.
  bool has_bit_width = false;
  std::uint8_t bit_width = 0;
  // ALP-RD's left-part dictionary entries; a dictionary block's distinct values.
  std::size_t dictionary_size = 0;
  // Values stored beside the packed integers (ALP, ALP-RD); 0 for the other encodings.
  std::size_t exception_count = 0;
};

// Reads the header of a float value block (as written by EncodeDoubles and its variants).
Status InspectFloatBlock(std::span<const std::uint8_t> src, FloatBlockInfo* info) noexcept;

// A short stable name of an integer block's encoding ("raw", "for", "delta",
// "delta_of_delta"), or "unknown".
const char* IntEncodingName(std::uint8_t encoding) noexcept;

}  // namespace ingot::codec
