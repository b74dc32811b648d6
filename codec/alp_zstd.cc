// ALP integers through an entropy coder (FloatEncoding::kAlpZstd).
//
// ALP's bit packing gives every value of a block the width of the widest one; real data (prices,
// temperatures, readings with a sentinel) has a skewed distribution of integers and deltas that
// only an entropy coder exploits. This encoding writes the block's ALP integers as LEB128 varints
// (zigzagged deltas, or offsets from the minimum: whichever stream is shorter) and compresses
// them with zstd. It is slower to encode than ALP (a zstd call per block), so the storage layer
// uses it when it rewrites sealed chunks in the background (EncodeDoublesCompact), not on the
// ingest path; decoding is zstd's decoder plus a varint pass.
//
// Layout (little-endian), after the 3-byte block header:
//   u8 exponent, u8 factor, u8 flags (bit 0: delta; other bits 0), u16 exception count E,
//   i64 base (delta: the first integer; offsets: the minimum), u32 frame bytes Z,
//   Z bytes: one zstd frame whose content is `count` varints,
//   E x u16 exception positions (ascending), E x sizeof(T) exception values.
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "codec/alp_constants.h"
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

namespace {

constexpr std::uint8_t kDeltaFlag = 1;
// zstd level for background rewrites: level 3 is zstd's default; higher levels gained under 2%
// on the real data sets at several times the cost.
constexpr int kZstdLevel = 3;
// Varints of ALP integers (|i| < 2^53, deltas below 2^54 once zigzagged) take at most 8 bytes.
constexpr std::size_t kMaxVarintBytes = 8;
static_assert(sizeof(Workspace::packed) >= kMaxVarintBytes * Workspace::kLanes);

ZstdContexts& Contexts(Workspace& ws) {
  if (ws.zstd == nullptr) ws.zstd = new ZstdContexts();
  return *ws.zstd;
}

std::uint64_t ZigZag(std::int64_t v) {
  return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t UnZigZag(std::uint64_t u) {
  return static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
}

std::size_t VarintBytes(std::uint64_t u) {
  return u == 0 ? 1 : (static_cast<std::size_t>(std::bit_width(u)) + 6) / 7;
}

std::uint8_t* PutVarint(std::uint64_t u, std::uint8_t* p) {
  while (u >= 0x80) {
    *p++ = static_cast<std::uint8_t>(u | 0x80);
    u >>= 7;
  }
  *p++ = static_cast<std::uint8_t>(u);
  return p;
}

std::string N(std::size_t v) { return std::to_string(v); }

Status Corrupt(const std::string& what) { return Status::Corruption("block (alp_zstd): " + what); }

}  // namespace

template <typename T>
std::size_t EncodeAlpZstd(std::span<const T> values, unsigned exponent, unsigned factor,
                          Workspace& ws, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  const simd::Kernels& kernels = simd::ActiveKernels();
  simd::AlpEncodeStats stats;
  if constexpr (sizeof(T) == 8) {
    stats =
        kernels.alp_encode_double(values.data(), n, exponent, factor, ws.ints, ws.exception_bitmap);
  } else {
    stats =
        kernels.alp_encode_float(values.data(), n, exponent, factor, ws.ints, ws.exception_bitmap);
  }
  if (stats.exceptions == n) return 0;
  // Exceptions: positions in order; their slots repeat the previous integer (a zero delta).
  std::size_t exceptions = 0;
  if (stats.exceptions > 0) {
    std::size_t first_good = 0;
    while ((ws.exception_bitmap[first_good / 64] >> (first_good % 64)) & 1) ++first_good;
    for (std::size_t w = 0; w < (n + 63) / 64; ++w) {
      for (std::uint64_t bits = ws.exception_bitmap[w]; bits != 0; bits &= bits - 1) {
        const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        ws.positions[exceptions++] = static_cast<std::uint16_t>(i);
        ws.ints[i] = i == 0 ? ws.ints[first_good] : ws.ints[i - 1];
      }
    }
  }
  // The shorter of the two varint streams.
  std::size_t delta_len = 0, offset_len = 0;
  for (std::size_t i = 1; i < n; ++i) delta_len += VarintBytes(ZigZag(ws.ints[i] - ws.ints[i - 1]));
  delta_len += 1;  // the first delta is 0
  for (std::size_t i = 0; i < n; ++i) {
    offset_len += VarintBytes(static_cast<std::uint64_t>(ws.ints[i] - stats.lo));
  }
  // stats.lo is the minimum of the good integers, and exception slots copy good ones.
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
  const std::size_t tail = exceptions * (2 + sizeof(T));
  if (out.size() < kAlpZstdHeaderBytes + tail + 1) return 0;
  std::uint8_t* p = out.data();
  const std::size_t room = out.size() - kAlpZstdHeaderBytes - tail;
  ZstdContexts& z = Contexts(ws);
  if (z.cctx == nullptr) z.cctx = ZSTD_createCCtx();
  if (z.cctx == nullptr) return 0;
  const std::size_t frame =
      ZSTD_compressCCtx(z.cctx, p + kAlpZstdHeaderBytes, room, stream, stream_len, kZstdLevel);
  if (ZSTD_isError(frame)) return 0;  // does not fit: not smaller than what the caller has
  WriteBlockHeader(p, FloatEncoding::kAlpZstd, n);
  p[kAlpZstdExponentOffset] = static_cast<std::uint8_t>(exponent);
  p[kAlpZstdFactorOffset] = static_cast<std::uint8_t>(factor);
  p[kAlpZstdFlagsOffset] = delta ? kDeltaFlag : 0;
  StoreLe<std::uint16_t>(p + kAlpZstdExceptionCountOffset, static_cast<std::uint16_t>(exceptions));
  StoreLe<std::int64_t>(p + kAlpZstdBaseOffset, delta ? ws.ints[0] : stats.lo);
  StoreLe<std::uint32_t>(p + kAlpZstdFrameBytesOffset, static_cast<std::uint32_t>(frame));
  std::uint8_t* q = p + kAlpZstdHeaderBytes + frame;
  for (std::size_t k = 0; k < exceptions; ++k) StoreLe<std::uint16_t>(q + 2 * k, ws.positions[k]);
  q += 2 * exceptions;
  for (std::size_t k = 0; k < exceptions; ++k) {
    StoreLe<T>(q + sizeof(T) * k, values[ws.positions[k]]);
  }
  return kAlpZstdHeaderBytes + frame + tail;
}

template <typename T>
Status DecodeAlpZstd(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept {
  const std::size_t n = out.size();
  if (src.size() < kAlpZstdHeaderBytes) {
    return Corrupt(N(src.size()) + " bytes < header " + N(kAlpZstdHeaderBytes));
  }
  const unsigned exponent = src[kAlpZstdExponentOffset];
  const unsigned factor = src[kAlpZstdFactorOffset];
  const unsigned flags = src[kAlpZstdFlagsOffset];
  const std::size_t exceptions = LoadLe<std::uint16_t>(src.data() + kAlpZstdExceptionCountOffset);
  const auto base = LoadLe<std::uint64_t>(src.data() + kAlpZstdBaseOffset);
  const std::size_t frame = LoadLe<std::uint32_t>(src.data() + kAlpZstdFrameBytesOffset);
  if (exponent > AlpConstants<T>::kMaxExponent || factor > exponent) {
    return Corrupt("exponent " + N(exponent) + " factor " + N(factor) + " out of range");
  }
  if ((flags & ~std::uint32_t{kDeltaFlag}) != 0) return Corrupt("unknown flags " + N(flags));
  if (exceptions > n) return Corrupt("exception count " + N(exceptions) + " > count " + N(n));
  const std::size_t expected = kAlpZstdHeaderBytes + frame + exceptions * (2 + sizeof(T));
  if (frame > src.size() || expected != src.size()) {
    return Corrupt("block of " + N(src.size()) + " bytes, layout needs " + N(expected));
  }
  const std::uint8_t* frame_bytes = src.data() + kAlpZstdHeaderBytes;
  auto* stream = reinterpret_cast<std::uint8_t*>(ws.packed);
  const std::size_t capacity = kMaxVarintBytes * n;
  const unsigned long long content = ZSTD_getFrameContentSize(frame_bytes, frame);
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN ||
      content > capacity || content < n) {
    return Corrupt("zstd frame content size invalid for " + N(n) + " values");
  }
  ZstdContexts& z = Contexts(ws);
  if (z.dctx == nullptr) z.dctx = ZSTD_createDCtx();
  if (z.dctx == nullptr) return Status::IOError("alp_zstd: cannot allocate a zstd context");
  const std::size_t got = ZSTD_decompressDCtx(z.dctx, stream, capacity, frame_bytes, frame);
  if (ZSTD_isError(got) || got != content) {
    return Corrupt(std::string("zstd frame: ") +
                   (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short content"));
  }
  // Varints: exactly n of them, each at most kMaxVarintBytes long, filling the content.
  std::uint64_t* ints = ws.bits;
  const std::uint8_t* s = stream;
  const std::uint8_t* const end = stream + got;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t u = 0;
    unsigned shift = 0;
    for (;;) {
      if (s == end || shift >= 7 * kMaxVarintBytes) [[unlikely]] {
        return Corrupt("varint " + N(i) + " truncated or too long");
      }
      const std::uint8_t b = *s++;
      u |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) == 0) break;
    }
    ints[i] = u;
  }
  if (s != end) return Corrupt(N(static_cast<std::size_t>(end - s)) + " bytes after the varints");
  // Wrapping arithmetic: corrupt numbers give wrong values, never undefined behaviour.
  if (flags & kDeltaFlag) {
    std::uint64_t acc = base;
    for (std::size_t i = 0; i < n; ++i) {
      acc += static_cast<std::uint64_t>(UnZigZag(ints[i]));
      ints[i] = acc;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) ints[i] += base;
  }
  const simd::Kernels& kernels = simd::ActiveKernels();
  const auto* signed_ints = reinterpret_cast<const std::int64_t*>(ints);
  if constexpr (sizeof(T) == 8) {
    kernels.alp_decode_double(signed_ints, n, exponent, factor, out.data());
  } else {
    kernels.alp_decode_float(signed_ints, n, exponent, factor, out.data());
  }
  const std::uint8_t* positions = src.data() + kAlpZstdHeaderBytes + frame;
  const std::uint8_t* exception_values = positions + 2 * exceptions;
  T* __restrict dst = out.data();
  for (std::size_t k = 0; k < exceptions; ++k) {
    const std::size_t pos = LoadLe<std::uint16_t>(positions + 2 * k);
    if (pos >= n) [[unlikely]] {
      return Corrupt("exception " + N(k) + " at position " + N(pos) + " >= count " + N(n));
    }
    std::memcpy(dst + pos, exception_values + sizeof(T) * k, sizeof(T));
  }
  return Status::OK();
}

template std::size_t EncodeAlpZstd<double>(std::span<const double>, unsigned, unsigned, Workspace&,
                                           std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpZstd<float>(std::span<const float>, unsigned, unsigned, Workspace&,
                                          std::span<std::uint8_t>) noexcept;
template Status DecodeAlpZstd<double>(std::span<const std::uint8_t>, std::span<double>,
                                      Workspace&) noexcept;
template Status DecodeAlpZstd<float>(std::span<const std::uint8_t>, std::span<float>,
                                     Workspace&) noexcept;

}  // namespace ingot::codec
