// kAlpRanked: the block's ALP integers (offsets from the minimum, deltas or second differences) as
// each number's bit length ("category"), ranked by how often it occurs and Rice-coded, followed
// by the bits below its leading one, in three separate streams.
//
// Why: the category code of kAlpHuffman (codec/alp_huffman.cc) is near the entropy of real data's
// skewed deltas, but a Huffman code decodes one code at a time: its table lookup, the low bits
// and the next position form a chain per code, and eight segments side by side took 1.1-1.2 ns a
// value on AVX-512 hardware, about Gorilla's speed. Here the three parts of a code sit in
// separate streams, so that every step of the decode is a vector step over sixteen codes:
//  - the ranks' unary parts are a stream whose set bits end codes: their positions come out all
//    at once (the Rice decoder's set-bit kernel), and each rank is the distance from the last;
//  - the ranks' k low bits (k = 0..3) are a plain field stream;
//  - a rank's category is a byte permute of a 64-entry table, the fields' offsets in the third
//    stream a prefix sum of the categories' widths, and each field a byte permute of a window of
//    that stream and two shifts (simd::Kernels::ranked_codes).
// On the ALP row groups' blocks that the compact choice wrote as Huffman codes, a frequency rank
// coded with a Rice parameter of 0-3 costs 0.7-2% more bits than the Huffman code's entropy.
//
// Layout (little-endian), after the 3-byte block header:
//   u8 exponent, u8 factor, u8 flags (alp_compact_internal.h: kDeltaFlag, kZigZagFlag,
//   kPlaceholderFlag (required with kDeltaFlag), kSecondOrderFlag, kDividedFlag),
//   u16 exception count E,
//   varints: zigzag(first integer) (delta only), zigzag(first delta) (second differences only),
//   zigzag(base) (without zigzag: the minimum for offsets, the smallest delta for deltas),
//   u8: R (bits 0-5, 1..48) the ranks, k (bits 6-7) the Rice parameter,
//   R bytes: the category (0..47) of rank 0, 1, ... (most frequent first),
//   u16 U, then U bytes: code i's rank >> k as that many 0 bits and a 1 (bit 0 of byte 0 first),
//   zero bits to the end of its last byte,
//   ceil(count k / 8) bytes: the ranks' low k bits, code i's at bit k i,
//   the fields: for each code of category c >= 2, the c - 1 bits below its number's leading one,
//   one after another from bit 0 (category 0 is the number 0, category 1 the number 1), zero bits
//   to the end of the last byte, which is the last before
//   E x u16 exception positions (ascending), E x sizeof(T) exception values, then the divided
//   exceptions (kDividedFlag).
// Numbers: as kAlpHuffman's codes. Offsets from the base (no delta), or with kDeltaFlag: number 0
// is a placeholder 0, number i is delta i (zigzagged, or minus the smallest delta); with
// kSecondOrderFlag number 1 is a second placeholder 0 and number i >= 2 is zigzag(delta i -
// delta i-1). Code t is number t, or in a full block of deltas number 128 (t % 16 / 2) + 2 (t /
// 16) + t % 2 (lane order: each sixteen codes are two rows of eight lanes of 128 numbers, even
// codes one row, odd codes the next; the decoder's sums then need no shuffles).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "codec/alp_compact_internal.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {

using namespace compact;  // NOLINT(google-build-using-namespace): the compact encodings' helpers

namespace {

constexpr const char* kName = "alp_ranked";
// Numbers below 2^47: categories 0..47, so that a field (<= 46 bits) and its bit offset in a byte
// fit one 64-bit lane.
constexpr unsigned kCategories = simd::kRankedMaxCategory + 1;
static_assert(kCategories <= 64, "R has six bits");
constexpr unsigned kMaxK = simd::kRankedMaxK;
static_assert(kCategories - 1 + (1u << kMaxK) < simd::kRankedTable);
constexpr std::uint32_t kRankedFlags =
    kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag | kDividedFlag;
// The byte holding R and k.
constexpr unsigned kRankBits = 6;
constexpr std::uint8_t kRankMask = (1u << kRankBits) - 1;

unsigned Category(std::uint64_t x) { return static_cast<unsigned>(std::bit_width(x)); }
unsigned FieldBits(unsigned c) { return c == 0 ? 0 : c - 1; }

// One candidate stream's plan: its categories ranked, the Rice parameter and the streams' sizes.
struct Plan {
  std::uint32_t freq[kCategories] = {};
  std::uint8_t by_rank[kCategories] = {};  // category of rank r
  std::uint8_t rank[kCategories] = {};     // rank of category c
  unsigned ranks = 0;                      // R
  unsigned k = 0;
  std::uint64_t unary_bits = 0;
  std::uint64_t field_bits = 0;
  bool ok = false;

  std::size_t UnaryBytes() const { return static_cast<std::size_t>((unary_bits + 7) / 8); }
  std::size_t LowBytes(std::size_t n) const { return (n * k + 7) / 8; }
  std::size_t FieldBytes() const { return static_cast<std::size_t>((field_bits + 7) / 8); }
  // Everything after the varints, the exceptions aside.
  std::size_t Bytes(std::size_t n) const {
    return 1 + ranks + 2 + UnaryBytes() + LowBytes(n) + FieldBytes();
  }
};

// Counts `x`'s categories, ranks them and picks k; false when a number reaches 2^47.
bool MakePlan(const std::uint64_t* x, std::size_t n, Plan* p) {
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned c = Category(x[i]);
    if (c >= kCategories) return false;
    ++p->freq[c];
  }
  for (unsigned c = 0; c < kCategories; ++c) {
    if (p->freq[c] == 0) continue;
    p->by_rank[p->ranks++] = static_cast<std::uint8_t>(c);
    p->field_bits += std::uint64_t{p->freq[c]} * FieldBits(c);
  }
  // Most frequent first; equal counts by category, so that the order is deterministic (std::sort
  // with a total order: stable_sort would allocate).
  std::sort(p->by_rank, p->by_rank + p->ranks, [&](std::uint8_t a, std::uint8_t b) {
    return p->freq[a] != p->freq[b] ? p->freq[a] > p->freq[b] : a < b;
  });
  for (unsigned r = 0; r < p->ranks; ++r) p->rank[p->by_rank[r]] = static_cast<std::uint8_t>(r);
  p->unary_bits = ~0ull;
  std::uint64_t best = ~0ull;
  for (unsigned k = 0; k <= kMaxK; ++k) {
    std::uint64_t unary = 0;
    for (unsigned r = 0; r < p->ranks; ++r) {
      unary += std::uint64_t{p->freq[p->by_rank[r]]} * ((r >> k) + 1);
    }
    // Compared in whole bytes, as they are written.
    const std::uint64_t bytes = (unary + 7) / 8 + (std::uint64_t{n} * k + 7) / 8;
    if (bytes < best) {
      best = bytes;
      p->k = k;
      p->unary_bits = unary;
    }
  }
  p->ok = true;
  return true;
}

// Appends `bits` (< 64, the value below 2^bits) to a little-endian bit stream at `*q`.
struct BitWriter {
  std::uint8_t* q;
  std::uint64_t acc = 0;
  unsigned held = 0;

  void Put(std::uint64_t value, unsigned bits) {
    if (bits == 0) return;
    acc |= value << held;
    if (held + bits >= 64) {
      std::memcpy(q, &acc, 8);
      q += 8;
      const unsigned used = 64 - held;
      acc = used == 64 ? 0 : value >> used;
      held = held + bits - 64;
    } else {
      held += bits;
    }
  }
  // `zeros` 0 bits and a 1.
  void Unary(unsigned zeros) {
    for (; zeros >= 32; zeros -= 32) Put(0, 32);
    Put(std::uint64_t{1} << zeros, zeros + 1);
  }
  std::uint8_t* Finish() {
    for (; held > 0; held = held > 8 ? held - 8 : 0) {
      *q++ = static_cast<std::uint8_t>(acc);
      acc >>= 8;
    }
    return q;
  }
};

// The three streams of `x` under plan `p` at `q`; returns the end.
std::uint8_t* WriteStreams(const std::uint64_t* x, std::size_t n, const Plan& p, std::uint8_t* q) {
  StoreLe<std::uint16_t>(q, static_cast<std::uint16_t>(p.UnaryBytes()));
  q += 2;
  BitWriter unary{q};
  for (std::size_t i = 0; i < n; ++i) unary.Unary(p.rank[Category(x[i])] >> p.k);
  q = unary.Finish();
  BitWriter lows{q};
  const unsigned low_mask = (1u << p.k) - 1;
  for (std::size_t i = 0; i < n; ++i) lows.Put(p.rank[Category(x[i])] & low_mask, p.k);
  q = lows.Finish();
  BitWriter fields{q};
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned bits = FieldBits(Category(x[i]));
    fields.Put(bits == 0 ? 0 : x[i] & ((std::uint64_t{1} << bits) - 1), bits);
  }
  return fields.Finish();
}

// Full blocks of deltas have their codes in lane order (simd::RankedLaneNumber), so that the
// decoder's running sums add a row of eight lanes at a time instead of summing within each vector.
bool LaneOrder(bool delta, std::size_t n) { return delta && n == kBlockCapacity; }
static_assert(simd::kRiceLanes * simd::kRiceLaneRows == kBlockCapacity);

}  // namespace

template <typename T>
std::size_t EncodeAlpRanked(std::span<const T> values, unsigned exponent, unsigned factor,
                            Workspace& ws, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  simd::AlpEncodeStats stats;
  if (!CompactAlpInts(values, exponent, factor, ws, &stats)) return 0;
  const std::size_t exceptions = stats.exceptions;
  const std::size_t tail = TailBytes(exceptions, ws.divided_count, sizeof(T));
  std::uint64_t changes[kBlockCapacity];
  const CompactStreams s = BuildCompactStreams(ws, n, stats.lo, changes);
  Plan plain, zigzag, above, second;
  MakePlan(s.offsets, n, &plain);
  if (s.deltas != nullptr) {
    MakePlan(s.deltas, n, &zigzag);
    MakePlan(s.above, n, &above);
  }
  if (s.changes != nullptr) MakePlan(s.changes, n, &second);
  const auto size = [n](const Plan& p) { return p.ok ? p.Bytes(n) : SIZE_MAX; };
  const Plan* best = &plain;
  for (const Plan* p : {&zigzag, &above, &second}) {
    if (size(*p) < size(*best)) best = p;
  }
  if (!best->ok) return 0;
  const bool delta = best != &plain;
  const bool zigzagged = best == &zigzag || best == &second;
  const bool second_order = best == &second;
  const std::uint64_t* x = best == &plain    ? s.offsets
                           : best == &zigzag ? s.deltas
                           : best == &second ? s.changes
                                             : s.above;
  const StreamVarints varints = VarintsOf(s, delta, zigzagged, second_order);
  // The decoder copies the streams into workspace buffers of their own.
  if (kAlpRankedHeaderBytes + varints.Bytes() + best->Bytes(n) + tail > out.size() ||
      best->UnaryBytes() > sizeof ws.packed - 8 ||
      best->FieldBytes() > sizeof ws.stream - Workspace::kStreamSlack) {
    return 0;
  }
  std::uint8_t* p = out.data();
  std::uint8_t* q =
      WriteCompactHeader(p, FloatEncoding::kAlpRanked, n, exponent, factor, delta, exceptions, ws);
  if (zigzagged) p[kAlpZstdFlagsOffset] |= kZigZagFlag;
  if (delta) p[kAlpZstdFlagsOffset] |= kPlaceholderFlag;
  if (second_order) p[kAlpZstdFlagsOffset] |= kSecondOrderFlag;
  q = varints.Write(q);
  *q++ = static_cast<std::uint8_t>(best->ranks | best->k << kRankBits);
  std::memcpy(q, best->by_rank, best->ranks);
  q += best->ranks;
  if (LaneOrder(delta, n)) {
    std::uint64_t lanes[kBlockCapacity];
    for (std::size_t t = 0; t < n; ++t) lanes[t] = x[simd::RankedLaneNumber(t)];
    q = WriteStreams(lanes, n, *best, q);
  } else {
    q = WriteStreams(x, n, *best, q);
  }
  // WriteExceptions reads the positions only; the integers were rewritten above.
  WriteExceptions(values, ws, exceptions, q);
  return static_cast<std::size_t>(q - p) + tail;
}

template <typename T>
Status DecodeAlpRanked(std::span<const std::uint8_t> src, std::span<T> out,
                       Workspace& ws) noexcept {
  const std::size_t n = out.size();
  StreamHeader s;
  INGOT_RETURN_IF_ERROR(ReadStreamHeader<T>(src, n, kName, kRankedFlags, &s));
  const CompactHeader& h = s.h;
  const StreamVarints& varints = s.varints;
  const bool zigzagged = varints.zigzagged, second_order = varints.second_order;
  const std::uint8_t* p = s.begin;
  const std::uint8_t* const end = s.end;
  if (p == end) return Corrupt(kName, "no rank byte");
  const unsigned ranks = *p & kRankMask;
  const unsigned k = *p++ >> kRankBits;
  if (ranks == 0 || ranks > kCategories) {
    return Corrupt(kName, N(ranks) + " ranks (1.." + N(kCategories) + ")");
  }
  if (static_cast<std::size_t>(end - p) < ranks + 2) return Corrupt(kName, "rank table truncated");
  // Index (rank + 1) << k, plus the low bits, of a code: entries below 2^k and past the ranks stay
  // category 0 (the kernel's reads stay bounded) and the largest index is checked after.
  alignas(64) std::uint8_t categories[simd::kRankedTable] = {};
  unsigned widest = 0;
  for (unsigned r = 0; r < ranks; ++r) {
    const unsigned c = p[r];
    if (c >= kCategories) {
      return Corrupt(kName, "rank " + N(r) + " has category " + N(c) + " > " + N(kCategories - 1));
    }
    categories[r + (1u << k)] = static_cast<std::uint8_t>(c);
    widest = std::max(widest, c);
  }
  p += ranks;
  const std::size_t unary_bytes = LoadLe<std::uint16_t>(p);
  p += 2;
  const std::size_t low_bytes = (n * k + 7) / 8;
  if (static_cast<std::size_t>(end - p) < unary_bytes + low_bytes) {
    return Corrupt(kName, N(static_cast<std::size_t>(end - p)) + " bytes after the rank table < " +
                              N(unary_bytes) + " of unary codes and " + N(low_bytes) +
                              " of low bits");
  }
  if (unary_bytes > sizeof ws.packed - 8) {
    return Corrupt(kName, "unary stream of " + N(unary_bytes) + " bytes");
  }
  const std::size_t field_bytes = static_cast<std::size_t>(end - p) - unary_bytes - low_bytes;
  if (field_bytes > sizeof ws.stream - Workspace::kStreamSlack) {
    return Corrupt(kName, "field stream of " + N(field_bytes) + " bytes");
  }
  // The unary codes, padded with zeros to whole words: each set bit ends a code (32-bit
  // positions in ws.ints, as the Rice decoder keeps them).
  auto* unary = reinterpret_cast<std::uint8_t*>(ws.packed);
  std::memcpy(unary, p, unary_bytes);
  std::memset(unary + unary_bytes, 0, 8);
  auto* ends = reinterpret_cast<std::uint32_t*>(ws.ints);
  static_assert(sizeof(Workspace::ints) >=
                (Workspace::kLanes + simd::kSetBitSlack) * sizeof(std::uint32_t));
  const simd::Kernels& kernels = simd::ActiveKernels();
  const std::size_t found = kernels.set_bit_positions(ws.packed, (unary_bytes + 7) / 8, n, ends);
  if (found < n) return Corrupt(kName, "code " + N(found) + " runs past the unary stream");
  const std::size_t next = std::size_t{ends[n - 1]} + 1;
  if (found > n || (next + 7) / 8 != unary_bytes) {
    return Corrupt(kName, "codes end in byte " + N((next + 7) / 8) + " of " + N(unary_bytes) +
                              (found > n ? ", bits after the last code" : ""));
  }
  p += unary_bytes;
  // The low bits and the fields, each copied with zeros after it for the kernels' whole-word
  // reads (8 bytes past the low bits, kRankedReadAhead past the fields).
  auto* lows = reinterpret_cast<std::uint8_t*>(ws.ints2);
  static_assert(sizeof ws.ints2 >= (kBlockCapacity * kMaxK + 7) / 8 + 8);
  std::memcpy(lows, p, low_bytes);
  std::memset(lows + low_bytes, 0, 8);
  p += low_bytes;
  static_assert(Workspace::kStreamSlack >= simd::kRankedReadAhead);
  std::uint8_t* fields = ws.stream;
  std::memcpy(fields, p, field_bytes);
  std::memset(fields + field_bytes, 0, simd::kRankedReadAhead);
  std::uint64_t* ints = ws.bits;
  const std::uint64_t add = zigzagged ? 0 : static_cast<std::uint64_t>(UnZigZag(varints.base));
  simd::RankedCodes job{ends,       n,      k,      lows,
                        categories, widest, fields, field_bytes + simd::kRankedReadAhead,
                        add,        ints};
  job.index_end = ranks + (1u << k);
  // A full block of deltas is in lane order: the kernel sums it into ws.ints2 (the low bits'
  // copy, read by then), in block order, from the header's first integer (and first delta).
  const auto first_int = static_cast<std::uint64_t>(UnZigZag(varints.first));
  const bool lanes = LaneOrder(h.delta, n);
  if (lanes) {
    job.sums = second_order ? 2 : 1;
    job.zigzag = zigzagged;
    job.first =
        second_order ? static_cast<std::uint64_t>(UnZigZag(varints.first_delta)) : first_int;
    job.first2 = first_int;
    job.in_order = reinterpret_cast<std::uint64_t*>(ws.ints2);
  }
  const simd::RankedResult r = kernels.ranked_codes(job);
  if (r.max_index >= ranks + (1u << k)) {
    return Corrupt(kName,
                   "a code of rank " + N((r.max_index >> k) - 1) + " with " + N(ranks) + " ranks");
  }
  if (r.done < n || (r.bit_end + 7) / 8 != field_bytes ||
      ((r.bit_end & 7) != 0 && (fields[r.bit_end / 8] >> (r.bit_end & 7)) != 0)) {
    return Corrupt(kName, "fields end at bit " + N(r.bit_end) + " (code " + N(r.done) +
                              "), not in byte " + N(field_bytes) + " with zero padding");
  }
  if (lanes) return FinishCompactDecode(job.in_order, h, end, out, kName);
  // Wrapping arithmetic: corrupt numbers give wrong values, never undefined behaviour.
  SumStream(ints, n, s);
  return FinishCompactDecode(ints, h, end, out, kName);
}

template std::size_t EncodeAlpRanked<double>(std::span<const double>, unsigned, unsigned,
                                             Workspace&, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpRanked<float>(std::span<const float>, unsigned, unsigned, Workspace&,
                                            std::span<std::uint8_t>) noexcept;
template Status DecodeAlpRanked<double>(std::span<const std::uint8_t>, std::span<double>,
                                        Workspace&) noexcept;
template Status DecodeAlpRanked<float>(std::span<const std::uint8_t>, std::span<float>,
                                       Workspace&) noexcept;

}  // namespace ingot::codec
