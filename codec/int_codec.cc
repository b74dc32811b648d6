// Integer codec for timestamps and integer series: FFOR of the values, of their deltas or of
// their delta-of-deltas, whichever packs narrowest. FFOR subtracts the block minimum, which does
// what zigzag would do for signed deltas and also removes a common offset.
//
// Fast path worth knowing: regular timestamps have every delta-of-delta equal, so their width is 0
// and a block of 1024 costs the 28-byte header only.
#include <algorithm>
#include <cstring>
#include <string>

#include "codec/bit_packing.h"
#include "codec/codec.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {
namespace {

struct Frame {
  std::uint64_t base;
  unsigned width;
};

// Min/max over v[from, n); wrapping differences keep any int64 input exact.
Frame FrameOf(const std::int64_t* v, std::size_t from, std::size_t n) {
  if (from >= n) return {0, 0};
  std::int64_t lo;
  std::int64_t hi;
  simd::ActiveKernels().min_max(v + from, n - from, &lo, &hi);
  return {static_cast<std::uint64_t>(lo),
          BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo))};
}

std::string N(std::size_t v) { return std::to_string(v); }

}  // namespace

std::size_t MaxEncodedIntBytes(std::size_t count) noexcept { return 16 + count * 8; }

std::size_t EncodeInts(std::span<const std::int64_t> values, Workspace& ws,
                       std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  const auto* v = reinterpret_cast<const std::uint64_t*>(values.data());
  std::uint64_t* __restrict deltas = reinterpret_cast<std::uint64_t*>(ws.ints);
  std::uint64_t* __restrict dods = reinterpret_cast<std::uint64_t*>(ws.ints2);
  for (std::size_t i = 1; i < n; ++i) deltas[i] = v[i] - v[i - 1];
  for (std::size_t i = 2; i < n; ++i) dods[i] = deltas[i] - deltas[i - 1];

  const Frame plain = FrameOf(values.data(), 0, n);
  const Frame delta = FrameOf(ws.ints, 1, n);
  const Frame dod = FrameOf(ws.ints2, 2, n);
  // Slots the decoder ignores are set to the base so they pack as zeros.
  deltas[0] = delta.base;
  dods[0] = dod.base;
  if (n > 1) dods[1] = dod.base;

  const std::size_t sizes[4] = {
      kBlockHeaderBytes + 8 * n,
      kForHeaderBytes + PackedBytes(n, plain.width),
      n >= 2 ? kDeltaHeaderBytes + PackedBytes(n, delta.width) : SIZE_MAX,
      n >= 3 ? kDeltaOfDeltaHeaderBytes + PackedBytes(n, dod.width) : SIZE_MAX,
  };
  const auto best = static_cast<IntEncoding>(std::min_element(sizes, sizes + 4) - sizes);
  std::uint8_t* p = out.data();
  p[0] = static_cast<std::uint8_t>(best);
  StoreLe<std::uint16_t>(p + 1, static_cast<std::uint16_t>(n));
  p += kBlockHeaderBytes;
  const std::uint64_t* packed_values = v;
  Frame frame = plain;
  switch (best) {
    case IntEncoding::kRaw:
      std::memcpy(p, values.data(), 8 * n);
      return sizes[0];
    case IntEncoding::kFor: break;
    case IntEncoding::kDelta:
      StoreLe<std::uint64_t>(p, v[0]);
      p += 8;
      packed_values = deltas;
      frame = delta;
      break;
    case IntEncoding::kDeltaOfDelta:
      StoreLe<std::uint64_t>(p, v[0]);
      StoreLe<std::uint64_t>(p + 8, deltas[1]);
      p += 16;
      packed_values = dods;
      frame = dod;
      break;
  }
  p[0] = static_cast<std::uint8_t>(frame.width);
  StoreLe<std::uint64_t>(p + 1, frame.base);
  p += 9;
  PackInts(packed_values, n, frame.base, frame.width, ws.packed, p);
  return sizes[static_cast<int>(best)];
}

namespace {
// v[i] = first + i * step (wrapping), without unpacking or a second pass. (A version with four
// interleaved running sums is twice as fast but GCC 12.2 miscompiles it at -O3: its SLP
// vectorizer drops the offsets of the upper pair. Keep this simple form.)
void FillArithmetic(std::uint64_t first, std::uint64_t step, std::size_t n,
                    std::uint64_t* __restrict v) {
  std::uint64_t acc = first;
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = acc;
    acc += step;
  }
}
}  // namespace

Status DecodeInts(std::span<const std::uint8_t> src, std::span<std::int64_t> out,
                  Workspace& ws) noexcept {
  return DecodeInts(src, out, ws, nullptr);
}

Status DecodeInts(std::span<const std::uint8_t> src, std::span<std::int64_t> out, Workspace& ws,
                  IntBlockShape* shape) noexcept {
  if (shape != nullptr) *shape = IntBlockShape{};
  const std::size_t n = out.size();
  if (src.size() < kBlockHeaderBytes) {
    return Status::Corruption("int block: " + N(src.size()) + " bytes < header " +
                              N(kBlockHeaderBytes));
  }
  const std::size_t count = LoadLe<std::uint16_t>(src.data() + 1);
  if (count == 0 || count > kBlockCapacity || count != n) {
    return Status::Corruption("int block: count " + N(count) + ", expected " + N(n) +
                              " (capacity " + N(kBlockCapacity) + ")");
  }
  const std::uint8_t encoding = src[0];
  std::size_t header;
  switch (static_cast<IntEncoding>(encoding)) {
    case IntEncoding::kRaw:
      if (src.size() != kBlockHeaderBytes + 8 * n) {
        return Status::Corruption("int block: raw size " + N(src.size()) + ", expected " +
                                  N(kBlockHeaderBytes + 8 * n));
      }
      std::memcpy(out.data(), src.data() + kBlockHeaderBytes, 8 * n);
      return Status::OK();
    case IntEncoding::kFor: header = kForHeaderBytes; break;
    case IntEncoding::kDelta: header = kDeltaHeaderBytes; break;
    case IntEncoding::kDeltaOfDelta: header = kDeltaOfDeltaHeaderBytes; break;
    default: return Status::Corruption("int block: unknown encoding " + N(encoding));
  }
  if ((encoding == static_cast<std::uint8_t>(IntEncoding::kDelta) && n < 2) ||
      (encoding == static_cast<std::uint8_t>(IntEncoding::kDeltaOfDelta) && n < 3)) {
    return Status::Corruption("int block: encoding " + N(encoding) + " with count " + N(n));
  }
  if (src.size() < header) {
    return Status::Corruption("int block: " + N(src.size()) + " bytes < header " + N(header));
  }
  const std::uint8_t* frame = src.data() + header - 9;
  const unsigned width = frame[0];
  const auto base = LoadLe<std::uint64_t>(frame + 1);
  if (width > 64) return Status::Corruption("int block: bit width " + N(width) + " > 64");
  if (src.size() != header + PackedBytes(n, width)) {
    return Status::Corruption("int block: size " + N(src.size()) + ", header implies " +
                              N(header + PackedBytes(n, width)));
  }
  auto* __restrict v = reinterpret_cast<std::uint64_t*>(out.data());
  if (width == 0 && encoding != static_cast<std::uint8_t>(IntEncoding::kFor)) {
    // Regular interval, the common case for timestamps: every delta is `base` (delta), or every
    // delta-of-delta is 0 (delta-of-delta; the encoder prefers delta on a tie). The values are
    // first + i * step, independent of each other: no unpacking, no carried sum.
    const std::uint64_t first = LoadLe<std::uint64_t>(src.data() + kBlockHeaderBytes);
    std::uint64_t step = base;
    if (encoding == static_cast<std::uint8_t>(IntEncoding::kDeltaOfDelta)) {
      step = base == 0 ? LoadLe<std::uint64_t>(src.data() + kBlockHeaderBytes + 8) : 0;
    }
    if (encoding == static_cast<std::uint8_t>(IntEncoding::kDelta) || base == 0) {
      FillArithmetic(first, step, n, v);
      if (shape != nullptr) {
        shape->arithmetic = true;
        shape->step = static_cast<std::int64_t>(step);
      }
      return Status::OK();
    }
  }
  UnpackInts(src.data() + header, n, base, width, ws.packed, v);
  // Wrapping sums (the prefix-sum kernel): exact for what the encoder wrote, defined for
  // anything else. Value 0's packed slot is a placeholder, and value 1's too with delta-of-delta:
  // the first value and the first step come from the header.
  const simd::Kernels& kernels = simd::ActiveKernels();
  const std::uint64_t first = LoadLe<std::uint64_t>(src.data() + kBlockHeaderBytes);
  if (encoding == static_cast<std::uint8_t>(IntEncoding::kDelta)) {
    kernels.prefix_sum(v, n, first);
  } else if (encoding == static_cast<std::uint8_t>(IntEncoding::kDeltaOfDelta)) {
    // The steps first (step 1 from the header, then each plus the next delta-of-delta), then the
    // values from the first.
    if (n >= 2) {
      kernels.prefix_sum(v + 1, n - 1, LoadLe<std::uint64_t>(src.data() + kBlockHeaderBytes + 8));
    }
    kernels.prefix_sum(v, n, first);
  }
  return Status::OK();
}

}  // namespace ingot::codec
