// The adaptive chooser behind EncodeDoubles/EncodeFloats, and the codec's public encode entry
// points. It picks one of the encoders of float_compress.cc per block: a series' first block from
// sample estimates, later blocks with the series' remembered encoding and a sample review, and an
// exact comparison of every candidate every kRecheckIntervalBlocks blocks.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "codec/alp_constants.h"
#include "codec/bit_packing.h"
#include "codec/float_encoders_internal.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/lane_ops.h"

namespace ingot::codec {
namespace {

// ---- The chooser's rules -------------------------------------------------------------------
// Margins are fractions of a block's size, written as divisors: `bytes + bytes / kX` is one X-th
// above `bytes`, in integer arithmetic.

// Full blocks of a series written with the remembered encoding alone before every candidate is
// compared exactly again (written, not estimated: this catches what the samples miss).
constexpr std::uint8_t kRecheckIntervalBlocks = 64;
// Blocks after a comparison before the next one may run or switch the encoding. Series whose
// sizes swing from block to block (a sine wave whose period spans a few blocks, prices that
// alternate between decimal and noisy stretches) would otherwise compare on nearly every block.
constexpr std::uint8_t kMinComparisonGapBlocks = 2;
// Blocks without ALP estimates after one came out at more than twice the block written.
constexpr std::uint8_t kAlpPauseBlocks = 16;
// An ALP estimate more than this many times the block's size (values that are not decimals at
// all) pauses ALP's estimates for kAlpPauseBlocks.
constexpr std::size_t kAlpPauseRatio = 2;
// An ALP estimate more than a quarter above the block written (behind, but not hopelessly) pauses
// the estimates for a quarter as long.
constexpr std::size_t kAlpShortPauseDivisor = 4;
constexpr std::uint8_t kAlpShortPauseBlocks = kAlpPauseBlocks / 4;
// Within the gap after a comparison, behind an encoding other than ALP, ALP's sample estimate must
// undercut the block by this share (a quarter) to cost an encode: a counter reset sends one block
// to grouped XOR, and the next one is ALP's by far.
constexpr std::size_t kGapWinDivisor = 4;
// Values in the window that estimates Gorilla's size on the fast path (in the exact comparison:
// kGorillaWindow).
constexpr std::size_t kGorillaCheckWindow = 32;
// Values in the window that estimates Gorilla's and ALP-RD's sizes in the exact comparison, and
// confirms a Gorilla win of the fast path: a 32-value window misjudges bursty series.
constexpr std::size_t kGorillaWindow = 128;
// Values (whole groups) in the window that estimates grouped XOR's size on the fast path.
constexpr std::size_t kXorCheckWindow = 64;
// Values per chunk that ListDifferent checks with one OR of XORs before it looks at single
// values: a block with a handful of odd values then costs one vector pass.
constexpr std::size_t kDifferenceChunkValues = 64;
// Gorilla encodes and decodes several times slower than ALP-RD and grouped XOR, so it must be an
// eighth smaller to displace them; a first block ranks Gorilla's estimate with the same handicap.
constexpr std::size_t kGorillaDisplaceDivisor = 8;
// In an exact comparison, a candidate whose sample estimate is more than a quarter above the
// smallest block written so far is not written: every write is a whole encode.
constexpr std::size_t kCloseEstimateDivisor = 4;
// In an exact comparison ALP is written unless its sample estimate is more than a quarter above
// the best rival's: samples miss outliers and the exact effect of delta coding.
constexpr std::size_t kAlpCloseDivisor = 4;
// In an exact comparison against ALP or raw, Gorilla (the slowest encoder) is written only when
// its estimate is at most a sixteenth above the smallest block so far: a near call.
constexpr std::size_t kGorillaNearCallDivisor = 16;
// On a series' first block the runner-up estimate is written too (into scratch) only when it is
// within a thirty-second of the size written: the first block must cost about one encode.
constexpr std::size_t kFirstBlockRunnerUpDivisor = 32;
// In the review, a sample estimate must be a sixteenth below the block written to count as a win,
// and a win on a window must hold by the same margin on the wider check.
constexpr std::size_t kReviewMarginDivisor = 16;
// A block more than an eighth larger than at the last comparison has grown: the review weighs
// ALP-RD too, and the block's size becomes the new reference.
constexpr std::size_t kGrowthDivisor = 8;
// A switch after the review must save a thirty-second of the block, so that a series hovering
// between two encodings does not flip.
constexpr std::size_t kSwitchMarginDivisor = 32;
// The review weighs ALP-RD (its plan costs a sort) only on a grown block at least this many
// blocks after the last comparison.
constexpr std::uint8_t kAlpRdReviewGapBlocks = 2 * kMinComparisonGapBlocks;
// The rival size (bits per value) given to the exponent search when no other encoding competes:
// larger than any block, so ALP never counts as far behind.
constexpr double kNoRival = 1e9;
// Bytes beyond the values that every output span holds (MaxEncodedFloatBytes): the block header
// and room past a raw block, which lets the remembered Gorilla encoder's fast writer write
// straight into the caller's span.
constexpr std::size_t kEncodedSlackBytes = 16;

// Positions of the values whose bits differ from `ref`, into ws.positions; stops past `cap` and
// returns the count (cap + 1 when there are more). 64-value chunks are checked with an OR of
// XORs first (it vectorizes), so a block with a handful of odd values costs one vector pass.
template <typename T>
std::size_t ListDifferent(std::span<const T> values, BitsOf<T> ref, std::size_t cap,
                          Workspace& ws) {
  const std::size_t n = values.size();
  std::size_t k = 0;
  for (std::size_t start = 0; start < n; start += kDifferenceChunkValues) {
    const std::size_t end = std::min(n, start + kDifferenceChunkValues);
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
  p[kAlpExponentOffset] = static_cast<std::uint8_t>(exponent);
  p[kAlpFactorOffset] = static_cast<std::uint8_t>(factor);
  p[kAlpWidthOffset] = 0;
  StoreLe<std::uint16_t>(p + kAlpExceptionCountOffset, static_cast<std::uint16_t>(k));
  StoreLe<std::int64_t>(p + kAlpBaseOffset, integer);
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
      return EncodeAlp<T, false>(values, alp.exponent, alp.factor, alp.mode, ws, out,
                                 written);
    case FloatEncoding::kAlpRd: return EncodeAlpRd<T, false>(values, rd, ws, out);
    case FloatEncoding::kGorilla: return EncodeGorilla<T, false>(values, out);
    case FloatEncoding::kXorGroups: return EncodeXorGroups<T, false>(values, out);
    case FloatEncoding::kConstant: return EncodeConstant(values, out);
    case FloatEncoding::kRaw: return EncodeRaw(values, out);
    case FloatEncoding::kAlpZstd:  // the compact encodings are not candidates of the chooser
    case FloatEncoding::kDictionary:
    case FloatEncoding::kAlpRadix:
    case FloatEncoding::kAlpRice:
    case FloatEncoding::kAlpHuffman:
    case FloatEncoding::kAlpRanked:
      break;
  }
  return 0;
}

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
  return to_slower ? bytes - bytes / kGorillaDisplaceDivisor : bytes - 1;
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
// the middle of the block, or `eighth` eighths (<= 8) of the way into it.
template <typename T>
std::size_t EstimateXorGroups(std::span<const T> values, std::size_t window,
                              std::size_t eighth = 4) {
  const std::size_t n = values.size();
  if (n <= window + 1) return EncodeXorGroups<T, true>(values, {});
  const std::size_t fixed_window = kBlockHeaderBytes + sizeof(T) +
                                   (window / kXorGroupValues) * kXorDescriptorBytes;
  const std::size_t start = (n - window - 1) * eighth / 8;
  const std::size_t xor_window = EncodeXorGroups<T, true>(values.subspan(start, window + 1), {});
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
  auto close = [&](std::size_t estimate) {
    return bytes == 0 || estimate < bytes + bytes / kCloseEstimateDivisor;
  };
  if (!(known_bytes != 0 && IsAlpFamily(known)) && !IsAlpFamily(too_big)) {
    // Samples miss outliers and the exact effect of delta coding: only a wide miss skips ALP.
    const std::size_t alp_estimate = EstimateAlpWithHint(values, hint);
    hint.alp_pause_blocks = alp_estimate > kAlpPauseRatio * rival_bytes ? kAlpPauseBlocks : 0;
    if (alp_estimate < rival_bytes + rival_bytes / kAlpCloseDivisor) {
      consider(FloatEncoding::kAlp);
    }
  }
  if (!xor_known && !xor_too_big && (bytes == 0 || xor_bytes < bytes)) {
    consider(FloatEncoding::kXorGroups);
  }
  if (!gorilla_known && !gorilla_too_big) {
    // Gorilla is the slowest encoder: written only when its estimate is a near call against ALP
    // or raw, and a clear win against the other XOR encodings.
    const bool near_call = bytes == 0 || IsAlpFamily(written) || written == FloatEncoding::kRaw;
    const std::size_t gate =
        near_call ? bytes + bytes / kGorillaNearCallDivisor
                  : DisplacingLimit(written, FloatEncoding::kGorilla, bytes);
    if (bytes == 0 || gorilla_estimate < gate) consider(FloatEncoding::kGorilla);
  }
  // ALP-RD only pays when ALP cannot turn most values into narrow integers.
  if ((bytes == 0 ||
       AlpRdFloorBytes<T>(n) < DisplacingLimit(written, FloatEncoding::kAlpRd, bytes)) &&
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
  hint.runner_up_encoding =
      has_runner_up ? static_cast<std::uint8_t>(runner_up) : SeriesHint::kNoEncoding;
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
    case FloatEncoding::kAlpZstd:
    case FloatEncoding::kDictionary:
    case FloatEncoding::kAlpRadix:
    case FloatEncoding::kAlpRice:
    case FloatEncoding::kAlpHuffman:
    case FloatEncoding::kAlpRanked:
      break;
  }
  return 0;
}

// A sample estimate of `encoding`'s size for the block (dry runs over samples and windows only,
// never a pass over every value); SIZE_MAX when it does not apply. `rd` receives ALP-RD's plan.
template <typename T>
std::size_t EstimateCandidate(FloatEncoding encoding, std::span<const T> values,
                              const SeriesHint& hint, Workspace& ws, AlpRdPlan* rd,
                              std::size_t rival_bytes = SIZE_MAX) {
  const std::size_t n = values.size();
  switch (encoding) {
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: return EstimateAlpWithHint(values, hint);
    case FloatEncoding::kGorilla: return EstimateGorilla(values, kGorillaCheckWindow);
    case FloatEncoding::kXorGroups: return EstimateXorGroups(values, kXorCheckWindow);
    case FloatEncoding::kAlpRd: {
      *rd = AnalyzeAlpRd(values, rival_bytes == SIZE_MAX ? SIZE_MAX : rival_bytes * 8 / n);
      const std::size_t window = std::min(n, kGorillaCheckWindow);
      const std::size_t fixed = kAlpRdHeaderBytes + 2 * rd->dictionary_size;
      const std::size_t rd_window =
          EncodeAlpRd<T, true>(values.subspan((n - window) / 2, window), *rd, ws, {});
      return fixed + (rd_window - fixed) * n / window;
    }
    case FloatEncoding::kConstant:
    case FloatEncoding::kRaw:
    case FloatEncoding::kAlpZstd:
    case FloatEncoding::kDictionary:
    case FloatEncoding::kAlpRadix:
    case FloatEncoding::kAlpRice:
    case FloatEncoding::kAlpHuffman:
    case FloatEncoding::kAlpRanked:
      break;
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
      std::min(*bytes - *bytes / kSwitchMarginDivisor - 1,
               DisplacingLimit(*written, encoding, *bytes));
  FloatEncoding candidate = encoding;
  std::size_t candidate_bytes = 0;
  switch (encoding) {
    case FloatEncoding::kGorilla: candidate_bytes = GorillaIntoScratch(values, ws, limit); break;
    case FloatEncoding::kAlp:
    case FloatEncoding::kAlpDelta: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws, kNoRival, /*for_encode=*/true);
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
    case FloatEncoding::kAlpZstd:
    case FloatEncoding::kDictionary:
    case FloatEncoding::kAlpRadix:
    case FloatEncoding::kAlpRice:
    case FloatEncoding::kAlpHuffman:
    case FloatEncoding::kAlpRanked:
      break;
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
                              FloatEncoding written, bool in_gap) {
  const std::size_t n = values.size();
  const std::size_t base = hint.last_bytes;
  const bool grew = bytes > base + base / kGrowthDivisor;
  FloatEncoding best = written;
  // Within the gap only a clear win (a quarter of the block) is worth an encode.
  std::size_t best_estimate = bytes - bytes / (in_gap ? kGapWinDivisor : kReviewMarginDivisor);
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
  // Behind a slow encoder, ALP's estimate runs on every block: a sample costs a few percent of
  // the block's encode, and a series that left ALP for one block (a counter reset, whose one
  // wide delta widens every other) should not stay on the slower, larger encoding. On real
  // doubles it tries every hint pair, so an estimate of more than twice the block (values that
  // are not decimals at all) pauses the estimates for a while, and one more than a quarter above
  // the block pauses them for a few blocks.
  if (hint.alp_pause_blocks > 0) {
    --hint.alp_pause_blocks;
  } else if (!IsAlpFamily(last)) {
    std::size_t estimate = EstimateAlpWithHint(values, hint);
    if (estimate > bytes - bytes / kReviewMarginDivisor) {
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
    if (estimate > kAlpPauseRatio * bytes) {
      hint.alp_pause_blocks = kAlpPauseBlocks;
    } else if (estimate > bytes + bytes / kAlpShortPauseDivisor) {
      hint.alp_pause_blocks = kAlpShortPauseBlocks;
    }
    if (beats(FloatEncoding::kAlp, estimate)) {
      best = FloatEncoding::kAlp;
      best_estimate = estimate;
    }
  }
  // Grouped XOR stands for the XOR encodings here: it is smaller than Gorilla on most blocks and
  // cheap to estimate; Gorilla itself is weighed in the exact comparisons only. Within the gap
  // after a comparison, ALP (above) is the only candidate.
  if (!in_gap && last != FloatEncoding::kXorGroups) weigh(FloatEncoding::kXorGroups);
  // ALP-RD only pays when nothing shrinks the block below its floor; its plan costs a sort.
  if (!in_gap && grew && hint.blocks_since_choice >= kAlpRdReviewGapBlocks &&
      last != FloatEncoding::kAlpRd &&
      AlpRdFloorBytes<T>(n) < DisplacingLimit(written, FloatEncoding::kAlpRd, bytes)) {
    weigh(FloatEncoding::kAlpRd);
  }
  // A 32-value window misjudges Gorilla on bursty series: a win is confirmed on a wider window
  // before it costs a real encode.
  if (best == FloatEncoding::kGorilla && written != FloatEncoding::kGorilla &&
      EstimateGorilla(values, kGorillaWindow) >= bytes - bytes / kReviewMarginDivisor) {
    best = written;
  }
  // Grouped XOR's window can miss the same way: a second window, an eighth into the block, must
  // agree before the whole-block dry run (on food prices the first window won wrongly in four of
  // five reviews that reached the dry run, which then cost a sixth of the encode).
  if (best == FloatEncoding::kXorGroups && written != FloatEncoding::kXorGroups &&
      (EstimateXorGroups(values, kXorCheckWindow, 1) >= bytes - bytes / kReviewMarginDivisor ||
       EncodeXorGroups<T, true>(values, {}) >= bytes - bytes / kReviewMarginDivisor)) {
    best = written;
  }
  const auto runner_up = static_cast<FloatEncoding>(hint.runner_up_encoding);
  const std::size_t runner_up_bytes = hint.runner_up_bytes;
  if (!in_gap && IsSticky(runner_up) && runner_up != FloatEncoding::kRaw &&
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
    // gap below keeps the next blocks from trying it again at once (and a miss within the gap
    // pauses ALP's estimates for a few blocks, so a sample that keeps misjudging costs no more
    // encodes).
    hint.runner_up_encoding = static_cast<std::uint8_t>(best);
    hint.runner_up_bytes = ClampBytes(bytes);
    if (in_gap) hint.alp_pause_blocks = kAlpShortPauseBlocks;
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
  AlpChoice alp = SearchAlpExponents(
      values, hint, ws, static_cast<double>(rival) * 8 / static_cast<double>(n),
      /*for_encode=*/true);
  // Blocks whose neighbours are far apart (counts, prices that jump) skip the delta pass. The
  // search's own estimate, on a sample twice as wide, serves when it has one: the hint's 32-value
  // estimate missed cms9's exceptions by a third (912 bytes against 1,316), which wrote ALP and
  // then grouped XOR, both, where XOR alone was the choice.
  const std::size_t alp_estimate =
      alp.sampled_bits_per_value > 0
          ? kAlpHeaderBytes +
                static_cast<std::size_t>(alp.sampled_bits_per_value * static_cast<double>(n) / 8)
          : EstimateAlpWithHint(values, hint, &alp.mode);
  options[count++] = {FloatEncoding::kAlp, alp_estimate};
  options[count++] = {FloatEncoding::kXorGroups, xor_groups};
  options[count++] = {FloatEncoding::kGorilla, gorilla + gorilla / kGorillaDisplaceDivisor};
  AlpRdPlan rd;
  if (const std::size_t best = std::min({alp_estimate, xor_groups, gorilla});
      AlpRdFloorBytes<T>(n) < best) {
    options[count++] = {FloatEncoding::kAlpRd,
                        EstimateCandidate(FloatEncoding::kAlpRd, values, hint, ws, &rd, best)};
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
  if (bytes != 0 && next < count && runner_up_rank < bytes + bytes / kFirstBlockRunnerUpDivisor) {
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
      // Within the gap after a comparison only a clear ALP win behind another encoder is looked
      // for (a counter reset sends one block to grouped XOR; the next is ALP's again).
      const bool in_gap = hint.blocks_since_choice < kMinComparisonGapBlocks;
      if (in_gap && (IsAlpFamily(written) || hint.alp_pause_blocks > 0)) {
        return finish({bytes, written});
      }
      return finish(ReviewRemembered(values, hint, ws, out, bytes, written, in_gap));
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

// One of the compact ALP encodings (kAlpZstd, kAlpRice, kAlpRadix) with a chosen pair; 0 when it
// cannot represent the block or does not fit in `out`.
template <typename T>
std::size_t EncodeCompactAlp(FloatEncoding encoding, std::span<const T> values,
                             const AlpChoice& alp, Workspace& ws, std::span<std::uint8_t> out) {
  switch (encoding) {
    case FloatEncoding::kAlpZstd: return EncodeAlpZstd<T>(values, alp.exponent, alp.factor, ws, out);
    case FloatEncoding::kAlpRice: return EncodeAlpRice<T>(values, alp.exponent, alp.factor, ws, out);
    case FloatEncoding::kAlpHuffman:
      return EncodeAlpHuffman<T>(values, alp.exponent, alp.factor, ws, out);
    case FloatEncoding::kAlpRanked:
      return EncodeAlpRanked<T>(values, alp.exponent, alp.factor, ws, out);
    default: return EncodeAlpRadix<T>(values, alp.exponent, alp.factor, ws, out);
  }
}

// The share of a block (1/32) that an encoding decoding slower than the best so far must save.
constexpr std::size_t kSlowerDecodeMargin = 32;
// zstd also has to save this many bytes: its frame costs about 1.7 us to decode whatever the
// block holds, so where the block is already small (a run of sentinels with a few other values,
// which ALP writes in ~100 bytes and Gorilla decodes at 0.2 ns a value) a few bytes saved would
// cost a tenfold slower read. A repeating pattern, where zstd's matches pay, saves far more.
constexpr std::size_t kZstdMinSavedBytes = 64;
// ... and this share of the block (a quarter). A frame that saves that much is mostly matches,
// which decode fast; one that saves less is literals and their entropy tables, which decode at
// about Gorilla's speed or slower (dashboard counters: 2.9 ns a value against Gorilla's 1.6 on the
// same blocks, for a tenth of the bytes).
constexpr std::size_t kZstdMarginShare = 4;

// Which compact ALP encodings EncodeAdaptiveOrCompactAlp tries beyond EncodeDoubles' choice.
enum class CompactCandidates {
  kRadix,         // radix digits only (a checkpointed head: cheap to write)
  kFastDecoding,  // radix digits and Rice codes (a dictionary's own block, see below)
  kAll,           // radix digits, Rice codes, ranked bit lengths and zstd (a sealed block)
};

// EncodeDoubles' choice, or ALP as radix digits and, as `candidates` allows, ALP as Rice codes,
// ranked bit lengths or through zstd, when one of them is smaller. With radix digits only, only an
// ALP choice is tried again: the search of a block that the chooser did not write as ALP is not
// repeated for the cheap candidate.
EncodeResult EncodeAdaptiveOrCompactAlp(std::span<const double> values, SeriesHint& hint,
                                        Workspace& ws, std::span<std::uint8_t> out,
                                        CompactCandidates candidates) {
  const bool with_entropy = candidates != CompactCandidates::kRadix;
  const EncodeResult chosen = EncodeAdaptive(values, hint, ws, out);
  if (chosen.encoding == FloatEncoding::kConstant || chosen.bytes <= kAlpRadixHeaderBytes) {
    return chosen;
  }
  if (!with_entropy && chosen.encoding != FloatEncoding::kAlp &&
      chosen.encoding != FloatEncoding::kAlpDelta) {
    return chosen;
  }
  // The chooser's search left the block's best exponent/factor pairs in the hint.
  const AlpChoice alp = SearchAlpExponents(values, hint, ws, kNoRival, /*for_encode=*/true);
  EncodeResult best = chosen;
  // Each candidate goes to ws.bytes, bounded by the best so far, and replaces it when it fits.
  // One that decodes slower than those before it (ranked bit lengths about 1.4 times Rice's time,
  // zstd several times theirs) must also save kSlowerDecodeMargin of the block, and zstd at least
  // kZstdMinSavedBytes. Huffman codes of the bit lengths (kAlpHuffman) are no longer written:
  // ranked bit lengths take as many bytes and decode 1.6-1.8 times faster (docs/codec-format.md).
  const auto consider = [&](FloatEncoding encoding, bool slower, std::size_t min_saved = 0) {
    const std::size_t margin =
        std::max(slower ? best.bytes / kSlowerDecodeMargin : 0, min_saved);
    if (margin + 1 >= best.bytes) return;
    const std::size_t room = std::min(best.bytes - 1 - margin, sizeof ws.bytes);
    const std::span<std::uint8_t> scratch(ws.bytes, room);
    const std::size_t bytes = EncodeCompactAlp(encoding, values, alp, ws, scratch);
    if (bytes == 0 || bytes >= best.bytes) return;
    std::memcpy(out.data(), ws.bytes, bytes);
    best = {bytes, encoding};
  };
  consider(FloatEncoding::kAlpRadix, false);
  if (!with_entropy) return best;
  consider(FloatEncoding::kAlpRice, false);
  if (candidates == CompactCandidates::kFastDecoding) return best;
  consider(FloatEncoding::kAlpRanked, true);
  consider(FloatEncoding::kAlpZstd, true,
           std::max(kZstdMinSavedBytes, best.bytes / kZstdMarginShare));
  return best;
}

// The compact encoding without the dictionary.
EncodeResult EncodeWithoutDictionary(std::span<const double> values, SeriesHint& hint,
                                     Workspace& ws, std::span<std::uint8_t> out) {
  return EncodeAdaptiveOrCompactAlp(values, hint, ws, out, CompactCandidates::kAll);
}

// Bytes for a nested dictionary block or a whole dictionary block of a full block of doubles.
constexpr std::size_t kDictionaryBlockRoom = kEncodedSlackBytes + kBlockCapacity * 8;

// A dictionary block into `out` when it fits; 0 otherwise. The dictionary (sorted distinct values)
// is encoded with a fresh hint: for doubles EncodeDoubles' choice, radix digits or Rice codes, for
// floats adaptive. It is sorted and encoded only when the indexes, with a bit per distinct value,
// leave room for it. Huffman codes and zstd are left out of the dictionary's own block: their
// fixed cost (a code table, a frame) is paid whatever the block's length, and this block holds a
// tenth to a half of the values, so they made dictionary blocks decode at 1.3-1.6x Gorilla's
// speed instead of 1.75-2.7x for 0.7-0.8% of the bytes on the row groups (docs/codec-format.md).
template <typename T>
std::size_t EncodeWithDictionary(std::span<const T> values, Workspace& ws,
                                 std::span<std::uint8_t> out) {
  const std::size_t n = values.size();
  alignas(64) T dictionary[kBlockCapacity];
  std::uint16_t indexes[kBlockCapacity];
  const std::span<std::uint16_t> index_span(indexes, n);
  const std::size_t distinct = FindDistinct(values, dictionary, indexes);
  if (distinct == n) return 0;  // no value repeats: the dictionary is the block again
  const std::size_t floor_bytes =
      DictionaryIndexBytes(n, distinct, CountRuns(index_span)) + distinct / 8;
  if (floor_bytes >= out.size()) return 0;
  SortDictionary(dictionary, distinct, index_span);
  alignas(64) std::uint8_t nested[kDictionaryBlockRoom];
  const std::span<const T> sorted(dictionary, distinct);
  SeriesHint fresh;
  EncodeResult block;
  if constexpr (sizeof(T) == 8) {
    block = EncodeAdaptiveOrCompactAlp(sorted, fresh, ws, nested, CompactCandidates::kFastDecoding);
  } else {
    block = EncodeAdaptive(sorted, fresh, ws, std::span<std::uint8_t>(nested));
  }
  return EncodeDictionary(index_span, distinct,
                          std::span<const std::uint8_t>(nested, block.bytes), ws, out);
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
                                  encoding == FloatEncoding::kAlp ? AlpMode::kPlain
                                                                  : AlpMode::kDelta,
                                  ws, bounded, &written);
      break;
    }
    case FloatEncoding::kAlpRd:
      bytes = EncodeAlpRd<T, false>(values, AnalyzeAlpRd(values), ws, bounded);
      break;
    case FloatEncoding::kGorilla: bytes = EncodeGorilla<T, false>(values, bounded); break;
    case FloatEncoding::kXorGroups: bytes = EncodeXorGroups<T, false>(values, bounded); break;
    case FloatEncoding::kAlpZstd:
    case FloatEncoding::kAlpRadix:
    case FloatEncoding::kAlpRice:
    case FloatEncoding::kAlpHuffman:
    case FloatEncoding::kAlpRanked: {
      const AlpChoice alp = SearchAlpExponents(values, hint, ws, kNoRival, /*for_encode=*/true);
      bytes = EncodeCompactAlp(encoding, values, alp, ws, bounded);
      break;
    }
    case FloatEncoding::kDictionary:
      bytes = EncodeWithDictionary(values, ws, bounded);
      break;
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
    case FloatEncoding::kDictionary: return "dictionary";
    case FloatEncoding::kAlpRadix: return "alp_radix";
    case FloatEncoding::kAlpRice: return "alp_rice";
    case FloatEncoding::kAlpHuffman:
      return "alp_huffman";
    case FloatEncoding::kAlpRanked:
      return "alp_ranked";
  }
  return "unknown";
}

std::size_t MaxEncodedFloatBytes(std::size_t count, std::size_t value_bytes) noexcept {
  return kEncodedSlackBytes + count * value_bytes;
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

EncodeResult EncodeDoublesForHead(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                                  std::span<std::uint8_t> out) noexcept {
  return EncodeAdaptiveOrCompactAlp(values, hint, ws, out, CompactCandidates::kRadix);
}

EncodeResult EncodeDoublesCompact(std::span<const double> values, SeriesHint& hint, Workspace& ws,
                                  std::span<std::uint8_t> out) noexcept {
  const EncodeResult chosen = EncodeWithoutDictionary(values, hint, ws, out);
  if (chosen.encoding == FloatEncoding::kConstant) return chosen;
  alignas(64) std::uint8_t block[kDictionaryBlockRoom];
  const std::size_t bytes =
      EncodeWithDictionary(values, ws, std::span(block, std::min(chosen.bytes - 1, sizeof block)));
  if (bytes == 0) return chosen;
  std::memcpy(out.data(), block, bytes);
  return {bytes, FloatEncoding::kDictionary};
}

EncodeResult EncodeFloatsAs(FloatEncoding encoding, std::span<const float> values,
                            SeriesHint& hint, Workspace& ws,
                            std::span<std::uint8_t> out) noexcept {
  return EncodeForced(encoding, values, hint, ws, out);
}

}  // namespace ingot::codec
