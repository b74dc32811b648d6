// Compress phase of the float codec: the per-encoding writers (each with its dry run) and the
// adaptive chooser behind EncodeDoubles/EncodeFloats.
#include <algorithm>
#include <bit>
#include <cstring>

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

template <typename T>
constexpr unsigned kGorillaLengthBits = sizeof(T) == 8 ? 6 : 5;

constexpr unsigned kGorillaLeadingBits = 5;
constexpr unsigned kGorillaMaxLeading = 31;

// Below this width, turning outliers into exceptions cannot save enough to pay for the look.
constexpr unsigned kOutlierMinWidth = 8;

// Lists the exceptions of ws.exception_bitmap in ws.positions, in order, and gives each
// exception's slot the previous integer so it costs no width and no delta. Returns the count.
std::size_t CollectExceptions(Workspace& ws, std::size_t n) {
  std::size_t first_good = 0;
  while ((ws.exception_bitmap[first_good / 64] >> (first_good % 64)) & 1) ++first_good;
  const std::int64_t fill = ws.ints[first_good];
  std::size_t k = 0;
  for (std::size_t w = 0; w < (n + 63) / 64; ++w) {
    for (std::uint64_t bits = ws.exception_bitmap[w]; bits != 0; bits &= bits - 1) {
      const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      ws.positions[k++] = static_cast<std::uint16_t>(i);
      ws.ints[i] = i == 0 ? fill : ws.ints[i - 1];
    }
  }
  return k;
}

// A few far-away integers widen every value's slot; storing them as exceptions instead can be
// cheaper. The window (anchored at the low or the high end of the range) is chosen from a strided
// sample of the block's bit widths, and only its exact cost is counted over every value, in a
// loop without branches: a full histogram of every value's width cost more than the whole ALP
// encode. Marks the values outside the window and returns true when that saves at least half a
// bit per value.
template <typename T>
bool PruneOutliers(Workspace& ws, std::size_t n, std::int64_t lo, std::int64_t hi,
                   unsigned width) {
  constexpr std::size_t kStride = 8;
  constexpr std::size_t kExceptionBits = 8 * (2 + sizeof(T));
  const auto ulo = static_cast<std::uint64_t>(lo);
  const auto uhi = static_cast<std::uint64_t>(hi);
  std::uint16_t from_low[65] = {};
  std::uint16_t from_high[65] = {};
  std::size_t sampled = 0;
  for (std::size_t i = 0; i < n; i += kStride) {
    const auto v = static_cast<std::uint64_t>(ws.ints[i]);
    ++from_low[BitWidth(v - ulo)];
    ++from_high[BitWidth(uhi - v)];
    ++sampled;
  }
  std::size_t best = sampled * width;
  unsigned best_width = width;
  bool best_low = true;
  std::size_t outside_low = 0;
  std::size_t outside_high = 0;
  for (unsigned w = width; w-- > 0;) {
    outside_low += from_low[w + 1];
    outside_high += from_high[w + 1];
    const std::size_t cost_low = sampled * w + outside_low * kExceptionBits;
    const std::size_t cost_high = sampled * w + outside_high * kExceptionBits;
    if (cost_low < best) {
      best = cost_low;
      best_width = w;
      best_low = true;
    }
    if (cost_high < best) {
      best = cost_high;
      best_width = w;
      best_low = false;
    }
  }
  if (best_width == width) return false;
  // The sample may have missed a few values just outside its window: count the chosen width and
  // the next one exactly over the whole block and keep the cheaper.
  std::uint64_t narrow[Workspace::kLanes / 64];
  std::uint64_t wider_bits[Workspace::kLanes / 64];
  const std::uint64_t anchor = best_low ? ulo : uhi;
  const std::uint64_t sign = best_low ? 0 : ~0ull;
  simd::ActiveKernels().outside_window(ws.ints, n, anchor, sign, best_width, narrow, wider_bits);
  const std::size_t words = (n + 63) / 64;
  std::size_t out = 0;
  std::size_t out_wider = 0;
  for (std::size_t w = 0; w < words; ++w) {
    out += static_cast<std::size_t>(std::popcount(narrow[w]));
    out_wider += static_cast<std::size_t>(std::popcount(wider_bits[w]));
  }
  const std::size_t current = n * width;
  const std::size_t cost = n * best_width + out * kExceptionBits;
  const std::size_t cost_wider = n * (best_width + 1) + out_wider * kExceptionBits;
  const bool wider = cost_wider < cost && best_width + 1 < width;
  if ((wider ? cost_wider : cost) + n / 2 >= current) return false;
  for (std::size_t w = 0; w < words; ++w) ws.exception_bitmap[w] |= wider ? wider_bits[w] : narrow[w];
  return true;
}

}  // namespace

template <typename T, bool kDryRun>
std::size_t EncodeAlp(std::span<const T> values, unsigned exponent, unsigned factor, AlpMode mode,
                      Workspace& ws, std::span<std::uint8_t> out, FloatEncoding* chosen) noexcept {
  const std::size_t n = values.size();
  const simd::Kernels& kernels = simd::ActiveKernels();
  // One pass: integers, exceptions and the range of the good integers.
  simd::AlpEncodeStats stats;
  if constexpr (sizeof(T) == 8) {
    stats = kernels.alp_encode_double(values.data(), n, exponent, factor, ws.ints,
                                      ws.exception_bitmap);
  } else {
    stats = kernels.alp_encode_float(values.data(), n, exponent, factor, ws.ints,
                                     ws.exception_bitmap);
  }
  if (stats.exceptions == n) return 0;  // nothing became an integer: ALP cannot help
  std::size_t exception_count = stats.exceptions;
  // Exception slots get copies of good integers, so the range stays that of the good ones.
  if (exception_count > 0) exception_count = CollectExceptions(ws, n);
  std::int64_t lo = stats.lo;
  std::int64_t hi = stats.hi;
  unsigned plain_width =
      BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo));
  if (plain_width >= kOutlierMinWidth &&
      PruneOutliers<T>(ws, n, lo, hi, plain_width)) {
    exception_count = CollectExceptions(ws, n);
    kernels.min_max(ws.ints, n, &lo, &hi);
    plain_width = BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo));
  }
  const std::size_t exception_bytes = exception_count * (2 + sizeof(T));
  const std::size_t plain_bytes = kAlpHeaderBytes + PackedBytes(n, plain_width) + exception_bytes;

  bool use_delta = false;
  unsigned delta_width = 0;
  std::int64_t delta_lo = 0;
  std::size_t delta_bytes = SIZE_MAX;
  if (mode != AlpMode::kPlain && n >= 2) {
    // Integers are below 2^50 in magnitude, so their differences cannot overflow.
    std::int64_t* deltas = ws.ints2;
    std::int64_t delta_hi;
    kernels.delta_min_max(ws.ints, n, deltas, &delta_lo, &delta_hi);
    deltas[0] = delta_lo;  // ignored by the decoder; packs as zero
    delta_width =
        BitWidth(static_cast<std::uint64_t>(delta_hi) - static_cast<std::uint64_t>(delta_lo));
    delta_bytes = kAlpDeltaHeaderBytes + PackedBytes(n, delta_width) + exception_bytes;
    use_delta = mode == AlpMode::kDelta || delta_bytes < plain_bytes;
  }
  const std::size_t bytes = use_delta ? delta_bytes : plain_bytes;
  if (chosen != nullptr) *chosen = use_delta ? FloatEncoding::kAlpDelta : FloatEncoding::kAlp;
  if constexpr (kDryRun) {
    return bytes;
  } else {
    if (bytes > out.size()) return 0;
    std::uint8_t* p = out.data();
    WriteBlockHeader(p, use_delta ? FloatEncoding::kAlpDelta : FloatEncoding::kAlp, n);
    p[3] = static_cast<std::uint8_t>(exponent);
    p[4] = static_cast<std::uint8_t>(factor);
    p[5] = static_cast<std::uint8_t>(use_delta ? delta_width : plain_width);
    StoreLe<std::uint16_t>(p + 6, static_cast<std::uint16_t>(exception_count));
    StoreLe<std::int64_t>(p + 8, use_delta ? delta_lo : lo);
    p += kAlpHeaderBytes;
    if (use_delta) {
      StoreLe<std::int64_t>(p, ws.ints[0]);
      p += 8;
      PackInts(reinterpret_cast<const std::uint64_t*>(ws.ints2), n,
               static_cast<std::uint64_t>(delta_lo), delta_width, ws.packed, p);
      p += PackedBytes(n, delta_width);
    } else {
      PackInts(reinterpret_cast<const std::uint64_t*>(ws.ints), n, static_cast<std::uint64_t>(lo),
               plain_width, ws.packed, p);
      p += PackedBytes(n, plain_width);
    }
    for (std::size_t k = 0; k < exception_count; ++k) {
      StoreLe<std::uint16_t>(p + 2 * k, ws.positions[k]);
    }
    p += 2 * exception_count;
    for (std::size_t k = 0; k < exception_count; ++k) {
      StoreLe<T>(p + sizeof(T) * k, values[ws.positions[k]]);
    }
    return bytes;
  }
}

template <typename T, bool kDryRun>
std::size_t EncodeAlpRd(std::span<const T> values, const AlpRdPlan& plan, Workspace& ws,
                        std::span<std::uint8_t> out) noexcept {
  using Bits = BitsOf<T>;
  const std::size_t n = values.size();
  const unsigned right_bits = plan.right_bits;
  const unsigned dictionary_size = plan.dictionary_size;
  const unsigned index_bits = dictionary_size <= 1 ? 0 : BitWidth(dictionary_size - 1);
  std::uint64_t* __restrict rights = ws.bits;
  std::uint64_t* __restrict indexes = reinterpret_cast<std::uint64_t*>(ws.ints);
  std::uint16_t* __restrict lefts = ws.lefts;
  const simd::Kernels& kernels = simd::ActiveKernels();
  std::size_t exception_count;
  if constexpr (sizeof(T) == 8) {
    exception_count = kernels.alp_rd_split_double(values.data(), n, right_bits, plan.dictionary,
                                                  dictionary_size, rights, indexes,
                                                  ws.exception_bitmap);
  } else {
    exception_count = kernels.alp_rd_split_float(values.data(), n, right_bits, plan.dictionary,
                                                 dictionary_size, rights, indexes,
                                                 ws.exception_bitmap);
  }
  if (!kDryRun && exception_count > 0) {
    std::size_t k = 0;
    for (std::size_t w = 0; w < (n + 63) / 64; ++w) {
      for (std::uint64_t bits = ws.exception_bitmap[w]; bits != 0; bits &= bits - 1) {
        const std::size_t i = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        ws.positions[k] = static_cast<std::uint16_t>(i);
        lefts[k] = static_cast<std::uint16_t>(std::bit_cast<Bits>(values[i]) >> right_bits);
        ++k;
      }
    }
  }
  const std::size_t bytes = kAlpRdHeaderBytes + 2 * dictionary_size + PackedBytes(n, right_bits) +
                            PackedBytes(n, index_bits) + 4 * exception_count;
  if constexpr (kDryRun) {
    return bytes;
  } else {
    if (bytes > out.size()) return 0;
    std::uint8_t* p = out.data();
    WriteBlockHeader(p, FloatEncoding::kAlpRd, n);
    p[3] = static_cast<std::uint8_t>(right_bits);
    p[4] = static_cast<std::uint8_t>(dictionary_size);
    StoreLe<std::uint16_t>(p + 5, static_cast<std::uint16_t>(exception_count));
    p += kAlpRdHeaderBytes;
    for (unsigned d = 0; d < dictionary_size; ++d) StoreLe<std::uint16_t>(p + 2 * d, plan.dictionary[d]);
    p += 2 * dictionary_size;
    PackInts(rights, n, 0, right_bits, ws.packed, p);
    p += PackedBytes(n, right_bits);
    PackInts(indexes, n, 0, index_bits, ws.packed, p);
    p += PackedBytes(n, index_bits);
    for (std::size_t k = 0; k < exception_count; ++k) {
      StoreLe<std::uint16_t>(p + 2 * k, ws.positions[k]);
    }
    p += 2 * exception_count;
    for (std::size_t k = 0; k < exception_count; ++k) StoreLe<std::uint16_t>(p + 2 * k, lefts[k]);
    return bytes;
  }
}

template <typename T, bool kDryRun>
std::size_t EncodeGorilla(std::span<const T> values, std::span<std::uint8_t> out) noexcept {
  using Bits = BitsOf<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  const std::size_t n = values.size();
  if (!kDryRun && out.size() < kBlockHeaderBytes) return 0;
  BitWriter<kDryRun> writer(kDryRun ? nullptr : out.data() + kBlockHeaderBytes,
                            kDryRun ? 0 : out.size() - kBlockHeaderBytes);
  Bits prev = std::bit_cast<Bits>(values[0]);
  writer.Put(prev, kBits);
  unsigned prev_leading = 255;
  unsigned prev_trailing = 0;
  unsigned prev_length = 0;
  for (std::size_t i = 1; i < n; ++i) {
    const Bits cur = std::bit_cast<Bits>(values[i]);
    const Bits x = cur ^ prev;
    prev = cur;
    if (x == 0) {
      writer.Put(0, 1);  // fast path: a repeated value costs one bit
      continue;
    }
    const unsigned leading =
        std::min<unsigned>(static_cast<unsigned>(std::countl_zero(x)), kGorillaMaxLeading);
    const unsigned trailing = static_cast<unsigned>(std::countr_zero(x));
    if (leading >= prev_leading && trailing >= prev_trailing) {
      writer.Put(0b01, 2);  // "10": reuse the previous window
      writer.Put(static_cast<std::uint64_t>(x >> prev_trailing), prev_length);
    } else {
      const unsigned length = kBits - leading - trailing;
      writer.Put(0b11, 2);
      writer.Put(leading, kGorillaLeadingBits);
      writer.Put(length - 1, kGorillaLengthBits<T>);
      writer.Put(static_cast<std::uint64_t>(x >> trailing), length);
      prev_leading = leading;
      prev_trailing = trailing;
      prev_length = length;
    }
    if constexpr (!kDryRun) {
      if (writer.overflow()) return 0;
    }
  }
  const std::size_t stream_bytes = writer.Finish();
  if (!kDryRun) {
    if (writer.overflow()) return 0;
    WriteBlockHeader(out.data(), FloatEncoding::kGorilla, n);
  }
  return kBlockHeaderBytes + stream_bytes;
}

template <typename T>
std::size_t EncodeConstant(std::span<const T> values, std::span<std::uint8_t> out) noexcept {
  WriteBlockHeader(out.data(), FloatEncoding::kConstant, values.size());
  StoreLe<T>(out.data() + kBlockHeaderBytes, values[0]);
  return kBlockHeaderBytes + sizeof(T);
}

template <typename T>
std::size_t EncodeRaw(std::span<const T> values, std::span<std::uint8_t> out) noexcept {
  WriteBlockHeader(out.data(), FloatEncoding::kRaw, values.size());
  std::memcpy(out.data() + kBlockHeaderBytes, values.data(), values.size_bytes());
  return kBlockHeaderBytes + values.size_bytes();
}

namespace {

constexpr std::size_t kGorillaWindow = 64;

// Exact encode of one candidate into `out`; 0 when it does not fit.
template <typename T>
std::size_t EncodeCandidate(FloatEncoding encoding, std::span<const T> values,
                            const AlpChoice& alp, const AlpRdPlan& rd, Workspace& ws,
                            std::span<std::uint8_t> out, FloatEncoding* written) {
  *written = encoding;
  switch (encoding) {
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta:
      return EncodeAlp<T, false>(values, alp.exponent, alp.factor, AlpMode::kSmaller, ws, out,
                                 written);
    case FloatEncoding::kAlpRd: return EncodeAlpRd<T, false>(values, rd, ws, out);
    case FloatEncoding::kGorilla: return EncodeGorilla<T, false>(values, out);
    case FloatEncoding::kConstant: return EncodeConstant(values, out);
    case FloatEncoding::kRaw: return EncodeRaw(values, out);
  }
  return 0;
}

// Full blocks of a series written with the remembered encoding alone before all candidates are
// compared again.
constexpr std::uint8_t kRecheckIntervalBlocks = 16;

bool IsSticky(FloatEncoding e) {
  return e == FloatEncoding::kAlp || e == FloatEncoding::kAlpDelta || e == FloatEncoding::kAlpRd ||
         e == FloatEncoding::kGorilla || e == FloatEncoding::kRaw;
}

// Every candidate, by estimate; the winner is written, and the runner-up too when the estimates are
// too close to call. Records the choice in the hint.
bool IsAlpFamily(FloatEncoding e) {
  return e == FloatEncoding::kAlp || e == FloatEncoding::kAlpDelta;
}

template <typename T>
std::size_t EstimateGorilla(std::span<const T> window_values, std::size_t n) {
  const std::size_t window = window_values.size();
  const std::size_t gorilla_window = EncodeGorilla<T, true>(window_values, {});
  return kBlockHeaderBytes + sizeof(T) +
         (gorilla_window - kBlockHeaderBytes - sizeof(T)) * n / window;
}

// Compares the candidates and leaves the smallest block in `out`. ALP is always written: one pass
// over the block gives its exact size (plain or delta, exceptions and outliers included), which no
// sample estimate matches. Gorilla and ALP-RD are judged by an estimate over a window of
// neighbours and written (into scratch, then copied when smaller) only when the estimate comes
// close to the best exact size so far, so the comparison costs at most one extra encode and
// usually none. `known`/`known_bytes`: a block already written into `out` with that encoding
// (known_bytes 0 when none); it is not encoded again.
template <typename T>
EncodeResult ChooseAndEncode(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                             std::span<std::uint8_t> out, FloatEncoding known,
                             std::size_t known_bytes) {
  const std::size_t n = values.size();
  const std::size_t raw_bytes = kBlockHeaderBytes + n * sizeof(T);
  const std::span<std::uint8_t> bounded = out.first(std::min(out.size(), raw_bytes));
  const AlpChoice alp = SearchAlpExponents(values, hint, ws);
  AlpRdPlan rd;
  FloatEncoding written = known;
  std::size_t bytes = known_bytes;
  // Writes `encoding` and keeps it when it is smaller than what `out` holds.
  auto consider = [&](FloatEncoding encoding) {
    const bool out_free = bytes == 0;
    const std::span<std::uint8_t> target =
        out_free ? bounded : std::span<std::uint8_t>(ws.bytes, std::min(raw_bytes, bytes));
    FloatEncoding candidate;
    const std::size_t candidate_bytes =
        EncodeCandidate(encoding, values, alp, rd, ws, target, &candidate);
    if (candidate_bytes == 0 || (!out_free && candidate_bytes >= bytes)) return;
    if (!out_free) std::memcpy(out.data(), ws.bytes, candidate_bytes);
    bytes = candidate_bytes;
    written = candidate;
  };
  if (!(known_bytes != 0 && IsAlpFamily(known))) consider(FloatEncoding::kAlp);
  const std::size_t window = std::min(n, kGorillaWindow);
  const auto window_values = values.subspan((n - window) / 2, window);
  auto close_to_best = [&](std::size_t estimate) {
    return bytes == 0 || estimate < bytes + bytes / 6;
  };
  if (known != FloatEncoding::kGorilla || known_bytes == 0) {
    if (close_to_best(EstimateGorilla(window_values, n))) consider(FloatEncoding::kGorilla);
  }
  // ALP-RD only pays when ALP cannot turn most values into narrow integers.
  if ((bytes == 0 || bytes * 2 > raw_bytes) &&
      (known != FloatEncoding::kAlpRd || known_bytes == 0)) {
    rd = AnalyzeAlpRd(values);
    const std::size_t fixed = kAlpRdHeaderBytes + 2 * rd.dictionary_size;
    const std::size_t rd_window = EncodeAlpRd<T, true>(window_values, rd, ws, {});
    if (close_to_best(fixed + (rd_window - fixed) * n / window)) consider(FloatEncoding::kAlpRd);
  }
  if (bytes == 0 || bytes >= raw_bytes || written == FloatEncoding::kRaw) {
    bytes = EncodeRaw(values, out);
    written = FloatEncoding::kRaw;
  }
  if (written == FloatEncoding::kAlpRd) hint.rd_right_bits = rd.right_bits;
  hint.last_bytes = static_cast<std::uint16_t>(n == kBlockCapacity ? bytes : 0);
  hint.blocks_since_choice = 0;
  return {bytes, written};
}

// The fast path for a series whose previous block chose `encoding`: that encoder alone, no
// estimates. Returns 0 when the block does not fit.
template <typename T>
std::size_t EncodeRemembered(FloatEncoding encoding, std::span<const T> values, SeriesHint& hint,
                             Workspace& ws, std::span<std::uint8_t> out, FloatEncoding* written) {
  *written = encoding;
  switch (encoding) {
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws);
      return EncodeAlp<T, false>(values, alp.exponent, alp.factor, AlpMode::kSmaller, ws, out,
                                 written);
    }
    case FloatEncoding::kAlpRd:
      return EncodeAlpRd<T, false>(values, AnalyzeAlpRdForSplit(values, hint.rd_right_bits), ws,
                                   out);
    case FloatEncoding::kGorilla: return EncodeGorilla<T, false>(values, out);
    case FloatEncoding::kRaw: return EncodeRaw(values, out);
    case FloatEncoding::kConstant: break;
  }
  return 0;
}

template <typename T>
EncodeResult EncodeAdaptive(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                            std::span<std::uint8_t> out) {
  const std::size_t n = values.size();
  const std::size_t raw_bytes = kBlockHeaderBytes + n * sizeof(T);
  auto finish = [&](EncodeResult r) {
    hint.last_encoding = static_cast<std::uint8_t>(r.encoding);
    return r;
  };
  if (IsConstantBlock(values)) {
    return finish({EncodeConstant(values, out), FloatEncoding::kConstant});
  }
  const auto last = static_cast<FloatEncoding>(hint.last_encoding);
  const bool rd_ok = last != FloatEncoding::kAlpRd ||
                     (hint.rd_right_bits >= sizeof(T) * 8 - kAlpRdMaxLeftBits &&
                      hint.rd_right_bits < sizeof(T) * 8);
  if (n == kBlockCapacity && hint.last_bytes != 0 && IsSticky(last) && rd_ok &&
      hint.blocks_since_choice < kRecheckIntervalBlocks) {
    // The common case: the series keeps its shape, and its last encoding is written directly.
    const std::span<std::uint8_t> bounded = out.first(std::min(out.size(), raw_bytes));
    FloatEncoding written;
    const std::size_t bytes = EncodeRemembered(last, values, hint, ws, bounded, &written);
    const std::size_t limit = hint.last_bytes + hint.last_bytes / 2;
    // Cheap checks that the other family did not become smaller: ALP on its 32-value sample with
    // the series' exponents, Gorilla on a 64-value window.
    bool other_better = false;
    if (bytes != 0 && bytes <= limit) {
      if (IsAlpFamily(last)) {
        const std::size_t window = std::min(n, kGorillaWindow);
        other_better =
            EstimateGorilla(values.subspan((n - window) / 2, window), n) < bytes - bytes / 8;
      } else {
        other_better = EstimateAlpWithHint(values, hint) < bytes - bytes / 8;
      }
    }
    if (bytes != 0 && bytes <= limit && !other_better) {
      hint.last_bytes = static_cast<std::uint16_t>(bytes);
      ++hint.blocks_since_choice;
      return finish({bytes, written});
    }
    if (bytes != 0) return finish(ChooseAndEncode(values, hint, ws, out, written, bytes));
  }
  return finish(ChooseAndEncode(values, hint, ws, out, FloatEncoding::kRaw, 0));
}

template <typename T>
EncodeResult EncodeForced(FloatEncoding encoding, std::span<const T> values, SeriesHint& hint,
                          Workspace& ws, std::span<std::uint8_t> out) {
  const std::size_t raw_bytes = kBlockHeaderBytes + values.size() * sizeof(T);
  const std::span<std::uint8_t> bounded = out.first(std::min(out.size(), raw_bytes));
  std::size_t bytes = 0;
  FloatEncoding written = encoding;
  switch (encoding) {
    case FloatEncoding::kConstant:
      if (IsConstantBlock(values)) bytes = EncodeConstant(values, out);
      break;
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws);
      bytes = EncodeAlp<T, false>(values, alp.exponent, alp.factor,
                                  encoding == FloatEncoding::kAlp ? AlpMode::kPlain : AlpMode::kDelta,
                                  ws, bounded, &written);
      break;
    }
    case FloatEncoding::kAlpRd:
      bytes = EncodeAlpRd<T, false>(values, AnalyzeAlpRd(values), ws, bounded);
      break;
    case FloatEncoding::kGorilla: bytes = EncodeGorilla<T, false>(values, bounded); break;
    case FloatEncoding::kRaw: break;
  }
  if (bytes == 0) {
    bytes = EncodeRaw(values, out);
    written = FloatEncoding::kRaw;
  }
  return {bytes, written};
}

}  // namespace

const char* FloatEncodingName(FloatEncoding e) noexcept {
  switch (e) {
    case FloatEncoding::kRaw: return "raw";
    case FloatEncoding::kConstant: return "constant";
    case FloatEncoding::kAlp: return "alp";
    case FloatEncoding::kAlpDelta: return "alp_delta";
    case FloatEncoding::kAlpRd: return "alp_rd";
    case FloatEncoding::kGorilla: return "gorilla";
  }
  return "unknown";
}

std::size_t MaxEncodedFloatBytes(std::size_t count, std::size_t value_bytes) noexcept {
  return 16 + count * value_bytes;
}

EncodeResult EncodeDoubles(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                           std::span<std::uint8_t> out) noexcept {
  return EncodeAdaptive(values, hint, ws, out);
}

EncodeResult EncodeFloats(std::span<const float> values, SeriesHint& hint, Workspace& ws,
                          std::span<std::uint8_t> out) noexcept {
  return EncodeAdaptive(values, hint, ws, out);
}

EncodeResult EncodeDoublesAs(FloatEncoding encoding, std::span<const double> values,
                             SeriesHint& hint, Workspace& ws,
                             std::span<std::uint8_t> out) noexcept {
  return EncodeForced(encoding, values, hint, ws, out);
}

EncodeResult EncodeFloatsAs(FloatEncoding encoding, std::span<const float> values,
                            SeriesHint& hint, Workspace& ws,
                            std::span<std::uint8_t> out) noexcept {
  return EncodeForced(encoding, values, hint, ws, out);
}

#define INGOT_INSTANTIATE_ENCODERS(T, DRY)                                                      \
  template std::size_t EncodeAlp<T, DRY>(std::span<const T>, unsigned, unsigned, AlpMode,       \
                                         Workspace&, std::span<std::uint8_t>,                   \
                                         FloatEncoding*) noexcept;                              \
  template std::size_t EncodeAlpRd<T, DRY>(std::span<const T>, const AlpRdPlan&, Workspace&,    \
                                           std::span<std::uint8_t>) noexcept;                   \
  template std::size_t EncodeGorilla<T, DRY>(std::span<const T>, std::span<std::uint8_t>) noexcept;
INGOT_INSTANTIATE_ENCODERS(double, true)
INGOT_INSTANTIATE_ENCODERS(double, false)
INGOT_INSTANTIATE_ENCODERS(float, true)
INGOT_INSTANTIATE_ENCODERS(float, false)
#undef INGOT_INSTANTIATE_ENCODERS
template std::size_t EncodeConstant<double>(std::span<const double>, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeConstant<float>(std::span<const float>, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeRaw<double>(std::span<const double>, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeRaw<float>(std::span<const float>, std::span<std::uint8_t>) noexcept;

}  // namespace ingot::codec
