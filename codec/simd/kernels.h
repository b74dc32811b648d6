// The hot loops of the codec, one implementation per instruction-set level behind one table.
//
// Every level has the same functions with the same results bit for bit; the vector levels are the
// same source (kernels_simde.inc, written with SIMDe intrinsics) compiled once per ISA with that
// ISA's flags, and the scalar level is plain fixed-trip loops compiled for baseline x86-64. The
// table is chosen once at start-up from CPU detection; the environment variable INGOT_ISA
// (scalar|avx2|avx512) may force a lower level, never a higher one than the CPU supports.
//
// Layout used by the 1024-value FFOR kernels ("interleaved"): value i lives in lane i % 16, row
// i / 16; each lane packs its 64 rows into `width` consecutive 64-bit words, and word k of lane l
// is stored at index k * 16 + l. The shifts are then the same for all lanes of a row, which is what
// makes the loops vectorize. A packed block of 1024 values is exactly 128 * width bytes, read and
// written in place (unaligned) so that no copy through scratch memory is needed.
//
// Thread safety: the tables are immutable; all kernels are reentrant.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ingot::codec::simd {

inline constexpr int kLanes = 16;
inline constexpr int kRows = 64;
inline constexpr std::size_t kFullBlock = 1024;
// XORs per group of the grouped XOR encoding (codec/format.h kXorGroupValues).
inline constexpr std::size_t kXorGroupSize = 32;

enum class IsaLevel : std::uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* IsaName(IsaLevel level) noexcept;

// outside_window's counts: the values outside the window, and outside the one twice as wide.
struct WindowCounts {
  std::size_t narrow = 0;
  std::size_t wider = 0;
};

// What one ALP encode pass learns besides the integers: the signed range of the integers that are
// not exceptions (lo > hi when every value is an exception), so FFOR needs no second pass.
struct AlpEncodeStats {
  std::size_t exceptions = 0;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

// huffman_segments' work: `segments` (1..kHuffmanMaxSegments) bit streams of `count` codes
// each, segment s from bit pos[s] of `buf` (bit 0 of byte 0 first). A code is read from the 8
// bytes at its bit position's byte, shifted down by the position's low 3 bits (`buf` must be
// readable that far: up to 57 bits a code). The low 8 bits j of that word pick control[j] (the
// code's bits, the bits below its number's leading one (<= 46), and the two together: bytes 0, 1
// and 2, nothing above) and lead[j] (the leading one, 0 for the number 0, plus anything the caller
// folds in, such as a base: low < lead, so low + lead is the number); the number goes to
// ints[kHuffmanSegmentValues * s + i] for code i of segment s. pos[s] ends after segment s's last
// code. Wrapping arithmetic.
inline constexpr std::size_t kHuffmanMaxSegments = 8;
inline constexpr std::size_t kHuffmanSegmentValues = 128;
inline constexpr std::size_t kHuffmanTableEntries = 256;
// Bytes 0 and 1 of a control word are bextr's (start, length), so one instruction extracts a
// number's low bits; the kernels index both arrays with the same scaled register.
struct HuffmanTable {
  std::uint64_t control[kHuffmanTableEntries];
  std::uint64_t lead[kHuffmanTableEntries];
};
struct HuffmanSegments {
  const std::uint8_t* buf;
  const HuffmanTable* table;
  std::size_t segments;
  std::size_t count;
  std::uint64_t* pos;
  std::uint64_t* ints;
};

// rice_join_lanes' layout: kRiceLanes lanes of kRiceLaneRows consecutive numbers.
inline constexpr std::size_t kRiceLanes = 8;
inline constexpr std::size_t kRiceLaneRows = 128;

// ranked_codes' work (kAlpRanked, codec/alp_ranked.cc): `count` codes into numbers. Code i's
// index is ((quotient i + 1) << k) + its k-bit field (bit k i of `lows`, bit 0 of byte 0 first),
// quotient i being the 0 bits between the set bits that end codes i - 1 and i (`ends`,
// ascending; code 0 counts from bit 0). categories[index % 64] is its number's bit length c
// (0..kRankedMaxCategory), and the number is 0 for c = 0, else a one followed by the next c - 1
// bits of `bits` (fields one after another from bit 0, least significant bit first), plus `add`
// (wrapping). `widest` is the largest category in the table (the vector kernels read 32-bit
// lanes when it is at most kRankedNarrowCategory).
//
// sums 0: out[i] is code i's number. sums 1 or 2 (a full block whose codes are in ranked lane
// order, RankedLaneNumber): the numbers are unzigzagged when `zigzag` (REQUIRES: add 0 then), and
// `in_order` gets their running sums in block order from first (and first2), as rice_join_lanes
// computes them; `out` is scratch.
//
// Reads: ends[0 .. count), lows up to byte ceil(k count / 8) + 8, and bits only below
// `readable`: the kernels stop before a code whose field could start within 8 bytes of it, or
// (vectorized) before a group of kRankedGroup codes whose first field could start within
// kRankedReadAhead bytes, so that a corrupt block never reads past the caller's copy. Returns
// the codes decoded (count unless stopped, and then nothing is summed), the bit after the last
// field read and the largest index, which the caller checks against its table.
inline constexpr unsigned kRankedMaxK = 3;
inline constexpr unsigned kRankedMaxCategory = 47;
inline constexpr unsigned kRankedNarrowCategory = 25;
inline constexpr std::size_t kRankedTable = 64;
inline constexpr std::size_t kRankedGroup = 16;
inline constexpr std::size_t kRankedReadAhead = 128;
// Ranked lane order: code t of a full block is number RankedLaneNumber(t). Each group of
// kRankedGroup codes is two rows of the eight lanes of kRiceLaneRows numbers (rice_join_lanes'),
// its even codes one row and its odd codes the next, so that a kernel holding the group in 32-bit
// lanes takes each row by a mask or a shift (its even and odd lanes), with no permute.
inline constexpr std::size_t RankedLaneNumber(std::size_t t) {
  return kRiceLaneRows * (t % kRankedGroup / 2) + 2 * (t / kRankedGroup) + t % 2;
}

struct RankedCodes {
  const std::uint32_t* ends;
  std::size_t count;
  unsigned k;
  const std::uint8_t* lows;
  const std::uint8_t* categories;  // kRankedTable entries; entry 0 is 0 (no index is 0)
  unsigned widest;
  const std::uint8_t* bits;
  std::size_t readable;
  std::uint64_t add;
  std::uint64_t* out;
  unsigned sums = 0;
  bool zigzag = false;
  std::uint64_t first = 0;
  std::uint64_t first2 = 0;
  std::uint64_t* in_order = nullptr;
  // Indexes at or past index_end are invalid (the caller rejects the block by max_index), and a
  // kernel may then take any of the table's categories for them.
  unsigned index_end = kRankedTable;
};
struct RankedResult {
  std::size_t done = 0;
  std::uint64_t bit_end = 0;
  std::uint32_t max_index = 0;
};

struct Kernels {
  IsaLevel level;
  const char* name;

  // FFOR of exactly 1024 values: stores (in[i] - base) truncated to `width` bits (0..64) as
  // 16 * width little-endian 64-bit words in the interleaved layout, straight into `out` (any
  // alignment: the caller's output block).
  // REQUIRES: every in[i] - base (mod 2^64) fits in `width` bits.
  void (*ffor_pack_1024)(const std::uint64_t* in, std::uint64_t base, unsigned width,
                         std::uint8_t* out);
  // Inverse of ffor_pack_1024: out[i] = unpacked + base (mod 2^64). Reads exactly in[0 .. 128 *
  // width) bytes, any alignment (the encoded block itself).
  void (*ffor_unpack_1024)(const std::uint8_t* in, std::uint64_t base, unsigned width,
                           std::uint64_t* out);

  // ALP encode of n values with exponent e and factor f, fused with exception detection and the
  // range of the good integers: ints[i] is the rounded integer of in[i] * 10^e * 10^-f, and bit i
  // of exceptions (ceil(n / 64) words, all overwritten) is set where decoding ints[i] does not give
  // back the bits of in[i] or the integer is out of range (ints[i] is then unspecified).
  // The float version computes in 32-bit float lanes; it gives exactly the results of the
  // one-value reference in lane_ops.h.
  // REQUIRES: e <= kMaxExponent<T>, f <= e.
  AlpEncodeStats (*alp_encode_double)(const double* in, std::size_t n, unsigned e, unsigned f,
                                      std::int64_t* ints, std::uint64_t* exceptions);
  AlpEncodeStats (*alp_encode_float)(const float* in, std::size_t n, unsigned e, unsigned f,
                                     std::int64_t* ints, std::uint64_t* exceptions);

  // The exponent search's statistics for `pairs` exponent/factor pairs over the same n values:
  // stats[p] is exactly what alp_encode_* returns for (exponents[p], factors[p]) (the exception
  // count and the range of the good integers, lo > hi when every value is an exception), without
  // writing integers or exception bits. One call ranks a whole candidate list, so the per-call
  // costs (constants, reductions, the indirect call) are paid once per pair or once per search
  // instead of once per encode.
  // REQUIRES: n <= 64, exponents[p] <= kMaxExponent of T, factors[p] <= exponents[p].
  void (*alp_sample_stats_double)(const double* in, std::size_t n, const std::uint8_t* exponents,
                                  const std::uint8_t* factors, std::size_t pairs,
                                  AlpEncodeStats* stats);
  void (*alp_sample_stats_float)(const float* in, std::size_t n, const std::uint8_t* exponents,
                                 const std::uint8_t* factors, std::size_t pairs,
                                 AlpEncodeStats* stats);

  // ALP decode of n integers: out[i] = ints[i] * 10^f * 10^-e in T's arithmetic.
  void (*alp_decode_double)(const std::int64_t* ints, std::size_t n, unsigned e, unsigned f,
                            double* out);
  void (*alp_decode_float)(const std::int64_t* ints, std::size_t n, unsigned e, unsigned f,
                           float* out);

  // Fused unFFOR + ALP decode of a full 1024-value block (interleaved layout, any alignment; reads
  // exactly 128 * width bytes).
  void (*alp_unpack_decode_double)(const std::uint8_t* packed, std::uint64_t base, unsigned width,
                                   unsigned e, unsigned f, double* out);
  void (*alp_unpack_decode_float)(const std::uint8_t* packed, std::uint64_t base, unsigned width,
                                  unsigned e, unsigned f, float* out);

  // Fused unFFOR + prefix sum + ALP decode of a full delta-coded block: the integers are
  // `first`, then first plus the running (wrapping) sum of unpacked values 1, 2, ...; unpacked
  // value 0 is a placeholder and ignored.
  void (*alp_delta_unpack_decode_double)(const std::uint8_t* packed, std::uint64_t base,
                                         unsigned width, std::uint64_t first, unsigned e,
                                         unsigned f, double* out);
  void (*alp_delta_unpack_decode_float)(const std::uint8_t* packed, std::uint64_t base,
                                        unsigned width, std::uint64_t first, unsigned e, unsigned f,
                                        float* out);

  // The values outside a window of integers: with offset = (v[i] - anchor) when sign == 0 and
  // (anchor - v[i]) when sign == ~0, bit i of narrow is set where offset >> width != 0 and bit i
  // of wider where offset >> (width + 1) != 0 (ceil(n / 64) words each, all overwritten).
  // Returns how many bits each has set. REQUIRES: width < 64.
  WindowCounts (*outside_window)(const std::int64_t* v, std::size_t n, std::uint64_t anchor,
                                 std::uint64_t sign, unsigned width, std::uint64_t* narrow,
                                 std::uint64_t* wider);

  // Signed minimum and maximum of v[0..n). REQUIRES: n >= 1.
  void (*min_max)(const std::int64_t* v, std::size_t n, std::int64_t* min, std::int64_t* max);

  // deltas[i] = v[i] - v[i - 1] (wrapping) for 1 <= i < n, and the signed range of those deltas;
  // returns true. It may instead stop early and return false (deltas and range incomplete) once
  // the deltas seen span at least `give_up` (max - min as unsigned), which a caller that only
  // wants narrower deltas passes; UINT64_MAX never stops. REQUIRES: n >= 2. deltas[0] is not
  // written.
  bool (*delta_min_max)(const std::int64_t* v, std::size_t n, std::uint64_t give_up,
                        std::int64_t* deltas, std::int64_t* min, std::int64_t* max);

  // ALP-RD split of n values: rights[i] = the low `right_bits` bits, indexes[i] = the position of
  // the left part in dictionary[0 .. dictionary_size) (lowest match) or 0 when it is missing, in
  // which case bit i of exceptions (ceil(n / 64) words, all overwritten) is set. Returns the
  // number of exceptions. REQUIRES: 1 <= dictionary_size <= 8, right_bits < bits of T.
  std::size_t (*alp_rd_split_double)(const double* in, std::size_t n, unsigned right_bits,
                                     const std::uint16_t* dictionary, unsigned dictionary_size,
                                     std::uint64_t* rights, std::uint64_t* indexes,
                                     std::uint64_t* exceptions);
  std::size_t (*alp_rd_split_float)(const float* in, std::size_t n, unsigned right_bits,
                                    const std::uint16_t* dictionary, unsigned dictionary_size,
                                    std::uint64_t* rights, std::uint64_t* indexes,
                                    std::uint64_t* exceptions);

  // Grouped XOR's first pass over n doubles (n >= 2): xors[i - 1] = the bits of values[i] XOR
  // those of values[i - 1] for 1 <= i < n, and for each group g of kXorGroupSize XORs (the last may
  // be shorter) the OR of its XORs (ors[g]) and the mask of the non-zero ones (nonzero[g], bit j
  // for its XOR j).
  void (*xor_groups_scan)(const double* values, std::size_t n, std::uint64_t* xors,
                          std::uint64_t* ors, std::uint32_t* nonzero);
  // One group's fields, xors[j] >> shift for its `count` (<= kXorGroupSize) XORs in order: all of
  // them, or with `compact` only those whose bit is set in `nonzero`. Returns how many were
  // written; up to 8 slots past them may be overwritten. REQUIRES: shift < 64.
  std::size_t (*xor_group_fields)(const std::uint64_t* xors, std::size_t count,
                                  std::uint32_t nonzero, unsigned shift, bool compact,
                                  std::uint64_t* fields);

  // The positions of the set bits of words[0 .. word_count) in ascending order (bit b of word w
  // is 64 w + b), as a Rice code decoder needs them: stops after the first word that takes the
  // count past `limit`. Returns the count, at most limit + 64. Up to limit + kSetBitSlack slots
  // of `positions` may be written. REQUIRES: 64 * word_count < 2^32.
  std::size_t (*set_bit_positions)(const std::uint64_t* words, std::size_t word_count,
                                   std::size_t limit, std::uint32_t* positions);

  // Rice codes into integers: code j is (quotient j << k) + ints[j] (its low bits, unpacked, to
  // which an escaped code's caller has added the rest of its quotient, shifted by k),
  // quotient j the number of 0 bits between the set bits that end codes j - 1 and j (`ends`,
  // ascending). ints[j] becomes the code plus `add` (zigzag false) or the code unzigzagged
  // (zigzag true); with sums >= 1, ints[0] = first and ints[j] the running sum from it of the
  // values 1 .. j (value 0, a placeholder, is ignored); with sums == 2, those sums are summed
  // again the same way from first2 (second differences into integers). Returns the OR of the
  // quotients. Wrapping arithmetic. REQUIRES: count >= 1, k < 64, sums <= 2.
  std::uint64_t (*rice_join)(const std::uint32_t* ends, std::size_t count, unsigned k,
                             std::uint64_t add, bool zigzag, unsigned sums, std::uint64_t first,
                             std::uint64_t first2, std::uint64_t* ints);
  // rice_join of a full block (kRiceLanes codes) whose codes are in lane order: code t is
  // number kRiceLaneRows * (t % kRiceLanes) + t / kRiceLanes of the block, so that each of eight
  // lanes holds 128 consecutive numbers and the running sums add whole vectors of codes, one lane
  // per 64-bit element, instead of summing within each vector. Writes `out` in block order, as
  // rice_join with the codes moved to their numbers' places would leave `ints` (number 0, a
  // placeholder, ignored); `ints` (the low bits, in code order) is clobbered. Returns the OR of
  // the quotients. REQUIRES: k < 64, sums 1 or 2, out does not overlap ints.
  std::uint64_t (*rice_join_lanes)(const std::uint32_t* ends, unsigned k, std::uint64_t add,
                                   bool zigzag, unsigned sums, std::uint64_t first,
                                   std::uint64_t first2, std::uint64_t* ints, std::uint64_t* out);

  // In place: ints[0] = first, ints[j] += ints[j - 1] for j in 1 .. count - 1 (deltas into
  // integers; wrapping). REQUIRES: count >= 1.
  void (*prefix_sum)(std::uint64_t* ints, std::size_t count, std::uint64_t first);
  // The same over zigzagged deltas: ints[0] = first, ints[j] = ints[j - 1] + unzigzag(ints[j]).
  void (*unzigzag_prefix_sum)(std::uint64_t* ints, std::size_t count, std::uint64_t first);

  // LEB128 varints (7 bits a byte, low first, the high bit set on every byte but a varint's
  // last) into out[0 .. n): true when bytes[0 .. size) is exactly n of them, each at most
  // kVarintMaxBytes long; false otherwise, with out[] unspecified (the caller's own loop then names
  // the fault). REQUIRES: bytes readable up to VarintReadBytes(size) (the vector levels load
  // 64-byte windows and 8 bytes at each varint).
  bool (*decode_varints)(const std::uint8_t* bytes, std::size_t size, std::size_t n,
                         std::uint64_t* out);

  // The codes of kAlpHuffman segments (codec/alp_huffman.cc), all segments advanced in one loop.
  void (*huffman_segments)(const HuffmanSegments& job);

  // The numbers of a kAlpRanked block (RankedCodes above).
  RankedResult (*ranked_codes)(const RankedCodes& job);

  // For every stride-th of v[0 .. n) (from v[0]), sample k: low[k] = the leading zero bits of
  // v - lo and high[k] those of hi - v (unsigned differences, 64 for 0), ceil(n / stride) bytes
  // each. ALP's outlier search samples a block's integers this way (a width is 64 minus these).
  void (*sample_leading_zeros)(const std::int64_t* v, std::size_t n, std::size_t stride,
                               std::uint64_t lo, std::uint64_t hi, std::uint8_t* low,
                               std::uint8_t* high);
  // How many of bytes[0 .. count) are below limit. REQUIRES: every byte and limit <= 64,
  // count <= 1024, bytes readable up to count rounded up to 64 (the vector levels compare 64
  // bytes at a time; the bytes past count are not counted).
  std::size_t (*count_below)(const std::uint8_t* bytes, std::size_t count, unsigned limit);

  // A dictionary block's runs into its values: dst[i] = runs[r - 1] for i < n, where r is the
  // number of bits set among bits 0 .. i of `bitmap` (bit i in byte i / 8). REQUIRES: n >= 1, bit
  // 0 set, runs[-kExpandRunsSlack] .. runs[runs used + kExpandRunsSlack) readable (the AVX-512
  // level loads eight runs from each byte's first).
  void (*expand_runs)(const std::uint8_t* bitmap, const double* runs, std::size_t n, double* dst);

  // A plain bit stream (field i at bit i * width, bit 0 of byte 0 first) into integers:
  // out[i] = field i + base (wrapping) for i < count. REQUIRES: 1 <= width <= 64, stream[0 ..
  // readable) readable with readable >= PackedBytes(count, width) + 8 (a field is read with
  // 8-byte loads from its first byte or its first word; the vector level reads 128-byte windows
  // while they fit, with AVX-512 VBMI 64-byte windows for widths up to 25).
  void (*unpack_stream)(const std::uint8_t* stream, std::size_t readable, std::size_t count,
                        unsigned width, std::uint64_t base, std::uint64_t* out);

  // Radix-packed fields into their digits (bit_packing.h): out[i] = digit i % digits (least
  // significant first) of fields[i / digits] in base `range`, plus base (wrapping), for
  // i < count; the last field may hold fewer digits, its top one whole. REQUIRES: 2 <= range,
  // range^digits <= 2^32, every field below 2^32, fields readable up to ceil(count / digits)
  // + kRadixFieldSlack (the vector level loads eight fields from the first one a group needs).
  void (*radix_digits)(const std::uint64_t* fields, std::size_t count, std::uint64_t range,
                       unsigned digits, std::uint64_t base, std::uint64_t* out);

  // ALP-RD's parts joined into doubles: out[i] has the bits dictionary[indexes[i] % 8] |
  // rights[i]. Returns the largest index, which the caller checks against its dictionary's size
  // (the output is garbage then). REQUIRES: dictionary holds 8 entries (left parts shifted into
  // place), every index below 2^63.
  std::uint64_t (*alp_rd_join_double)(const std::uint64_t* rights, const std::uint64_t* indexes,
                                      std::size_t n, const std::uint64_t* dictionary, double* out);

  // One grouped-XOR group into doubles: for j < count, value j's XOR is the next unused field
  // shifted up by `shift` when bit j of `present` is set (0 otherwise), and out[j] has the bits of
  // prev XOR every XOR up to j. Returns the last value's bits (prev when count is 0).
  // REQUIRES: count <= 32, shift < 64, as many fields as bits of `present` below count, and
  // fields readable up to fields[count - 1] (the vector level loads eight at a time).
  std::uint64_t (*xor_group_double)(const std::uint64_t* fields, std::uint32_t present,
                                    std::size_t count, unsigned shift, std::uint64_t prev,
                                    double* out);
};

// Fields past the last that radix_digits may read.
inline constexpr std::size_t kRadixFieldSlack = 8;

// Runs that expand_runs may read before the first and past the last it uses.
inline constexpr std::size_t kExpandRunsSlack = 16;

// The longest varint decode_varints accepts: 56 bits, more than an ALP integer needs.
inline constexpr std::size_t kVarintMaxBytes = 8;
// What decode_varints may read of a stream of `size` bytes.
// (A 64-byte window may start at any byte before `size`.)
inline constexpr std::size_t VarintReadBytes(std::size_t size) {
  return (size + 63) / 64 * 64 + 64;
}

// Slots of set_bit_positions' output past `limit` that it may write.
inline constexpr std::size_t kSetBitSlack = 64;

// The kernels of one level, or nullptr when that level was not compiled in or the CPU lacks it.
const Kernels* KernelsFor(IsaLevel level) noexcept;

// The highest level this CPU supports (ignoring INGOT_ISA).
IsaLevel DetectIsa() noexcept;

// The kernels used by the codec: chosen once, on first use, from DetectIsa() lowered by INGOT_ISA.
const Kernels& ActiveKernels() noexcept;

// Replaces the active kernels (benchmarks and tests). Returns false, and changes nothing, when
// `level` is unavailable. Not thread-safe against concurrent codec calls.
bool ForceIsa(IsaLevel level) noexcept;

// Per-level tables, defined in their own object libraries.
const Kernels& ScalarKernels() noexcept;
const Kernels* Avx2Kernels() noexcept;    // nullptr when not compiled in
const Kernels* Avx512Kernels() noexcept;  // nullptr when not compiled in
// On a CPU with AVX-512 VBMI2, Avx512Kernels() takes its set-bit positions from a VBMI2 kernel,
// and with VBMI its ranked codes from a VBMI kernel; this is the AVX-512 table without them, for
// tests (nullptr where they are not used).
const Kernels* Avx512KernelsWithoutVbmi() noexcept;

}  // namespace ingot::codec::simd
