// Analyze phase of the float codec: the exponent/factor search for ALP, the split and dictionary
// for ALP-RD, and the constant check. Everything here looks at a small sample, never at every
// value, except the constant check, which exits at the first difference.
#include <algorithm>
#include <bit>
#include <cstring>

#include "codec/alp_constants.h"
#include "codec/bit_packing.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {
namespace {

using simd::AlpEncodeStats;

constexpr std::size_t kSampleSize = 32;
// A hint is trusted for this many blocks before a full search checks that nothing better exists.
constexpr std::uint8_t kResearchIntervalBlocks = 64;
constexpr std::uint8_t kEmptySlot = 0xff;
// Pairs of the sample ranking that the full block judges exactly.
constexpr int kFinalists = 5;

template <typename T>
std::size_t TakeSample(std::span<const T> values, T* sample) {
  const std::size_t n = values.size();
  if (n <= kSampleSize) {
    std::memcpy(sample, values.data(), n * sizeof(T));
    return n;
  }
  for (std::size_t k = 0; k < kSampleSize; ++k) sample[k] = values[k * n / kSampleSize];
  return kSampleSize;
}

// Bits the sample would take with (e, f): packed integers plus exceptions (value + position).
// `exception_count` (nullable) receives the sample's exceptions.
template <typename T>
std::uint64_t SampleCost(const simd::Kernels& kernels, const T* sample, std::size_t count,
                         unsigned e, unsigned f, std::size_t* exception_count = nullptr) {
  std::int64_t ints[kSampleSize];
  std::uint64_t exceptions[1];
  AlpEncodeStats stats;
  if constexpr (sizeof(T) == 8) {
    stats = kernels.alp_encode_double(sample, count, e, f, ints, exceptions);
  } else {
    stats = kernels.alp_encode_float(sample, count, e, f, ints, exceptions);
  }
  constexpr std::uint64_t kExceptionBits = sizeof(T) * 8 + 16;
  if (exception_count != nullptr) *exception_count = stats.exceptions;
  if (stats.exceptions == count) return count * kExceptionBits;
  const unsigned width =
      BitWidth(static_cast<std::uint64_t>(stats.hi) - static_cast<std::uint64_t>(stats.lo));
  return count * width + stats.exceptions * kExceptionBits;
}

struct Candidate {
  std::uint64_t cost;
  std::uint8_t e;
  std::uint8_t f;
};

template <typename T>
AlpChoice FullSearch(std::span<const T> values, const T* sample, std::size_t count,
                     SeriesHint& hint, Workspace& ws) {
  const simd::Kernels& kernels = simd::ActiveKernels();
  Candidate best[kFinalists];
  for (auto& c : best) c = {UINT64_MAX, 0, 0};
  // Largest exponent and factor first, and only strictly better replaces: on ties the larger pair
  // wins, which turns mostly-zero blocks into width 0 plus a few exceptions.
  for (int e = AlpConstants<T>::kMaxExponent; e >= 0; --e) {
    for (int f = e; f >= 0; --f) {
      const std::uint64_t cost =
          SampleCost(kernels, sample, count, static_cast<unsigned>(e), static_cast<unsigned>(f));
      for (int k = 0; k < kFinalists; ++k) {
        if (cost < best[k].cost) {
          for (int m = kFinalists - 1; m > k; --m) best[m] = best[m - 1];
          best[k] = {cost, static_cast<std::uint8_t>(e), static_cast<std::uint8_t>(f)};
          break;
        }
      }
    }
  }
  // The sample ranks the candidates; the whole block decides among the finalists exactly. This
  // runs once per kResearchIntervalBlocks blocks of a series, so its cost is amortized.
  std::uint64_t exact[kFinalists];
  for (int k = 0; k < kFinalists; ++k) {
    exact[k] = best[k].cost == UINT64_MAX
                   ? UINT64_MAX
                   : EncodeAlp<T, true>(values, best[k].e, best[k].f, AlpMode::kSmaller, ws, {},
                                        nullptr);
    if (exact[k] == 0) exact[k] = UINT64_MAX - 1;  // all exceptions
  }
  int order[kFinalists];
  for (int k = 0; k < kFinalists; ++k) order[k] = k;
  std::stable_sort(order, order + kFinalists, [&](int a, int b) { return exact[a] < exact[b]; });
  for (int k = 0; k < SeriesHint::kPairs; ++k) {
    const Candidate& c = best[order[k]];
    hint.exponent[k] = c.cost == UINT64_MAX ? kEmptySlot : c.e;
    hint.factor[k] = c.cost == UINT64_MAX ? kEmptySlot : c.f;
  }
  hint.blocks_since_search = 0;
  const Candidate& winner = best[order[0]];
  return {winner.e, winner.f, true, static_cast<double>(winner.cost) / count};
}

}  // namespace

template <typename T>
AlpChoice SearchAlpExponents(std::span<const T> values, SeriesHint& hint, Workspace& ws) noexcept {
  T sample[kSampleSize];
  const std::size_t count = TakeSample(values, sample);
  const bool hint_empty = hint.exponent[0] > AlpConstants<T>::kMaxExponent ||
                          hint.factor[0] > hint.exponent[0];
  if (hint_empty || hint.blocks_since_search >= kResearchIntervalBlocks) {
    return FullSearch(values, sample, count, hint, ws);
  }
  // Warm path: the series' recent winners, on the sample only.
  const simd::Kernels& kernels = simd::ActiveKernels();
  Candidate best{UINT64_MAX, 0, 0};
  std::size_t best_exceptions = count;
  for (int k = 0; k < SeriesHint::kPairs; ++k) {
    const unsigned e = hint.exponent[k];
    const unsigned f = hint.factor[k];
    if (e > AlpConstants<T>::kMaxExponent || f > e) continue;
    std::size_t exceptions;
    const std::uint64_t cost = SampleCost(kernels, sample, count, e, f, &exceptions);
    if (cost < best.cost) {
      best = {cost, static_cast<std::uint8_t>(e), static_cast<std::uint8_t>(f)};
      best_exceptions = exceptions;
    }
    // Early exit: few exceptions with the series' favourite pair will not be beaten by an older
    // pair often enough to pay for trying it.
    if (k == 0 && exceptions * 16 <= count) break;
  }
  // The hint stops winning when a quarter of the sample turns into exceptions (wide integers are
  // not a reason: some series need them). A series where ALP was not chosen last time (real
  // doubles, noise) waits for the periodic search instead of searching every block in vain.
  const bool alp_was_chosen =
      hint.last_encoding == static_cast<std::uint8_t>(FloatEncoding::kAlp) ||
      hint.last_encoding == static_cast<std::uint8_t>(FloatEncoding::kAlpDelta);
  if (best_exceptions * 4 > count && alp_was_chosen) {
    return FullSearch(values, sample, count, hint, ws);
  }
  ++hint.blocks_since_search;
  return {best.e, best.f, false, static_cast<double>(best.cost) / count};
}

namespace {

// The best split with left parts of min_left..max_left bits, judged on a sample.
template <typename T>
AlpRdPlan PlanAlpRd(std::span<const T> values, unsigned min_left, unsigned max_left) {
  using Bits = typename AlpConstants<T>::Bits;
  constexpr unsigned kBits = sizeof(T) * 8;
  T sample[kSampleSize];
  const std::size_t count = TakeSample(values, sample);
  Bits sorted[kSampleSize];
  for (std::size_t i = 0; i < count; ++i) sorted[i] = std::bit_cast<Bits>(sample[i]);
  // Sorting by the whole bit pattern groups equal left parts for every split at once.
  std::sort(sorted, sorted + count);
  AlpRdPlan best;
  std::uint64_t best_cost = UINT64_MAX;
  for (unsigned left_bits = min_left; left_bits <= max_left; ++left_bits) {
    const unsigned right_bits = kBits - left_bits;
    std::uint16_t lefts[kSampleSize];
    std::uint8_t counts[kSampleSize];
    std::size_t runs = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const auto left = static_cast<std::uint16_t>(sorted[i] >> right_bits);
      if (runs > 0 && lefts[runs - 1] == left) {
        ++counts[runs - 1];
      } else {
        lefts[runs] = left;
        counts[runs] = 1;
        ++runs;
      }
    }
    // The most frequent left parts form the dictionary.
    std::size_t order[kSampleSize];
    for (std::size_t r = 0; r < runs; ++r) order[r] = r;
    const std::size_t dictionary_size = std::min<std::size_t>(runs, kAlpRdMaxDictionary);
    std::partial_sort(order, order + dictionary_size, order + runs,
                      [&](std::size_t a, std::size_t b) { return counts[a] > counts[b]; });
    std::size_t covered = 0;
    for (std::size_t d = 0; d < dictionary_size; ++d) covered += counts[order[d]];
    const std::size_t exceptions = count - covered;
    const unsigned index_bits =
        dictionary_size <= 1 ? 0 : BitWidth(dictionary_size - 1);
    const std::uint64_t cost =
        count * (right_bits + index_bits) + exceptions * 32 + dictionary_size * 16 * count / 1024;
    if (cost < best_cost) {
      best_cost = cost;
      best.right_bits = static_cast<std::uint8_t>(right_bits);
      best.dictionary_size = static_cast<std::uint8_t>(dictionary_size);
      for (std::size_t d = 0; d < dictionary_size; ++d) best.dictionary[d] = lefts[order[d]];
    }
  }
  return best;
}

}  // namespace

template <typename T>
AlpRdPlan AnalyzeAlpRd(std::span<const T> values) noexcept {
  return PlanAlpRd(values, 1, kAlpRdMaxLeftBits);
}

template <typename T>
AlpRdPlan AnalyzeAlpRdForSplit(std::span<const T> values, unsigned right_bits) noexcept {
  const unsigned left_bits = sizeof(T) * 8 - right_bits;
  return PlanAlpRd(values, left_bits, left_bits);
}

template <typename T>
std::size_t EstimateAlpWithHint(std::span<const T> values, const SeriesHint& hint) noexcept {
  const unsigned e = hint.exponent[0];
  const unsigned f = hint.factor[0];
  if (e > AlpConstants<T>::kMaxExponent || f > e) return SIZE_MAX;
  T sample[kSampleSize];
  const std::size_t count = TakeSample(values, sample);
  const std::uint64_t bits = SampleCost(simd::ActiveKernels(), sample, count, e, f);
  return kAlpHeaderBytes + static_cast<std::size_t>(bits * values.size() / count / 8);
}

template <typename T>
bool IsConstantBlock(std::span<const T> values) noexcept {
  using Bits = typename AlpConstants<T>::Bits;
  const Bits first = std::bit_cast<Bits>(values[0]);
  const std::size_t n = values.size();
  // Chunks of 64 so that a varying block exits early and a constant one runs vectorized.
  for (std::size_t start = 0; start < n; start += 64) {
    const std::size_t end = std::min(n, start + 64);
    Bits diff = 0;
    for (std::size_t i = start; i < end; ++i) diff |= std::bit_cast<Bits>(values[i]) ^ first;
    if (diff != 0) return false;
  }
  return true;
}

template AlpChoice SearchAlpExponents<double>(std::span<const double>, SeriesHint&,
                                              Workspace&) noexcept;
template AlpChoice SearchAlpExponents<float>(std::span<const float>, SeriesHint&,
                                             Workspace&) noexcept;
template AlpRdPlan AnalyzeAlpRd<double>(std::span<const double>) noexcept;
template AlpRdPlan AnalyzeAlpRd<float>(std::span<const float>) noexcept;
template AlpRdPlan AnalyzeAlpRdForSplit<double>(std::span<const double>, unsigned) noexcept;
template AlpRdPlan AnalyzeAlpRdForSplit<float>(std::span<const float>, unsigned) noexcept;
template std::size_t EstimateAlpWithHint<double>(std::span<const double>,
                                                 const SeriesHint&) noexcept;
template std::size_t EstimateAlpWithHint<float>(std::span<const float>,
                                                const SeriesHint&) noexcept;
template bool IsConstantBlock<double>(std::span<const double>) noexcept;
template bool IsConstantBlock<float>(std::span<const float>) noexcept;

}  // namespace ingot::codec
