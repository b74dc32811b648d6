// kAlpHuffman: the block's ALP integers (offsets from the minimum, deltas or second differences)
// as a Huffman code of each number's bit length followed by its bits below the leading one.
//
// Why: real data's deltas (temperatures with a -99 sentinel, prices that mostly stay put or move
// by a few cents and sometimes jump) follow no law with one parameter, which Rice assumes; zstd
// over their varints adapts to them but decodes at about Gorilla's speed, since each 1-2 KB frame
// pays for its tables. A number's bit length ("category", 0 for zero) has an alphabet of at most
// 48 symbols, so the code's table costs a few bytes and builds in a few hundred cycles, and the
// bits below the leading one are nearly uniform, so writing them raw loses little: on the ALP row
// groups the category code is 5-10% smaller than zstd over the varints.
//
// Decoding speed: a block's 1024 codes are eight segments of 128, each its own bit stream, and the
// decoder advances the eight in one loop, so their eight chains of (load, table lookup, advance)
// overlap; a short block (a dictionary's sorted values) is split into up to eight segments alike.
// The window's low byte indexes a 256-entry table of control words (bextr's start and length, and
// the bits to advance) and leads (the leading one with the base folded in), so the loop keeps
// seven of the eight positions in registers (the eighth in a stack slot); the zigzagged deltas are
// unzigzagged and summed afterwards, eight lanes at a time.
//
// Layout (little-endian), after the 3-byte block header:
//   u8 exponent, u8 factor, u8 flags (alp_compact_internal.h: kDeltaFlag, kZigZagFlag,
//   kPlaceholderFlag (required with kDeltaFlag), kSecondOrderFlag, kDividedFlag, kSplitFlag),
//   u16 exception count E,
//   varints: zigzag(first integer) (delta only), zigzag(first delta) (second differences only),
//   zigzag(base) (without zigzag: the minimum for offsets, the smallest delta for deltas),
//   u8 K (1..48): categories 0..K-1 have a code length,
//   ceil(K/2) bytes: the lengths, 4 bits each (category 2i in the low half), 0 for none, at most
//   10; a complete prefix code (Kraft sum exactly 1), canonical (shorter codes first, then by
//   category),
//   (S - 1) x u16: the byte length of segments 0..S-2; the last segment takes the bytes up to the
//   tail. Segments of L = 128 codes (S = ceil(count / 128)), or with kSplitFlag S = 2^k (the
//   largest with count >= 32 S, at most 8) of L = ceil(count / S) codes, the last one shorter or
//   equal (SegmentsOf),
//   the segments: code i of segment s is value L s + i; each is the category's code (bit 0 of
//   byte 0 first, the code's first bit first) then, for category c >= 2, the value's c - 1 bits
//   below its leading one; zero bits to the byte,
//   E x u16 exception positions (ascending), E x sizeof(T) exception values, then the divided
//   exceptions (kDividedFlag).
// Codes: offsets from the base (no delta), or with kDeltaFlag: code 0 is a placeholder 0, code i
// is delta i (zigzagged, or minus the smallest delta); with kSecondOrderFlag code 1 is a second
// placeholder 0 and code i >= 2 is zigzag(delta i - delta i-1).
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

constexpr const char* kName = "alp_huffman";
// Values per segment, and segments per full block.
constexpr std::size_t kSegmentValues = simd::kHuffmanSegmentValues;
constexpr std::size_t kMaxSegments = kBlockCapacity / kSegmentValues;
static_assert(kMaxSegments * kSegmentValues == kBlockCapacity);
static_assert(kMaxSegments == simd::kHuffmanMaxSegments);
// The longest code: the decoder's table has 2^8 entries, indexed by a code word's low byte (8, 9
// and 10 bits gave the same sizes on every data set measured).
constexpr unsigned kMaxCodeBits = 8;
// Numbers below 2^47: a code (<= 8 bits) and its bits below the leading one (<= 46) come from
// one 8-byte load at any bit offset (57 bits).
constexpr unsigned kCategories = 48;
// Flags this encoding knows.
constexpr std::uint32_t kHuffmanFlags =
    kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag | kDividedFlag | kSplitFlag;

unsigned Category(std::uint64_t x) { return static_cast<unsigned>(std::bit_width(x)); }

// Bits below the leading one of a number of category c.
unsigned ExtraBits(unsigned c) { return c == 0 ? 0 : c - 1; }

// The bits of a byte in reverse order.
constexpr auto kReversedByte = [] {
  std::array<std::uint8_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    for (unsigned i = 0; i < 8; ++i)
      t[b] = static_cast<std::uint8_t>(t[b] | ((b >> i) & 1u) << (7 - i));
  }
  return t;
}();

// The low `bits` (1..kMaxCodeBits) of `code` in reverse order.
std::uint32_t ReverseBits(std::uint32_t code, unsigned bits) {
  static_assert(kMaxCodeBits <= 8);
  return kReversedByte[code] >> (8 - bits);
}

// Canonical codes for `lengths` (0 = unused), bit-reversed for a stream read from bit 0 up.
void CanonicalCodes(const std::uint8_t* lengths, unsigned k, std::uint32_t* codes) {
  std::uint32_t count[kMaxCodeBits + 1] = {};
  for (unsigned c = 0; c < k; ++c) ++count[lengths[c]];
  count[0] = 0;
  std::uint32_t next[kMaxCodeBits + 2] = {};
  for (unsigned bits = 1; bits <= kMaxCodeBits; ++bits) {
    next[bits + 1] = (next[bits] + count[bits]) << 1;
  }
  for (unsigned c = 0; c < k; ++c) {
    const unsigned bits = lengths[c];
    codes[c] = bits == 0 ? 0 : ReverseBits(next[bits]++, bits);
  }
}

// Huffman code lengths (at most kMaxCodeBits) for the categories 0..k-1 with `freq` (at least
// one nonzero). A lone symbol gets length 1 and a partner of length 1, so the code is complete.
void BuildLengths(const std::uint32_t* freq, unsigned k, std::uint8_t* lengths) {
  std::uint64_t weight[2 * kCategories];
  std::uint32_t scaled[kCategories];
  for (unsigned c = 0; c < k; ++c) scaled[c] = freq[c];
  for (;;) {
    // Leaves 0..k-1, inner nodes from k on; parent links give each leaf's depth.
    std::int32_t parent[2 * kCategories];
    bool active[2 * kCategories] = {};
    unsigned nodes = k, live = 0;
    for (unsigned c = 0; c < k; ++c) {
      weight[c] = scaled[c];
      active[c] = scaled[c] > 0;
      parent[c] = -1;
      live += active[c] ? 1 : 0;
    }
    if (live == 1) {
      std::fill(lengths, lengths + k, 0);
      for (unsigned c = 0; c < k; ++c) {
        if (scaled[c] > 0) lengths[c] = 1;
      }
      return;  // the caller adds the partner
    }
    while (live > 1) {
      unsigned a = 2 * kCategories, b = 2 * kCategories;
      for (unsigned i = 0; i < nodes; ++i) {
        if (!active[i]) continue;
        if (a == 2 * kCategories || weight[i] < weight[a]) {
          b = a;
          a = i;
        } else if (b == 2 * kCategories || weight[i] < weight[b]) {
          b = i;
        }
      }
      active[a] = active[b] = false;
      weight[nodes] = weight[a] + weight[b];
      parent[nodes] = -1;
      parent[a] = parent[b] = static_cast<std::int32_t>(nodes);
      active[nodes++] = true;
      --live;
    }
    unsigned longest = 0;
    for (unsigned c = 0; c < k; ++c) {
      unsigned depth = 0;
      if (scaled[c] > 0) {
        for (std::int32_t at = parent[c]; at >= 0; at = parent[at]) ++depth;
      }
      lengths[c] = static_cast<std::uint8_t>(depth);
      longest = std::max(longest, depth);
    }
    if (longest <= kMaxCodeBits) return;
    // Too deep: flatten the weights and build again (all equal gives depth 6 for 48 symbols).
    for (unsigned c = 0; c < k; ++c) {
      if (scaled[c] > 0) scaled[c] = std::max<std::uint32_t>(1, scaled[c] >> 1);
    }
  }
}

// One candidate stream's code: the category counts, lengths and the size of the codes in bits.
struct Candidate {
  std::uint32_t freq[kCategories] = {};
  std::uint8_t lengths[kCategories] = {};
  unsigned k = 0;              // categories 0..k-1 coded
  std::uint64_t bits = ~0ull;  // codes and their low bits; ~0 when the stream cannot be coded
};

// Counts `x`'s categories and builds its code; false (bits ~0) when a number reaches 2^47 or the
// codes cannot come in under `limit_bits`.
bool Plan(const std::uint64_t* x, std::size_t count, std::uint64_t limit_bits, Candidate* c) {
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < count; ++i) {
    any |= x[i];
    const unsigned cat = Category(x[i]);
    if (cat >= kCategories) return false;
    ++c->freq[cat];
  }
  c->k = Category(any) + 1;
  // A code takes at least a bit: the low bits and a bit a code bound the size from below, and the
  // code is not built when that is already past the limit.
  std::uint64_t lower = count;
  for (unsigned i = 0; i < c->k; ++i) lower += std::uint64_t{c->freq[i]} * ExtraBits(i);
  if (lower > limit_bits) return false;
  BuildLengths(c->freq, c->k, c->lengths);
  // A lone category gets a partner so that the code is complete (one bit each).
  unsigned used = 0, lone = 0;
  for (unsigned i = 0; i < c->k; ++i) {
    if (c->lengths[i] != 0) {
      ++used;
      lone = i;
    }
  }
  if (used == 1) {
    const unsigned partner = lone == 0 ? 1 : 0;
    c->lengths[partner] = 1;
    c->k = std::max(c->k, partner + 1);
  }
  std::uint64_t bits = 0;
  for (unsigned i = 0; i < c->k; ++i) {
    bits += std::uint64_t{c->freq[i]} * (c->lengths[i] + ExtraBits(i));
  }
  c->bits = bits;
  return true;
}

// Bytes of the code's description: K, then the lengths two to a byte.
std::size_t TableBytes(unsigned k) { return 1 + (k + 1) / 2; }

// How a block's codes are cut into segments: `count` segments of `values` codes, the last one
// shorter or equal.
struct Segments {
  std::size_t count = 1;
  std::size_t values = kSegmentValues;
  std::size_t begin(std::size_t s) const { return s * values; }
  std::size_t end(std::size_t s, std::size_t n) const { return std::min(n, (s + 1) * values); }
};

// Codes per segment at least, when a short block is split.
constexpr std::size_t kMinSplitValues = 32;

// Without kSplitFlag: segments of 128 codes. With it: 2^k segments (k as large as leaves each at
// least 32 codes, at most 8 segments) of equal length ⌈n / 2^k⌉, the last one shorter or equal
// (never empty: n > 32 (2^k - 1) > 2^k (2^k - 1) for 2^k <= 8). The kernel then advances all of
// them together; a dictionary's sorted values (150-600 codes) otherwise took one or two chains.
Segments SegmentsOf(std::size_t n, bool split) {
  Segments g;
  if (!split) {
    g.count = std::max<std::size_t>(1, (n + kSegmentValues - 1) / kSegmentValues);
    return g;
  }
  g.count = std::min(kMaxSegments, std::bit_floor(std::max<std::size_t>(1, n / kMinSplitValues)));
  g.values = std::max<std::size_t>(1, (n + g.count - 1) / g.count);
  return g;
}

// A short block is split when that gives it more than one segment (64 codes or more); the decoder
// refuses the flag on any other block.
bool SplitBlock(std::size_t n) { return n < kBlockCapacity && n >= 2 * kMinSplitValues; }

// Writes `x` as segments at `q` (room checked by the caller); returns the end.
std::uint8_t* WriteSegments(const std::uint64_t* x, std::size_t n, const Segments& g,
                            const Candidate& c, std::uint8_t* q) {
  std::uint32_t codes[kCategories];
  CanonicalCodes(c.lengths, c.k, codes);
  const std::size_t segments = g.count;
  std::uint8_t* lengths_at = q;
  q += 2 * (segments - 1);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::uint8_t* start = q;
    std::uint64_t acc = 0;
    unsigned held = 0;
    for (std::size_t i = g.begin(s), end = g.end(s, n); i < end; ++i) {
      const unsigned cat = Category(x[i]);
      const unsigned extra = ExtraBits(cat);
      const std::uint64_t low = extra == 0 ? 0 : x[i] & ((std::uint64_t{1} << extra) - 1);
      acc |= (std::uint64_t{codes[cat]} | (low << c.lengths[cat])) << held;
      held += c.lengths[cat] + extra;  // <= 7 + 8 + 46
      for (; held >= 8; held -= 8) {
        *q++ = static_cast<std::uint8_t>(acc);
        acc >>= 8;
      }
    }
    if (held > 0) *q++ = static_cast<std::uint8_t>(acc);
    if (s + 1 < segments) {
      StoreLe<std::uint16_t>(lengths_at + 2 * s, static_cast<std::uint16_t>(q - start));
    }
  }
  return q;
}

// Exact bytes of the segments (with their length fields) that WriteSegments writes.
std::size_t SegmentBytes(const std::uint64_t* x, std::size_t n, const Segments& g,
                         const Candidate& c) {
  const std::size_t segments = g.count;
  std::size_t bytes = 2 * (segments - 1);
  for (std::size_t s = 0; s < segments; ++s) {
    std::uint64_t bits = 0;
    for (std::size_t i = g.begin(s), end = g.end(s, n); i < end; ++i) {
      const unsigned cat = Category(x[i]);
      bits += c.lengths[cat] + ExtraBits(cat);
    }
    bytes += static_cast<std::size_t>((bits + 7) / 8);
  }
  return bytes;
}

}  // namespace

template <typename T>
std::size_t EncodeAlpHuffman(std::span<const T> values, unsigned exponent, unsigned factor,
                             Workspace& ws, std::span<std::uint8_t> out) noexcept {
  const std::size_t n = values.size();
  simd::AlpEncodeStats stats;
  if (!CompactAlpInts(values, exponent, factor, ws, &stats)) return 0;
  const std::size_t exceptions = stats.exceptions;
  const std::size_t tail = TailBytes(exceptions, ws.divided_count, sizeof(T));
  // The candidate streams, placeholders included (codes 0, and 1 for second differences). Each
  // is planned only if it can beat the room and the best stream so far.
  std::uint64_t changes[kBlockCapacity];
  const CompactStreams s = BuildCompactStreams(ws, n, stats.lo, changes);
  Candidate plain, zigzag, above, second;
  const auto size = [](const Candidate& c) {
    return c.bits == ~0ull ? ~0ull : c.bits + 8 * TableBytes(c.k);
  };
  std::uint64_t limit = 8 * std::uint64_t{out.size()};
  const auto plan = [&](const std::uint64_t* x, Candidate* c) {
    if (Plan(x, n, limit, c)) limit = std::min<std::uint64_t>(limit, size(*c));
  };
  plan(s.offsets, &plain);
  if (s.deltas != nullptr) {
    plan(s.deltas, &zigzag);
    plan(s.above, &above);
  }
  if (s.changes != nullptr) plan(s.changes, &second);
  // The smallest of the four, by its codes and table (the varints and padding differ by a few
  // bytes at most).
  const Candidate* best = &plain;
  for (const Candidate* c : {&zigzag, &above, &second}) {
    if (size(*c) < size(*best)) best = c;
  }
  if (best->bits == ~0ull) return 0;
  const bool delta = best != &plain;
  const bool zigzagged = best == &zigzag || best == &second;
  const bool second_order = best == &second;
  const std::uint64_t* x = best == &plain    ? s.offsets
                           : best == &zigzag ? s.deltas
                           : best == &second ? s.changes
                                             : s.above;
  const StreamVarints varints = VarintsOf(s, delta, zigzagged, second_order);
  const std::size_t header = kAlpHuffmanHeaderBytes + varints.Bytes() + TableBytes(best->k);
  // Bounds on the segments' bytes first (padding takes under a byte a segment), the exact size
  // only when the room is between them; the decoder copies the segments into ws.stream.
  const bool split = SplitBlock(n);
  const Segments g = SegmentsOf(n, split);
  const std::size_t segments = g.count;
  const std::size_t lengths_bytes = 2 * (segments - 1);
  if (header + lengths_bytes + best->bits / 8 + tail > out.size()) return 0;
  std::size_t segment_bytes = lengths_bytes + (best->bits + 7 * segments) / 8;  // at most
  if (header + segment_bytes + tail > out.size() ||
      segment_bytes > sizeof ws.stream - Workspace::kStreamSlack) {
    segment_bytes = SegmentBytes(x, n, g, *best);
    if (header + segment_bytes + tail > out.size() ||
        segment_bytes > sizeof ws.stream - Workspace::kStreamSlack) {
      return 0;
    }
  }
  std::uint8_t* p = out.data();
  std::uint8_t* q =
      WriteCompactHeader(p, FloatEncoding::kAlpHuffman, n, exponent, factor, delta, exceptions, ws);
  if (zigzagged) p[kAlpZstdFlagsOffset] |= kZigZagFlag;
  if (delta) p[kAlpZstdFlagsOffset] |= kPlaceholderFlag;
  if (second_order) p[kAlpZstdFlagsOffset] |= kSecondOrderFlag;
  if (split) p[kAlpZstdFlagsOffset] |= kSplitFlag;
  q = varints.Write(q);
  *q++ = static_cast<std::uint8_t>(best->k);
  for (unsigned c = 0; c < best->k; c += 2) {
    const unsigned high = c + 1 < best->k ? best->lengths[c + 1] : 0;
    *q++ = static_cast<std::uint8_t>(best->lengths[c] | (high << 4));
  }
  q = WriteSegments(x, n, g, *best, q);
  // WriteExceptions reads the positions only; the integers were rewritten above.
  WriteExceptions(values, ws, exceptions, q);
  return static_cast<std::size_t>(q - p) + tail;
}

template <typename T>
Status DecodeAlpHuffman(std::span<const std::uint8_t> src, std::span<T> out,
                        Workspace& ws) noexcept {
  const std::size_t n = out.size();
  StreamHeader s;
  INGOT_RETURN_IF_ERROR(ReadStreamHeader<T>(src, n, kName, kHuffmanFlags, &s));
  const CompactHeader& h = s.h;
  const bool zigzagged = s.varints.zigzagged;
  const std::uint8_t* p = s.begin;
  const std::uint8_t* const end = s.end;
  const std::uint64_t base = s.varints.base;
  // The code: K lengths, complete, at most kMaxCodeBits each.
  if (p == end) return Corrupt(kName, "no code table");
  const unsigned k = *p++;
  if (k == 0 || k > kCategories)
    return Corrupt(kName, N(k) + " categories (1.." + N(kCategories) + ")");
  if (static_cast<std::size_t>(end - p) < (k + 1) / 2)
    return Corrupt(kName, "code table truncated");
  std::uint8_t lengths[kCategories];
  for (unsigned c = 0; c < k; ++c) {
    lengths[c] = static_cast<std::uint8_t>((p[c / 2] >> (4 * (c % 2))) & 0xf);
    if (lengths[c] > kMaxCodeBits) {
      return Corrupt(kName, "code length " + N(lengths[c]) + " > " + N(kMaxCodeBits));
    }
  }
  if (k % 2 == 1 && (p[k / 2] >> 4) != 0) return Corrupt(kName, "bits after the last length");
  p += (k + 1) / 2;
  std::uint64_t kraft = 0;
  for (unsigned c = 0; c < k; ++c) {
    if (lengths[c] != 0) kraft += std::uint64_t{1} << (kMaxCodeBits - lengths[c]);
  }
  if (kraft != std::uint64_t{1} << kMaxCodeBits) {
    return Corrupt(kName, "code lengths do not make a complete code");
  }
  // The table: every entry belongs to exactly one code (complete and prefix-free), each code's
  // entries every 2^length from its bit-reversed code.
  auto* table = reinterpret_cast<simd::HuffmanTable*>(ws.packed);
  static_assert(sizeof ws.packed >= sizeof(simd::HuffmanTable) &&
                alignof(simd::HuffmanTable) <= 64);  // free while decoding
  static_assert(simd::kHuffmanTableEntries == std::size_t{1} << kMaxCodeBits);
  std::uint32_t codes[kCategories];
  CanonicalCodes(lengths, k, codes);
  // Each lead carries the base of offsets and of deltas above the smallest (low < lead, so low +
  // lead is the number): the kernel adds it with the leading one.
  const std::uint64_t add = zigzagged ? 0 : static_cast<std::uint64_t>(UnZigZag(base));
  for (unsigned c = 0; c < k; ++c) {
    const unsigned bits = lengths[c];
    if (bits == 0) continue;
    const unsigned low = ExtraBits(c);
    const std::uint64_t control = bits | low << 8 | (bits + low) << 16;
    const std::uint64_t lead = (c == 0 ? 0 : std::uint64_t{1} << low) + add;
    for (std::size_t j = codes[c]; j < simd::kHuffmanTableEntries; j += std::size_t{1} << bits) {
      table->control[j] = control;
      table->lead[j] = lead;
    }
  }
  // Segment lengths, then the segments copied with zero padding for whole-word reads.
  const bool split = (h.flags & kSplitFlag) != 0;
  if (split && !SplitBlock(n)) {
    return Corrupt(kName, "split segments in a block of " + N(n) + " codes (64..1023)");
  }
  const Segments g = SegmentsOf(n, split);
  const std::size_t segments = g.count;
  if (static_cast<std::size_t>(end - p) < 2 * (segments - 1)) {
    return Corrupt(kName, "segment lengths truncated");
  }
  std::uint64_t pos[kMaxSegments];
  std::size_t starts[kMaxSegments + 1];
  starts[0] = 0;
  for (std::size_t s = 0; s + 1 < segments; ++s) {
    starts[s + 1] = starts[s] + LoadLe<std::uint16_t>(p + 2 * s);
  }
  p += 2 * (segments - 1);
  const auto stream_bytes = static_cast<std::size_t>(end - p);
  if (starts[segments - 1] > stream_bytes) {
    return Corrupt(kName,
                   "segments of " + N(starts[segments - 1]) + " bytes in " + N(stream_bytes));
  }
  // A code takes at most 57 bits, so no read of a segment's codes (128 at most) passes its start
  // by more than kStreamSlack bytes: the copy is zero there, and nothing else bounds the reads.
  static_assert(Workspace::kStreamSlack >=
                (kSegmentValues * (kMaxCodeBits + kCategories - 2) + 7) / 8 + 8);
  if (stream_bytes > sizeof ws.stream - Workspace::kStreamSlack) {
    return Corrupt(kName, "segments of " + N(stream_bytes) + " bytes");
  }
  starts[segments] = stream_bytes;
  std::uint8_t* buf = ws.stream;
  std::memcpy(buf, p, stream_bytes);
  std::memset(buf + stream_bytes, 0, Workspace::kStreamSlack);
  for (std::size_t s = 0; s < segments; ++s) pos[s] = std::uint64_t{starts[s]} * 8;
  // The codes in order (zigzagged, or above the base), then unzigzagged and summed.
  std::uint64_t* ints = ws.bits;
  simd::HuffmanSegments job{buf, table, segments, g.values, pos, ints};
  const simd::Kernels& kernels = simd::ActiveKernels();
  static_assert(kSegmentValues == simd::kHuffmanSegmentValues);
  if (!split) {
    // The whole segments together, then a short block's last one (fewer codes) on its own.
    const std::size_t whole = n / kSegmentValues;
    if (whole > 0) {
      job.segments = whole;
      kernels.huffman_segments(job);
    }
    if (whole < segments) {
      job.segments = 1;
      job.count = n - whole * kSegmentValues;
      job.pos = pos + whole;
      job.ints = ints + whole * kSegmentValues;
      kernels.huffman_segments(job);
    }
  } else {
    // All segments together for as many codes as the last one has, then the others' rest. The
    // kernel puts segment s's codes from ints[128 s] on; they move down to ints[values * s].
    const std::size_t last = n - (segments - 1) * g.values;  // 1 .. values
    job.count = last;
    kernels.huffman_segments(job);
    if (last < g.values) {
      job.segments = segments - 1;
      job.count = g.values - last;
      job.ints = ints + last;
      kernels.huffman_segments(job);
    }
    for (std::size_t s = 1; s < segments; ++s) {
      std::memmove(ints + g.begin(s), ints + s * kSegmentValues,
                   (g.end(s, n) - g.begin(s)) * sizeof *ints);
    }
  }
  // Each segment ends where the next begins, its padding zero.
  for (std::size_t s = 0; s < segments; ++s) {
    const std::uint64_t bits = pos[s];
    if ((bits + 7) / 8 != starts[s + 1] ||
        ((bits & 7) != 0 && (buf[bits / 8] >> (bits & 7)) != 0)) {
      return Corrupt(kName, "segment " + N(s) + " ends at bit " + N(bits) + ", not in byte " +
                                N(starts[s + 1]) + " with zero padding");
    }
  }
  // Sums from the header's first integer (and first delta), which replace the placeholders.
  // Wrapping arithmetic: corrupt numbers give wrong values, never undefined behaviour.
  SumStream(ints, n, s);
  return FinishCompactDecode(ints, h, end, out, kName);
}

template std::size_t EncodeAlpHuffman<double>(std::span<const double>, unsigned, unsigned,
                                              Workspace&, std::span<std::uint8_t>) noexcept;
template std::size_t EncodeAlpHuffman<float>(std::span<const float>, unsigned, unsigned, Workspace&,
                                             std::span<std::uint8_t>) noexcept;
template Status DecodeAlpHuffman<double>(std::span<const std::uint8_t>, std::span<double>,
                                         Workspace&) noexcept;
template Status DecodeAlpHuffman<float>(std::span<const std::uint8_t>, std::span<float>,
                                        Workspace&) noexcept;

}  // namespace ingot::codec
