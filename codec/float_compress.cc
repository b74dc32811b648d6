// Compress phase of the float codec: the per-encoding writers, each with its dry run. The
// adaptive chooser that picks among them per block is in float_chooser.cc.
#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "codec/bit_packing.h"
#include "codec/float_encoders_internal.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {
namespace {

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
bool PruneOutliers(Workspace& ws, std::size_t n, std::int64_t lo, std::int64_t hi, unsigned width) {
  constexpr std::size_t kStride = 8;
  constexpr std::size_t kExceptionBits = 8 * (2 + sizeof(T));
  const auto ulo = static_cast<std::uint64_t>(lo);
  const auto uhi = static_cast<std::uint64_t>(hi);
  const std::size_t sampled = (n + kStride - 1) / kStride;
  // Each sampled value's width above lo and below hi (64 minus the leading zeros kept here); a
  // window of width w anchored at lo leaves out the samples wider than w above lo (likewise at
  // hi). Narrower windows leave out at least as many, so once an end's exceptions alone cost the
  // best so far, no narrower window anchored there can win: the search usually stops a few widths
  // below the full one.
  alignas(64) std::uint8_t low_zeros[Workspace::kLanes / kStride + 64];
  alignas(64) std::uint8_t high_zeros[Workspace::kLanes / kStride + 64];
  const simd::Kernels& kernels = simd::ActiveKernels();
  kernels.sample_leading_zeros(ws.ints, n, kStride, ulo, uhi, low_zeros, high_zeros);
  std::size_t best = sampled * width;
  unsigned best_width = width;
  bool best_low = true;
  bool low_open = true;
  bool high_open = true;
  // The window of width w anchored at one end: taken when cheaper than the best so far; the end
  // closes once its exceptions alone cost that much.
  const auto judge = [&](const std::uint8_t* zeros, unsigned w, bool at_low, bool* open) {
    const std::size_t outside = kernels.count_below(zeros, sampled, 64 - w);
    const std::size_t cost = sampled * w + outside * kExceptionBits;
    if (cost < best) {
      best = cost;
      best_width = w;
      best_low = at_low;
    }
    *open = outside * kExceptionBits < best;
  };
  for (unsigned w = width; w-- > 0 && (low_open || high_open);) {
    if (low_open) judge(low_zeros, w, true, &low_open);
    if (high_open) judge(high_zeros, w, false, &high_open);
  }
  if (best_width == width) return false;
  // The sample may have missed a few values just outside its window: count the chosen width and
  // the next one exactly over the whole block and keep the cheaper.
  std::uint64_t narrow[Workspace::kLanes / 64];
  std::uint64_t wider_bits[Workspace::kLanes / 64];
  const std::uint64_t anchor = best_low ? ulo : uhi;
  const std::uint64_t sign = best_low ? 0 : ~0ull;
  // The counts come from the kernel: the vector levels have a popcount instruction, the baseline
  // build of this file does not.
  const simd::WindowCounts outside =
      kernels.outside_window(ws.ints, n, anchor, sign, best_width, narrow, wider_bits);
  const std::size_t words = (n + 63) / 64;
  const std::size_t out = outside.narrow;
  const std::size_t out_wider = outside.wider;
  const std::size_t current = n * width;
  const std::size_t cost = n * best_width + out * kExceptionBits;
  const std::size_t cost_wider = n * (best_width + 1) + out_wider * kExceptionBits;
  const bool wider = cost_wider < cost && best_width + 1 < width;
  if ((wider ? cost_wider : cost) + n / 2 >= current) return false;
  for (std::size_t w = 0; w < words; ++w) {
    ws.exception_bitmap[w] |= wider ? wider_bits[w] : narrow[w];
  }
  return true;
}

// The width of every 16th delta's range, which is within the whole range of the deltas: when it
// is already plain_width bits, delta coding could not be smaller than plain packing (its header
// is larger) and the pass over all deltas is skipped. Noisy series (prices, readings) skip it;
// smooth ones, whose deltas are narrow, take it.
unsigned SampledDeltaWidth(const std::int64_t* ints, std::size_t n) {
  constexpr std::size_t kDeltaStride = 16;
  std::int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (std::size_t i = 1; i < n; i += kDeltaStride) {
    const std::int64_t d = ints[i] - ints[i - 1];  // below 2^51 in magnitude
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  return BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo));
}

// A delta far below or above all the others (a counter's reset, a jump) sets every slot's width;
// stored apart (kAlpDeltaPatchFlag) it costs kAlpDeltaPatchBytes. Looked for only when the
// deltas are at least kDeltaPatchMinWidth bits wide and kDeltaPatchMinGain wider than the sampled
// ones (the sign of a lone far delta): the look is a scalar pass over the block, and noisy series,
// whose sampled deltas are about as wide as all of them, would pay it on every block for nothing.
constexpr unsigned kDeltaPatchMinWidth = 12;
constexpr unsigned kDeltaPatchMinGain = 4;

struct DeltaPatch {
  std::size_t pos = 0;  // 0: none
  std::int64_t lo = 0;
  unsigned width = 0;
};

// The patch of deltas[1, n) (range [lo, hi], `width` bits) that narrows the others most, if it
// saves bytes: the lowest delta when it is the only one that low, or the highest likewise.
DeltaPatch FindDeltaPatch(const std::int64_t* deltas, std::size_t n, std::int64_t lo,
                          std::int64_t hi, unsigned width) {
  DeltaPatch none;
  if (n < 3) return none;
  // The runners-up and how many deltas sit at each end: one branch-free pass.
  std::int64_t lo2 = hi, hi2 = lo;
  std::size_t at_lo = 0, at_hi = 0;
  for (std::size_t i = 1; i < n; ++i) {
    const std::int64_t d = deltas[i];
    lo2 = d > lo && d < lo2 ? d : lo2;
    hi2 = d < hi && d > hi2 ? d : hi2;
    at_lo += d == lo;
    at_hi += d == hi;
  }
  const unsigned without_lo =
      BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo2));
  const unsigned without_hi =
      BitWidth(static_cast<std::uint64_t>(hi2) - static_cast<std::uint64_t>(lo));
  const bool drop_lo = at_lo == 1 && (at_hi != 1 || without_lo <= without_hi);
  if (!drop_lo && at_hi != 1) return none;
  DeltaPatch patch;
  patch.lo = drop_lo ? lo2 : lo;
  patch.width = drop_lo ? without_lo : without_hi;
  if (PackedBytes(n, patch.width) + kAlpDeltaPatchBytes >= PackedBytes(n, width)) return none;
  const std::int64_t target = drop_lo ? lo : hi;
  for (std::size_t i = 1; i < n; ++i) {
    if (deltas[i] == target) {
      patch.pos = i;
      break;
    }
  }
  return patch;
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
    stats =
        kernels.alp_encode_double(values.data(), n, exponent, factor, ws.ints, ws.exception_bitmap);
  } else {
    stats =
        kernels.alp_encode_float(values.data(), n, exponent, factor, ws.ints, ws.exception_bitmap);
  }
  if (stats.exceptions == n) return 0;  // nothing became an integer: ALP cannot help
  std::size_t exception_count = stats.exceptions;
  // Exception slots get copies of good integers, so the range stays that of the good ones.
  if (exception_count > 0) exception_count = CollectExceptions(ws, n);
  std::int64_t lo = stats.lo;
  std::int64_t hi = stats.hi;
  unsigned plain_width = BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo));
  if (plain_width >= kOutlierMinWidth && PruneOutliers<T>(ws, n, lo, hi, plain_width)) {
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
  DeltaPatch patch;
  const unsigned sampled_width =
      mode != AlpMode::kPlain && n >= 2 ? SampledDeltaWidth(ws.ints, n) : 0;
  if (mode != AlpMode::kPlain && n >= 2 &&
      (mode == AlpMode::kDelta || sampled_width < plain_width)) {
    // Integers are below 2^50 in magnitude, so their differences cannot overflow.
    std::int64_t* deltas = ws.ints2;
    std::int64_t delta_hi;
    // Deltas as wide as the plain integers cannot be smaller (the delta header is larger), so
    // the pass may stop once they span 2^(plain_width - 1).
    const std::uint64_t give_up = mode == AlpMode::kDelta ? UINT64_MAX
                                  : plain_width == 0      ? 0
                                                          : std::uint64_t{1} << (plain_width - 1);
    // Sampled deltas far narrower than the integers, yet all of them as wide: one of them may be
    // a reset or a jump, which a patch takes out. The pass is redone in full.
    const bool lone_far_delta = sampled_width + kDeltaPatchMinGain <= plain_width;
    const bool complete =
        kernels.delta_min_max(ws.ints, n, give_up, deltas, &delta_lo, &delta_hi) ||
        (lone_far_delta &&
         kernels.delta_min_max(ws.ints, n, UINT64_MAX, deltas, &delta_lo, &delta_hi));
    if (complete) {
      delta_width =
          BitWidth(static_cast<std::uint64_t>(delta_hi) - static_cast<std::uint64_t>(delta_lo));
      if (delta_width >= kDeltaPatchMinWidth && sampled_width + kDeltaPatchMinGain <= delta_width) {
        patch = FindDeltaPatch(deltas, n, delta_lo, delta_hi, delta_width);
      }
      if (patch.pos != 0) {
        delta_lo = patch.lo;
        delta_width = patch.width;
      }
      deltas[0] = delta_lo;  // ignored by the decoder; packs as zero
      delta_bytes = kAlpDeltaHeaderBytes + (patch.pos != 0 ? kAlpDeltaPatchBytes : 0) +
                    PackedBytes(n, delta_width) + exception_bytes;
      use_delta = mode == AlpMode::kDelta || delta_bytes < plain_bytes;
    }
  }
  const std::size_t bytes = use_delta ? delta_bytes : plain_bytes;
  if (chosen != nullptr) *chosen = use_delta ? FloatEncoding::kAlpDelta : FloatEncoding::kAlp;
  if constexpr (kDryRun) {
    return bytes;
  } else {
    if (bytes > out.size()) return 0;
    std::uint8_t* p = out.data();
    WriteBlockHeader(p, use_delta ? FloatEncoding::kAlpDelta : FloatEncoding::kAlp, n);
    p[kAlpExponentOffset] = static_cast<std::uint8_t>(exponent);
    p[kAlpFactorOffset] = static_cast<std::uint8_t>(factor);
    const bool patched = use_delta && patch.pos != 0;
    p[kAlpWidthOffset] = static_cast<std::uint8_t>((use_delta ? delta_width : plain_width) |
                                                   (patched ? kAlpDeltaPatchFlag : 0));
    StoreLe<std::uint16_t>(p + kAlpExceptionCountOffset,
                           static_cast<std::uint16_t>(exception_count));
    StoreLe<std::int64_t>(p + kAlpBaseOffset, use_delta ? delta_lo : lo);
    p += kAlpHeaderBytes;
    if (use_delta) {
      StoreLe<std::int64_t>(p, ws.ints[0]);
      p += 8;
      if (patched) {
        StoreLe<std::uint16_t>(p, static_cast<std::uint16_t>(patch.pos));
        StoreLe<std::int64_t>(p + 2, ws.ints2[patch.pos]);
        p += kAlpDeltaPatchBytes;
        ws.ints2[patch.pos] = delta_lo;  // packs as zero
      }
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
    exception_count =
        kernels.alp_rd_split_double(values.data(), n, right_bits, plan.dictionary, dictionary_size,
                                    rights, indexes, ws.exception_bitmap);
  } else {
    exception_count =
        kernels.alp_rd_split_float(values.data(), n, right_bits, plan.dictionary, dictionary_size,
                                   rights, indexes, ws.exception_bitmap);
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
    p[kAlpRdRightBitsOffset] = static_cast<std::uint8_t>(right_bits);
    p[kAlpRdDictionarySizeOffset] = static_cast<std::uint8_t>(dictionary_size);
    StoreLe<std::uint16_t>(p + kAlpRdExceptionCountOffset,
                           static_cast<std::uint16_t>(exception_count));
    p += kAlpRdHeaderBytes;
    for (unsigned d = 0; d < dictionary_size; ++d) {
      StoreLe<std::uint16_t>(p + 2 * d, plan.dictionary[d]);
    }
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

namespace {

// The Gorilla stream writer of the hot loop: a 64-bit accumulator that is stored on every call and
// advances by whole words, with selects instead of branches, so that a value costs two stores and
// no data-dependent jumps. Stores may touch up to 16 bytes past the current word: the loop checks
// once per value that those bytes are inside the physical buffer.
class GorillaWriter {
 public:
  explicit GorillaWriter(std::uint8_t* out) : out_(out) {}

  // REQUIRES: width <= 64, value < 2^width, word_bytes() + 16 <= the buffer's size.
  void Put(std::uint64_t value, unsigned width) {
    acc_ |= value << used_;
    const unsigned total = used_ + width;
    if (total >= 64) {
      std::memcpy(out_ + pos_, &acc_, 8);
      pos_ += 8;
      // The bits of `value` that did not fit into the stored word (none when used_ == 0).
      acc_ = (value >> 1) >> (63 - used_);
    }
    used_ = total & 63;
  }

  // Bytes of completed words.
  std::size_t word_bytes() const { return pos_; }
  // Stream length in bytes; writes the last partial word's bytes.
  // REQUIRES: word_bytes() + length-in-bytes fits in the buffer.
  std::size_t Finish() {
    const std::size_t tail = (used_ + 7) / 8;
    std::memcpy(out_ + pos_, &acc_, tail);
    return pos_ + tail;
  }
  std::size_t Length() const { return pos_ + (used_ + 7) / 8; }

 private:
  std::uint8_t* out_;
  std::size_t pos_ = 0;
  std::uint64_t acc_ = 0;
  unsigned used_ = 0;
};

// One Gorilla value, as a control field (the window bits, written first) and a payload, chosen by
// selects: the window of a value depends on its predecessor's, and branching on it mispredicts on
// every noisy series.
template <typename T>
struct GorillaStep {
  using Bits = BitsOf<T>;
  static constexpr unsigned kBits = sizeof(T) * 8;
  static constexpr unsigned kNewWindowBits = 2 + kGorillaLeadingBits + kGorillaLengthBits<T>;
  // A leading count no value reaches, so that the first non-repeat opens a window.
  unsigned prev_leading = 64;
  unsigned prev_trailing = 0;
  unsigned prev_length = 0;

  // Writes the value whose XOR with its predecessor is x; returns the bits written.
  template <typename Sink>
  unsigned Next(Bits x, Sink&& put) {
    // Fast path: a repeated value costs one bit ("0").
    if (x == 0) {
      put(0, 1);
      return 1;
    }
    const unsigned leading =
        std::min<unsigned>(static_cast<unsigned>(std::countl_zero(x)), kGorillaMaxLeading);
    const unsigned trailing = static_cast<unsigned>(std::countr_zero(x));
    if (leading >= prev_leading && trailing >= prev_trailing) {
      // "10": the value fits the previous window; control and payload go out as one field when
      // they fit a word.
      const auto payload = static_cast<std::uint64_t>(x >> prev_trailing);
      if (prev_length <= 62) {
        put(0b01u | (payload << 2), prev_length + 2);
      } else {
        put(0b01u, 2);
        put(payload, prev_length);
      }
      return prev_length + 2;
    }
    // "11" + leading + (length - 1): a new window.
    const unsigned length = kBits - leading - trailing;
    put(0b11u | (leading << 2) | ((length - 1) << (2 + kGorillaLeadingBits)), kNewWindowBits);
    put(static_cast<std::uint64_t>(x >> trailing), length);
    prev_leading = leading;
    prev_trailing = trailing;
    prev_length = length;
    return kNewWindowBits + length;
  }
};

// The number of values from i on (at least one) whose bits equal `bits`.
template <typename T>
std::size_t RepeatRun(const T* __restrict values, std::size_t i, std::size_t n, BitsOf<T> bits) {
  std::size_t j = i + 1;
  while (j < n && std::bit_cast<BitsOf<T>>(values[j]) == bits) ++j;
  return j - i;
}

}  // namespace

// Declared in float_encoders_internal.h: the chooser writes Gorilla streams into its own buffers.
template <typename T, bool kDryRun>
std::size_t GorillaStream(const T* __restrict values, std::size_t n, std::uint8_t* out,
                          std::size_t physical_bytes, std::size_t limit_bytes,
                          bool* varies) noexcept {
  using Bits = BitsOf<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  GorillaStep<T> step;
  Bits prev = std::bit_cast<Bits>(values[0]);
  Bits changes = 0;
  if constexpr (kDryRun) {
    std::size_t bits = kBits;
    auto count = [](std::uint64_t, unsigned) {};
    for (std::size_t i = 1; i < n;) {
      const Bits cur = std::bit_cast<Bits>(values[i]);
      const Bits x = cur ^ prev;
      if (x == 0) {
        const std::size_t run = RepeatRun(values, i, n, prev);
        bits += run;
        i += run;
        continue;
      }
      prev = cur;
      changes |= x;
      bits += step.Next(x, count);
      ++i;
    }
    if (varies != nullptr) *varies = changes != 0;
    return (bits + 7) / 8;
  } else {
    if (physical_bytes < 16 + sizeof(T) || limit_bytes < sizeof(T)) return 0;
    // Past `stop` a value could write beyond the buffer or the stream is already too long.
    const std::size_t stop = std::min(physical_bytes, limit_bytes + 16) - 16;
    GorillaWriter writer(out);
    auto put = [&writer](std::uint64_t v, unsigned w) { writer.Put(v, w); };
    writer.Put(prev, kBits);
    for (std::size_t i = 1; i < n;) {
      if (writer.word_bytes() > stop) return 0;
      const Bits cur = std::bit_cast<Bits>(values[i]);
      const Bits x = cur ^ prev;
      if (x == 0) {
        // Fast path for repeated values: a run of k repeats is k zero bits, written a word at a
        // time.
        std::size_t run = RepeatRun(values, i, n, prev);
        i += run;
        while (run > 0 && writer.word_bytes() <= stop) {
          const auto chunk = static_cast<unsigned>(std::min<std::size_t>(run, 64));
          writer.Put(0, chunk);
          run -= chunk;
        }
        if (run > 0) return 0;
        continue;
      }
      prev = cur;
      changes |= x;
      step.Next(x, put);
      ++i;
    }
    if (varies != nullptr) *varies = changes != 0;
    if (writer.Length() > limit_bytes) return 0;
    return writer.Finish();
  }
}

template <typename T, bool kDryRun>
std::size_t EncodeGorilla(std::span<const T> values, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  if constexpr (kDryRun) {
    return kBlockHeaderBytes + GorillaStream<T, true>(values.data(), n, nullptr, 0, 0, nullptr);
  } else {
    if (out.size() < kBlockHeaderBytes) return 0;
    const std::size_t room = out.size() - kBlockHeaderBytes;
    const std::size_t stream = GorillaStream<T, false>(
        values.data(), n, out.data() + kBlockHeaderBytes, room, room, nullptr);
    if (stream == 0) return 0;
    WriteBlockHeader(out.data(), FloatEncoding::kGorilla, n);
    return kBlockHeaderBytes + stream;
  }
}

namespace {

// The window of one group of XORs: the shift drops the trailing zero bits every XOR of the group
// shares, the width keeps the rest up to the highest set bit of any of them. A group with many
// repeats (zero XORs) stores a bitmap of the non-zero ones and only those. Every group's payload
// starts on a byte, so groups pack and unpack independently.
struct XorGroup {
  std::uint16_t descriptor;
  std::size_t bytes;  // payload bytes
};

// A group's descriptor and payload size from the OR of its `count` XORs and how many of them
// are not zero.
template <typename T>
XorGroup PlanXorGroupFrom(BitsOf<T> all, std::size_t nonzero, std::size_t count) {
  constexpr unsigned kBits = sizeof(T) * 8;
  if (all == 0) return {0, 0};
  const auto shift = static_cast<unsigned>(std::countr_zero(all));
  const unsigned width = kBits - static_cast<unsigned>(std::countl_zero(all)) - shift;
  const std::size_t dense = (count * width + 7) / 8;
  const std::size_t sparse = kXorBitmapBytes + (nonzero * width + 7) / 8;
  const bool bitmap = sparse < dense;
  return {static_cast<std::uint16_t>(width | (bitmap ? kXorBitmapFlag : 0) |
                                     (shift << kXorShiftOffset)),
          bitmap ? sparse : dense};
}

template <typename T>
XorGroup PlanXorGroup(const BitsOf<T>* __restrict xors, std::size_t count) {
  using Bits = BitsOf<T>;
  Bits all = 0;
  std::size_t zeros = 0;
  for (std::size_t j = 0; j < count; ++j) {
    all |= xors[j];
    zeros += xors[j] == 0;
  }
  return PlanXorGroupFrom<T>(all, count - zeros, count);
}

// The XORs of values[from .. from + count) with their predecessors.
template <typename T>
void XorsOf(const T* __restrict values, std::size_t from, std::size_t count,
            BitsOf<T>* __restrict xors) {
  using Bits = BitsOf<T>;
  for (std::size_t j = 0; j < count; ++j) {
    xors[j] = std::bit_cast<Bits>(values[from + j]) ^ std::bit_cast<Bits>(values[from + j - 1]);
  }
}

// Entries past a group's fields that PackFields may zero (the joins' padding, the wide packer's
// reads past the last field) and that the field kernels' eight-wide stores may write.
constexpr std::size_t kFieldSlack = 16;

// Copies the first `size` bytes of `words` to `out` a word at a time, the last word whole when it
// ends by `end` (the bytes past `size` belong to the next group, written after, or lie past the
// block), else its bytes one by one. memcpy of a run-time length is a call into the C library:
// once per group, 9% of a first block's encode on nyc29.
void CopyWords(const std::uint64_t* words, std::size_t size, std::uint8_t* out,
               const std::uint8_t* end) {
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) std::memcpy(out + i, words + i / 8, 8);
  if (i == size) return;
  if (end - (out + i) >= 8) {
    std::memcpy(out + i, words + i / 8, 8);
    return;
  }
  const std::uint64_t last = words[i / 8];
  for (unsigned b = 0; i < size; ++i, b += 8) out[i] = static_cast<std::uint8_t>(last >> b);
}

// Packs count (<= 32) fields of `width` bits, each below 2^width, into `out` (ceil(count * width
// / 8) bytes, and up to 7 more before `end`); `fields` has kFieldSlack entries past them, which
// it overwrites. Narrow fields are first joined into words of as many whole fields as fit (those
// joins are independent of each other); the words then go through a register accumulator that is
// stored whole on every word and advances by whole words, so the serial part is one step per
// joined word, with no data-dependent branch and no read-modify-write of memory.
void PackFields(std::uint64_t* __restrict fields, std::size_t count, unsigned width,
                std::uint8_t* __restrict out, const std::uint8_t* end) {
  std::uint64_t words[kXorGroupValues + 1];
  if (width > 32) {
    // Wide fields: each output word is computed on its own from the (at most three) fields it
    // overlaps, so the words do not wait on each other. Fields past `count` read as zero.
    fields[count] = fields[count + 1] = fields[count + 2] = 0;
    const std::size_t word_count = (count * width + 63) / 64;
    // Shifts of 64 or more give zero (a plain shift by 64 is undefined).
    auto left = [](std::uint64_t v, unsigned s) { return s >= 64 ? 0 : v << s; };
    // first_bit / width by a multiply: exact for first_bit * width < 2^32 (here < 2^12 * 2^6).
    const std::uint64_t reciprocal = ((std::uint64_t{1} << 32) + width - 1) / width;
    for (std::size_t i = 0; i < word_count; ++i) {
      const std::size_t first_bit = 64 * i;
      const auto k = static_cast<std::size_t>((first_bit * reciprocal) >> 32);
      const auto offset = static_cast<unsigned>(first_bit - k * width);  // < width
      const unsigned taken = width - offset;                             // 1..64
      words[i] =
          (fields[k] >> offset) | left(fields[k + 1], taken) | left(fields[k + 2], taken + width);
    }
    CopyWords(words, (count * width + 7) / 8, out, end);
    return;
  }
  const std::size_t per_word = 64 / width;
  const unsigned joined_width = static_cast<unsigned>(per_word) * width;
  std::uint64_t acc = 0;
  unsigned used = 0;
  std::size_t word = 0;
  auto feed = [&](std::uint64_t v, unsigned v_width) {
    acc |= v << used;
    words[word] = acc;
    const bool full = used + v_width >= 64;
    word += full;
    // Masks rather than a select: compilers turn the select into a jump that mispredicts.
    const std::uint64_t spill = (v >> 1) >> (63 - used);
    const std::uint64_t take = 0 - static_cast<std::uint64_t>(full);
    acc = (spill & take) | (acc & ~take);
    used = (used + v_width) & 63;
  };
  // Widths of 5 to 32 bits: the joins unrolled for their count, over fields padded with zeros to
  // whole joins (the bytes past the last field are not copied out).
  auto joined = [&]<std::size_t kPerWord>() {
    static_assert(kPerWord - 1 <= kFieldSlack);
    const std::size_t joins = (count + kPerWord - 1) / kPerWord;
    for (std::size_t j = count; j < joins * kPerWord; ++j) fields[j] = 0;
    for (std::size_t m = 0; m < joins; ++m) {
      std::uint64_t v = 0;
      for (std::size_t t = 0; t < kPerWord; ++t) v |= fields[m * kPerWord + t] << (t * width);
      feed(v, joined_width);
    }
  };
  switch (per_word) {
    case 2:
      joined.template operator()<2>();
      break;
    case 3:
      joined.template operator()<3>();
      break;
    case 4:
      joined.template operator()<4>();
      break;
    case 5:
      joined.template operator()<5>();
      break;
    case 6:
      joined.template operator()<6>();
      break;
    case 7:
      joined.template operator()<7>();
      break;
    case 8:
      joined.template operator()<8>();
      break;
    case 9:
      joined.template operator()<9>();
      break;
    case 10:
      joined.template operator()<10>();
      break;
    case 11:
      joined.template operator()<11>();
      break;
    case 12:
      joined.template operator()<12>();
      break;
    default: {
      std::size_t j = 0;
      for (; j + per_word <= count; j += per_word) {
        std::uint64_t v = 0;
        for (std::size_t t = 0; t < per_word; ++t) v |= fields[j + t] << (t * width);
        feed(v, joined_width);
      }
      if (j < count) {
        std::uint64_t v = 0;
        for (std::size_t t = 0; j + t < count; ++t) v |= fields[j + t] << (t * width);
        feed(v, static_cast<unsigned>(count - j) * width);
      }
    }
  }
  words[word] = acc;
  CopyWords(words, (count * width + 7) / 8, out, end);
}

}  // namespace

template <typename T, bool kDryRun>
std::size_t EncodeXorGroups(std::span<const T> values, std::span<std::uint8_t> out) noexcept {
  using Bits = BitsOf<T>;
  const std::size_t n = values.size();
  const std::size_t xors = n - 1;
  const std::size_t groups = (xors + kXorGroupValues - 1) / kXorGroupValues;
  const std::size_t fixed = kBlockHeaderBytes + sizeof(T) + groups * kXorDescriptorBytes;
  // Pass 1: every group's window and the exact size, before anything is written.
  std::uint16_t descriptors[kBlockCapacity / kXorGroupValues];
  // Doubles: the non-zero XORs of each group (the kernels' scan), for the bitmaps.
  std::uint32_t nonzero[kBlockCapacity / kXorGroupValues];
  Bits all_xors[kBlockCapacity];
  std::size_t bytes = fixed;
  if constexpr (std::is_same_v<T, double>) {
    static_assert(kXorGroupValues == simd::kXorGroupSize);
    std::uint64_t ors[kBlockCapacity / kXorGroupValues];
    if (n >= 2) simd::ActiveKernels().xor_groups_scan(values.data(), n, all_xors, ors, nonzero);
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t count = std::min(kXorGroupValues, n - 1 - g * kXorGroupValues);
      const XorGroup plan = PlanXorGroupFrom<T>(ors[g], CountBits32(nonzero[g]), count);
      descriptors[g] = plan.descriptor;
      bytes += plan.bytes;
    }
  } else {
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t from = 1 + g * kXorGroupValues;
      const std::size_t count = std::min(kXorGroupValues, n - from);
      Bits* x = all_xors + g * kXorGroupValues;
      XorsOf(values.data(), from, count, x);
      const XorGroup plan = PlanXorGroup<T>(x, count);
      descriptors[g] = plan.descriptor;
      bytes += plan.bytes;
    }
  }
  if constexpr (kDryRun) {
    return bytes;
  } else {
    if (bytes > out.size()) return 0;
    std::uint8_t* p = out.data();
    WriteBlockHeader(p, FloatEncoding::kXorGroups, n);
    StoreLe<T>(p + kBlockHeaderBytes, values[0]);
    for (std::size_t g = 0; g < groups; ++g) {
      StoreLe<std::uint16_t>(p + kBlockHeaderBytes + sizeof(T) + g * kXorDescriptorBytes,
                             descriptors[g]);
    }
    // Pass 2: the payloads.
    p += fixed;
    std::uint64_t fields[kXorGroupValues + kFieldSlack];
    for (std::size_t g = 0; g < groups; ++g) {
      const unsigned width = descriptors[g] & kXorWidthMask;
      if (width == 0) continue;
      const std::size_t from = 1 + g * kXorGroupValues;
      const std::size_t count = std::min(kXorGroupValues, n - from);
      const unsigned shift = descriptors[g] >> kXorShiftOffset;
      const Bits* x = all_xors + g * kXorGroupValues;
      std::size_t fields_count = 0;
      const bool bitmap = (descriptors[g] & kXorBitmapFlag) != 0;
      if constexpr (std::is_same_v<T, double>) {
        // Only the non-zero XORs after a bitmap, compacted by the kernels.
        if (bitmap) {
          StoreLe<std::uint32_t>(p, nonzero[g]);
          p += kXorBitmapBytes;
        }
        fields_count =
            simd::ActiveKernels().xor_group_fields(x, count, nonzero[g], shift, bitmap, fields);
      } else if (bitmap) {
        // Only the non-zero XORs, after the bitmap: one step per set bit when they are few (runs
        // of repeats), else compacted without branches.
        std::uint32_t mask = 0;
        for (std::size_t j = 0; j < count; ++j) {
          mask |= static_cast<std::uint32_t>(x[j] != 0) << j;
        }
        if (4 * static_cast<std::size_t>(CountBits32(mask)) < count) {
          for (std::uint32_t m = mask; m != 0; m &= m - 1) {
            fields[fields_count++] = static_cast<std::uint64_t>(x[std::countr_zero(m)] >> shift);
          }
        } else {
          for (std::size_t j = 0; j < count; ++j) {
            fields[fields_count] = static_cast<std::uint64_t>(x[j] >> shift);
            fields_count += x[j] != 0;
          }
        }
        StoreLe<std::uint32_t>(p, mask);
        p += kXorBitmapBytes;
      } else {
        for (std::size_t j = 0; j < count; ++j) {
          fields[j] = static_cast<std::uint64_t>(x[j] >> shift);
        }
        fields_count = count;
      }
      PackFields(fields, fields_count, width, p, out.data() + out.size());
      p += (fields_count * width + 7) / 8;
    }
    return bytes;
  }
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

#define INGOT_INSTANTIATE_ENCODERS(T, DRY)                                                      \
  template std::size_t EncodeAlp<T, DRY>(std::span<const T>, unsigned, unsigned, AlpMode,       \
                                         Workspace&, std::span<std::uint8_t>,                   \
                                         FloatEncoding*) noexcept;                              \
  template std::size_t EncodeAlpRd<T, DRY>(std::span<const T>, const AlpRdPlan&, Workspace&,    \
                                           std::span<std::uint8_t>) noexcept;                   \
  template std::size_t EncodeGorilla<T, DRY>(std::span<const T>,                                \
                                             std::span<std::uint8_t>) noexcept;                 \
  template std::size_t EncodeXorGroups<T, DRY>(std::span<const T>,                              \
                                               std::span<std::uint8_t>) noexcept;               \
  template std::size_t GorillaStream<T, DRY>(const T*, std::size_t, std::uint8_t*, std::size_t, \
                                             std::size_t, bool*) noexcept;
INGOT_INSTANTIATE_ENCODERS(double, true)
INGOT_INSTANTIATE_ENCODERS(double, false)
INGOT_INSTANTIATE_ENCODERS(float, true)
INGOT_INSTANTIATE_ENCODERS(float, false)
#undef INGOT_INSTANTIATE_ENCODERS
template std::size_t EncodeConstant<double>(std::span<const double>,
                                            std::span<std::uint8_t>) noexcept;
template std::size_t EncodeConstant<float>(std::span<const float>,
                                           std::span<std::uint8_t>) noexcept;
template std::size_t EncodeRaw<double>(std::span<const double>, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeRaw<float>(std::span<const float>, std::span<std::uint8_t>) noexcept;

}  // namespace ingot::codec
