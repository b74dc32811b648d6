// Pieces shared by the compact ALP encodings (alp_compact.cc: zstd, radix, Rice; alp_huffman.cc;
// alp_ranked.cc):
// the integers and exceptions they all start from, their common header fields and flags, the
// exceptions' tail and the final multiply. Not part of the codec's interface: include from those
// files only.
//
// Thread safety: reentrant; the caller owns every buffer.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "codec/codec.h"
#include "codec/simd/kernels.h"
#include "codec/workspace.h"
#include "config/status.h"

namespace ingot::codec::compact {

// Flags byte (kAlpZstdFlagsOffset) of the compact encodings.
inline constexpr std::uint8_t kDeltaFlag = 1;
// kAlpRice, kAlpHuffman and kAlpRanked: the deltas are zigzagged (no base).
inline constexpr std::uint8_t kZigZagFlag = 2;
// kAlpRice, kAlpHuffman and kAlpRanked, with kDeltaFlag: code 0 is a placeholder 0 (the first
// integer is a header varint), so that a full block has 1024 codes (Rice: FFOR's interleaved
// layout for the low bits; Huffman: eight whole segments; ranked: whole lanes). Rice sets it on
// full blocks only.
inline constexpr std::uint8_t kPlaceholderFlag = 4;
// kAlpRice, kAlpHuffman and kAlpRanked, with the three flags above, full blocks only: codes 2 ..
// 1023 are zigzagged second differences (the first delta is a header varint, code 1 a second
// placeholder 0).
inline constexpr std::uint8_t kSecondOrderFlag = 8;
// Any compact encoding: some values that ALP's multiplications do not give back are their
// integer divided by 10^(exponent - factor) (a division is correctly rounded, as the parse of the
// decimal text they came from was), listed after the exceptions (see DividedValue).
inline constexpr std::uint8_t kDividedFlag = 16;
// kAlpHuffman, blocks of 64 to 1,023 codes only: the codes are in up to eight equal segments
// (SegmentsOf in codec/alp_huffman.cc) instead of segments of 128, so that the decode advances
// several at once.
inline constexpr std::uint8_t kSplitFlag = 32;
// kAlpRice only: codes whose quotient is Q or more are escaped. Their unary part is exactly Q, and
// the rest of the quotient is listed after k (see codec/alp_compact.cc), so that a few jumps in
// an otherwise narrow stream do not cost a run of zero bits each.
inline constexpr std::uint8_t kEscapeFlag = 64;
// kAlpRice with kPlaceholderFlag only: the codes are in lane order (simd::kernels.h,
// rice_join_lanes): code t is number 128 (t % 8) + t / 8 of the block, so that the decoder's
// running sums add one vector per eight codes with no permute. Escape positions count codes.
inline constexpr std::uint8_t kLaneFlag = 128;

inline std::uint64_t ZigZag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t UnZigZag(std::uint64_t u) {
  return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
}

inline std::size_t VarintBytes(std::uint64_t u) {
  return u == 0 ? 1 : (static_cast<std::size_t>(std::bit_width(u)) + 6) / 7;
}

inline std::uint8_t* PutVarint(std::uint64_t u, std::uint8_t* p) {
  while (u >= 0x80) {
    *p++ = static_cast<std::uint8_t>(u | 0x80);
    u >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(u);
  return p;
}

// One varint of at most 10 bytes from [*p, end), advancing *p; false when it is truncated, too
// long or past 64 bits.
bool GetVarint(const std::uint8_t** p, const std::uint8_t* end, std::uint64_t* u);

std::string N(std::size_t v);

// Status::Corruption naming the encoding and what is wrong.
Status Corrupt(const char* encoding, const std::string& what);

// The block's ALP integers in ws.ints, each exception's slot repeating the previous integer (the
// first good one for slot 0), and the exception positions in ws.positions (exceptions that their
// integer gives back by division stay in the stream, listed in ws.divided). The range of ws.ints
// is [stats.lo, stats.hi]. False when every value is an exception.
template <typename T>
bool CompactAlpInts(std::span<const T> values, unsigned exponent, unsigned factor, Workspace& ws,
                    simd::AlpEncodeStats* stats) noexcept;

// The integer streams the entropy-coded encodings (alp_rice, alp_huffman, alp_ranked) choose
// between, built from CompactAlpInts' integers (ws.ints, which become the offsets in place).
// Wrapping arithmetic: the decoders sum the same differences back mod 2^64.
struct CompactStreams {
  std::uint64_t* offsets = nullptr;  // ws.ints: each integer minus `lo`
  // n >= 2: [0] is a placeholder 0, [i] is zigzag(delta i) (ws.ints2), and delta i minus the
  // smallest delta (ws.bits); nullptr for a single value.
  std::uint64_t* deltas = nullptr;
  std::uint64_t* above = nullptr;
  // Full blocks: [0] and [1] are placeholders 0, [i] is zigzag(delta i - delta i-1) (the caller's
  // room); nullptr otherwise.
  std::uint64_t* changes = nullptr;
  std::uint64_t lo = 0;
  std::uint64_t smallest_delta = 0;
  std::uint64_t first_delta = 0;  // delta 1 (full blocks)
};
CompactStreams BuildCompactStreams(Workspace& ws, std::size_t n, std::int64_t lo,
                                   std::uint64_t (&changes)[Workspace::kLanes]);

// The header varints of a block that codes one of those streams, zigzagged, in this order:
// the first integer (deltas), the first delta (second differences), the base (without zigzag:
// the minimum for offsets, the smallest delta for deltas above it).
struct StreamVarints {
  bool delta = false;
  bool zigzagged = false;
  bool second_order = false;
  std::uint64_t first = 0;
  std::uint64_t first_delta = 0;
  std::uint64_t base = 0;

  // The varints' bytes; writes them at `q` and returns the end.
  std::size_t Bytes() const;
  std::uint8_t* Write(std::uint8_t* q) const;
  // Reads the varints the flags above call for from [*p, end), advancing *p; false when one is
  // truncated or too long.
  bool Read(const std::uint8_t** p, const std::uint8_t* end);
};
// The varints of the stream `delta`, `zigzagged` and `second_order` name.
StreamVarints VarintsOf(const CompactStreams& s, bool delta, bool zigzagged, bool second_order);

// The bytes after a compact block's streams: the exceptions, then (kDividedFlag) the divided
// exceptions' positions and their u16 count, the block's last two bytes.
std::size_t TailBytes(std::size_t exceptions, std::size_t divided, std::size_t value_bytes);

// The fixed fields the compact encodings start with; returns where the rest begins
// (kAlpZstdBaseOffset).
std::uint8_t* WriteCompactHeader(std::uint8_t* p, FloatEncoding encoding, std::size_t n,
                                 unsigned exponent, unsigned factor, bool delta,
                                 std::size_t exceptions, const Workspace& ws);

// Exception positions, then their values, then the divided ones and their count, at `q`
// (TailBytes of them).
template <typename T>
void WriteExceptions(std::span<const T> values, const Workspace& ws, std::size_t exceptions,
                     std::uint8_t* q);

struct CompactHeader {
  unsigned exponent = 0;
  unsigned factor = 0;
  unsigned flags = 0;
  bool delta = false;
  std::size_t exceptions = 0;
  std::size_t divided = 0;
  std::size_t tail = 0;  // TailBytes
};

// Checks the fixed fields every compact encoding starts with, flags outside `allowed_flags` and
// the tail's size. REQUIRES: src.size() >= kAlpRadixHeaderBytes.
template <typename T>
Status ReadCompactHeader(std::span<const std::uint8_t> src, std::size_t n, const char* encoding,
                         CompactHeader* h, std::uint32_t allowed_flags = kDeltaFlag | kDividedFlag);

// The start of a block that codes one of the CompactStreams with flags (alp_huffman,
// alp_ranked): the fixed fields (ReadCompactHeader with `allowed_flags`), flags that agree (delta
// with placeholder, zigzag and second differences only with delta, second differences only with
// zigzag on a full block) and the header varints. `begin` is where the encoding's own fields
// start, `end` where the exceptions (the tail) start.
struct StreamHeader {
  CompactHeader h;
  StreamVarints varints;
  const std::uint8_t* begin = nullptr;
  const std::uint8_t* end = nullptr;
};
template <typename T>
Status ReadStreamHeader(std::span<const std::uint8_t> src, std::size_t n, const char* encoding,
                        std::uint32_t allowed_flags, StreamHeader* s);

// A stream's numbers in block order into integers, in place: summed from the header's first
// integer (and first delta), which replace the placeholders; offsets are left as they are.
void SumStream(std::uint64_t* ints, std::size_t n, const StreamHeader& s);

// The values of ALP integers `ints` (mod 2^64), then the exceptions at `positions` (the tail).
template <typename T>
Status FinishCompactDecode(std::uint64_t* ints, const CompactHeader& h,
                           const std::uint8_t* positions, std::span<T> out, const char* encoding);

}  // namespace ingot::codec::compact
