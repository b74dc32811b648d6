// Group chunks (chunk/chunk_format.h): GroupChunks joins 2..8 sealed single-block chunks; the
// readers, the structural checks and the compact rewrite handle the block directory.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

#include "chunk/chunk_format.h"

namespace ingot {
namespace {

constexpr std::int64_t kTenSeconds = 10'000'000'000;
constexpr std::int64_t kStart = 1'700'000'000'000'000'000;

struct Sealed {
  std::vector<std::int64_t> ts;
  std::vector<std::uint64_t> bits;
  std::vector<std::uint8_t> bytes;
};

// `n` points from `first`: `step` apart when step > 0, random gaps of 1..1000 ns otherwise.
// Floats are a 2-decimal random walk (with -0.0, infinities and NaN payloads when `specials`).
Sealed Seal(ValueType type, std::size_t n, std::int64_t first, std::int64_t step,
            std::uint64_t seed, bool specials = false) {
  std::mt19937_64 rng(seed);
  Sealed s;
  std::int64_t t = first;
  double walk = 100;
  for (std::size_t i = 0; i < n; ++i) {
    s.ts.push_back(t);
    t += step > 0 ? step : 1 + static_cast<std::int64_t>(rng() % 1000);
    if (type == ValueType::kFloat) {
      walk += static_cast<double>(static_cast<int>(rng() % 201) - 100) / 100.0;
      s.bits.push_back(std::bit_cast<std::uint64_t>(std::round(walk * 100) / 100));
    } else {
      s.bits.push_back(type == ValueType::kInteger ? rng() : rng() & 1);
    }
  }
  // -0.0, NaNs with payloads (quiet; negative signalling), +inf, -inf.
  const std::uint64_t kSpecials[] = {1ull << 63, 0x7ff8dead00000001ull, 0xfff0000000000123ull,
                                     0x7ff0000000000000ull, 0xfff0000000000000ull};
  for (std::size_t i = seed % 7; specials && i < n; i += 97) s.bits[i] = kSpecials[i % 5];
  auto ws = std::make_unique<codec::Workspace>();
  codec::SeriesHint hint;
  s.bytes.resize(MaxSealedChunkBytes(n));
  s.bytes.resize(SealChunk(type, s.ts, s.bits, hint, *ws, s.bytes));
  return s;
}

// The timestamp that follows `s` after `gap`.
std::int64_t After(const Sealed& s, std::int64_t gap) { return s.ts.back() + gap; }

// Chunks of `n` points `step` apart (random gaps when 0), each `gap` after the previous one.
struct Piece {
  std::size_t n;
  std::int64_t gap, step;
};
std::vector<Sealed> Chain(ValueType type, std::initializer_list<Piece> pieces, bool specials) {
  std::vector<Sealed> parts;
  for (const Piece& p : pieces) {
    const std::int64_t first = parts.empty() ? kStart : After(parts.back(), p.gap);
    parts.push_back(Seal(type, p.n, first, p.step, 10 + parts.size(), specials));
  }
  return parts;
}

// Consecutive chunks of the given sizes, `step` apart throughout (random gaps when step == 0).
std::vector<Sealed> Series(ValueType type, std::vector<std::size_t> counts, std::int64_t step,
                           bool specials = false, std::int64_t first = kStart) {
  std::vector<Sealed> parts;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    parts.push_back(Seal(type, counts[i], first, step, 100 + i, specials));
    first = After(parts.back(), step > 0 ? step : 7);
  }
  return parts;
}

Status Group(const std::vector<Sealed>& parts, codec::Workspace& ws, std::string* out) {
  std::vector<std::span<const std::uint8_t>> spans;
  for (const Sealed& p : parts) spans.emplace_back(p.bytes);
  return GroupChunks(spans, ws, out);
}

std::vector<std::uint8_t> Bytes(const std::string& s) {
  return std::vector<std::uint8_t>(s.begin(), s.end());  // exact size: ASan sees over-reads
}

// GroupChunks(parts) as an exact-size copy, validated into *h (blocks 0 when that fails).
std::vector<std::uint8_t> MustGroup(const std::vector<Sealed>& parts, codec::Workspace& ws,
                                    ChunkHeader* h) {
  std::string group;
  const Status st = Group(parts, ws, &group);
  EXPECT_TRUE(st.ok()) << st.ToString();
  const std::vector<std::uint8_t> bytes = Bytes(group);
  if (!ValidateChunk(bytes, h).ok()) h->blocks = 0;
  return bytes;
}

std::size_t EntryBytes(const ChunkHeader& h) {
  return h.ts_encoding == kTimestampEncodingInt ? 6 : 4;
}

template <typename T>
void Put(std::vector<std::uint8_t>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// Rewrites the checksum (bytes 32..39) as chunk_format.h describes it.
void Reseal(std::vector<std::uint8_t>& c) {
  Put(c, 32,
      XXH64(c.data() + kChunkHeaderBytes, c.size() - kChunkHeaderBytes, XXH64(c.data(), 32, 0)));
}

// A group of `parts` assembled here from the layout in chunk_format.h, with a valid checksum:
// regular when every part is regular-encoded (no timestamp blocks), otherwise each part's own
// timestamp block (all parts integer-coded). Header range from the first and last part.
std::vector<std::uint8_t> Assemble(const std::vector<Sealed>& parts) {
  std::vector<ChunkHeader> hs(parts.size());
  bool regular = true;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_TRUE(ParseChunkHeader(parts[i].bytes, &hs[i]).ok());
    regular &= hs[i].ts_encoding == kTimestampEncodingRegular;
  }
  std::vector<std::uint8_t> c(kChunkHeaderBytes), ts, values;
  const auto put16 = [&c](std::size_t v) { c.push_back(v & 0xff), c.push_back(v >> 8 & 0xff); };
  std::size_t count = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto block = parts[i].bytes.begin() + kChunkHeaderBytes;
    put16(hs[i].count);
    if (!regular) put16(hs[i].ts_bytes);
    put16(hs[i].value_bytes);
    ts.insert(ts.end(), block, block + hs[i].ts_bytes);
    values.insert(values.end(), block + hs[i].ts_bytes, parts[i].bytes.end());
    count += hs[i].count;
  }
  const auto t = static_cast<std::uint32_t>(c.size() - kChunkHeaderBytes + ts.size());
  c.insert(c.end(), ts.begin(), ts.end());
  c.insert(c.end(), values.begin(), values.end());
  c[0] = kChunkGroupFormatVersion;
  c[1] = static_cast<std::uint8_t>(hs[0].type);
  c[2] = regular ? kTimestampEncodingRegular : kTimestampEncodingInt;
  c[3] = hs[0].value_encoding;
  Put(c, 4, static_cast<std::uint16_t>(count));
  c[6] = static_cast<std::uint8_t>(parts.size() - 1);
  Put(c, 8, parts.front().ts.front());
  Put(c, 16, parts.back().ts.back());
  Put(c, 24, t);
  Put(c, 28, static_cast<std::uint32_t>(values.size()));
  Reseal(c);
  return c;
}

// Expects `group` to hold the parts' points bit for bit (both decoders) and one block per part,
// each block's value block copied from its part unless `recoded`.
void ExpectGroupOf(const std::string& group, const std::vector<Sealed>& parts, ValueType type,
                   codec::Workspace& ws, ChunkHeader* header = nullptr, bool recoded = false) {
  const std::vector<std::uint8_t> bytes = Bytes(group);
  ChunkHeader h;
  const Status st = ValidateChunk(bytes, &h);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<std::int64_t> want_ts;
  std::vector<std::uint64_t> want_bits;
  for (const Sealed& p : parts) {
    want_ts.insert(want_ts.end(), p.ts.begin(), p.ts.end());
    want_bits.insert(want_bits.end(), p.bits.begin(), p.bits.end());
  }
  const std::size_t n = want_ts.size();
  EXPECT_EQ(h.type, type);
  EXPECT_EQ(h.count, n);
  EXPECT_EQ(h.blocks, parts.size());
  EXPECT_EQ(h.min_ts_ns, want_ts.front());
  EXPECT_EQ(h.max_ts_ns, want_ts.back());
  EXPECT_EQ(h.value_encoding, type == ValueType::kFloat
                                  ? static_cast<std::uint8_t>(group[kChunkHeaderBytes + h.ts_bytes])
                                  : kIntValueEncoding);
  std::vector<std::int64_t> ts(n), raw(n);
  std::vector<double> values(n);
  ASSERT_TRUE(DecodeChunkRaw(bytes, ts, raw, ws).ok());
  EXPECT_EQ(ts, want_ts);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<std::uint64_t>(raw[i]), want_bits[i]);
  std::fill(ts.begin(), ts.end(), 0);
  ASSERT_TRUE(DecodeChunk(bytes, ts, values, ws).ok());
  EXPECT_EQ(ts, want_ts);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::int64_t>(want_bits[i]);
    const double want = type == ValueType::kFloat ? std::bit_cast<double>(v) : double(v);
    ASSERT_EQ(std::bit_cast<std::uint64_t>(values[i]), std::bit_cast<std::uint64_t>(want)) << i;
  }
  ChunkBlocks blocks;
  ASSERT_EQ(ListChunkBlocks(bytes, h, blocks), parts.size());
  std::size_t first = 0, ts_bytes = parts.size() * EntryBytes(h);
  for (std::size_t b = 0; b < parts.size(); ++b) {
    ChunkHeader ph;
    ASSERT_TRUE(ParseChunkHeader(parts[b].bytes, &ph).ok());
    const std::span<const std::uint8_t> part(parts[b].bytes);
    EXPECT_EQ(blocks[b].first, first) << b;
    EXPECT_EQ(blocks[b].count, ph.count) << b;
    EXPECT_EQ(std::ranges::equal(blocks[b].values,
                                 part.subspan(kChunkHeaderBytes + ph.ts_bytes, ph.value_bytes)),
              !recoded)
        << b;
    if (h.ts_encoding == kTimestampEncodingRegular) {
      EXPECT_TRUE(blocks[b].ts.empty()) << b;
    } else if (ph.ts_encoding == kTimestampEncodingInt) {
      EXPECT_TRUE(std::ranges::equal(blocks[b].ts, part.subspan(kChunkHeaderBytes, ph.ts_bytes)));
    } else {
      EXPECT_FALSE(blocks[b].ts.empty()) << b;
    }
    first += ph.count;
    ts_bytes += blocks[b].ts.size();
  }
  EXPECT_EQ(h.ts_bytes, ts_bytes);
  if (header != nullptr) *header = h;
}

TEST(ChunkGroupTest, EightRegularFullChunksBecomeOneRegularGroup) {
  auto ws = std::make_unique<codec::Workspace>();
  const std::vector<Sealed> parts =
      Series(ValueType::kFloat, std::vector<std::size_t>(8, 1024), kTenSeconds, true);
  std::size_t inputs = 0;
  for (const Sealed& p : parts) inputs += p.bytes.size();
  std::string group;
  ASSERT_TRUE(Group(parts, *ws, &group).ok());
  ChunkHeader h;
  ASSERT_NO_FATAL_FAILURE(ExpectGroupOf(group, parts, ValueType::kFloat, *ws, &h));
  EXPECT_EQ(h.ts_encoding, kTimestampEncodingRegular);
  EXPECT_EQ(h.blocks, 8);
  EXPECT_EQ(h.count, kMaxChunkPoints);
  EXPECT_EQ(h.ts_bytes, 8u * 4);  // the directory only
  EXPECT_EQ(group[6], 7);
  EXPECT_LT(group.size(), inputs);
}

TEST(ChunkGroupTest, RegularAcrossChunksIncludingSinglePoints) {
  auto ws = std::make_unique<codec::Workspace>();
  for (ValueType type : {ValueType::kFloat, ValueType::kInteger, ValueType::kBoolean}) {
    for (const std::vector<std::size_t>& counts :
         std::vector<std::vector<std::size_t>>{{1, 1}, {1, 2, 5}, {3, 1, 1024, 2}, {1024, 1}}) {
      const std::vector<Sealed> parts = Series(type, counts, 15, type == ValueType::kFloat);
      std::string group;
      ASSERT_TRUE(Group(parts, *ws, &group).ok());
      ChunkHeader h;
      ASSERT_NO_FATAL_FAILURE(ExpectGroupOf(group, parts, type, *ws, &h));
      EXPECT_EQ(h.ts_encoding, kTimestampEncodingRegular) << counts.size();
      EXPECT_EQ(h.ts_bytes, counts.size() * 4);
    }
  }
  // Most of int64: steps and spans in unsigned arithmetic.
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  const std::vector<Sealed> wide =
      Series(ValueType::kFloat, {1024, 1024, 1024}, kMin / -1600, false, kMin);
  std::string group;
  ASSERT_TRUE(Group(wide, *ws, &group).ok());
  ChunkHeader h;
  ASSERT_NO_FATAL_FAILURE(ExpectGroupOf(group, wide, ValueType::kFloat, *ws, &h));
  EXPECT_EQ(h.ts_encoding, kTimestampEncodingRegular);
  EXPECT_GT(h.max_ts_ns, 0);
}

TEST(ChunkGroupTest, IrregularOrMisalignedTimestampsKeepIntBlocks) {
  auto ws = std::make_unique<codec::Workspace>();
  for (ValueType type : {ValueType::kFloat, ValueType::kInteger, ValueType::kBoolean}) {
    const bool f = type == ValueType::kFloat;
    const std::vector<std::vector<Sealed>> cases = {
        // Random gaps, uneven counts (with a single point), then full chunks.
        Series(type, {1, 700, 1024, 3}, 0, f), Series(type, {1024, 1024, 1024}, 0, f),
        // Regular-encoded chunks (fixed step; 1 and 2 points) between irregular ones.
        Chain(type, {{300, 0, kTenSeconds}, {200, 5, 0}, {2, 9, 0}, {1024, 10, 10}, {1, 3, 0}}, f),
        // Every chunk at one step, but one gap between chunks is not that step.
        Chain(type, {{100, 0, 10}, {100, 10, 10}, {100, 11, 10}}, f),
        // Chunks at different steps, each following at its own step.
        Chain(type, {{50, 0, 10}, {50, 20, 20}}, f),
        // A single first or last point whose gap is not the other chunk's step.
        Chain(type, {{1, 0, 0}, {3, 8, 10}}, f), Chain(type, {{3, 0, 10}, {1, 9, 0}}, f)};
    for (std::size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("case " + std::to_string(c) + " type " + std::to_string(static_cast<int>(type)));
      std::string group;
      const Status st = Group(cases[c], *ws, &group);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ChunkHeader h;
      ASSERT_NO_FATAL_FAILURE(ExpectGroupOf(group, cases[c], type, *ws, &h));
      EXPECT_EQ(h.ts_encoding, kTimestampEncodingInt);
      EXPECT_GT(h.ts_bytes, cases[c].size() * 6);
    }
  }
}

TEST(ChunkGroupTest, RejectsBadInputs) {
  auto ws = std::make_unique<codec::Workspace>();
  std::string out;
  const std::vector<Sealed> nine =
      Series(ValueType::kFloat, std::vector<std::size_t>(9, 1024), kTenSeconds);
  EXPECT_TRUE(Group({}, *ws, &out).IsInvalidArgument());
  EXPECT_TRUE(Group({nine[0]}, *ws, &out).IsInvalidArgument());
  EXPECT_TRUE(Group(nine, *ws, &out).IsInvalidArgument());  // 9 chunks, 9216 points
  EXPECT_TRUE(Group(std::vector<Sealed>(nine.begin(), nine.end() - 1), *ws, &out).ok());

  const std::vector<Sealed> abc = Series(ValueType::kFloat, {40, 40, 40}, 0);
  EXPECT_TRUE(Group({abc[1], abc[0]}, *ws, &out).IsInvalidArgument());  // out of order
  EXPECT_TRUE(Group({abc[0], abc[2], abc[1]}, *ws, &out).IsInvalidArgument());
  EXPECT_TRUE(Group({abc[0], abc[0]}, *ws, &out).IsInvalidArgument());           // the same chunk
  const Sealed touching = Seal(ValueType::kFloat, 10, abc[0].ts.back(), 0, 20);  // min == prev max
  EXPECT_TRUE(Group({abc[0], touching}, *ws, &out).IsInvalidArgument());
  const Sealed inside = Seal(ValueType::kFloat, 10, abc[0].ts[20], 0, 21);
  EXPECT_TRUE(Group({abc[0], inside}, *ws, &out).IsInvalidArgument());
  const Sealed ints = Seal(ValueType::kInteger, 10, After(abc[0], 1), 0, 22);
  EXPECT_TRUE(Group({abc[0], ints}, *ws, &out).IsInvalidArgument());  // mixed value types
  const Sealed bools = Seal(ValueType::kBoolean, 10, After(ints, 1), 0, 23);
  EXPECT_TRUE(Group({ints, bools}, *ws, &out).IsInvalidArgument());

  // A group is not an input, wherever it stands.
  std::string ab;
  ASSERT_TRUE(Group({abc[0], abc[1]}, *ws, &ab).ok());
  Sealed grouped;
  grouped.bytes = Bytes(ab);
  EXPECT_TRUE(Group({grouped, abc[2]}, *ws, &out).IsInvalidArgument());
  const Sealed before = Seal(ValueType::kFloat, 10, abc[0].ts.front() - 1000, 0, 24);
  EXPECT_TRUE(Group({before, grouped}, *ws, &out).IsInvalidArgument());

  // A corrupt input: a flipped byte (checksum), or cut short.
  for (std::size_t at : {std::size_t{3}, std::size_t{35}, abc[1].bytes.size() - 1}) {
    std::vector<Sealed> bad = abc;
    bad[1].bytes[at] ^= 0x10;
    EXPECT_TRUE(Group(bad, *ws, &out).IsCorruption()) << at;
  }
  std::vector<Sealed> cut = abc;
  cut[2].bytes.pop_back();
  EXPECT_TRUE(Group(cut, *ws, &out).IsCorruption());
}

// Small groups of 3 chunks: regular and irregular float, irregular integer.
std::vector<std::vector<Sealed>> SmallGroups() {
  return {Series(ValueType::kFloat, {50, 47, 52}, 1000, true),
          Series(ValueType::kFloat, {50, 1, 52}, 0, true),
          Series(ValueType::kInteger, {48, 50, 3}, 0)};
}

TEST(ChunkGroupTest, EveryTruncationAndBitFlipIsDetected) {
  auto ws = std::make_unique<codec::Workspace>();
  for (const std::vector<Sealed>& parts : SmallGroups()) {
    ChunkHeader h;
    const std::vector<std::uint8_t> bytes = MustGroup(parts, *ws, &h);
    ASSERT_EQ(h.blocks, parts.size());
    std::vector<std::int64_t> ts(h.count), raw(h.count);
    for (std::size_t len = 0; len < bytes.size(); ++len) {
      const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(len));
      ChunkHeader ch;
      EXPECT_TRUE(ValidateChunk(cut, &ch).IsCorruption()) << len;
      EXPECT_FALSE(DecodeChunkRaw(cut, ts, raw, *ws, ChunkSource::kInMemory).ok()) << len;
    }
    for (std::size_t bit = 0; bit < bytes.size() * 8; ++bit) {
      std::vector<std::uint8_t> bad = bytes;
      bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
      ChunkHeader bh;
      const bool caught = !ValidateChunk(bad, &bh).ok() ||
                          !DecodeChunkRaw(bad, ts, raw, *ws, ChunkSource::kStored).ok();
      EXPECT_TRUE(caught) << "bit " << bit << " of " << bytes.size() * 8;
      // Without the checksum a flip may decode to other points, but must not read out of bounds.
      (void)DecodeChunkRaw(bad, ts, raw, *ws, ChunkSource::kInMemory);
    }
  }
}

// The bytes GroupChunks writes are the layout that chunk_format.h documents.
TEST(ChunkGroupTest, WritesTheDocumentedLayout) {
  auto ws = std::make_unique<codec::Workspace>();
  for (const std::vector<Sealed>& parts : {Series(ValueType::kFloat, {30, 1, 40}, 15, true),
                                           Series(ValueType::kInteger, {30, 3, 40}, 0)}) {
    std::string group;
    ASSERT_TRUE(Group(parts, *ws, &group).ok());
    EXPECT_EQ(Bytes(group), Assemble(parts));
  }
}

// Directory edits (checksum rewritten): ParseChunkHeader must catch those that break the sums,
// and the decoders those that keep them.
TEST(ChunkGroupTest, DirectoryEditsAreCorruption) {
  auto ws = std::make_unique<codec::Workspace>();
  for (const std::vector<Sealed>& parts : SmallGroups()) {
    ChunkHeader h;
    const std::vector<std::uint8_t> bytes = MustGroup(parts, *ws, &h);
    ASSERT_EQ(h.blocks, parts.size());
    const std::size_t e = EntryBytes(h), d = kChunkHeaderBytes, c0 = parts[0].ts.size();
    // Adds deltas to u16 fields at (offset, delta) and reseals.
    auto edit = [&](std::initializer_list<std::pair<std::size_t, int>> deltas) {
      std::vector<std::uint8_t> b = bytes;
      for (const auto& [at, delta] : deltas) {
        std::uint16_t v;
        std::memcpy(&v, b.data() + at, 2);
        Put(b, at, static_cast<std::uint16_t>(v + delta));
      }
      Reseal(b);
      return b;
    };
    std::vector<std::vector<std::uint8_t>> structural = {
        edit({{d + e, 1}}),                                                 // block 1 count
        edit({{d, -static_cast<int>(c0)}, {d + e, static_cast<int>(c0)}}),  // block 0 count 0
        edit({{d + e - 2, 1}}),                                             // block 0 value bytes
        edit({{d + 3 * e - 2, -1}}),                                        // block 2 value bytes
    };
    // Sums kept: a point, a value byte, a timestamp byte moved to the next block.
    std::vector<std::vector<std::uint8_t>> balanced = {edit({{d, -1}, {d + e, 1}}),
                                                       edit({{d + e - 2, -1}, {d + 2 * e - 2, 1}})};
    if (e == 6) {
      structural.push_back(edit({{d + e + 2, 1}}));  // block 1 timestamp bytes
      balanced.push_back(edit({{d + 2, -1}, {d + e + 2, 1}}));
    }
    for (bool sums_kept : {false, true}) {
      const auto& edits = sums_kept ? balanced : structural;
      for (std::size_t i = 0; i < edits.size(); ++i) {
        ChunkHeader eh;
        const Status st = ParseChunkHeader(edits[i], &eh);
        EXPECT_TRUE(sums_kept ? st.ok() : st.IsCorruption()) << i << ": " << st.ToString();
        std::vector<std::int64_t> ts(h.count), raw(h.count);
        for (ChunkSource source : {ChunkSource::kStored, ChunkSource::kInMemory}) {
          EXPECT_FALSE(DecodeChunkRaw(edits[i], ts, raw, *ws, source).ok()) << i;
        }
      }
    }
    // Block count byte: 9 and 256 blocks; 1, 2 or 8 blocks over this directory.
    for (std::uint8_t b6 : {8, 0xff, 0, 1, 7}) {
      std::vector<std::uint8_t> bad = bytes;
      bad[6] = b6;
      Reseal(bad);
      ChunkHeader eh;
      const Status st = ParseChunkHeader(bad, &eh);
      EXPECT_TRUE(b6 < kMaxChunkBlocks || st.IsCorruption()) << +b6 << ": " << st.ToString();
      std::vector<std::int64_t> ts(h.count), raw(h.count);
      EXPECT_FALSE(DecodeChunkRaw(bad, ts, raw, *ws, ChunkSource::kInMemory).ok()) << +b6;
    }
  }
}

// Headers whose directory and sections cannot be a group, checksums valid.
TEST(ChunkGroupTest, ImpossibleGroupHeadersAreCorruption) {
  auto ws = std::make_unique<codec::Workspace>();
  std::vector<std::vector<std::uint8_t>> bad;
  // 9 blocks, each entry consistent.
  bad.push_back(Assemble(Series(ValueType::kFloat, std::vector<std::size_t>(9, 10), 15)));
  // A regular group whose T is more than its directory (two bytes moved from V, or inserted),
  // or less.
  ChunkHeader h;
  const std::vector<std::uint8_t> bytes = MustGroup(SmallGroups()[0], *ws, &h);
  ASSERT_EQ(h.ts_encoding, kTimestampEncodingRegular);
  ASSERT_EQ(h.ts_bytes, 3u * 4);
  auto sections = [&](std::vector<std::uint8_t> b, std::uint32_t t, std::uint32_t v) {
    Put(b, 24, t);
    Put(b, 28, v);
    Reseal(b);
    return b;
  };
  bad.push_back(sections(bytes, h.ts_bytes + 2, h.value_bytes - 2));
  std::vector<std::uint8_t> grown = bytes;
  grown.insert(grown.begin() + static_cast<long>(kChunkHeaderBytes + h.ts_bytes), 2, 0);
  bad.push_back(sections(grown, h.ts_bytes + 2, h.value_bytes));
  bad.push_back(sections(bytes, h.ts_bytes - 4, h.value_bytes + 4));
  // Only a header, claiming 8 regular blocks: the directory is not there to read.
  std::vector<std::uint8_t> bare(bytes.begin(), bytes.begin() + kChunkHeaderBytes);
  bare[6] = 7;
  Put(bare, 4, std::uint16_t{8});
  Put(bare, 16, h.min_ts_ns + 70);
  bad.push_back(sections(bare, 0, 0));
  for (std::size_t i = 0; i < bad.size(); ++i) {
    ChunkHeader eh;
    EXPECT_TRUE(ParseChunkHeader(bad[i], &eh).IsCorruption()) << i;
    EXPECT_TRUE(ValidateChunk(bad[i], &eh).IsCorruption()) << i;
  }
  // Whole blocks out of order: every block decodes, the group's timestamps do not increase.
  const std::vector<Sealed> ints = SmallGroups()[2];
  const std::vector<std::uint8_t> swapped = Assemble({ints[1], ints[0], ints[2]});
  ASSERT_TRUE(ValidateChunk(swapped, &h).ok());
  std::vector<std::int64_t> ts(h.count), raw(h.count);
  EXPECT_TRUE(DecodeChunkRaw(swapped, ts, raw, *ws).IsCorruption());
}

bool IsCompact(std::uint8_t e) {
  using F = codec::FloatEncoding;
  const auto is = [e](F f) { return e == static_cast<std::uint8_t>(f); };
  return is(F::kAlpZstd) || is(F::kDictionary) || is(F::kAlpRadix) || is(F::kAlpRice) ||
         is(F::kAlpHuffman) || is(F::kAlpRanked);
}

TEST(ChunkGroupTest, RecodeCompactRewritesEveryFloatBlockOnce) {
  auto ws = std::make_unique<codec::Workspace>();
  for (std::int64_t step : {kTenSeconds, std::int64_t{0}}) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::vector<Sealed> parts =
        Series(ValueType::kFloat, std::vector<std::size_t>(8, 1024), step);
    ChunkHeader h;
    const std::vector<std::uint8_t> bytes = MustGroup(parts, *ws, &h);
    ChunkBlocks before;
    ASSERT_EQ(ListChunkBlocks(bytes, h, before), 8u);
    for (std::size_t b = 0; b < 8; ++b) ASSERT_FALSE(IsCompact(before[b].values[0])) << b;
    codec::SeriesHint hint;
    std::string recoded;
    ASSERT_TRUE(RecodeChunkCompact(bytes, hint, *ws, &recoded));
    EXPECT_LT(recoded.size(), bytes.size());
    ChunkHeader rh;
    ASSERT_NO_FATAL_FAILURE(
        ExpectGroupOf(recoded, parts, ValueType::kFloat, *ws, &rh, /*recoded=*/true));
    EXPECT_EQ(rh.ts_encoding, h.ts_encoding);
    const std::vector<std::uint8_t> out = Bytes(recoded);
    ChunkBlocks after;
    ASSERT_EQ(ListChunkBlocks(out, rh, after), 8u);
    for (std::size_t b = 0; b < 8; ++b) {
      EXPECT_TRUE(IsCompact(after[b].values[0])) << b << ": " << int{after[b].values[0]};
      EXPECT_TRUE(std::ranges::equal(after[b].ts, before[b].ts)) << b;
    }
    std::string again;
    EXPECT_FALSE(RecodeChunkCompact(out, hint, *ws, &again));
    codec::SeriesHint fresh;
    EXPECT_FALSE(RecodeChunkCompact(out, fresh, *ws, &again));
    // A corrupt group is left as it is.
    std::vector<std::uint8_t> bad = bytes;
    bad[bad.size() - 100] ^= 0x04;
    EXPECT_FALSE(RecodeChunkCompact(bad, fresh, *ws, &again));
  }
  // Integer and boolean groups have no float blocks to rewrite.
  for (ValueType type : {ValueType::kInteger, ValueType::kBoolean}) {
    std::string group, out;
    ASSERT_TRUE(Group(Series(type, {1024, 1024, 500}, kTenSeconds), *ws, &group).ok());
    codec::SeriesHint hint;
    EXPECT_FALSE(RecodeChunkCompact(Bytes(group), hint, *ws, &out));
  }
}

// A range read decodes only the blocks that overlap it: it gets those blocks' points whole,
// whole, and a value block outside the range is not even read (a broken one there goes unseen).
TEST(ChunkGroupTest, RangeDecodeTakesOnlyTheOverlappingBlocks) {
  auto ws = std::make_unique<codec::Workspace>();
  for (const std::int64_t step : {std::int64_t{10}, std::int64_t{0}}) {  // regular, irregular
    const std::vector<Sealed> parts = Series(ValueType::kFloat, {100, 50, 80, 120}, step);
    ChunkHeader h;
    std::vector<std::uint8_t> group = MustGroup(parts, *ws, &h);
    ASSERT_EQ(h.blocks, 4);
    std::vector<std::int64_t> ts(h.count);
    std::vector<double> values(h.count);
    const auto expect = [&](std::int64_t start, std::int64_t end, std::size_t from,
                            std::size_t to) {
      std::size_t decoded = 99;
      ASSERT_TRUE(DecodeChunkOverlapping(group, start, end, ts, values, *ws, &decoded).ok());
      std::vector<std::int64_t> want_ts;
      std::vector<std::uint64_t> want_bits;
      for (std::size_t b = from; b < to; ++b) {
        want_ts.insert(want_ts.end(), parts[b].ts.begin(), parts[b].ts.end());
        want_bits.insert(want_bits.end(), parts[b].bits.begin(), parts[b].bits.end());
      }
      ASSERT_EQ(decoded, want_ts.size()) << "[" << start << ", " << end << "]";
      EXPECT_EQ(std::vector<std::int64_t>(ts.begin(), ts.begin() + decoded), want_ts);
      for (std::size_t i = 0; i < decoded; ++i) {
        ASSERT_EQ(std::bit_cast<std::uint64_t>(values[i]), want_bits[i]) << i;
      }
    };
    const auto& p = parts;
    expect(p[1].ts[3], p[1].ts[3], 1, 2);                 // one point: its block
    expect(p[1].ts.back() + 1, p[2].ts.front(), 2, 3);    // between blocks: the next one's first
    expect(p[1].ts.back(), p[2].ts.front(), 1, 3);        // two edges
    expect(p[0].ts.front() - 1000, p[0].ts.front(), 0, 1);
    expect(p[3].ts.back(), p[3].ts.back() + 1000, 3, 4);
    expect(std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
           0, 4);
    expect(p[3].ts.back() + 1, p[3].ts.back() + 5, 0, 0);  // after the group: nothing
    expect(p[0].ts.front() - 9, p[0].ts.front() - 1, 0, 0);
    // Break block 0's value block (its encoding byte) without fixing the checksum: a decode that
    // skips the checksum only fails when it reads that block.
    ChunkBlocks blocks;
    ListChunkBlocks(group, h, blocks);
    const auto at = static_cast<std::size_t>(blocks[0].values.data() - group.data());
    group[at] = 0xee;
    std::size_t decoded = 0;
    EXPECT_FALSE(DecodeChunk(group, ts, values, *ws, ChunkSource::kInMemory).ok());
    EXPECT_TRUE(DecodeChunkOverlapping(group, p[2].ts[5], p[3].ts[5], ts, values, *ws, &decoded,
                                       ChunkSource::kInMemory)
                    .ok());
    EXPECT_EQ(decoded, p[2].ts.size() + p[3].ts.size());
    EXPECT_FALSE(DecodeChunkOverlapping(group, p[0].ts[5], p[0].ts[5], ts, values, *ws, &decoded,
                                        ChunkSource::kInMemory)
                     .ok());
    EXPECT_FALSE(DecodeChunkOverlapping(group, p[2].ts[5], p[3].ts[5], ts, values, *ws, &decoded)
                     .ok());  // stored bytes: the checksum sees it
  }
}

// Groups carry format version 2 and single blocks version 1: a group read as version 1, or a
// single block claiming version 2, is Corruption (with a valid checksum).
TEST(ChunkGroupTest, VersionAndBlockCountMustAgree) {
  auto ws = std::make_unique<codec::Workspace>();
  ChunkHeader h;
  std::vector<std::uint8_t> group = MustGroup(Series(ValueType::kFloat, {40, 40}, 10), *ws, &h);
  ASSERT_EQ(group[0], kChunkGroupFormatVersion);
  group[0] = kChunkFormatVersion;
  Reseal(group);
  EXPECT_TRUE(ParseChunkHeader(group, &h).IsCorruption());
  std::vector<std::uint8_t> single = Seal(ValueType::kFloat, 40, kStart, 10, 1).bytes;
  ASSERT_EQ(single[0], kChunkFormatVersion);
  single[0] = kChunkGroupFormatVersion;
  Reseal(single);
  EXPECT_TRUE(ParseChunkHeader(single, &h).IsCorruption());
  single[0] = 3;
  Reseal(single);
  EXPECT_TRUE(ParseChunkHeader(single, &h).IsCorruption());
}

}  // namespace
}  // namespace ingot
