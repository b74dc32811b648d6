// The compact ALP encodings, written when the storage layer rewrites sealed chunks in the
// background (EncodeDoublesCompact), never on the ingest path.
//
// ALP's bit packing gives every value of a block the width of the widest one. Two encodings here
// spend fewer bits on the same integers (exceptions as in ALP: each exception's slot repeats the
// previous integer, so its delta is 0):
//
// - kAlpZstd: real data (prices, temperatures, readings with a sentinel) has a skewed
//   distribution of integers and deltas that only an entropy coder exploits. The integers become
//   LEB128 varints (zigzagged deltas, or offsets from the minimum: whichever stream is shorter)
//   compressed with zstd. Decoding is zstd's decoder plus a varint pass.
//   Layout (little-endian), after the 3-byte block header:
//     u8 exponent, u8 factor, u8 flags (bit 0: delta; other bits 0), u16 exception count E,
//     i64 base (delta: the first integer; offsets: the minimum), u32 frame bytes Z,
//     Z bytes: one zstd frame whose content is `count` varints,
//     E x u16 exception positions (ascending), E x sizeof(T) exception values.
//
// - kAlpRadix: integers spread evenly over a range that is not a power of two (a random walk's
//   steps: 201 values take 8 bits each in ALP, log2(201) = 7.65 bits of information) are written
//   as digits of that range, several to a field (bit_packing.h: 201 -> 3 digits in 23 bits).
//   Layout (little-endian), after the 3-byte block header:
//     u8 exponent, u8 factor, u8 flags (bit 0: delta; other bits 0), u16 exception count E,
//     varints: zigzag(first integer) (delta only), zigzag(base), range - 1 (range <= 2^32),
//     the digits: count - 1 deltas minus base (delta) or count integers minus base, radix-packed,
//     E x u16 exception positions (ascending), E x sizeof(T) exception values.
//
// - kAlpRice: integers whose gaps follow a geometric-like law (a dictionary's sorted distinct
//   values: nyc29's coordinates spread 560 values per block over 2^42, so fixed-width gaps take
//   the largest gap's 35 bits where their entropy is 31.5) are written as Rice codes: the
//   quotient x >> k in unary (that many 0 bits, then a 1), then the k low bits. The stream is
//   whichever is shortest of: offsets from the minimum, zigzagged deltas, deltas minus the
//   smallest delta, and (full blocks) zigzagged second differences, the change of the delta,
//   which smooth series (a slowly turning reading: Earth orientation angles, a filtered sensor)
//   make far smaller than the deltas. The low bits and the quotients are two streams: the low bits
//   unpack with the FFOR kernels, the quotients' set bits are gathered by a kernel (a word per
//   compress with AVX-512 VBMI2, sixteen bits without it), and one more kernel joins both and
//   sums the deltas, with no dependency between a code's position and the load of the next. A
//   full block of deltas has its codes in lane order, eight lanes of 128 consecutive numbers, so
//   that those sums add one vector per eight codes with no shuffle.
//   Layout (little-endian), after the 3-byte block header:
//     u8 exponent, u8 factor, u8 flags (bit 0: delta, bit 1: zigzagged deltas, bit 2: a
//     placeholder code 0 before the deltas of a full block, so that its 1024 codes take FFOR's
//     interleaved layout; bit 3: second differences, with bits 0-2; bit 4: divided exceptions;
//     bit 6: escapes; bit 7, with bit 2: the codes in lane order, code t being number
//     128 (t % 8) + t / 8, for every stream below), u16 exception count E,
//     varints: zigzag(first integer) (delta only), zigzag(first delta) (second differences
//     only), zigzag(base) (not with zigzag),
//     u8 k (<= kMaxRiceK), with flags bit 6 (kEscapeFlag) the escapes: u8 Q (1..64), varint count,
//     count x (varint gap from the code after the previous escape, varint quotient - Q) for the
//     codes whose quotient is Q or more, whose unary part is exactly Q zero bits, the codes' low
//     bits packed (PackedBytes(codes, k), bit_packing.h), (second differences: codes 0 and 1 are
//     placeholders 0, code i >= 2 is zigzag(delta i - delta i-1)), the quotients as a little-endian
//     bit stream (bit 0 of byte 0 first; each a run of 0 bits ended by a 1; zero bits to the byte),
//     E x u16 exception positions (ascending), E x sizeof(T) exception values.
#include <zstd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "codec/alp_compact_internal.h"
#include "codec/alp_constants.h"
#include "codec/bit_packing.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {

struct ZstdContexts {
  ZSTD_CCtx* cctx = nullptr;
  ZSTD_DCtx* dctx = nullptr;
  ~ZstdContexts() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};

Workspace::~Workspace() { delete zstd; }

namespace compact {

// The largest Rice parameter (ALP integers and their deltas need fewer bits).
constexpr unsigned kMaxRiceK = 56;
// The largest escape quotient a decoder takes (kEscapeFlag), and the ones the encoder tries.
constexpr unsigned kMaxEscapeQuotient = 64;
constexpr unsigned kEscapeQuotients[] = {1, 2, 4, 8, 16, 32};
// Escapes are tried on a stream only when its largest code's unary part, at the parameter chosen
// without them, is this long: an escape costs at least two varint bytes, and below that the
// parameter chosen without escapes is within a few bits a block of the best with them.
constexpr std::uint64_t kEscapeMinQuotient = 16;
// How far below the parameter chosen without escapes the search with them goes: the jumps pull
// that parameter up (a mean over a few values 2^10 larger), by up to log2 of their share.
constexpr unsigned kEscapeKSpan = 8;
// The escapes' estimate (ChooseRiceCodes) above the codes without them by more than this factor
// is not measured exactly.
constexpr double kEscapeEstimateSlack = 1.125;
// zstd level for background rewrites: level 3 is zstd's default; higher levels gained under 2%
// on the real data sets at several times the cost.
constexpr int kZstdLevel = 3;
// Varints of ALP integers (|i| < 2^53, deltas below 2^54 once zigzagged) take at most 8 bytes.
constexpr std::size_t kMaxVarintBytes = 8;
static_assert(sizeof(Workspace::packed) >= kMaxVarintBytes * Workspace::kLanes);
// The radix header's varints: 64-bit values take at most 10 bytes.
constexpr std::size_t kMaxVarint64Bytes = 10;

ZstdContexts& Contexts(Workspace& ws) {
  if (ws.zstd == nullptr) ws.zstd = new ZstdContexts();
  return *ws.zstd;
}

// One varint of at most kMaxVarint64Bytes bytes from [*p, end), advancing *p; false when it is
// truncated, too long or past 64 bits.
bool GetVarint(const std::uint8_t** p, const std::uint8_t* end, std::uint64_t* u) {
  std::uint64_t v = 0;
  for (unsigned k = 0; k < kMaxVarint64Bytes && *p != end; ++k) {
    const std::uint8_t b = *(*p)++;
    if (k == kMaxVarint64Bytes - 1 && b > 1) return false;
    v |= static_cast<std::uint64_t>(b & 0x7f) << (7 * k);
    if ((b & 0x80) == 0) {
      *u = v;
      return true;
    }
  }
  return false;
}

std::string N(std::size_t v) { return std::to_string(v); }

Status Corrupt(const char* encoding, const std::string& what) {
  return Status::Corruption(std::string("block (") + encoding + "): " + what);
}

// A divided exception's value: its integer over 10^decimals, correctly rounded in double (then
// to T). The parse of a decimal text with at most `decimals` digits after the point is the same
// correctly rounded quotient, so such values come back bit for bit, which ALP's multiplication
// by 10^-e (itself rounded) misses for about one value in a hundred.
template <typename T>
T DividedValue(std::int64_t integer, unsigned decimals) {
  return static_cast<T>(static_cast<double>(integer) / AlpConstants<double>::kExp10[decimals]);
}

// Whether `v` is DividedValue of an integer below 2^53 in magnitude, and which.
template <typename T>
bool DividesBack(T v, unsigned decimals, std::int64_t* integer) {
  const double scaled = static_cast<double>(v) * AlpConstants<double>::kExp10[decimals];
  if (!(std::fabs(scaled) < 9007199254740992.0)) return false;  // 2^53; NaN too
  *integer = std::llround(scaled);
  using Bits = typename AlpConstants<T>::Bits;
  return std::bit_cast<Bits>(DividedValue<T>(*integer, decimals)) == std::bit_cast<Bits>(v);
}

// The block's ALP integers in ws.ints, each exception's slot repeating the previous integer (the
// first good one for slot 0), and the exception positions in ws.positions. The range of ws.ints is
// that of the good integers, [stats.lo, stats.hi]. False when every value is an exception.
template <typename T>
bool CompactAlpInts(std::span<const T> values, unsigned exponent, unsigned factor, Workspace& ws,
                    simd::AlpEncodeStats* stats) noexcept {
  const std::size_t n = values.size();
  const simd::Kernels& kernels = simd::ActiveKernels();
  if constexpr (sizeof(T) == 8) {
    *stats =
        kernels.alp_encode_double(values.data(), n, exponent, factor, ws.ints, ws.exception_bitmap);
  } else {
    *stats =
        kernels.alp_encode_float(values.data(), n, exponent, factor, ws.ints, ws.exception_bitmap);
  }
  ws.divided_count = 0;
  if (stats->exceptions == 0) return true;
  // Exceptions whose integer gives them back by division stay in the stream (the range grows to
  // hold them); the others repeat the previous integer, in order, so after the divided ones.
  const unsigned decimals = exponent - factor;
  std::size_t exceptions = 0;
  for (std::size_t w = 0; w < (n + 63) / 64; ++w) {
    for (std::uint64_t bits = ws.exception_bitmap[w]; bits != 0; bits &= bits - 1) {
      const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      std::int64_t integer = 0;
      if (DividesBack(values[i], decimals, &integer)) {
        ws.divided[ws.divided_count++] = static_cast<std::uint16_t>(i);
        ws.ints[i] = integer;
        const bool first = stats->exceptions == n && ws.divided_count == 1;
        stats->lo = first ? integer : std::min(stats->lo, integer);
        stats->hi = first ? integer : std::max(stats->hi, integer);
        ws.exception_bitmap[w] &= ~(std::uint64_t{1} << (i % 64));
      } else {
        ws.positions[exceptions++] = static_cast<std::uint16_t>(i);
      }
    }
  }
  stats->exceptions = exceptions;
  if (exceptions == n) return false;
  if (exceptions > 0) {
    std::size_t first_good = 0;
    while ((ws.exception_bitmap[first_good / 64] >> (first_good % 64)) & 1) ++first_good;
    for (std::size_t k = 0; k < exceptions; ++k) {
      const std::size_t i = ws.positions[k];
      ws.ints[i] = i == 0 ? ws.ints[first_good] : ws.ints[i - 1];
    }
  }
  return true;
}

std::size_t ExceptionBytes(std::size_t exceptions, std::size_t value_bytes) {
  return exceptions * (2 + value_bytes);
}

CompactStreams BuildCompactStreams(Workspace& ws, std::size_t n, std::int64_t lo,
                                   std::uint64_t (&changes)[Workspace::kLanes]) {
  CompactStreams s;
  s.lo = static_cast<std::uint64_t>(lo);
  s.offsets = reinterpret_cast<std::uint64_t*>(ws.ints);
  for (std::size_t i = 0; i < n; ++i) s.offsets[i] -= s.lo;
  const std::uint64_t* offsets = s.offsets;
  if (n >= 2) {
    s.deltas = reinterpret_cast<std::uint64_t*>(ws.ints2);
    auto smallest = static_cast<std::int64_t>(offsets[1] - offsets[0]);
    s.deltas[0] = 0;
    for (std::size_t i = 1; i < n; ++i) {
      const auto d = static_cast<std::int64_t>(offsets[i] - offsets[i - 1]);
      smallest = std::min(smallest, d);
      s.deltas[i] = ZigZag(d);
    }
    s.smallest_delta = static_cast<std::uint64_t>(smallest);
    s.above = ws.bits;
    s.above[0] = 0;
    for (std::size_t i = 1; i < n; ++i) {
      s.above[i] = offsets[i] - offsets[i - 1] - s.smallest_delta;
    }
  }
  if (n == Workspace::kLanes) {
    s.changes = changes;
    s.first_delta = offsets[1] - offsets[0];
    changes[0] = changes[1] = 0;
    for (std::size_t i = 2; i < n; ++i) {
      changes[i] =
          ZigZag(static_cast<std::int64_t>(offsets[i] - 2 * offsets[i - 1] + offsets[i - 2]));
    }
  }
  return s;
}

StreamVarints VarintsOf(const CompactStreams& s, bool delta, bool zigzagged, bool second_order) {
  StreamVarints v;
  v.delta = delta;
  v.zigzagged = zigzagged;
  v.second_order = second_order;
  v.first = ZigZag(static_cast<std::int64_t>(s.offsets[0] + s.lo));
  v.first_delta = ZigZag(static_cast<std::int64_t>(s.first_delta));
  v.base = ZigZag(static_cast<std::int64_t>(delta ? s.smallest_delta : s.lo));
  return v;
}

std::size_t StreamVarints::Bytes() const {
  return (delta ? VarintBytes(first) : 0) + (second_order ? VarintBytes(first_delta) : 0) +
         (!zigzagged ? VarintBytes(base) : 0);
}

std::uint8_t* StreamVarints::Write(std::uint8_t* q) const {
  if (delta) q = PutVarint(first, q);
  if (second_order) q = PutVarint(first_delta, q);
  if (!zigzagged) q = PutVarint(base, q);
  return q;
}

bool StreamVarints::Read(const std::uint8_t** p, const std::uint8_t* end) {
  return (!delta || GetVarint(p, end, &first)) &&
         (!second_order || GetVarint(p, end, &first_delta)) &&
         (zigzagged || GetVarint(p, end, &base));
}

template <typename T>
Status ReadStreamHeader(std::span<const std::uint8_t> src, std::size_t n, const char* encoding,
                        std::uint32_t allowed_flags, StreamHeader* s) {
  constexpr std::size_t kHeaderBytes = kAlpZstdBaseOffset;
  static_assert(kAlpHuffmanHeaderBytes == kHeaderBytes && kAlpRankedHeaderBytes == kHeaderBytes);
  if (src.size() < kHeaderBytes) {
    return Corrupt(encoding, N(src.size()) + " bytes < header " + N(kHeaderBytes));
  }
  CompactHeader& h = s->h;
  INGOT_RETURN_IF_ERROR(ReadCompactHeader<T>(src, n, encoding, &h, allowed_flags));
  const bool zigzagged = (h.flags & kZigZagFlag) != 0;
  const bool placeholder = (h.flags & kPlaceholderFlag) != 0;
  const bool second_order = (h.flags & kSecondOrderFlag) != 0;
  if (h.delta != placeholder || (zigzagged && !h.delta)) {
    return Corrupt(encoding, "flags " + N(h.flags) + ": delta, placeholder and zigzag disagree");
  }
  if (second_order && !(zigzagged && n == kBlockCapacity)) {
    return Corrupt(encoding, "second differences without zigzag or a full block");
  }
  s->begin = src.data() + kHeaderBytes;
  s->end = src.data() + src.size() - h.tail;
  s->varints = StreamVarints{h.delta, zigzagged, second_order};
  if (!s->varints.Read(&s->begin, s->end)) {
    return Corrupt(encoding, "header varints truncated or too long");
  }
  return Status::OK();
}

void SumStream(std::uint64_t* ints, std::size_t n, const StreamHeader& s) {
  const simd::Kernels& kernels = simd::ActiveKernels();
  const StreamVarints& v = s.varints;
  const auto first_int = static_cast<std::uint64_t>(UnZigZag(v.first));
  if (v.second_order) {
    kernels.unzigzag_prefix_sum(ints + 1, n - 1,
                                static_cast<std::uint64_t>(UnZigZag(v.first_delta)));
    kernels.prefix_sum(ints, n, first_int);
  } else if (v.zigzagged) {
    kernels.unzigzag_prefix_sum(ints, n, first_int);
  } else if (v.delta) {
    kernels.prefix_sum(ints, n, first_int);
  }
}

// The bytes after a compact block's streams: the exceptions, then (kDividedFlag) the divided
// exceptions' positions and their u16 count, the block's last two bytes.
std::size_t TailBytes(std::size_t exceptions, std::size_t divided, std::size_t value_bytes) {
  return ExceptionBytes(exceptions, value_bytes) + (divided > 0 ? 2 + 2 * divided : 0);
}

// The fixed fields the compact encodings start with.
std::uint8_t* WriteCompactHeader(std::uint8_t* p, FloatEncoding encoding, std::size_t n,
                                 unsigned exponent, unsigned factor, bool delta,
                                 std::size_t exceptions, const Workspace& ws) {
  WriteBlockHeader(p, encoding, n);
  p[kAlpZstdExponentOffset] = static_cast<std::uint8_t>(exponent);
  p[kAlpZstdFactorOffset] = static_cast<std::uint8_t>(factor);
  p[kAlpZstdFlagsOffset] = static_cast<std::uint8_t>((delta ? kDeltaFlag : 0) |
                                                     (ws.divided_count > 0 ? kDividedFlag : 0));
  StoreLe<std::uint16_t>(p + kAlpZstdExceptionCountOffset, static_cast<std::uint16_t>(exceptions));
  return p + kAlpZstdBaseOffset;
}

// Exception positions, then their values, then the divided ones and their count, at `q`
// (TailBytes of them).
template <typename T>
void WriteExceptions(std::span<const T> values, const Workspace& ws, std::size_t exceptions,
                     std::uint8_t* q) {
  for (std::size_t k = 0; k < exceptions; ++k) StoreLe<std::uint16_t>(q + 2 * k, ws.positions[k]);
  q += 2 * exceptions;
  for (std::size_t k = 0; k < exceptions; ++k) {
    StoreLe<T>(q + sizeof(T) * k, values[ws.positions[k]]);
  }
  q += sizeof(T) * exceptions;
  if (ws.divided_count == 0) return;
  for (std::size_t k = 0; k < ws.divided_count; ++k) {
    StoreLe<std::uint16_t>(q + 2 * k, ws.divided[k]);
  }
  StoreLe<std::uint16_t>(q + 2 * ws.divided_count, static_cast<std::uint16_t>(ws.divided_count));
}

// Checks the fixed fields both compact encodings start with.
template <typename T>
Status ReadCompactHeader(std::span<const std::uint8_t> src, std::size_t n, const char* encoding,
                         CompactHeader* h, std::uint32_t allowed_flags) {
  h->exponent = src[kAlpZstdExponentOffset];
  h->factor = src[kAlpZstdFactorOffset];
  const unsigned flags = src[kAlpZstdFlagsOffset];
  h->exceptions = LoadLe<std::uint16_t>(src.data() + kAlpZstdExceptionCountOffset);
  if (h->exponent > AlpConstants<T>::kMaxExponent || h->factor > h->exponent) {
    return Corrupt(encoding,
                   "exponent " + N(h->exponent) + " factor " + N(h->factor) + " out of range");
  }
  if ((flags & ~allowed_flags) != 0) return Corrupt(encoding, "unknown flags " + N(flags));
  h->flags = flags;
  if (h->exceptions > n) {
    return Corrupt(encoding, "exception count " + N(h->exceptions) + " > count " + N(n));
  }
  h->delta = (flags & kDeltaFlag) != 0;
  // Every compact header is at least kAlpRadixHeaderBytes long (the caller checked).
  const std::size_t after_header = src.size() - kAlpRadixHeaderBytes;
  if ((flags & kDividedFlag) != 0) {
    if (after_header < 2) return Corrupt(encoding, "no room for the divided values' count");
    h->divided = LoadLe<std::uint16_t>(src.data() + src.size() - 2);
    if (h->divided == 0 || h->divided > n) {
      return Corrupt(encoding, "divided value count " + N(h->divided) + " of " + N(n));
    }
  }
  h->tail = TailBytes(h->exceptions, h->divided, sizeof(T));
  if (h->tail > after_header) {
    return Corrupt(encoding, "exceptions of " + N(h->tail) + " bytes in " + N(after_header) +
                                 " after the header");
  }
  return Status::OK();
}

// Deltas back into integers: ints[0] = first, ints[i] = ints[i - 1] + delta i (ints[1..n) holds
// the deltas on entry). Wrapping arithmetic: corrupt numbers give wrong values, never undefined
// behaviour.
void SumDeltas(std::uint64_t* ints, std::size_t n, std::uint64_t first) {
  simd::ActiveKernels().prefix_sum(ints, n, first);
}

// The values of ALP integers `ints` (mod 2^64), then the exceptions at `positions` (the tail).
template <typename T>
Status FinishCompactDecode(std::uint64_t* ints, const CompactHeader& h,
                           const std::uint8_t* positions, std::span<T> out,
                           const char* encoding) {
  static_assert(std::size(AlpConstants<double>::kExp10) > AlpConstants<T>::kMaxExponent);
  const std::size_t n = out.size();
  const simd::Kernels& kernels = simd::ActiveKernels();
  const auto* signed_ints = reinterpret_cast<const std::int64_t*>(ints);
  if constexpr (sizeof(T) == 8) {
    kernels.alp_decode_double(signed_ints, n, h.exponent, h.factor, out.data());
  } else {
    kernels.alp_decode_float(signed_ints, n, h.exponent, h.factor, out.data());
  }
  const std::uint8_t* exception_values = positions + 2 * h.exceptions;
  T* __restrict dst = out.data();
  for (std::size_t k = 0; k < h.exceptions; ++k) {
    const std::size_t pos = LoadLe<std::uint16_t>(positions + 2 * k);
    if (pos >= n) [[unlikely]] {
      return Corrupt(encoding, "exception " + N(k) + " at position " + N(pos) + " >= count " + N(n));
    }
    std::memcpy(dst + pos, exception_values + sizeof(T) * k, sizeof(T));
  }
  const std::uint8_t* divided = exception_values + sizeof(T) * h.exceptions;
  const unsigned decimals = h.exponent - h.factor;
  for (std::size_t k = 0; k < h.divided; ++k) {
    const std::size_t pos = LoadLe<std::uint16_t>(divided + 2 * k);
    if (pos >= n) [[unlikely]] {
      return Corrupt(encoding, "divided value " + N(k) + " at position " + N(pos) + " >= count " +
                                   N(n));
    }
    dst[pos] = DividedValue<T>(static_cast<std::int64_t>(ints[pos]), decimals);
  }
  return Status::OK();
}

#define INGOT_COMPACT_INSTANTIATE(T)                                                            \
  template bool CompactAlpInts<T>(std::span<const T>, unsigned, unsigned, Workspace&,           \
                                  simd::AlpEncodeStats*) noexcept;                              \
  template void WriteExceptions<T>(std::span<const T>, const Workspace&, std::size_t,           \
                                   std::uint8_t*);                                              \
  template Status ReadCompactHeader<T>(std::span<const std::uint8_t>, std::size_t, const char*, \
                                       CompactHeader*, std::uint32_t);                          \
  template Status FinishCompactDecode<T>(std::uint64_t*, const CompactHeader&,                  \
                                         const std::uint8_t*, std::span<T>, const char*);
INGOT_COMPACT_INSTANTIATE(double)
INGOT_COMPACT_INSTANTIATE(float)
template Status ReadStreamHeader<double>(std::span<const std::uint8_t>, std::size_t, const char*,
                                         std::uint32_t, StreamHeader*);
template Status ReadStreamHeader<float>(std::span<const std::uint8_t>, std::size_t, const char*,
                                        std::uint32_t, StreamHeader*);
#undef INGOT_COMPACT_INSTANTIATE

}  // namespace compact

using namespace compact;  // NOLINT(google-build-using-namespace): this file's own helpers

template <typename T>
std::size_t EncodeAlpZstd(std::span<const T> values, unsigned exponent, unsigned factor,
                          Workspace& ws, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  simd::AlpEncodeStats stats;
  if (!CompactAlpInts(values, exponent, factor, ws, &stats)) return 0;
  const std::size_t exceptions = stats.exceptions;
  // The shorter of the two varint streams.
  std::size_t delta_len = 0, offset_len = 0;
  for (std::size_t i = 1; i < n; ++i) delta_len += VarintBytes(ZigZag(ws.ints[i] - ws.ints[i - 1]));
  delta_len += 1;  // the first delta is 0
  for (std::size_t i = 0; i < n; ++i) {
    offset_len += VarintBytes(static_cast<std::uint64_t>(ws.ints[i] - stats.lo));
  }
  const bool delta = delta_len <= offset_len;
  auto* stream = reinterpret_cast<std::uint8_t*>(ws.packed);
  std::uint8_t* s = stream;
  if (delta) {
    s = PutVarint(0, s);
    for (std::size_t i = 1; i < n; ++i) s = PutVarint(ZigZag(ws.ints[i] - ws.ints[i - 1]), s);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      s = PutVarint(static_cast<std::uint64_t>(ws.ints[i] - stats.lo), s);
    }
  }
  const std::size_t stream_len = static_cast<std::size_t>(s - stream);
  const std::size_t tail = TailBytes(exceptions, ws.divided_count, sizeof(T));
  if (out.size() < kAlpZstdHeaderBytes + tail + 1) return 0;
  std::uint8_t* p = out.data();
  const std::size_t room = out.size() - kAlpZstdHeaderBytes - tail;
  ZstdContexts& z = Contexts(ws);
  if (z.cctx == nullptr) z.cctx = ZSTD_createCCtx();
  if (z.cctx == nullptr) return 0;
  const std::size_t frame =
      ZSTD_compressCCtx(z.cctx, p + kAlpZstdHeaderBytes, room, stream, stream_len, kZstdLevel);
  if (ZSTD_isError(frame)) return 0;  // does not fit: not smaller than what the caller has
  WriteCompactHeader(p, FloatEncoding::kAlpZstd, n, exponent, factor, delta, exceptions, ws);
  StoreLe<std::int64_t>(p + kAlpZstdBaseOffset, delta ? ws.ints[0] : stats.lo);
  StoreLe<std::uint32_t>(p + kAlpZstdFrameBytesOffset, static_cast<std::uint32_t>(frame));
  WriteExceptions(values, ws, exceptions, p + kAlpZstdHeaderBytes + frame);
  return kAlpZstdHeaderBytes + frame + tail;
}

// The varint loop of DecodeAlpZstd for a stream the kernel refused: the fault, named; OK (with
// the integers) should the stream be well formed after all.
Status VarintFault(const std::uint8_t* stream, std::size_t got, std::size_t n,
                   std::uint64_t* ints) {
  constexpr const char* kName = "alp_zstd";
  const std::uint8_t* s = stream;
  const std::uint8_t* const end = stream + got;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t u = 0;
    unsigned shift = 0;
    for (;;) {
      if (s == end || shift >= 7 * kMaxVarintBytes) [[unlikely]] {
        return Corrupt(kName, "varint " + N(i) + " truncated or too long");
      }
      const std::uint8_t b = *s++;
      u |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    ints[i] = u;
  }
  if (s != end) {
    return Corrupt(kName, N(static_cast<std::size_t>(end - s)) + " bytes after the varints");
  }
  return Status::OK();
}

template <typename T>
Status DecodeAlpZstd(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept {
  constexpr const char* kName = "alp_zstd";
  const std::size_t n = out.size();
  if (src.size() < kAlpZstdHeaderBytes) {
    return Corrupt(kName, N(src.size()) + " bytes < header " + N(kAlpZstdHeaderBytes));
  }
  CompactHeader h;
  INGOT_RETURN_IF_ERROR(ReadCompactHeader<T>(src, n, kName, &h));
  const auto base = LoadLe<std::uint64_t>(src.data() + kAlpZstdBaseOffset);
  const std::size_t frame = LoadLe<std::uint32_t>(src.data() + kAlpZstdFrameBytesOffset);
  const std::size_t expected = kAlpZstdHeaderBytes + frame + h.tail;
  if (frame > src.size() || expected != src.size()) {
    return Corrupt(kName, "block of " + N(src.size()) + " bytes, layout needs " + N(expected));
  }
  const std::uint8_t* frame_bytes = src.data() + kAlpZstdHeaderBytes;
  auto* stream = reinterpret_cast<std::uint8_t*>(ws.packed);
  const std::size_t capacity = kMaxVarintBytes * n;
  const unsigned long long content = ZSTD_getFrameContentSize(frame_bytes, frame);
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN ||
      content > capacity || content < n) {
    return Corrupt(kName, "zstd frame content size invalid for " + N(n) + " values");
  }
  ZstdContexts& z = Contexts(ws);
  if (z.dctx == nullptr) z.dctx = ZSTD_createDCtx();
  if (z.dctx == nullptr) return Status::IOError("alp_zstd: cannot allocate a zstd context");
  const std::size_t got = ZSTD_decompressDCtx(z.dctx, stream, capacity, frame_bytes, frame);
  if (ZSTD_isError(got) || got != content) {
    return Corrupt(kName, std::string("zstd frame: ") +
                              (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short content"));
  }
  // Varints: exactly n of them, each at most kMaxVarintBytes long, filling the content. The
  // kernel decodes a well-formed stream; the loop below names what is wrong with another. The
  // bytes after the content are zeroed for the kernel's whole-chunk loads (none is used).
  std::uint64_t* ints = ws.bits;
  static_assert(sizeof(Workspace::packed) >=
                simd::VarintReadBytes(kMaxVarintBytes * Workspace::kLanes));
  static_assert(kMaxVarintBytes == simd::kVarintMaxBytes);
  std::memset(stream + got, 0, simd::VarintReadBytes(got) - got);
  if (!simd::ActiveKernels().decode_varints(stream, got, n, ints)) {
    INGOT_RETURN_IF_ERROR(VarintFault(stream, got, n, ints));
  }
  // Wrapping arithmetic: corrupt numbers give wrong values, never undefined behaviour.
  if (h.delta) {
    // Unzigzagged and summed in one pass.
    simd::ActiveKernels().unzigzag_prefix_sum(ints, n,
                                              base + static_cast<std::uint64_t>(UnZigZag(ints[0])));
  } else {
    for (std::size_t i = 0; i < n; ++i) ints[i] += base;
  }
  return FinishCompactDecode(ints, h, src.data() + kAlpZstdHeaderBytes + frame, out, kName);
}

template <typename T>
std::size_t EncodeAlpRadix(std::span<const T> values, unsigned exponent, unsigned factor,
                           Workspace& ws, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  simd::AlpEncodeStats stats;
  if (!CompactAlpInts(values, exponent, factor, ws, &stats)) return 0;
  const std::size_t exceptions = stats.exceptions;
  // Deltas (exception slots give 0) into ws.ints2, and their range.
  std::int64_t dlo = 0, dhi = 0;
  for (std::size_t i = 1; i < n; ++i) {
    const std::int64_t d = static_cast<std::int64_t>(static_cast<std::uint64_t>(ws.ints[i]) -
                                                     static_cast<std::uint64_t>(ws.ints[i - 1]));
    ws.ints2[i - 1] = d;
    dlo = i == 1 ? d : std::min(dlo, d);
    dhi = i == 1 ? d : std::max(dhi, d);
  }
  // Ranges as unsigned spans; one past kMaxRadixRange (or a wrapped span) rules a stream out.
  const std::uint64_t offset_range =
      static_cast<std::uint64_t>(stats.hi) - static_cast<std::uint64_t>(stats.lo) + 1;
  const std::uint64_t delta_range =
      static_cast<std::uint64_t>(dhi) - static_cast<std::uint64_t>(dlo) + 1;
  const bool offsets_fit = offset_range != 0 && offset_range <= kMaxRadixRange;
  const bool deltas_fit = n > 1 && delta_range != 0 && delta_range <= kMaxRadixRange;
  if (!offsets_fit && !deltas_fit) return 0;
  const std::size_t offset_bytes = offsets_fit ? RadixPackedBytes(n, offset_range) : SIZE_MAX;
  const std::size_t delta_bytes = deltas_fit ? RadixPackedBytes(n - 1, delta_range) : SIZE_MAX;
  const bool delta = delta_bytes < offset_bytes;
  const std::uint64_t range = delta ? delta_range : offset_range;
  const std::size_t digits = delta ? n - 1 : n;
  const std::size_t packed = delta ? delta_bytes : offset_bytes;
  const std::int64_t base = delta ? dlo : stats.lo;
  const std::size_t tail = TailBytes(exceptions, ws.divided_count, sizeof(T));
  if (out.size() < kAlpRadixHeaderBytes + 3 * kMaxVarint64Bytes + packed + tail) return 0;
  std::uint8_t* p = out.data();
  std::uint8_t* q =
      WriteCompactHeader(p, FloatEncoding::kAlpRadix, n, exponent, factor, delta, exceptions, ws);
  if (delta) q = PutVarint(ZigZag(ws.ints[0]), q);
  q = PutVarint(ZigZag(base), q);
  q = PutVarint(range - 1, q);
  const auto* in = reinterpret_cast<const std::uint64_t*>(delta ? ws.ints2 : ws.ints);
  PackRadix(in, digits, static_cast<std::uint64_t>(base), range, q);
  q += packed;
  WriteExceptions(values, ws, exceptions, q);
  return static_cast<std::size_t>(q - p) + tail;
}

template <typename T>
Status DecodeAlpRadix(std::span<const std::uint8_t> src, std::span<T> out,
                      Workspace& ws) noexcept {
  constexpr const char* kName = "alp_radix";
  const std::size_t n = out.size();
  if (src.size() < kAlpRadixHeaderBytes) {
    return Corrupt(kName, N(src.size()) + " bytes < header " + N(kAlpRadixHeaderBytes));
  }
  CompactHeader h;
  INGOT_RETURN_IF_ERROR(ReadCompactHeader<T>(src, n, kName, &h));
  const std::uint8_t* p = src.data() + kAlpRadixHeaderBytes;
  const std::uint8_t* const end = src.data() + src.size();
  std::uint64_t first = 0, base = 0, range_minus_one = 0;
  if ((h.delta && !GetVarint(&p, end, &first)) || !GetVarint(&p, end, &base) ||
      !GetVarint(&p, end, &range_minus_one)) {
    return Corrupt(kName, "header varints truncated or too long");
  }
  if (range_minus_one >= kMaxRadixRange) {
    return Corrupt(kName, "range " + N(range_minus_one) + " + 1 > 2^32");
  }
  const std::uint64_t range = range_minus_one + 1;
  const std::size_t digits = h.delta ? n - 1 : n;
  const std::size_t packed = RadixPackedBytes(digits, range);
  const std::size_t left = static_cast<std::size_t>(end - p);
  if (left != packed + h.tail) {
    return Corrupt(kName, N(left) + " bytes after the header, layout needs " +
                              N(packed + h.tail));
  }
  std::uint64_t* ints = ws.bits;
  const std::uint64_t base_value = static_cast<std::uint64_t>(UnZigZag(base));
  std::uint64_t* digit_out = h.delta ? ints + 1 : ints;
  if (!UnpackRadix(p, digits, base_value, range, ws.packed, digit_out)) {
    return Corrupt(kName, "a packed field past its digits, or bits after the last field");
  }
  if (h.delta) SumDeltas(ints, n, static_cast<std::uint64_t>(UnZigZag(first)));
  return FinishCompactDecode(ints, h, p + packed, out, kName);
}

namespace {

// Bits of `x` as Rice codes with parameter k (the zero bits of the quotients, a 1 each, k bits
// each); SIZE_MAX past `limit` bits.
std::size_t RiceBits(const std::uint64_t* x, std::size_t count, unsigned k, std::size_t limit) {
  std::size_t bits = count * (k + 1);
  if (bits > limit) return SIZE_MAX;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t zeros = x[i] >> k;
    if (zeros > limit - bits) return SIZE_MAX;  // also keeps the sum from wrapping
    bits += static_cast<std::size_t>(zeros);
  }
  return bits;
}

struct RiceChoice {
  std::size_t bits = SIZE_MAX;  // the codes', and with escapes the list's bytes times 8
  unsigned k = 0;
  unsigned escape = 0;  // the escape quotient Q, 0 for none
};

// The parameter that codes `x` in the fewest bits, no more than `limit`: from `start` (where the
// codes' widths put the optimum), then the neighbours while they improve. A parameter whose code
// passes the limit counts as no better, so the walk goes on past it (a small k's unary part may
// pass a tight limit that the best k stays under).
RiceChoice ChooseRice(const std::uint64_t* x, std::size_t count, std::size_t limit,
                      unsigned start) {
  RiceChoice best;
  if (count == 0) return {0, 0};
  // Keeps k when it is better; true when the walk in this direction is over.
  const auto better = [&](unsigned k) {
    const std::size_t bits = RiceBits(x, count, k, limit);
    if (bits < best.bits) {
      best = {bits, k};
      return false;
    }
    return best.bits != SIZE_MAX;
  };
  for (unsigned k = start;; --k) {  // downwards
    if (better(k) || k == 0) break;
  }
  for (unsigned k = start + 1; k <= kMaxRiceK; ++k) {  // upwards
    if (better(k)) break;
  }
  return best;
}

// Calls f(gap, rest) for each code of x[0 .. count) (code i + skip of the block) whose quotient
// with parameter k is q or more: its gap from the code after the previous one (from code 0 for
// the first) and the rest of its quotient, as the escape list holds them.
template <typename F>
void ForEachEscape(const std::uint64_t* x, std::size_t count, std::size_t skip, unsigned k,
                   unsigned q, F f) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t quotient = x[i] >> k;
    if (quotient < q) continue;
    f(i + skip - next, quotient - q);
    next = i + skip + 1;
  }
}

// The escape list's bytes: q, the count, then a gap and a rest for each escaped code; 0 when no
// code is escaped.
std::size_t EscapeListBytes(const std::uint64_t* x, std::size_t count, std::size_t skip, unsigned k,
                            unsigned q) {
  std::size_t bytes = 0, escapes = 0;
  ForEachEscape(x, count, skip, k, q, [&](std::uint64_t gap, std::uint64_t rest) {
    bytes += VarintBytes(gap) + VarintBytes(rest);
    ++escapes;
  });
  return escapes == 0 ? 0 : 1 + VarintBytes(escapes) + bytes;
}

// The bits of `x` as Rice codes with parameter k whose quotients of q or more are escaped: their
// unary parts (at most q zero bits), a 1 and k low bits each, and the escape list's bytes times
// 8; SIZE_MAX when no code is escaped.
std::size_t EscapedRiceBits(const std::uint64_t* x, std::size_t count, std::size_t skip, unsigned k,
                            unsigned q) {
  const std::size_t list = EscapeListBytes(x, count, skip, k, q);
  if (list == 0) return SIZE_MAX;
  std::size_t bits = count * (k + 1) + 8 * list;
  for (std::size_t i = 0; i < count; ++i) {
    bits += static_cast<std::size_t>(std::min<std::uint64_t>(x[i] >> k, q));
  }
  return bits;
}

// The parameter that codes `x` (code i + skip of the block) in the fewest bits, at most `limit`,
// without escapes or, when a few codes' unary parts dominate, with them. The escape parameter and
// quotient are estimated from the codes' counts by bit width: a code of width w > k has a
// quotient of w - k bits (on average (3 * 2^(w - k) - 2) / 4, exact for w = k + 1), so each
// quotient of kEscapeQuotients, a power of two, escapes whole widths. Parameters from
// kEscapeKSpan below the one without escapes up to it are estimated; the best pair is then
// measured exactly against the codes without escapes.
RiceChoice ChooseRiceCodes(const std::uint64_t* x, std::size_t count, std::size_t skip,
                           std::size_t limit) {
  if (count == 0) return {0, 0};
  // Four tables, so that consecutive codes of one width do not wait on each other's increment.
  std::uint32_t counted[4][65] = {};
  for (std::size_t i = 0; i < count; ++i) ++counted[i % 4][std::bit_width(x[i])];
  double widths[65];
  unsigned widest = 0;
  for (unsigned w = 0; w <= 64; ++w) {
    widths[w] = counted[0][w] + counted[1][w] + counted[2][w] + counted[3][w];
    if (widths[w] != 0) widest = w;
  }
  // The mean quotient of a width d bits above k.
  static constexpr auto kMeanQuotient = [] {
    std::array<double, 65> mean{};
    double power = 1;  // 2^d
    for (std::size_t d = 0; d < mean.size(); ++d, power *= 2) mean[d] = (3 * power - 2) / 4;
    return mean;
  }();
  // The codes' quotients with parameter k, about.
  const auto quotients = [&](unsigned k) {
    double bits = 0;
    for (unsigned w = k + 1; w <= widest; ++w) bits += widths[w] * kMeanQuotient[w - k];
    return bits;
  };
  // Without escapes, about k + 1 bits a code and the quotients. The optimum of a geometric law
  // lies near log2 of the mean (a code of width w is 0.75 * 2^w on average); the exact search
  // starts from the best estimate around it, which also stands for it where no parameter fits
  // the limit.
  double sum = 0;
  for (unsigned w = 1; w <= widest; ++w) {
    sum += widths[w] * 0.75 * std::ldexp(1.0, static_cast<int>(w));
  }
  const auto mean = static_cast<std::uint64_t>(std::min(sum / static_cast<double>(count), 0x1p63));
  const unsigned near = std::min<unsigned>(
      kMaxRiceK, mean == 0 ? 0u : static_cast<unsigned>(std::bit_width(mean)) - 1);
  unsigned top = near;
  double fewest = HUGE_VAL;
  for (unsigned k = near > 3 ? near - 3 : 0; k <= std::min(near + 3, kMaxRiceK); ++k) {
    const double bits = static_cast<double>(count * (k + 1)) + quotients(k);
    if (bits < fewest) {
      fewest = bits;
      top = k;
    }
  }
  const RiceChoice plain = ChooseRice(x, count, limit, top);
  if (plain.bits != SIZE_MAX) top = plain.k;
  if (widest < top + std::bit_width(kEscapeMinQuotient)) return plain;
  double best_estimate = HUGE_VAL;
  unsigned best_k = 0, best_q = 0;
  const unsigned lowest = top > kEscapeKSpan ? top - kEscapeKSpan : 0;
  for (unsigned k = lowest; k <= top; ++k) {
    // From each width up: the codes, their quotients and their rests' varint bytes over q = 1
    // (a bound for the larger q, whose rests are smaller), summed from the widest down.
    double codes_from[66] = {}, quotients_from[66] = {}, rest_bytes_from[66] = {};
    for (unsigned w = widest; w > k; --w) {
      const double quotient = kMeanQuotient[w - k];
      codes_from[w] = codes_from[w + 1] + widths[w];
      quotients_from[w] = quotients_from[w + 1] + widths[w] * quotient;
      rest_bytes_from[w] =
          rest_bytes_from[w + 1] +
          widths[w] * static_cast<double>(VarintBytes(static_cast<std::uint64_t>(quotient)));
    }
    for (const unsigned q : kEscapeQuotients) {
      // Widths from `first` up are escaped: their quotients are at least 2^(w - 1 - k) >= q.
      const unsigned first = k + 1 + static_cast<unsigned>(std::countr_zero(q));
      if (first > widest) break;
      const double escapes = codes_from[first];
      if (escapes == 0) continue;
      const auto gap = static_cast<std::uint64_t>(static_cast<double>(count) / escapes);
      const double bits =
          static_cast<double>(count * (k + 1)) + quotients_from[k + 1] - quotients_from[first] +
          escapes * q +
          8 * (2 + rest_bytes_from[first] + escapes * static_cast<double>(VarintBytes(gap)));
      if (bits < best_estimate) {
        best_estimate = bits;
        best_k = k;
        best_q = q;
      }
    }
  }
  // The estimate is within a few percent: one an eighth above the codes without escapes is not
  // measured.
  if (best_q == 0 || (plain.bits != SIZE_MAX &&
                      best_estimate > static_cast<double>(plain.bits) * kEscapeEstimateSlack)) {
    return plain;
  }
  const std::size_t bits = EscapedRiceBits(x, count, skip, best_k, best_q);
  return bits < plain.bits && bits <= limit ? RiceChoice{bits, best_k, best_q} : plain;
}

}  // namespace

template <typename T>
std::size_t EncodeAlpRice(std::span<const T> values, unsigned exponent, unsigned factor,
                          Workspace& ws, std::span<std::uint8_t> out) noexcept {
  return EncodeAlpRiceOrdered(values, exponent, factor, ws, out, RiceOrder::kLanes);
}

template <typename T>
std::size_t EncodeAlpRiceOrdered(std::span<const T> values, unsigned exponent, unsigned factor,
                                 Workspace& ws, std::span<std::uint8_t> out,
                                 RiceOrder order) noexcept {
  const std::size_t n = values.size();
  simd::AlpEncodeStats stats;
  if (!CompactAlpInts(values, exponent, factor, ws, &stats)) return 0;
  const std::size_t exceptions = stats.exceptions;
  const std::size_t tail = TailBytes(exceptions, ws.divided_count, sizeof(T));
  // The decoder reads the quotients from a copy in ws.packed with 8 bytes of padding: streams
  // past that are refused (they are not smaller than raw anyway).
  // The codes' bound leaves out the header varints: a stream it admits may still not fit, which
  // the exact check before writing tells; one that fits is never refused.
  const std::size_t fixed = kAlpRiceHeaderBytes + 1 + tail;
  if (out.size() <= fixed) return 0;
  const std::size_t room_bits = std::min(out.size() - fixed, sizeof ws.packed - 8) * 8;
  // The streams (their placeholders are left out here: the Rice codes count from delta 1, and
  // from change 2).
  std::uint64_t changes[kBlockCapacity];
  const CompactStreams s = BuildCompactStreams(ws, n, stats.lo, changes);
  // Each stream's codes start at code `skip` of the block when it has placeholders (a full
  // block of deltas: one; of second differences: two), which the escape list's positions count.
  const std::size_t delta_skip = n == Workspace::kLanes ? 1 : 0;
  const RiceChoice plain = ChooseRiceCodes(s.offsets, n, 0, room_bits);
  RiceChoice zigzag, above, second;
  if (s.deltas != nullptr) {
    zigzag = ChooseRiceCodes(s.deltas + 1, n - 1, delta_skip, room_bits);
    above = ChooseRiceCodes(s.above + 1, n - 1, delta_skip, room_bits);
  }
  if (s.changes != nullptr) {
    second = ChooseRiceCodes(s.changes + 2, n - 2, 2, room_bits);
    // Code 1, a placeholder 0, costs one more code than the others count.
    if (second.bits != SIZE_MAX) second.bits += second.k + 1;
  }
  const RiceChoice* best = &plain;
  if (zigzag.bits < best->bits) best = &zigzag;
  if (above.bits < best->bits) best = &above;
  if (second.bits < best->bits) best = &second;
  if (best->bits == SIZE_MAX) return 0;
  const bool delta = best != &plain;
  const bool zigzagged = best == &zigzag || best == &second;
  const bool second_order = best == &second;
  const std::uint64_t* x = best == &plain    ? s.offsets
                           : best == &zigzag ? s.deltas + 1
                           : best == &second ? s.changes + 2
                                             : s.above + 1;
  const unsigned k = best->k;
  const unsigned escape = best->escape;
  // A full block of deltas gets a placeholder code 0 in front (k + 1 bits): 1024 codes, whose
  // low bits take FFOR's interleaved layout and unpack with its kernel. Second differences have
  // a second placeholder for the first delta, which is in the header.
  const bool placeholder = delta && n == Workspace::kLanes;
  const std::size_t count = delta && !placeholder ? n - 1 : n;
  const std::size_t low_bytes = count == 0 ? 0 : PackedBytes(count, k);
  // The codes in the order they are written: x[i - skip] is number i (numbers below skip are
  // placeholders 0), and in lane order code t is number 128 (t % 8) + t / 8.
  const std::size_t skip = second_order ? 2 : placeholder ? 1 : 0;
  const bool lanes = placeholder && order == RiceOrder::kLanes;
  static_assert(simd::kRiceLanes * simd::kRiceLaneRows == Workspace::kLanes);
  std::uint64_t codes[kBlockCapacity];
  for (std::size_t t = 0; t < count; ++t) {
    const std::size_t i =
        lanes ? simd::kRiceLaneRows * (t % simd::kRiceLanes) + t / simd::kRiceLanes : t;
    codes[t] = i < skip ? 0 : x[i - skip];
  }
  // An escaped code's unary part is exactly `escape` zero bits.
  const std::uint64_t unary_cap = escape == 0 ? ~std::uint64_t{0} : escape;
  std::size_t unary_bits = count;  // the 1 that ends each code
  for (std::size_t t = 0; t < count; ++t) {
    unary_bits += static_cast<std::size_t>(std::min(codes[t] >> k, unary_cap));
  }
  const std::size_t unary_bytes = (unary_bits + 7) / 8;
  if (unary_bytes > sizeof ws.packed - 8) return 0;
  const std::size_t escape_bytes = escape == 0 ? 0 : EscapeListBytes(codes, count, 0, k, escape);
  // The first integer and the base, as the decoder adds them back; the block's exact size is
  // checked before anything is written.
  const StreamVarints varints = VarintsOf(s, delta, zigzagged, second_order);
  const std::size_t header = kAlpRiceHeaderBytes + varints.Bytes() + 1 + escape_bytes;
  if (header + low_bytes + unary_bytes + tail > out.size()) return 0;
  std::uint8_t* p = out.data();
  std::uint8_t* q =
      WriteCompactHeader(p, FloatEncoding::kAlpRice, n, exponent, factor, delta, exceptions, ws);
  if (zigzagged) p[kAlpZstdFlagsOffset] |= kZigZagFlag;
  if (placeholder) p[kAlpZstdFlagsOffset] |= kPlaceholderFlag;
  if (second_order) p[kAlpZstdFlagsOffset] |= kSecondOrderFlag;
  if (escape != 0) p[kAlpZstdFlagsOffset] |= kEscapeFlag;
  if (lanes) p[kAlpZstdFlagsOffset] |= kLaneFlag;
  q = varints.Write(q);
  *q++ = static_cast<std::uint8_t>(k);
  if (escape != 0) {
    std::size_t escapes = 0;
    ForEachEscape(codes, count, 0, k, escape, [&](std::uint64_t, std::uint64_t) { ++escapes; });
    *q++ = static_cast<std::uint8_t>(escape);
    q = PutVarint(escapes, q);
    ForEachEscape(codes, count, 0, k, escape, [&](std::uint64_t gap, std::uint64_t rest) {
      q = PutVarint(rest, PutVarint(gap, q));
    });
  }
  // The quotients after the low bits, then the codes keep only their low bits to be packed.
  std::uint8_t* unary = q + low_bytes;
  std::memset(unary, 0, unary_bytes);
  std::size_t pos = 0;
  for (std::size_t t = 0; t < count; ++t) {
    pos += static_cast<std::size_t>(std::min(codes[t] >> k, unary_cap));  // the 0 bits
    unary[pos / 8] = static_cast<std::uint8_t>(unary[pos / 8] | (1u << (pos % 8)));
    ++pos;
  }
  if (count > 0) {
    const std::uint64_t low_mask = k == 0 ? 0 : ~std::uint64_t{0} >> (64 - k);
    for (std::size_t t = 0; t < count; ++t) codes[t] &= low_mask;
    PackInts(codes, count, 0, k, ws.packed, q);
  }
  q = unary;
  q += unary_bytes;
  // WriteExceptions reads the positions only; the integers were rewritten above.
  WriteExceptions(values, ws, exceptions, q);
  return static_cast<std::size_t>(q - p) + tail;
}

namespace {

// A kAlpRice block's escapes (kEscapeFlag), read and checked by ReadRiceEscapes: the codes'
// positions (ascending) and the rests of their quotients, in the workspace arrays that a Rice
// decode leaves free.
struct RiceEscapes {
  unsigned quotient = 0;  // Q; 0 without the flag
  std::size_t count = 0;
  const std::uint16_t* positions = nullptr;
  const std::uint64_t* rests = nullptr;
};

// The list after k: u8 Q (1 .. kMaxEscapeQuotient), varint E (1 .. codes), then E pairs of
// varints: the gap from the code after the previous escape (from code 0 for the first), and the
// code's quotient minus Q. Positions stay below `codes` (at most Workspace::kLanes), and each
// quotient keeps its code within 64 bits.
Status ReadRiceEscapes(const std::uint8_t** p, const std::uint8_t* end, std::size_t codes,
                       unsigned k, Workspace& ws, RiceEscapes* e) {
  constexpr const char* kName = "alp_rice";
  if (*p == end) return Corrupt(kName, "no escape quotient");
  e->quotient = *(*p)++;
  if (e->quotient == 0 || e->quotient > kMaxEscapeQuotient) {
    return Corrupt(kName,
                   "escape quotient " + N(e->quotient) + " (1.." + N(kMaxEscapeQuotient) + ")");
  }
  std::uint64_t escapes = 0;
  if (!GetVarint(p, end, &escapes) || escapes == 0 || escapes > codes) {
    return Corrupt(kName, "escape count missing or not in 1.." + N(codes));
  }
  e->count = static_cast<std::size_t>(escapes);
  std::uint16_t* positions = ws.lefts;
  auto* rests = reinterpret_cast<std::uint64_t*>(ws.ints2);
  static_assert(sizeof ws.lefts / sizeof *ws.lefts >= Workspace::kLanes &&
                sizeof ws.ints2 / sizeof *ws.ints2 >= Workspace::kLanes);
  const std::uint64_t largest = (~std::uint64_t{0} >> k) - e->quotient;  // k <= kMaxRiceK
  std::uint64_t next = 0;
  for (std::size_t i = 0; i < e->count; ++i) {
    std::uint64_t gap = 0, rest = 0;
    if (!GetVarint(p, end, &gap) || !GetVarint(p, end, &rest)) {
      return Corrupt(kName, "escape " + N(i) + " truncated or too long");
    }
    if (gap >= codes - next) {
      return Corrupt(kName, "escape " + N(i) + " past code " + N(codes - 1));
    }
    if (rest > largest) return Corrupt(kName, "escape " + N(i) + " past 64 bits");
    positions[i] = static_cast<std::uint16_t>(next + gap);
    rests[i] = rest;
    next += gap + 1;
  }
  e->positions = positions;
  e->rests = rests;
  return Status::OK();
}

// Each escaped code's unary part must be Q; the rest of its quotient goes above its low bits in
// x (rice_join adds the quotient shifted by k to them).
Status ApplyRiceEscapes(const RiceEscapes& e, const std::uint32_t* ends, unsigned k,
                        std::uint64_t* x) {
  for (std::size_t i = 0; i < e.count; ++i) {
    const std::size_t at = e.positions[i];
    const std::uint64_t unary = at == 0 ? ends[0] : std::uint64_t{ends[at]} - ends[at - 1] - 1;
    if (unary != e.quotient) {
      return Corrupt("alp_rice", "escaped code " + N(at) + " has quotient " + N(unary) + ", not " +
                                     N(e.quotient));
    }
    x[at] += e.rests[i] << k;
  }
  return Status::OK();
}

}  // namespace

template <typename T>
Status DecodeAlpRice(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept {
  constexpr const char* kName = "alp_rice";
  const std::size_t n = out.size();
  if (src.size() < kAlpRiceHeaderBytes) {
    return Corrupt(kName, N(src.size()) + " bytes < header " + N(kAlpRiceHeaderBytes));
  }
  CompactHeader h;
  INGOT_RETURN_IF_ERROR(ReadCompactHeader<T>(src, n, kName, &h,
                                             kDeltaFlag | kZigZagFlag | kPlaceholderFlag |
                                                 kSecondOrderFlag | kDividedFlag | kEscapeFlag |
                                                 kLaneFlag));
  const bool zigzagged = (h.flags & kZigZagFlag) != 0;
  if (zigzagged && !h.delta) return Corrupt(kName, "zigzag flag without delta flag");
  const bool placeholder = (h.flags & kPlaceholderFlag) != 0;
  if (placeholder && (!h.delta || n != Workspace::kLanes)) {
    return Corrupt(kName, "placeholder flag without a full block of deltas");
  }
  const bool lanes = (h.flags & kLaneFlag) != 0;
  if (lanes && !placeholder) return Corrupt(kName, "lane flag without placeholder flag");
  const bool second_order = (h.flags & kSecondOrderFlag) != 0;
  if (second_order && !(zigzagged && placeholder)) {
    return Corrupt(kName, "second-difference flag without zigzag and placeholder flags");
  }
  const std::uint8_t* p = src.data() + kAlpRiceHeaderBytes;
  const std::uint8_t* const end = src.data() + src.size();
  StreamVarints varints{h.delta, zigzagged, second_order};
  if (!varints.Read(&p, end)) return Corrupt(kName, "header varints truncated or too long");
  const std::uint64_t first = varints.first, first_delta = varints.first_delta, base = varints.base;
  if (p == end) return Corrupt(kName, "no Rice parameter");
  const unsigned k = *p++;
  if (k > kMaxRiceK) return Corrupt(kName, "Rice parameter " + N(k) + " > " + N(kMaxRiceK));
  const std::size_t tail = h.tail;
  const std::size_t count = h.delta && !placeholder ? n - 1 : n;
  RiceEscapes escapes;
  if ((h.flags & kEscapeFlag) != 0) {
    INGOT_RETURN_IF_ERROR(ReadRiceEscapes(&p, end, count, k, ws, &escapes));
  }
  const std::size_t low_bytes = count == 0 ? 0 : PackedBytes(count, k);
  if (static_cast<std::size_t>(end - p) < low_bytes + tail) {
    return Corrupt(kName, N(static_cast<std::size_t>(end - p)) + " bytes after the header < " +
                              N(low_bytes) + " of low bits and " + N(tail) + " of exceptions");
  }
  const std::size_t unary_bytes = static_cast<std::size_t>(end - p) - low_bytes - tail;
  if (unary_bytes > sizeof ws.packed - 8) {
    return Corrupt(kName, "quotient stream of " + N(unary_bytes) + " bytes");
  }
  // The quotients: a copy padded with zeros to whole words; each set bit ends a code. Every set
  // bit's position is gathered first (nothing waits on the previous code), then one pass turns
  // the distances between them into quotients and the codes into integers.
  auto* unary = reinterpret_cast<std::uint8_t*>(ws.packed);
  if (unary_bytes > 0) std::memcpy(unary, p + low_bytes, unary_bytes);
  std::memset(unary + unary_bytes, 0, 8);
  // 32-bit positions (the stream has fewer than 2^32 bits), in ws.ints: free while decoding, and
  // not 4 KiB apart from the integers in ws.bits, which would stall each load on the last store.
  auto* ends = reinterpret_cast<std::uint32_t*>(ws.ints);
  static_assert(sizeof(Workspace::ints) >=
                (Workspace::kLanes + simd::kSetBitSlack) * sizeof(std::uint32_t));
  const std::size_t found =
      simd::ActiveKernels().set_bit_positions(ws.packed, (unary_bytes + 7) / 8, count, ends);
  if (found < count) return Corrupt(kName, "code " + N(found) + " runs past the stream");
  // Nothing after the last code: no set bit after it, and no byte past the one it ends in.
  const std::size_t next = count == 0 ? 0 : std::size_t{ends[count - 1]} + 1;
  if (found > count || (next + 7) / 8 != unary_bytes) {
    return Corrupt(kName, "codes end in byte " + N((next + 7) / 8) + " of " + N(unary_bytes) +
                              (found > count ? ", bits after the last code" : ""));
  }
  // The low bits (FFOR's interleaved layout for 1024 codes, a plain stream otherwise) into the
  // integers, then the quotients join them. With the placeholder the kernel also sums the
  // deltas (code 0 ignored); 1023 deltas of an older block, or a short block's, are summed after.
  // Second differences: the kernel sums them into the deltas (code 1 is 0, so the second sum
  // starts from the first delta) and those into the integers.
  std::uint64_t* ints = ws.bits;
  std::uint64_t* x = h.delta && !placeholder ? ints + 1 : ints;
  const auto first_value = static_cast<std::uint64_t>(UnZigZag(first));
  std::uint64_t quotient_bits = 0;
  if (count > 0) {
    UnpackInts(p, count, 0, k, ws.packed, x);  // scratch: the quotients' copy, already read
    INGOT_RETURN_IF_ERROR(ApplyRiceEscapes(escapes, ends, k, x));
    const unsigned sums = second_order ? 2 : placeholder ? 1 : 0;
    const auto add = static_cast<std::uint64_t>(UnZigZag(base));
    const std::uint64_t first_sum =
        second_order ? static_cast<std::uint64_t>(UnZigZag(first_delta)) : first_value;
    if (lanes) {
      // Into ws.ints2 (the escapes' rests, already added), in block order.
      auto* in_order = reinterpret_cast<std::uint64_t*>(ws.ints2);
      quotient_bits = simd::ActiveKernels().rice_join_lanes(ends, k, add, zigzagged, sums,
                                                            first_sum, first_value, x, in_order);
      ints = in_order;
    } else {
      quotient_bits = simd::ActiveKernels().rice_join(ends, count, k, add, zigzagged, sums,
                                                      first_sum, first_value, x);
    }
  }
  if (h.delta && !placeholder) SumDeltas(ints, n, first_value);
  if (k > 0 && (quotient_bits >> (64 - k)) != 0) {
    return Corrupt(kName, "a code past 64 bits (quotient bits " + N(quotient_bits) + ")");
  }
  return FinishCompactDecode(ints, h, end - tail, out, kName);
}

template std::size_t EncodeAlpRice<double>(std::span<const double>, unsigned, unsigned, Workspace&,
                                           std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpRice<float>(std::span<const float>, unsigned, unsigned, Workspace&,
                                          std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpRiceOrdered<double>(std::span<const double>, unsigned, unsigned,
                                                  Workspace&, std::span<std::uint8_t>,
                                                  RiceOrder) noexcept;
template std::size_t EncodeAlpRiceOrdered<float>(std::span<const float>, unsigned, unsigned,
                                                 Workspace&, std::span<std::uint8_t>,
                                                 RiceOrder) noexcept;
template Status DecodeAlpRice<double>(std::span<const std::uint8_t>, std::span<double>,
                                      Workspace&) noexcept;
template Status DecodeAlpRice<float>(std::span<const std::uint8_t>, std::span<float>,
                                     Workspace&) noexcept;
template std::size_t EncodeAlpZstd<double>(std::span<const double>, unsigned, unsigned, Workspace&,
                                           std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpZstd<float>(std::span<const float>, unsigned, unsigned, Workspace&,
                                          std::span<std::uint8_t>) noexcept;
template Status DecodeAlpZstd<double>(std::span<const std::uint8_t>, std::span<double>,
                                      Workspace&) noexcept;
template Status DecodeAlpZstd<float>(std::span<const std::uint8_t>, std::span<float>,
                                     Workspace&) noexcept;
template std::size_t EncodeAlpRadix<double>(std::span<const double>, unsigned, unsigned,
                                            Workspace&, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpRadix<float>(std::span<const float>, unsigned, unsigned, Workspace&,
                                           std::span<std::uint8_t>) noexcept;
template Status DecodeAlpRadix<double>(std::span<const std::uint8_t>, std::span<double>,
                                       Workspace&) noexcept;
template Status DecodeAlpRadix<float>(std::span<const std::uint8_t>, std::span<float>,
                                      Workspace&) noexcept;

}  // namespace ingot::codec
