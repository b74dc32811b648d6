// Encoder internals shared by the float encoders (float_compress.cc) and the adaptive chooser
// (float_chooser.cc). Not part of the codec's interface: include from those two files only.
//
// Thread safety: reentrant; the caller owns every buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/alp_constants.h"

namespace ingot::codec {

// The unsigned integer type with the bits of a T (float or double).
template <typename T>
using BitsOf = typename AlpConstants<T>::Bits;

// The Gorilla stream of `values` (without the block header). The dry run returns the stream length
// in bytes. The real run writes into `out`, whose physical size is `physical_bytes`, and returns 0
// when the stream would exceed `limit_bytes` (<= physical_bytes) or come within 16 bytes of the
// physical end. `varies` (nullable) is set when some value differs from the first.
// REQUIRES: n >= 1. Instantiated for float and double, dry run or not.
template <typename T, bool kDryRun>
std::size_t GorillaStream(const T* __restrict values, std::size_t n, std::uint8_t* out,
                          std::size_t physical_bytes, std::size_t limit_bytes,
                          bool* varies) noexcept;

}  // namespace ingot::codec
