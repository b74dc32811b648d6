// Compress phase of the float codec: the per-encoding writers (each with its dry run) and the
// adaptive chooser behind EncodeDoubles/EncodeFloats.
#include <algorithm>
#include <bit>
#include <cstring>

#include "codec/alp_constants.h"
#include "codec/bit_packing.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"
#include "codec/simd/lane_ops.h"

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
std::size_t RepeatRun(const T* __restrict values, std::size_t i, std::size_t n,
                      BitsOf<T> bits) {
  std::size_t j = i + 1;
  while (j < n && std::bit_cast<BitsOf<T>>(values[j]) == bits) ++j;
  return j - i;
}

// The Gorilla stream of `values` (without the block header). The dry run returns the stream length
// in bytes. The real run writes into `out`, whose physical size is `physical_bytes`, and returns 0
// when the stream would exceed `limit_bytes` (<= physical_bytes) or come within 16 bytes of the
// physical end. `varies` (nullable) is set when some value differs from the first.
template <typename T, bool kDryRun>
std::size_t GorillaStream(const T* __restrict values, std::size_t n, std::uint8_t* out,
                          std::size_t physical_bytes, std::size_t limit_bytes, bool* varies) {
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

}  // namespace

template <typename T, bool kDryRun>
std::size_t EncodeGorilla(std::span<const T> values, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  if constexpr (kDryRun) {
    return kBlockHeaderBytes + GorillaStream<T, true>(values.data(), n, nullptr, 0, 0, nullptr);
  } else {
    if (out.size() < kBlockHeaderBytes) return 0;
    const std::size_t room = out.size() - kBlockHeaderBytes;
    const std::size_t stream = GorillaStream<T, false>(values.data(), n,
                                                       out.data() + kBlockHeaderBytes, room, room,
                                                       nullptr);
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

template <typename T>
XorGroup PlanXorGroup(const BitsOf<T>* __restrict xors, std::size_t count) {
  using Bits = BitsOf<T>;
  constexpr unsigned kBits = sizeof(T) * 8;
  Bits all = 0;
  std::size_t zeros = 0;
  for (std::size_t j = 0; j < count; ++j) {
    all |= xors[j];
    zeros += xors[j] == 0;
  }
  if (all == 0) return {0, 0};
  const auto shift = static_cast<unsigned>(std::countr_zero(all));
  const unsigned width = kBits - static_cast<unsigned>(std::countl_zero(all)) - shift;
  const std::size_t dense = (count * width + 7) / 8;
  const std::size_t sparse = kXorBitmapBytes + ((count - zeros) * width + 7) / 8;
  const bool bitmap = sparse < dense;
  return {static_cast<std::uint16_t>(width | (bitmap ? kXorBitmapFlag : 0) |
                                     (shift << kXorShiftOffset)),
          bitmap ? sparse : dense};
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

// Packs count (<= 32) fields of `width` bits, each below 2^width, into `out` (ceil(count * width
// / 8) bytes). Narrow fields are first joined into words of as many whole fields as fit (those
// joins are independent of each other); the words then go through a register accumulator that is
// stored whole on every word and advances by whole words, so the serial part is one step per
// joined word, with no data-dependent branch and no read-modify-write of memory.
void PackFields(const std::uint64_t* __restrict fields, std::size_t count, unsigned width,
                std::uint8_t* __restrict out) {
  const std::size_t per_word = 64 / width;
  const unsigned joined_width = static_cast<unsigned>(per_word) * width;
  std::uint64_t words[kXorGroupValues + 1];
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
  words[word] = acc;
  std::memcpy(out, words, (count * width + 7) / 8);
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
  Bits all_xors[kBlockCapacity];
  std::size_t bytes = fixed;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t from = 1 + g * kXorGroupValues;
    const std::size_t count = std::min(kXorGroupValues, n - from);
    Bits* x = all_xors + g * kXorGroupValues;
    XorsOf(values.data(), from, count, x);
    const XorGroup plan = PlanXorGroup<T>(x, count);
    descriptors[g] = plan.descriptor;
    bytes += plan.bytes;
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
    std::uint64_t fields[kXorGroupValues];
    for (std::size_t g = 0; g < groups; ++g) {
      const unsigned width = descriptors[g] & kXorWidthMask;
      if (width == 0) continue;
      const std::size_t from = 1 + g * kXorGroupValues;
      const std::size_t count = std::min(kXorGroupValues, n - from);
      const unsigned shift = descriptors[g] >> kXorShiftOffset;
      const Bits* x = all_xors + g * kXorGroupValues;
      std::size_t fields_count = 0;
      if ((descriptors[g] & kXorBitmapFlag) != 0) {
        // Only the non-zero XORs, compacted without branches, after the bitmap.
        std::uint32_t present = 0;
        for (std::size_t j = 0; j < count; ++j) {
          fields[fields_count] = static_cast<std::uint64_t>(x[j] >> shift);
          present |= static_cast<std::uint32_t>(x[j] != 0) << j;
          fields_count += x[j] != 0;
        }
        StoreLe<std::uint32_t>(p, present);
        p += kXorBitmapBytes;
      } else {
        for (std::size_t j = 0; j < count; ++j) fields[j] = static_cast<std::uint64_t>(x[j] >> shift);
        fields_count = count;
      }
      PackFields(fields, fields_count, width, p);
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

namespace {

constexpr std::size_t kGorillaWindow = 128;

// Positions of the values whose bits differ from `ref`, into ws.positions; stops past `cap` and
// returns the count (cap + 1 when there are more). 64-value chunks are checked with an OR of
// XORs first (it vectorizes), so a block with a handful of odd values costs one vector pass.
template <typename T>
std::size_t ListDifferent(std::span<const T> values, BitsOf<T> ref, std::size_t cap,
                          Workspace& ws) {
  const std::size_t n = values.size();
  std::size_t k = 0;
  for (std::size_t start = 0; start < n; start += 64) {
    const std::size_t end = std::min(n, start + 64);
    BitsOf<T> diff = 0;
    for (std::size_t i = start; i < end; ++i) diff |= std::bit_cast<BitsOf<T>>(values[i]) ^ ref;
    if (diff == 0) continue;
    for (std::size_t i = start; i < end; ++i) {
      if (std::bit_cast<BitsOf<T>>(values[i]) == ref) continue;
      if (k == cap) return cap + 1;
      ws.positions[k++] = static_cast<std::uint16_t>(i);
    }
  }
  return k;
}

// A block that is one value but for a few (a counter at zero with rare events, a status code)
// is written as ALP of width 0, every integer the constant's, with the few as exceptions. At
// most one bit per value goes to exceptions, less than any XOR encoding spends on the repeats
// alone, so no other candidate is tried, and the block costs one scan. Returns 0 when the block
// is not like that or the constant has no exact pair; otherwise the pair becomes the hint's
// favourite.
template <typename T>
std::size_t EncodeNearConstant(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                               std::span<std::uint8_t> out) {
  constexpr std::size_t kExceptionBits = 8 * (2 + sizeof(T));
  const std::size_t n = values.size();
  const std::size_t cap = n / kExceptionBits;
  if (cap == 0) return 0;
  auto ref = std::bit_cast<BitsOf<T>>(values[0]);
  std::size_t k = ListDifferent(values, ref, cap, ws);
  if (k > cap) {
    // The first value may be one of the few.
    ref = std::bit_cast<BitsOf<T>>(values[n - 1]);
    k = ListDifferent(values, ref, cap, ws);
    if (k > cap) return 0;
  }
  // The constant's pair: the first exact one in the search's order.
  const T constant = std::bit_cast<T>(ref);
  std::int64_t integer = 0;
  int exponent = -1;
  int factor = -1;
  for (int e = AlpConstants<T>::kMaxExponent; e >= 0 && exponent < 0; --e) {
    for (int f = e; f >= 0; --f) {
      if (!simd::AlpEncodeOne(constant, static_cast<unsigned>(e), static_cast<unsigned>(f),
                              &integer)) {
        exponent = e;
        factor = f;
        break;
      }
    }
  }
  const std::size_t bytes = kAlpHeaderBytes + k * (2 + sizeof(T));
  if (exponent < 0 || bytes > out.size()) return 0;
  std::uint8_t* p = out.data();
  WriteBlockHeader(p, FloatEncoding::kAlp, n);
  p[3] = static_cast<std::uint8_t>(exponent);
  p[4] = static_cast<std::uint8_t>(factor);
  p[5] = 0;  // width
  StoreLe<std::uint16_t>(p + 6, static_cast<std::uint16_t>(k));
  StoreLe<std::int64_t>(p + 8, integer);
  p += kAlpHeaderBytes;
  for (std::size_t j = 0; j < k; ++j) StoreLe<std::uint16_t>(p + 2 * j, ws.positions[j]);
  p += 2 * k;
  for (std::size_t j = 0; j < k; ++j) StoreLe<T>(p + sizeof(T) * j, values[ws.positions[j]]);
  hint.exponent[0] = static_cast<std::uint8_t>(exponent);
  hint.factor[0] = static_cast<std::uint8_t>(factor);
  return bytes;
}

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
    case FloatEncoding::kXorGroups: return EncodeXorGroups<T, false>(values, out);
    case FloatEncoding::kConstant: return EncodeConstant(values, out);
    case FloatEncoding::kRaw: return EncodeRaw(values, out);
    case FloatEncoding::kAlpZstd: break;  // not a candidate of the chooser
  }
  return 0;
}

// Full blocks of a series written with the remembered encoding alone before every candidate is
// compared exactly again (written, not estimated: this catches what the samples miss).
constexpr std::uint8_t kRecheckIntervalBlocks = 64;
// Blocks after a comparison before the next one may run or switch the encoding. Series whose
// sizes swing from block to block (a sine wave whose period spans a few blocks, prices that
// alternate between decimal and noisy stretches) would otherwise compare on nearly every block.
constexpr std::uint8_t kMinComparisonGapBlocks = 2;
// Blocks without ALP estimates after one came out at more than twice the block written.
constexpr std::uint8_t kAlpPauseBlocks = 16;
// Values in the window that estimates Gorilla's size on the fast path (in the exact comparison:
// kGorillaWindow).
constexpr std::size_t kGorillaCheckWindow = 32;
// Values (whole groups) in the window that estimates grouped XOR's size on the fast path.
constexpr std::size_t kXorCheckWindow = 64;

bool IsSticky(FloatEncoding e) {
  return e == FloatEncoding::kAlp || e == FloatEncoding::kAlpDelta || e == FloatEncoding::kAlpRd ||
         e == FloatEncoding::kGorilla || e == FloatEncoding::kXorGroups || e == FloatEncoding::kRaw;
}

bool IsAlpFamily(FloatEncoding e) {
  return e == FloatEncoding::kAlp || e == FloatEncoding::kAlpDelta;
}

// No ALP-RD block is smaller than this: it keeps every value's right part, which is all but the
// widest left part.
template <typename T>
std::size_t AlpRdFloorBytes(std::size_t n) {
  return kAlpRdHeaderBytes + PackedBytes(n, sizeof(T) * 8 - kAlpRdMaxLeftBits);
}

// The largest size at which `to` displaces a block of `bytes` written with `from`. Gorilla, ALP-RD
// and grouped XOR all serve real doubles and often come within a few percent of each other, block
// by block (a sine's slope moves Gorilla's size, ALP-RD's barely moves). Gorilla encodes and
// decodes several times slower than the other two, so it must save an eighth to displace them;
// otherwise smaller is enough.
std::size_t DisplacingLimit(FloatEncoding from, FloatEncoding to, std::size_t bytes) {
  const bool to_slower = to == FloatEncoding::kGorilla &&
                         (from == FloatEncoding::kAlpRd || from == FloatEncoding::kXorGroups);
  return to_slower ? bytes - bytes / 8 : bytes - 1;
}

// Gorilla into scratch (ws.bytes), for a candidate that must come in under `limit` bytes to
// replace the block already written; 0 when it does not. Scratch has room past any limit, so
// Gorilla's fast writer needs no margin.
template <typename T>
std::size_t GorillaIntoScratch(std::span<const T> values, Workspace& ws, std::size_t limit) {
  if (limit <= kBlockHeaderBytes) return 0;
  const std::size_t stream =
      GorillaStream<T, false>(values.data(), values.size(), ws.bytes + kBlockHeaderBytes,
                              sizeof(ws.bytes) - kBlockHeaderBytes, limit - kBlockHeaderBytes,
                              nullptr);
  if (stream == 0) return 0;
  WriteBlockHeader(ws.bytes, FloatEncoding::kGorilla, values.size());
  return kBlockHeaderBytes + stream;
}

// Gorilla's size for a block of n values from a dry run over a window of its values (XORs of
// neighbours need neighbours, so the window is contiguous, from the middle of the block).
template <typename T>
std::size_t EstimateGorilla(std::span<const T> values, std::size_t window) {
  const std::size_t n = values.size();
  window = std::min(n, window);
  const std::size_t gorilla_window =
      EncodeGorilla<T, true>(values.subspan((n - window) / 2, window), {});
  return kBlockHeaderBytes + sizeof(T) +
         (gorilla_window - kBlockHeaderBytes - sizeof(T)) * n / window;
}

// Grouped XOR's size for a block of n values from a dry run over a window of whole groups from
// the middle of the block.
template <typename T>
std::size_t EstimateXorGroups(std::span<const T> values, std::size_t window) {
  const std::size_t n = values.size();
  if (n <= window + 1) return EncodeXorGroups<T, true>(values, {});
  const std::size_t fixed_window = kBlockHeaderBytes + sizeof(T) +
                                   (window / kXorGroupValues) * kXorDescriptorBytes;
  const std::size_t xor_window =
      EncodeXorGroups<T, true>(values.subspan((n - window - 1) / 2, window + 1), {});
  const std::size_t groups = (n - 1 + kXorGroupValues - 1) / kXorGroupValues;
  return kBlockHeaderBytes + sizeof(T) + groups * kXorDescriptorBytes +
         (xor_window - fixed_window) * (n - 1) / window;
}

std::uint16_t ClampBytes(std::size_t bytes) {
  return static_cast<std::uint16_t>(std::min<std::size_t>(bytes, UINT16_MAX));
}

// The exact comparison: leaves the smallest block in `out` and records it in the hint, with the
// size of the block it displaced as the runner-up. `known`/`known_bytes`: a block already written
// into `out` with that encoding (known_bytes 0 when none); it is not encoded again. Every other
// candidate is judged by a sample estimate first and written (into scratch, kept only when
// smaller) only when the estimate comes close to the best exact size so far, so a comparison
// usually costs one extra encode. ALP is written unless its sample estimate (plain and delta) is
// far behind the others: one pass gives its exact size (plain or delta, exceptions and outliers
// included), which no sample estimate matches. `too_big`: an encoding that was just found not to
// fit under raw's size for this block (kRaw when none); it is not tried again.
template <typename T>
EncodeResult ChooseAndEncode(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                             std::span<std::uint8_t> out, FloatEncoding known,
                             std::size_t known_bytes, FloatEncoding too_big = FloatEncoding::kRaw) {
  const std::size_t n = values.size();
  const std::size_t raw_bytes = kBlockHeaderBytes + n * sizeof(T);
  const std::span<std::uint8_t> bounded = out.first(std::min(out.size(), raw_bytes));
  // The XOR encodings first: the exponent search needs no whole-block passes when ALP's sample is
  // far behind them. Grouped XOR's dry run is cheap enough to give its exact size.
  const bool gorilla_known = known == FloatEncoding::kGorilla && known_bytes != 0;
  const bool gorilla_too_big = too_big == FloatEncoding::kGorilla;
  const std::size_t gorilla_estimate =
      gorilla_known ? known_bytes
                    : (gorilla_too_big ? raw_bytes : EstimateGorilla(values, kGorillaWindow));
  const bool xor_known = known == FloatEncoding::kXorGroups && known_bytes != 0;
  const bool xor_too_big = too_big == FloatEncoding::kXorGroups;
  const std::size_t xor_bytes =
      xor_known ? known_bytes
                : (xor_too_big ? raw_bytes : EncodeXorGroups<T, true>(values, {}));
  const std::size_t rival_bytes = std::min(
      {gorilla_estimate, xor_bytes, raw_bytes, known_bytes == 0 ? SIZE_MAX : known_bytes});
  // An exact comparison may write ALP: a stale hint is searched again first.
  const AlpChoice alp = SearchAlpExponents(
      values, hint, ws, static_cast<double>(rival_bytes) * 8 / static_cast<double>(n),
      /*for_encode=*/true);
  AlpRdPlan rd;
  FloatEncoding written = known;
  std::size_t bytes = known_bytes;
  FloatEncoding runner_up = FloatEncoding::kRaw;
  std::size_t runner_up_bytes = 0;
  // Writes `encoding` and keeps it when it is smaller than what `out` holds.
  auto consider = [&](FloatEncoding encoding) {
    const bool out_free = bytes == 0;
    FloatEncoding candidate = encoding;
    std::size_t candidate_bytes = 0;
    if (out_free) {
      candidate_bytes = EncodeCandidate(encoding, values, alp, rd, ws, bounded, &candidate);
    } else if (encoding == FloatEncoding::kGorilla) {
      candidate_bytes = GorillaIntoScratch(values, ws, DisplacingLimit(written, encoding, bytes));
    } else {
      candidate_bytes = EncodeCandidate(
          encoding, values, alp, rd, ws,
          std::span<std::uint8_t>(ws.bytes, DisplacingLimit(written, encoding, bytes)),
          &candidate);
    }
    if (candidate_bytes == 0 || (!out_free && candidate_bytes >= bytes)) return;
    if (!out_free) {
      std::memcpy(out.data(), ws.bytes, candidate_bytes);
      runner_up = written;
      runner_up_bytes = bytes;
    }
    bytes = candidate_bytes;
    written = candidate;
  };
  // Candidates whose estimate is far off are not written.
  auto close = [&](std::size_t estimate) { return bytes == 0 || estimate < bytes + bytes / 4; };
  if (!(known_bytes != 0 && IsAlpFamily(known)) && !IsAlpFamily(too_big)) {
    // Samples miss outliers and the exact effect of delta coding: only a wide miss skips ALP.
    const std::size_t alp_estimate = EstimateAlpWithHint(values, hint);
    hint.alp_pause_blocks = alp_estimate > 2 * rival_bytes ? kAlpPauseBlocks : 0;
    if (alp_estimate < rival_bytes + rival_bytes / 4) consider(FloatEncoding::kAlp);
  }
  if (!xor_known && !xor_too_big && (bytes == 0 || xor_bytes < bytes)) {
    consider(FloatEncoding::kXorGroups);
  }
  if (!gorilla_known && !gorilla_too_big) {
    // Gorilla is the slowest encoder: written only when its estimate is a near call against ALP
    // or raw, and a clear win against the other XOR encodings.
    const bool near_call = bytes == 0 || IsAlpFamily(written) || written == FloatEncoding::kRaw;
    const std::size_t gate =
        near_call ? bytes + bytes / 16 : DisplacingLimit(written, FloatEncoding::kGorilla, bytes);
    if (bytes == 0 || gorilla_estimate < gate) consider(FloatEncoding::kGorilla);
  }
  // ALP-RD only pays when ALP cannot turn most values into narrow integers.
  if ((bytes == 0 || AlpRdFloorBytes<T>(n) < DisplacingLimit(written, FloatEncoding::kAlpRd, bytes)) &&
      (known != FloatEncoding::kAlpRd || known_bytes == 0) && too_big != FloatEncoding::kAlpRd) {
    rd = AnalyzeAlpRd(values);
    const std::size_t window = std::min(n, kGorillaWindow);
    const std::size_t fixed = kAlpRdHeaderBytes + 2 * rd.dictionary_size;
    const std::size_t rd_window =
        EncodeAlpRd<T, true>(values.subspan((n - window) / 2, window), rd, ws, {});
    if (close(fixed + (rd_window - fixed) * n / window)) consider(FloatEncoding::kAlpRd);
  }
  if (bytes == 0 || bytes >= raw_bytes || written == FloatEncoding::kRaw) {
    bytes = EncodeRaw(values, out);
    written = FloatEncoding::kRaw;
  }
  if (written == FloatEncoding::kAlpRd) hint.rd_right_bits = rd.right_bits;
  hint.last_bytes = ClampBytes(n == kBlockCapacity ? bytes : 0);
  hint.blocks_since_choice = 0;
  const bool has_runner_up = runner_up_bytes != 0 && written != FloatEncoding::kRaw;
  hint.runner_up_encoding = has_runner_up ? static_cast<std::uint8_t>(runner_up) : 0xff;
  hint.runner_up_bytes = ClampBytes(runner_up_bytes);
  return {bytes, written};
}

// The fast path's encoder for a series whose previous block chose `encoding`: that encoder alone.
// Returns 0 when the block does not fit. `varies` is cleared when Gorilla saw a constant block.
template <typename T>
std::size_t EncodeRemembered(FloatEncoding encoding, std::span<const T> values, SeriesHint& hint,
                             Workspace& ws, std::span<std::uint8_t> out, FloatEncoding* written,
                             bool* varies) {
  *written = encoding;
  *varies = true;
  const std::size_t raw_bytes = kBlockHeaderBytes + values.size() * sizeof(T);
  const std::span<std::uint8_t> bounded = out.first(std::min(out.size(), raw_bytes));
  switch (encoding) {
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws);
      return EncodeAlp<T, false>(values, alp.exponent, alp.factor, AlpMode::kSmaller, ws, bounded,
                                 written);
    }
    case FloatEncoding::kAlpRd:
      return EncodeAlpRd<T, false>(values, AnalyzeAlpRdForSplit(values, hint.rd_right_bits), ws,
                                   bounded);
    case FloatEncoding::kGorilla: {
      // The caller's span holds MaxEncodedFloatBytes: room past raw for the fast writer.
      const std::size_t stream =
          GorillaStream<T, false>(values.data(), values.size(), out.data() + kBlockHeaderBytes,
                                  out.size() - kBlockHeaderBytes, raw_bytes - kBlockHeaderBytes,
                                  varies);
      if (stream == 0) return 0;
      WriteBlockHeader(out.data(), FloatEncoding::kGorilla, values.size());
      return kBlockHeaderBytes + stream;
    }
    case FloatEncoding::kXorGroups: return EncodeXorGroups<T, false>(values, bounded);
    case FloatEncoding::kRaw: return EncodeRaw(values, out);
    case FloatEncoding::kConstant:
    case FloatEncoding::kAlpZstd: break;
  }
  return 0;
}

// A sample estimate of `encoding`'s size for the block (dry runs over samples and windows only,
// never a pass over every value); SIZE_MAX when it does not apply. `rd` receives ALP-RD's plan.
template <typename T>
std::size_t EstimateCandidate(FloatEncoding encoding, std::span<const T> values,
                              const SeriesHint& hint, Workspace& ws, AlpRdPlan* rd) {
  const std::size_t n = values.size();
  switch (encoding) {
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: return EstimateAlpWithHint(values, hint);
    case FloatEncoding::kGorilla: return EstimateGorilla(values, kGorillaCheckWindow);
    case FloatEncoding::kXorGroups: return EstimateXorGroups(values, kXorCheckWindow);
    case FloatEncoding::kAlpRd: {
      *rd = AnalyzeAlpRd(values);
      const std::size_t window = std::min(n, kGorillaCheckWindow);
      const std::size_t fixed = kAlpRdHeaderBytes + 2 * rd->dictionary_size;
      const std::size_t rd_window =
          EncodeAlpRd<T, true>(values.subspan((n - window) / 2, window), *rd, ws, {});
      return fixed + (rd_window - fixed) * n / window;
    }
    case FloatEncoding::kConstant:
    case FloatEncoding::kRaw:
    case FloatEncoding::kAlpZstd: break;
  }
  return SIZE_MAX;
}

// Writes `encoding` into scratch and moves it into `out` when it is smaller than the `*bytes`
// that `out` holds: the one extra encode a switch costs. Returns whether it switched.
template <typename T>
bool SwitchIfSmaller(FloatEncoding encoding, std::span<const T> values, const AlpRdPlan& rd,
                     SeriesHint& hint, Workspace& ws, std::span<std::uint8_t> out,
                     std::size_t* bytes, FloatEncoding* written) {
  // A switch must win clearly, so that a series hovering between two encodings does not flip.
  const std::size_t limit =
      std::min(*bytes - *bytes / 32 - 1, DisplacingLimit(*written, encoding, *bytes));
  FloatEncoding candidate = encoding;
  std::size_t candidate_bytes = 0;
  switch (encoding) {
    case FloatEncoding::kGorilla: candidate_bytes = GorillaIntoScratch(values, ws, limit); break;
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws, 1e9, /*for_encode=*/true);
      candidate_bytes = EncodeAlp<T, false>(values, alp.exponent, alp.factor, AlpMode::kSmaller,
                                            ws, std::span<std::uint8_t>(ws.bytes, limit),
                                            &candidate);
      break;
    }
    case FloatEncoding::kAlpRd:
      candidate_bytes =
          EncodeAlpRd<T, false>(values, rd, ws, std::span<std::uint8_t>(ws.bytes, limit));
      break;
    case FloatEncoding::kXorGroups:
      candidate_bytes =
          EncodeXorGroups<T, false>(values, std::span<std::uint8_t>(ws.bytes, limit));
      break;
    case FloatEncoding::kConstant:
    case FloatEncoding::kRaw:
    case FloatEncoding::kAlpZstd: break;
  }
  if (candidate_bytes == 0) return false;
  std::memcpy(out.data(), ws.bytes, candidate_bytes);
  if (candidate == FloatEncoding::kAlpRd) hint.rd_right_bits = rd.right_bits;
  hint.runner_up_encoding = static_cast<std::uint8_t>(*written);
  hint.runner_up_bytes = ClampBytes(*bytes);
  *bytes = candidate_bytes;
  *written = candidate;
  return true;
}

// After the remembered encoder wrote the block: decides from samples whether another encoding
// should take over, and writes that one (the only second encode) only when it does. Every block
// past the gap checks the strongest rival of the series' encoding on a sample; a block that grew
// well beyond the size of the last comparison also estimates ALP-RD; the runner-up's exact size on
// an earlier block counts like an estimate. A switch needs a clear margin (and a real encode
// that confirms it), and after a comparison a gap of blocks runs one encoder only, so that a
// series hovering between two encodings neither flips nor compares on every block.
template <typename T>
EncodeResult ReviewRemembered(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                              std::span<std::uint8_t> out, std::size_t bytes,
                              FloatEncoding written) {
  const std::size_t n = values.size();
  const std::size_t base = hint.last_bytes;
  const bool grew = bytes > base + base / 8;
  FloatEncoding best = written;
  std::size_t best_estimate = bytes - bytes / 16;
  // A sample estimate must win by a margin, and by an eighth to displace a faster encoding with
  // Gorilla (DisplacingLimit).
  auto beats = [&](FloatEncoding candidate, std::size_t estimate) {
    return estimate < best_estimate &&
           estimate < DisplacingLimit(written, candidate, bytes);
  };
  AlpRdPlan rd;
  auto weigh = [&](FloatEncoding candidate) {
    const std::size_t estimate = EstimateCandidate(candidate, values, hint, ws, &rd);
    if (beats(candidate, estimate)) {
      best = candidate;
      best_estimate = estimate;
    }
  };
  const FloatEncoding last = static_cast<FloatEncoding>(hint.last_encoding);
  // Behind a slow encoder, ALP's estimate runs on every fourth block (or when the block grew):
  // on real doubles it tries every hint pair, a cost that adds up over a series' blocks. An
  // estimate of more than twice the block (values that are not decimals at all) pauses the
  // estimates for a while.
  if (hint.alp_pause_blocks > 0) {
    --hint.alp_pause_blocks;
  } else if (!IsAlpFamily(last) && (grew || hint.blocks_since_choice % 4 == 0)) {
    std::size_t estimate = EstimateAlpWithHint(values, hint);
    if (estimate > bytes - bytes / 16) {
      // Not winning, perhaps only because the hint's pairs are stale: the series left ALP and
      // came back with another precision, where the old pairs give all exceptions or fit with
      // far too wide integers. The pairs are searched again from nothing, on samples only (as a
      // first block is), and replace the hint's when they estimate smaller.
      SeriesHint fresh;
      (void)SearchAlpExponents(values, fresh, ws,
                               static_cast<double>(bytes) * 8 / static_cast<double>(n),
                               /*for_encode=*/true);
      const std::size_t fresh_estimate = EstimateAlpWithHint(values, fresh);
      if (fresh_estimate < estimate) {
        std::copy(fresh.exponent, fresh.exponent + SeriesHint::kPairs, hint.exponent);
        std::copy(fresh.factor, fresh.factor + SeriesHint::kPairs, hint.factor);
        hint.blocks_since_search = 0;
        estimate = fresh_estimate;
      }
    }
    if (estimate > 2 * bytes) {
      hint.alp_pause_blocks = kAlpPauseBlocks;
    } else if (estimate > bytes + bytes / 4) {
      hint.alp_pause_blocks = kAlpPauseBlocks / 4;
    }
    if (beats(FloatEncoding::kAlp, estimate)) {
      best = FloatEncoding::kAlp;
      best_estimate = estimate;
    }
  }
  // Grouped XOR stands for the XOR encodings here: it is smaller than Gorilla on most blocks and
  // cheap to estimate; Gorilla itself is weighed in the exact comparisons only.
  if (last != FloatEncoding::kXorGroups) weigh(FloatEncoding::kXorGroups);
  // ALP-RD only pays when nothing shrinks the block below its floor; its plan costs a sort.
  if (grew && hint.blocks_since_choice >= 2 * kMinComparisonGapBlocks &&
      last != FloatEncoding::kAlpRd &&
      AlpRdFloorBytes<T>(n) < DisplacingLimit(written, FloatEncoding::kAlpRd, bytes)) {
    weigh(FloatEncoding::kAlpRd);
  }
  // A 32-value window misjudges Gorilla on bursty series: a win is confirmed on a wider window
  // before it costs a real encode.
  if (best == FloatEncoding::kGorilla && written != FloatEncoding::kGorilla &&
      EstimateGorilla(values, kGorillaWindow) >= bytes - bytes / 16) {
    best = written;
  }
  // Grouped XOR's window can miss the same way; its whole-block dry run is cheap.
  if (best == FloatEncoding::kXorGroups && written != FloatEncoding::kXorGroups &&
      EncodeXorGroups<T, true>(values, {}) >= bytes - bytes / 16) {
    best = written;
  }
  const auto runner_up = static_cast<FloatEncoding>(hint.runner_up_encoding);
  const std::size_t runner_up_bytes = hint.runner_up_bytes;
  if (IsSticky(runner_up) && runner_up != FloatEncoding::kRaw &&
      runner_up != FloatEncoding::kAlpRd &&
      !(runner_up == written || (IsAlpFamily(runner_up) && IsAlpFamily(written))) &&
      beats(runner_up, runner_up_bytes)) {
    // The runner-up's exact size on an earlier block beats this block and every estimate: worth
    // one real encode.
    best = runner_up;
  }
  const bool attempted = best != written;
  if (attempted && !SwitchIfSmaller(best, values, rd, hint, ws, out, &bytes, &written)) {
    // It lost, so it is at least about this block's size: remembered as the runner-up, and the
    // gap below keeps the next blocks from trying it again at once.
    hint.runner_up_encoding = static_cast<std::uint8_t>(best);
    hint.runner_up_bytes = ClampBytes(bytes);
  }
  if (grew || attempted) {
    hint.last_bytes = ClampBytes(bytes);
    hint.blocks_since_choice = 0;
  }
  if (attempted && written == best && !IsAlpFamily(written)) {
    // Switched to a slower encoder: the next block may already go back to the cheaper one (its
    // exact size is the runner-up now), so no gap. A series whose blocks alternate then settles
    // on ALP's side, which also encodes and decodes several times faster.
    hint.blocks_since_choice = kMinComparisonGapBlocks - 1;
  }
  return {bytes, written};
}

// The choice for a series' first block, which must cost about one encode: every candidate is
// judged on samples and windows only, the best estimate is written, and the runner-up is written
// too (into scratch, kept when smaller) only when its estimate comes within a thirty-second of
// the size written. Gorilla, the slowest encoder, is ranked with an eighth added, as it must save
// that much to displace the others. Later blocks correct a near miss: the review compares the
// candidates again on their own samples, and the first exact comparison comes soon after.
template <typename T>
EncodeResult ChooseFirstBlock(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                              std::span<std::uint8_t> out) {
  const std::size_t n = values.size();
  const std::size_t raw_bytes = kBlockHeaderBytes + n * sizeof(T);
  const std::span<std::uint8_t> bounded = out.first(std::min(out.size(), raw_bytes));
  struct Option {
    FloatEncoding encoding;
    std::size_t rank;  // the estimate, plus a handicap for a slower encoder
  };
  Option options[4];
  int count = 0;
  const std::size_t gorilla = EstimateGorilla(values, kGorillaCheckWindow);
  const std::size_t xor_groups = EstimateXorGroups(values, kXorCheckWindow);
  const std::size_t rival = std::min({gorilla, xor_groups, raw_bytes});
  const AlpChoice alp = SearchAlpExponents(
      values, hint, ws, static_cast<double>(rival) * 8 / static_cast<double>(n),
      /*for_encode=*/true);
  const std::size_t alp_estimate = EstimateAlpWithHint(values, hint);
  options[count++] = {FloatEncoding::kAlp, alp_estimate};
  options[count++] = {FloatEncoding::kXorGroups, xor_groups};
  options[count++] = {FloatEncoding::kGorilla, gorilla + gorilla / 8};
  AlpRdPlan rd;
  if (AlpRdFloorBytes<T>(n) < std::min({alp_estimate, xor_groups, gorilla})) {
    options[count++] = {FloatEncoding::kAlpRd,
                        EstimateCandidate(FloatEncoding::kAlpRd, values, hint, ws, &rd)};
  }
  // Insertion sort, stable: on equal ranks the faster encoder listed first wins.
  for (int k = 1; k < count; ++k) {
    for (int m = k; m > 0 && options[m].rank < options[m - 1].rank; --m) {
      std::swap(options[m], options[m - 1]);
    }
  }
  FloatEncoding written = FloatEncoding::kRaw;
  std::size_t bytes = 0;
  int next = 0;
  for (; next < count && bytes == 0; ++next) {
    if (options[next].rank >= raw_bytes) break;
    bytes = EncodeCandidate(options[next].encoding, values, alp, rd, ws, bounded, &written);
  }
  FloatEncoding runner_up = FloatEncoding::kRaw;
  std::size_t runner_up_bytes = 0;
  // Gorilla's and grouped XOR's estimates come from windows in the middle of the block: when the
  // one written came out far from its estimate, the other is off the same way (a block whose
  // middle is calmer or busier than the rest), and is judged with the same correction.
  auto windowed = [](FloatEncoding e) {
    return e == FloatEncoding::kGorilla || e == FloatEncoding::kXorGroups;
  };
  std::size_t runner_up_rank = next < count ? options[next].rank : SIZE_MAX;
  if (bytes != 0 && next < count && windowed(written) && windowed(options[next].encoding) &&
      options[next - 1].rank != 0) {
    runner_up_rank = static_cast<std::size_t>(static_cast<double>(runner_up_rank) *
                                              static_cast<double>(bytes) /
                                              static_cast<double>(options[next - 1].rank));
  }
  if (bytes != 0 && next < count && runner_up_rank < bytes + bytes / 32) {
    const FloatEncoding encoding = options[next].encoding;
    const std::size_t limit = DisplacingLimit(written, encoding, bytes);
    FloatEncoding candidate = encoding;
    std::size_t candidate_bytes = 0;
    if (encoding == FloatEncoding::kGorilla) {
      candidate_bytes = GorillaIntoScratch(values, ws, limit);
    } else {
      candidate_bytes = EncodeCandidate(encoding, values, alp, rd, ws,
                                        std::span<std::uint8_t>(ws.bytes, limit), &candidate);
    }
    if (candidate_bytes != 0 && candidate_bytes < bytes) {
      std::memcpy(out.data(), ws.bytes, candidate_bytes);
      runner_up = written;
      runner_up_bytes = bytes;
      bytes = candidate_bytes;
      written = candidate;
    } else if (candidate_bytes != 0) {
      runner_up = candidate;
      runner_up_bytes = candidate_bytes;
    }
  }
  if (bytes == 0) {
    bytes = EncodeRaw(values, out);
    written = FloatEncoding::kRaw;
  }
  if (written == FloatEncoding::kAlpRd) hint.rd_right_bits = rd.right_bits;
  hint.last_bytes = ClampBytes(n == kBlockCapacity ? bytes : 0);
  hint.blocks_since_choice = 0;
  const bool has_runner_up = runner_up_bytes != 0 && written != FloatEncoding::kRaw;
  hint.runner_up_encoding = has_runner_up ? static_cast<std::uint8_t>(runner_up)
                                          : SeriesHint::kNoEncoding;
  hint.runner_up_bytes = ClampBytes(runner_up_bytes);
  return {bytes, written};
}

template <typename T>
EncodeResult EncodeAdaptive(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                            std::span<std::uint8_t> out) {
  const std::size_t n = values.size();
  auto finish = [&](EncodeResult r) {
    hint.last_encoding = static_cast<std::uint8_t>(r.encoding);
    return r;
  };
  const auto last = static_cast<FloatEncoding>(hint.last_encoding);
  const bool rd_ok = last != FloatEncoding::kAlpRd ||
                     (hint.rd_right_bits >= sizeof(T) * 8 - kAlpRdMaxLeftBits &&
                      hint.rd_right_bits < sizeof(T) * 8);
  FloatEncoding too_big = FloatEncoding::kRaw;
  if (n == kBlockCapacity && hint.last_bytes != 0 && IsSticky(last) && rd_ok) {
    // The common case: the series keeps its shape, so its last encoding is written directly and
    // the others are only checked on samples. Gorilla notices a constant block itself, which
    // saves the separate scan.
    if (last != FloatEncoding::kGorilla && IsConstantBlock(values)) {
      return finish({EncodeConstant(values, out), FloatEncoding::kConstant});
    }
    FloatEncoding written;
    bool varies;
    const std::size_t bytes = EncodeRemembered(last, values, hint, ws, out, &written, &varies);
    if (!varies) return finish({EncodeConstant(values, out), FloatEncoding::kConstant});
    if (bytes != 0) {
      ++hint.blocks_since_choice;
      if (hint.blocks_since_choice >= kRecheckIntervalBlocks) {
        return finish(ChooseAndEncode(values, hint, ws, out, written, bytes));
      }
      if (hint.blocks_since_choice < kMinComparisonGapBlocks) return finish({bytes, written});
      return finish(ReviewRemembered(values, hint, ws, out, bytes, written));
    }
    too_big = last;
  } else if (IsConstantBlock(values)) {
    return finish({EncodeConstant(values, out), FloatEncoding::kConstant});
  } else if (const std::size_t bytes = EncodeNearConstant(values, hint, ws, out); bytes != 0) {
    hint.last_bytes = ClampBytes(n == kBlockCapacity ? bytes : 0);
    hint.blocks_since_choice = 0;
    hint.runner_up_encoding = SeriesHint::kNoEncoding;
    hint.runner_up_bytes = 0;
    return finish({bytes, FloatEncoding::kAlp});
  }
  if (hint.last_encoding == SeriesHint::kNoEncoding) {
    return finish(ChooseFirstBlock(values, hint, ws, out));
  }
  return finish(ChooseAndEncode(values, hint, ws, out, FloatEncoding::kRaw, 0, too_big));
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
    case FloatEncoding::kXorGroups: bytes = EncodeXorGroups<T, false>(values, bounded); break;
    case FloatEncoding::kAlpZstd: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws, 1e9, /*for_encode=*/true);
      bytes = EncodeAlpZstd<T>(values, alp.exponent, alp.factor, ws, bounded);
      break;
    }
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
    case FloatEncoding::kXorGroups: return "xor_groups";
    case FloatEncoding::kAlpZstd: return "alp_zstd";
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

EncodeResult EncodeDoublesCompact(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                                  std::span<std::uint8_t> out) noexcept {
  const EncodeResult chosen = EncodeDoubles(values, hint, ws, out);
  if (chosen.encoding == FloatEncoding::kConstant || chosen.bytes <= kAlpZstdHeaderBytes) {
    return chosen;
  }
  // The chooser's search left the block's best exponent/factor pairs in the hint.
  const AlpChoice alp = SearchAlpExponents(values, hint, ws, 1e9, /*for_encode=*/true);
  const std::size_t room = std::min(chosen.bytes - 1, sizeof ws.bytes);
  const std::size_t bytes =
      EncodeAlpZstd<double>(values, alp.exponent, alp.factor, ws, std::span(ws.bytes, room));
  if (bytes == 0 || bytes >= chosen.bytes) return chosen;
  std::memcpy(out.data(), ws.bytes, bytes);
  return {bytes, FloatEncoding::kAlpZstd};
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
  template std::size_t EncodeGorilla<T, DRY>(std::span<const T>, std::span<std::uint8_t>) noexcept; \
  template std::size_t EncodeXorGroups<T, DRY>(std::span<const T>, std::span<std::uint8_t>) noexcept;
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
