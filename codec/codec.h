// The public face of the codec library: encode and decode one block of at most 1024 values.
//
// codec/ is a pure library over caller buffers: no I/O, no logging, no allocation per block.
// Encoders write into a caller-owned span and return the number of bytes written; decoders fill
// exactly `out.size()` values and read only inside `src`. Every decoder validates every header
// field before trusting it and returns Status::Corruption naming the field and values otherwise.
//
// Thread safety: all functions are reentrant; a Workspace and a SeriesHint must not be used by two
// threads at once (one Workspace per thread, one hint per series owned by the series' shard).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/workspace.h"
#include "codec/series_hint.h"
#include "config/status.h"

namespace ingot::codec {

inline constexpr std::size_t kBlockCapacity = 1024;

// The value encoding of a float block. Stored as the first byte of every value block.
// persisted: never renumber
enum class FloatEncoding : std::uint8_t {
  kRaw = 0,
  kConstant = 1,
  kAlp = 2,
  kAlpDelta = 3,
  kAlpRd = 4,
  kGorilla = 5,
  kXorGroups = 6,
  kAlpZstd = 7,     // ALP integers as varints through zstd (background rewrites)
  kDictionary = 8,  // distinct values as a nested block, then indexes (background rewrites)
  kAlpRadix = 9,  // ALP integers as digits of their range, several to a field (background rewrites)
  kAlpRice = 10,  // ALP integers (gaps, deltas or offsets) Rice-coded (background rewrites)
  kAlpHuffman =
      11,  // ALP integers: Huffman-coded bit lengths and the bits below (no longer written)
  kAlpRanked = 12,  // ALP integers: ranked bit lengths, Rice-coded, and the bits below
};
inline constexpr int kFloatEncodingCount = 13;

// A short stable name ("alp", "gorilla", ...) for metrics and reports.
const char* FloatEncodingName(FloatEncoding e) noexcept;

struct EncodeResult {
  std::size_t bytes = 0;
  FloatEncoding encoding = FloatEncoding::kRaw;
};

// Upper bound of the encoded size of a block of `count` values of `value_bytes` (4 or 8) each:
// raw plus a small header. Size output spans with it.
std::size_t MaxEncodedFloatBytes(std::size_t count, std::size_t value_bytes) noexcept;

// Adaptive float codec: picks constant / ALP / ALP+delta / ALP-RD / Gorilla / raw per block by a
// cheap estimate, using and updating `hint`.
// REQUIRES: 1 <= values.size() <= kBlockCapacity,
//           out.size() >= MaxEncodedFloatBytes(values.size(), sizeof(T)).
EncodeResult EncodeDoubles(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                           std::span<std::uint8_t> out) noexcept;
EncodeResult EncodeFloats(std::span<const float> values, SeriesHint& hint, Workspace& ws,
                          std::span<std::uint8_t> out) noexcept;

// Encodes for long-term storage: EncodeDoubles' choice, ALP as radix digits (kAlpRadix), as Rice
// codes (kAlpRice), as ranked bit lengths (kAlpRanked) or through zstd (kAlpZstd), or a
// dictionary of the distinct values (kDictionary), whichever is smallest; an encoding that decodes
// slower than a smaller-or-equal faster one must save 1/32 of the block more. Several times slower
// than EncodeDoubles: meant for background rewrites of sealed chunks, not the ingest path.
// REQUIRES: as for EncodeDoubles.
EncodeResult EncodeDoublesCompact(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                                  std::span<std::uint8_t> out) noexcept;

// Encodes a block that is written often and read back rarely (a checkpointed head buffer, read
// only at recovery): EncodeDoubles' choice, or, when that is ALP, ALP as radix digits (kAlpRadix)
// when smaller. Costs one radix packing more than EncodeDoubles (about 1 ns per value) and
// nothing of the compact rewrite's zstd and dictionary searches. REQUIRES: as for EncodeDoubles.
EncodeResult EncodeDoublesForHead(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                                  std::span<std::uint8_t> out) noexcept;

// Encodes with one given encoding instead of choosing (benchmarks, tests, comparisons). Falls back
// to raw when that encoding cannot represent the block or would not be smaller than raw; the
// result names the encoding actually written. kAlp is plain ALP, kAlpDelta ALP with delta coding.
// REQUIRES: as for EncodeDoubles/EncodeFloats.
EncodeResult EncodeDoublesAs(FloatEncoding encoding, std::span<const double> values,
                             SeriesHint& hint, Workspace& ws, std::span<std::uint8_t> out) noexcept;
EncodeResult EncodeFloatsAs(FloatEncoding encoding, std::span<const float> values,
                            SeriesHint& hint, Workspace& ws, std::span<std::uint8_t> out) noexcept;

// Decodes a block written by EncodeDoubles/EncodeFloats. The block's own count must equal
// out.size(). Bit-exact: -0.0, NaN payloads, infinities and subnormals come back unchanged.
Status DecodeDoubles(std::span<const std::uint8_t> src, std::span<double> out,
                     Workspace& ws) noexcept;
Status DecodeFloats(std::span<const std::uint8_t> src, std::span<float> out,
                    Workspace& ws) noexcept;

// Reads only the encoding byte of a value block (for metrics and reports).
Status PeekFloatEncoding(std::span<const std::uint8_t> src, FloatEncoding* encoding) noexcept;

// Integer codec for timestamps and integer series: delta-of-delta + zigzag + FFOR, with the
// regular-interval case (all delta-of-delta 0) costing a few bytes per block.
std::size_t MaxEncodedIntBytes(std::size_t count) noexcept;
// REQUIRES: 1 <= values.size() <= kBlockCapacity, out.size() >= MaxEncodedIntBytes(values.size()).
std::size_t EncodeInts(std::span<const std::int64_t> values, Workspace& ws,
                       std::span<std::uint8_t> out) noexcept;
Status DecodeInts(std::span<const std::uint8_t> src, std::span<std::int64_t> out,
                  Workspace& ws) noexcept;

// What DecodeInts learned about the block's shape while decoding it.
struct IntBlockShape {
  // True when out[i] = out[0] + i * step (wrapping): a regular interval, decoded in closed form.
  // A caller validating timestamps can then check the step instead of every value.
  bool arithmetic = false;
  std::int64_t step = 0;
};
Status DecodeInts(std::span<const std::uint8_t> src, std::span<std::int64_t> out, Workspace& ws,
                  IntBlockShape* shape) noexcept;

}  // namespace ingot::codec
