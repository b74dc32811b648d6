// Analyze phase of the float codec: the exponent/factor search for ALP, the split and dictionary
// for ALP-RD, and the constant check. Everything here looks at a small sample, never at every
// value, except the constant check, which exits at the first difference.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>

#include "codec/alp_constants.h"
#include "codec/bit_packing.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {
namespace {

using simd::AlpEncodeStats;

constexpr std::size_t kSampleSize = 32;
// Blocks between two probes of the favourite pair's neighbours.
constexpr std::uint8_t kProbeIntervalBlocks = 4;
constexpr std::uint8_t kEmptySlot = 0xff;
// Candidate exponent/factor pairs of double, the type with the most (kSearchPairs): one per
// exponent above 14, 15 with exponent 14, one per exponent below it.
constexpr std::size_t kMaxPairs = AlpConstants<double>::kMaxExponent + 1 + 14;
// Pairs of the sample ranking that the full block judges exactly.
constexpr int kFinalists = 5;
// Pairs of the coarse ranking that the full search's whole sample judges (one AVX-512 vector of
// pairs).
constexpr int kShortlist = 8;
// Values in the full search's sample.
constexpr std::size_t kSearchSampleSize = 64;
// A delta window more than this fraction (1 / divisor) above the plain sample's cost marks delta
// coding as far behind: a first block is then written plain, without the delta pass.
constexpr std::uint64_t kDeltaFarBehindDivisor = 2;

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

// Bits the sample would take with each of `pairs` exponent/factor pairs, judged in one kernel call:
// packed integers plus exceptions (value + position). `exception_counts` (nullable) receives each
// pair's exceptions.
template <typename T>
void SampleCosts(const simd::Kernels& kernels, const T* sample, std::size_t count,
                 const std::uint8_t* exponents, const std::uint8_t* factors, std::size_t pairs,
                 std::uint64_t* costs, std::size_t* exception_counts = nullptr) {
  // A chunk of pairs at a time: the statistics stay small on the stack (their members are
  // initialized, so a table for every pair would be cleared on every call).
  constexpr std::size_t kChunk = 16;
  constexpr std::uint64_t kExceptionBits = sizeof(T) * 8 + 16;
  for (std::size_t from = 0; from < pairs; from += kChunk) {
    const std::size_t chunk = std::min(kChunk, pairs - from);
    AlpEncodeStats stats[kChunk];
    if constexpr (sizeof(T) == 8) {
      kernels.alp_sample_stats_double(sample, count, exponents + from, factors + from, chunk,
                                      stats);
    } else {
      kernels.alp_sample_stats_float(sample, count, exponents + from, factors + from, chunk,
                                     stats);
    }
    for (std::size_t k = 0; k < chunk; ++k) {
      const std::size_t p = from + k;
      if (exception_counts != nullptr) exception_counts[p] = stats[k].exceptions;
      const unsigned width = stats[k].exceptions == count
                                 ? 0
                                 : BitWidth(static_cast<std::uint64_t>(stats[k].hi) -
                                            static_cast<std::uint64_t>(stats[k].lo));
      costs[p] = count * width + stats[k].exceptions * kExceptionBits;
    }
  }
}

// The exponent/factor pairs the search ranks, in its order: largest exponent first, then largest
// factor. A pair scales by 10^(e - f), so the candidates are one pair per number of decimals d in
// two families: e = kCanonicalExponent with f = e - d (the reference implementation's usual pick on
// real data: measured on every block of ALP's samples and row groups, the best pair of this
// family is within 1% of the best of all pairs), and f = 0 with e = d (one rounding on the way
// in, which suits large magnitudes, and the only way to more decimals than the canonical
// exponent). 33 pairs for double instead of all 190: the search's cost is per pair.
template <typename T>
constexpr unsigned kCanonicalExponent = std::min(14u, AlpConstants<T>::kMaxExponent);

template <typename T>
struct PairTable {
  std::uint8_t exponents[kMaxPairs] = {};
  std::uint8_t factors[kMaxPairs] = {};
  std::size_t size = 0;
};

template <typename T>
constexpr PairTable<T> MakePairTable() {
  PairTable<T> table;
  auto add = [&](unsigned e, unsigned f) {
    table.exponents[table.size] = static_cast<std::uint8_t>(e);
    table.factors[table.size] = static_cast<std::uint8_t>(f);
    ++table.size;
  };
  constexpr unsigned kCanonical = kCanonicalExponent<T>;
  for (unsigned e = AlpConstants<T>::kMaxExponent; e > kCanonical; --e) add(e, 0);
  for (unsigned f = kCanonical + 1; f-- > 0;) add(kCanonical, f);
  for (unsigned e = kCanonical; e-- > 0;) add(e, 0);
  return table;
}

template <typename T>
constexpr PairTable<T> kSearchPairs = MakePairTable<T>();

struct Candidate {
  std::uint64_t cost;
  std::uint8_t e;
  std::uint8_t f;
};

// Bits of the whole block's values under delta coding with (e, f), judged on a contiguous window of
// kSampleSize neighbours from the middle of the block (differences between good neighbours;
// exceptions cost what they cost plain). UINT64_MAX when the block is too short for a window or
// every window value is an exception.
template <typename T>
std::uint64_t DeltaWindowBits(const simd::Kernels& kernels, std::span<const T> values, unsigned e,
                              unsigned f) {
  const std::size_t n = values.size();
  if (n < 2 * kSampleSize) return UINT64_MAX;
  const T* window = values.data() + (n - kSampleSize) / 2;
  std::int64_t ints[kSampleSize];
  std::uint64_t exceptions[1];
  AlpEncodeStats stats;
  if constexpr (sizeof(T) == 8) {
    stats = kernels.alp_encode_double(window, kSampleSize, e, f, ints, exceptions);
  } else {
    stats = kernels.alp_encode_float(window, kSampleSize, e, f, ints, exceptions);
  }
  if (stats.exceptions == kSampleSize) return UINT64_MAX;
  std::int64_t lo = INT64_MAX;
  std::int64_t hi = INT64_MIN;
  for (std::size_t i = 1; i < kSampleSize; ++i) {
    const bool both_good = ((exceptions[0] >> (i - 1)) & 3) == 0;
    const auto d = static_cast<std::int64_t>(static_cast<std::uint64_t>(ints[i]) -
                                             static_cast<std::uint64_t>(ints[i - 1]));
    lo = both_good ? std::min(lo, d) : lo;
    hi = both_good ? std::max(hi, d) : hi;
  }
  const unsigned width =
      lo > hi ? 0 : BitWidth(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo));
  constexpr std::uint64_t kExceptionBits = sizeof(T) * 8 + 16;
  return kSampleSize * width + stats.exceptions * kExceptionBits;
}

// The `size` cheapest of `pairs` candidates into `list`, ascending; on equal costs the earlier pair
// (the search's order) ranks first. Unused slots get cost UINT64_MAX. Costs and positions share
// one key, so each pick is a plain minimum over at most kMaxPairs keys.
void RankCheapest(const std::uint64_t* costs, const std::uint8_t* exponents,
                  const std::uint8_t* factors, std::size_t pairs, Candidate* list, int size) {
  // Padded with UINT64_MAX to whole groups of four: four independent minimums per pick, so the
  // picks are not one long dependency chain.
  constexpr std::size_t kWays = 4;
  std::uint64_t keys[(kMaxPairs + kWays - 1) / kWays * kWays];
  const std::size_t padded = (pairs + kWays - 1) / kWays * kWays;
  for (std::size_t p = 0; p < padded; ++p) {
    keys[p] = p < pairs ? costs[p] << 8 | p : UINT64_MAX;  // costs are < 2^16
  }
  for (int k = 0; k < size; ++k) {
    std::uint64_t ways[kWays] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
    for (std::size_t p = 0; p < padded; p += kWays) {
      for (std::size_t w = 0; w < kWays; ++w) ways[w] = std::min(ways[w], keys[p + w]);
    }
    const std::uint64_t least = std::min(std::min(ways[0], ways[1]), std::min(ways[2], ways[3]));
    if (least == UINT64_MAX) {
      list[k] = {UINT64_MAX, 0, 0};
      continue;
    }
    const std::size_t p = least & 0xff;
    keys[p] = UINT64_MAX;
    list[k] = {costs[p], exponents[p], factors[p]};
  }
}

// A first block's pair with the search's estimate: the cheaper of the plain sample and the delta
// window, and plain coding when delta is far behind.
AlpChoice SampledChoice(unsigned e, unsigned f, double plain_per_value, double delta_per_value) {
  AlpChoice choice{static_cast<std::uint8_t>(e), static_cast<std::uint8_t>(f)};
  choice.sampled_bits_per_value = std::min(plain_per_value, delta_per_value);
  choice.mode = delta_per_value > plain_per_value + plain_per_value / kDeltaFarBehindDivisor
                    ? AlpMode::kPlain
                    : AlpMode::kSmaller;
  return choice;
}

// A first block whose sample is all integers (counts, sizes, codes: every monitoring system's
// counters) needs no ranking: ALP's integers are the values themselves, and (0, 0), which
// multiplies by one, gives them back exactly (below 2^52; -0.0 is no integer here, ALP keeps it
// as an exception). Every other pair of the table multiplies by a power of ten or by one with
// rounded constants, so none packs them narrower. The sample's cost is its range's width,
// without the ALP kernel; the estimate and mode are the full search's. Nothing when the sample
// is not of that kind.
template <typename T>
std::optional<AlpChoice> IntegerSampleChoice(std::span<const T> values, const T* sample,
                                             std::size_t count, SeriesHint& hint) {
  constexpr T kLimit = static_cast<T>(sizeof(T) == 8 ? 0x1p52 : 0x1p23);
  T lo = sample[0], hi = sample[0];
  for (std::size_t k = 0; k < count; ++k) {
    const T v = sample[k];
    if (!(std::fabs(v) < kLimit) || v != std::trunc(v) || (v == 0 && std::signbit(v))) {
      return std::nullopt;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const auto range = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) -
                                                static_cast<std::int64_t>(lo));
  const double plain_per_value = BitWidth(range);
  const std::uint64_t delta_bits = DeltaWindowBits(simd::ActiveKernels(), values, 0, 0);
  const double delta_per_value = static_cast<double>(delta_bits) / static_cast<double>(kSampleSize);
  for (int k = 0; k < SeriesHint::kPairs; ++k) {
    hint.exponent[k] = k == 0 ? 0 : kEmptySlot;
    hint.factor[k] = k == 0 ? 0 : kEmptySlot;
  }
  hint.blocks_since_search = 0;
  return SampledChoice(0, 0, plain_per_value, delta_per_value);
}

// How the full search judges its finalists: on its sample only (a series' first block, which
// must cost about one encode), or on the whole block (a series whose remembered pairs stopped
// fitting: rare, so amortized over many blocks).
enum class Finalists : std::uint8_t { kSampled, kExact };

template <typename T>
AlpChoice FullSearch(std::span<const T> values, double rival_bits_per_value, Finalists finalists,
                     SeriesHint& hint, Workspace& ws) {
  const simd::Kernels& kernels = simd::ActiveKernels();
  // Every pair is first judged on a coarse subsample of one vector's width; only a shortlist is
  // judged on the search's whole sample, which is wider than the warm path's: the sample alone
  // picks the pair of a first block, and 32 values misjudge blocks whose exceptions are few but
  // not rare (a pair with a few exceptions against a wider one with none).
  T sample[kSearchSampleSize];
  std::size_t count = values.size();
  if (count <= kSearchSampleSize) {
    std::memcpy(sample, values.data(), count * sizeof(T));
  } else {
    for (std::size_t k = 0; k < kSearchSampleSize; ++k) {
      sample[k] = values[k * count / kSearchSampleSize];
    }
    count = kSearchSampleSize;
  }
  if (finalists == Finalists::kSampled) {
    if (const std::optional<AlpChoice> whole = IntegerSampleChoice(values, sample, count, hint)) {
      return *whole;
    }
  }
  Candidate best[kFinalists];
  // Ranks `pairs` pairs (in the search's order) on `values`' first `count` into `list`.
  auto rank = [&](const T* on, std::size_t on_count, const std::uint8_t* exponents,
                  const std::uint8_t* factors, std::size_t pairs, Candidate* list, int size) {
    std::uint64_t costs[kMaxPairs];
    SampleCosts(kernels, on, on_count, exponents, factors, pairs, costs);
    RankCheapest(costs, exponents, factors, pairs, list, size);
  };
  // The search's order runs largest exponent and factor first, and only strictly better replaces:
  // on ties the larger pair wins, which turns mostly-zero blocks into width 0 plus a few
  // exceptions.
  const PairTable<T>& all = kSearchPairs<T>;
  constexpr std::size_t kCoarse = 64 / sizeof(T);
  if (count <= kCoarse) {
    rank(sample, count, all.exponents, all.factors, all.size, best, kFinalists);
  } else {
    T coarse[kCoarse];
    for (std::size_t k = 0; k < kCoarse; ++k) coarse[k] = sample[k * count / kCoarse];
    Candidate shortlist[kShortlist];
    rank(coarse, kCoarse, all.exponents, all.factors, all.size, shortlist, kShortlist);
    // A first block whose best coarse cost is far behind the rival encoding (real doubles, noise)
    // keeps the coarse ranking: the whole sample cannot bring ALP back into the race. "Far" is
    // half again the rival's estimated size.
    constexpr double kFarBehindRatio = 1.5;
    const bool far_behind = finalists == Finalists::kSampled &&
                            static_cast<double>(shortlist[0].cost) >
                                rival_bits_per_value * kFarBehindRatio * static_cast<double>(kCoarse);
    if (far_behind) {
      for (int k = 0; k < kFinalists; ++k) best[k] = shortlist[k];
      for (int k = 0; k < SeriesHint::kPairs; ++k) {
        hint.exponent[k] = best[k].cost == UINT64_MAX ? kEmptySlot : best[k].e;
        hint.factor[k] = best[k].cost == UINT64_MAX ? kEmptySlot : best[k].f;
      }
      hint.blocks_since_search = 0;
      return {best[0].e, best[0].f};
    }
    // Back into the search's order, so that ties on the whole sample break as above.
    std::sort(shortlist, shortlist + kShortlist, [](const Candidate& a, const Candidate& b) {
      return a.e != b.e ? a.e > b.e : a.f > b.f;
    });
    std::uint8_t exponents[kShortlist];
    std::uint8_t factors[kShortlist];
    std::size_t listed = 0;
    for (const Candidate& c : shortlist) {
      if (c.cost == UINT64_MAX) continue;
      exponents[listed] = c.e;
      factors[listed] = c.f;
      ++listed;
    }
    rank(sample, count, exponents, factors, listed, best, kFinalists);
  }
  // The sample's estimate of the block under ALP: plain, or delta-coded when that is smaller.
  // (The delta window has kSampleSize values, the search's sample `count`.)
  const std::uint64_t delta_bits = DeltaWindowBits(kernels, values, best[0].e, best[0].f);
  const double plain_per_value = static_cast<double>(best[0].cost) / static_cast<double>(count);
  const double delta_per_value = static_cast<double>(delta_bits) / static_cast<double>(kSampleSize);
  const double estimate = std::min(plain_per_value, delta_per_value);
  // The sample ranks the candidates; the whole block decides among the finalists exactly. This
  // runs for a new series and when the hint's sample turns into exceptions, so its cost is
  // amortized over many blocks. When ALP is far behind the rival encoding the ranking cannot
  // change the choice, and the sample's order stands.
  // Finalists far behind the sample's best are not worth a whole-block pass (each costs about
  // a fifth of the search).
  const bool hopeless =
      finalists == Finalists::kSampled || estimate > rival_bits_per_value * 1.25;
  std::uint64_t exact[kFinalists];
  for (int k = 0; k < kFinalists; ++k) {
    const bool close = !hopeless && best[k].cost != UINT64_MAX &&
                       best[k].cost <= best[0].cost + best[0].cost / 4;
    exact[k] = !close ? UINT64_MAX
                      : EncodeAlp<T, true>(values, best[k].e, best[k].f, AlpMode::kSmaller, ws, {},
                                           nullptr);
    if (exact[k] == 0) exact[k] = UINT64_MAX - 1;  // all exceptions
  }
  int order[kFinalists];
  for (int k = 0; k < kFinalists; ++k) order[k] = k;
  // Insertion sort: stable, and unlike std::stable_sort it never allocates a buffer.
  for (int k = 1; k < kFinalists; ++k) {
    for (int m = k; m > 0 && exact[order[m]] < exact[order[m - 1]]; --m) {
      std::swap(order[m], order[m - 1]);
    }
  }
  for (int k = 0; k < SeriesHint::kPairs; ++k) {
    const Candidate& c = best[order[k]];
    hint.exponent[k] = c.cost == UINT64_MAX ? kEmptySlot : c.e;
    hint.factor[k] = c.cost == UINT64_MAX ? kEmptySlot : c.f;
  }
  hint.blocks_since_search = 0;
  const Candidate& winner = best[order[0]];
  // The estimate is the sample's best pair's: none when the block chose another.
  if (order[0] == 0 && best[0].cost != UINT64_MAX) {
    return SampledChoice(winner.e, winner.f, plain_per_value, delta_per_value);
  }
  return {winner.e, winner.f};
}

// The best of the hint's pairs on the sample, judged as the warm search tries them: the favourite
// wins outright when it leaves few exceptions (an older pair will not beat it often enough to pay
// for trying it). `slot` is -1 when the hint holds no valid pair.
struct HintPick {
  Candidate best{UINT64_MAX, 0, 0};
  std::size_t exceptions = 0;
  int slot = -1;
};

template <typename T>
HintPick PickFromHint(const simd::Kernels& kernels, const T* sample, std::size_t count,
                      const SeriesHint& hint) {
  std::uint8_t exponents[SeriesHint::kPairs];
  std::uint8_t factors[SeriesHint::kPairs];
  int slots[SeriesHint::kPairs];
  std::size_t pairs = 0;
  for (int k = 0; k < SeriesHint::kPairs; ++k) {
    if (hint.exponent[k] > AlpConstants<T>::kMaxExponent || hint.factor[k] > hint.exponent[k]) {
      continue;
    }
    exponents[pairs] = hint.exponent[k];
    factors[pairs] = hint.factor[k];
    slots[pairs] = k;
    ++pairs;
  }
  HintPick pick;
  pick.exceptions = count;
  if (pairs == 0) return pick;
  std::uint64_t costs[SeriesHint::kPairs];
  std::size_t exceptions[SeriesHint::kPairs];
  // The favourite alone first: on a steady series it wins outright, and the other pairs are
  // never judged.
  const std::size_t first = slots[0] == 0 ? 1 : pairs;
  SampleCosts(kernels, sample, count, exponents, factors, first, costs, exceptions);
  if (first == 1 && exceptions[0] * 16 <= count) {
    pick.best = {costs[0], exponents[0], factors[0]};
    pick.exceptions = exceptions[0];
    pick.slot = 0;
    return pick;
  }
  if (first < pairs) {
    SampleCosts(kernels, sample, count, exponents + first, factors + first, pairs - first,
                costs + first, exceptions + first);
  }
  for (std::size_t p = 0; p < pairs; ++p) {
    if (costs[p] < pick.best.cost) {
      pick.best = {costs[p], exponents[p], factors[p]};
      pick.exceptions = exceptions[p];
      pick.slot = slots[p];
    }
  }
  return pick;
}

}  // namespace

template <typename T>
AlpChoice SearchAlpExponents(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                             double rival_bits_per_value, bool for_encode) noexcept {
  T sample[kSampleSize];
  const std::size_t count = TakeSample(values, sample);
  const bool hint_empty = hint.exponent[0] > AlpConstants<T>::kMaxExponent ||
                          hint.factor[0] > hint.exponent[0];
  if (hint_empty) {
    return FullSearch(values, rival_bits_per_value, Finalists::kSampled, hint, ws);
  }
  // Warm path: the series' recent winners, on the sample only.
  const simd::Kernels& kernels = simd::ActiveKernels();
  const HintPick pick = PickFromHint(kernels, sample, count, hint);
  Candidate best = pick.best;
  const std::size_t best_exceptions = pick.exceptions;
  const int best_slot = pick.slot;
  // The winner becomes the favourite: the next block tries it first, and the chooser's sample
  // estimate (EstimateAlpWithHint) uses it.
  for (int k = best_slot; k > 0; --k) {
    hint.exponent[k] = hint.exponent[k - 1];
    hint.factor[k] = hint.factor[k - 1];
  }
  hint.exponent[0] = best.e;
  hint.factor[0] = best.f;
  // The hint stops winning when a quarter of the sample turns into exceptions (wide integers are
  // not a reason: some series need them); only a series that ALP won last time, or a caller about
  // to encode with ALP, searches again then (real doubles and noise would search every block in
  // vain). A full search costs as much
  // as encoding tens of blocks, so a warm hint whose sample stays clean never repeats it. Instead,
  // every few blocks the favourite's neighbours (up to three factor steps, or one step of both)
  // are tried on the same sample, and a cheaper one becomes the favourite: that follows a series
  // whose magnitude drifts, and moves a hint found on an odd block to a better pair.
  const bool alp_was_chosen =
      hint.last_encoding == static_cast<std::uint8_t>(FloatEncoding::kAlp) ||
      hint.last_encoding == static_cast<std::uint8_t>(FloatEncoding::kAlpDelta);
  if (best_exceptions * 4 > count && (alp_was_chosen || for_encode)) {
    return FullSearch(values, rival_bits_per_value, Finalists::kExact, hint, ws);
  }
  ++hint.blocks_since_search;
  if (hint.blocks_since_search % kProbeIntervalBlocks == 0) {
    const int e0 = best.e;
    const int f0 = best.f;
    // Factor steps follow a drifting magnitude; both-steps keep it and change the precision.
    const int steps[8][2] = {{0, 1}, {0, -1}, {0, 2}, {0, -2}, {0, 3}, {0, -3}, {1, 1}, {-1, -1}};
    std::uint8_t exponents[8];
    std::uint8_t factors[8];
    std::size_t pairs = 0;
    for (const auto& step : steps) {
      const int e = e0 + step[0];
      const int f = f0 + step[1];
      if (e < 0 || f < 0 || f > e || e > static_cast<int>(AlpConstants<T>::kMaxExponent)) continue;
      exponents[pairs] = static_cast<std::uint8_t>(e);
      factors[pairs] = static_cast<std::uint8_t>(f);
      ++pairs;
    }
    std::uint64_t costs[8];
    SampleCosts(kernels, sample, count, exponents, factors, pairs, costs);
    Candidate probe = best;
    for (std::size_t p = 0; p < pairs; ++p) {
      if (costs[p] < probe.cost) probe = {costs[p], exponents[p], factors[p]};
    }
    if (probe.cost < best.cost) {
      for (int k = SeriesHint::kPairs - 1; k > 0; --k) {
        hint.exponent[k] = hint.exponent[k - 1];
        hint.factor[k] = hint.factor[k - 1];
      }
      hint.exponent[0] = probe.e;
      hint.factor[0] = probe.f;
      best = probe;
    }
  }
  return {best.e, best.f};
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
    // A wider left part splits the same values into as many parts or more, so the dictionary
    // covers no more of them: every wider split costs at least these exceptions plus the
    // narrowest right parts. Once that bound loses, the search is over.
    const std::uint64_t wider_bound = count * (kBits - max_left) + exceptions * 32;
    if (cost < best_cost) {
      best_cost = cost;
      best.right_bits = static_cast<std::uint8_t>(right_bits);
      best.dictionary_size = static_cast<std::uint8_t>(dictionary_size);
      for (std::size_t d = 0; d < dictionary_size; ++d) best.dictionary[d] = lefts[order[d]];
    }
    if (wider_bound >= best_cost) break;
  }
  return best;
}

}  // namespace

template <typename T>
AlpRdPlan AnalyzeAlpRd(std::span<const T> values, std::size_t rival_bits) noexcept {
  // A split whose right parts alone take rival_bits per value cannot win: its left part is wider.
  constexpr unsigned kBits = sizeof(T) * 8;
  const unsigned min_left =
      rival_bits >= kBits ? 1u
                          : std::min<unsigned>(kAlpRdMaxLeftBits,
                                               kBits + 1 - static_cast<unsigned>(rival_bits));
  return PlanAlpRd(values, min_left, kAlpRdMaxLeftBits);
}

template <typename T>
AlpRdPlan AnalyzeAlpRdForSplit(std::span<const T> values, unsigned right_bits) noexcept {
  const unsigned left_bits = sizeof(T) * 8 - right_bits;
  return PlanAlpRd(values, left_bits, left_bits);
}

template <typename T>
std::size_t EstimateAlpWithHint(std::span<const T> values, const SeriesHint& hint,
                                AlpMode* mode) noexcept {
  const simd::Kernels& kernels = simd::ActiveKernels();
  T sample[kSampleSize];
  const std::size_t n = values.size();
  const std::size_t count = TakeSample(values, sample);
  // The hint's pairs, as the warm search tries them: the favourite can go stale while ALP is not
  // written (no search runs then), and an older pair may still fit.
  const HintPick pick = PickFromHint(kernels, sample, count, hint);
  if (pick.slot < 0) return SIZE_MAX;
  std::uint64_t bits = pick.best.cost;
  const unsigned e = pick.best.e;
  const unsigned f = pick.best.f;
  // Delta coding needs neighbours: a contiguous window from the middle of the block.
  const std::uint64_t delta_bits = DeltaWindowBits(kernels, values, e, f);
  if (mode != nullptr) {
    *mode = delta_bits > bits + bits / kDeltaFarBehindDivisor ? AlpMode::kPlain : AlpMode::kSmaller;
  }
  bits = std::min(bits, delta_bits);
  return kAlpHeaderBytes + static_cast<std::size_t>(bits * n / count / 8);
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

template AlpChoice SearchAlpExponents<double>(std::span<const double>, SeriesHint&, Workspace&,
                                              double, bool) noexcept;
template AlpChoice SearchAlpExponents<float>(std::span<const float>, SeriesHint&, Workspace&,
                                             double, bool) noexcept;
template AlpRdPlan AnalyzeAlpRd<double>(std::span<const double>, std::size_t) noexcept;
template AlpRdPlan AnalyzeAlpRd<float>(std::span<const float>, std::size_t) noexcept;
template AlpRdPlan AnalyzeAlpRdForSplit<double>(std::span<const double>, unsigned) noexcept;
template AlpRdPlan AnalyzeAlpRdForSplit<float>(std::span<const float>, unsigned) noexcept;
template std::size_t EstimateAlpWithHint<double>(std::span<const double>, const SeriesHint&,
                                                 AlpMode*) noexcept;
template std::size_t EstimateAlpWithHint<float>(std::span<const float>, const SeriesHint&,
                                                AlpMode*) noexcept;
template bool IsConstantBlock<double>(std::span<const double>) noexcept;
template bool IsConstantBlock<float>(std::span<const float>) noexcept;

}  // namespace ingot::codec
