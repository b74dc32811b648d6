// ALP integers as ranked bit lengths, Rice-coded, with the bits below in a stream of their own
// (kAlpRanked): the four streams it chooses between, in full blocks (lane order) and short ones,
// doubles and floats; every Rice parameter with fields in the AVX-512 kernel's 32-bit lanes and
// past them; exceptions; the 2^47 limit on numbers; every kernel level; and named errors for
// corrupt and truncated blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

using namespace compact;  // NOLINT(google-build-using-namespace): the flags
using testing::BitEqual;
using testing::EncodeExact;
using testing::FromInts;
using testing::StreamFlags;
using testing::WithByte;

// The four streams and the flags that name them.
constexpr int kOffsets = 0;
constexpr int kZigZagDeltas = 1;
constexpr int kDeltasAbove = 2;
constexpr int kSecondDifferences = 3;
constexpr int kStreamFlags[] = {0, kDeltaFlag | kZigZagFlag | kPlaceholderFlag,
                                kDeltaFlag | kPlaceholderFlag,
                                kDeltaFlag | kZigZagFlag | kPlaceholderFlag | kSecondOrderFlag};
constexpr const char* kStreamNames[] = {"offsets", "zigzagged deltas", "deltas above the smallest",
                                        "second differences"};

// The kernel levels this CPU runs.
std::vector<simd::IsaLevel> Levels() {
  std::vector<simd::IsaLevel> levels;
  for (simd::IsaLevel level :
       {simd::IsaLevel::kScalar, simd::IsaLevel::kAvx2, simd::IsaLevel::kAvx512}) {
    if (simd::KernelsFor(level) != nullptr) levels.push_back(level);
  }
  return levels;
}

// Puts the active kernel level back when it goes out of scope, so that a failed assertion in a
// loop over the levels does not leave the next tests on another one.
class ActiveLevelRestorer {
 public:
  ActiveLevelRestorer() : level_(simd::ActiveKernels().level) {}
  ~ActiveLevelRestorer() { simd::ForceIsa(level_); }
  ActiveLevelRestorer(const ActiveLevelRestorer&) = delete;
  ActiveLevelRestorer& operator=(const ActiveLevelRestorer&) = delete;

 private:
  simd::IsaLevel level_;
};

// A heap copy of exactly `size` bytes of `block`, so that reading past them is an ASan report.
std::unique_ptr<std::uint8_t[]> ExactCopy(const std::vector<std::uint8_t>& block,
                                          std::size_t size) {
  auto copy = std::make_unique<std::uint8_t[]>(size);
  std::copy(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(size), copy.get());
  return copy;
}

template <typename T>
Status DecodeExact(const std::vector<std::uint8_t>& block, std::size_t size, std::vector<T>& out,
                   Workspace& ws) {
  const auto copy = ExactCopy(block, size);
  return testing::Decode<T>(std::span<const std::uint8_t>(copy.get(), size), out, ws);
}

// `v` forced to kAlpRanked at every kernel level: the encoder must take it and write the same
// bytes at each, and each must decode the block to `v` bit for bit.
template <typename T>
std::vector<std::uint8_t> RoundTripAtEveryLevel(const std::vector<T>& v, Workspace& ws,
                                                const std::string& what) {
  ActiveLevelRestorer restorer;
  std::vector<std::uint8_t> first;
  for (simd::IsaLevel level : Levels()) {
    EXPECT_TRUE(simd::ForceIsa(level));
    std::vector<std::uint8_t> block;
    const EncodeResult r = EncodeExact<T>(FloatEncoding::kAlpRanked, v, ws, block);
    EXPECT_EQ(r.encoding, FloatEncoding::kAlpRanked) << what << " at " << simd::IsaName(level);
    if (first.empty()) first = block;
    EXPECT_EQ(block, first) << what << " at " << simd::IsaName(level);
    std::vector<T> back(v.size());
    const Status st = DecodeExact(block, block.size(), back, ws);
    EXPECT_TRUE(st.ok()) << what << " at " << simd::IsaName(level) << ": " << st.ToString();
    EXPECT_TRUE(BitEqual(v, back)) << what << " at " << simd::IsaName(level);
  }
  return first;
}

// Integers whose best stream is each of the four: unrelated neighbours (offsets), a walk with
// steps near 0 (zigzagged deltas), a rise by at least 600 a step (deltas above the smallest), a
// slow curve (second differences; full blocks only). All stay below 2^21 hundredths, which floats
// hold.
std::vector<std::int64_t> StreamInts(int stream, std::size_t n, std::mt19937_64& rng) {
  std::vector<std::int64_t> ints(n);
  std::int64_t x = 1000;
  for (std::size_t i = 0; i < n; ++i) {
    switch (stream) {
      case kOffsets:
        ints[i] = static_cast<std::int64_t>(rng() % 300);
        break;
      case kZigZagDeltas:  // mostly small steps either way, now and then a large one
        ints[i] = x += (rng() % 2 == 0 ? 1 : -1) *
                       static_cast<std::int64_t>(rng() % 16 == 0 ? rng() % 500 : rng() % 4);
        break;
      case kDeltasAbove:
        ints[i] = x += 600 + static_cast<std::int64_t>(rng() % 8);
        break;
      default:
        ints[i] = std::llround(40000 * std::sin(static_cast<double>(i) / 150.0)) +
                  static_cast<std::int64_t>(rng() % 3);
    }
  }
  return ints;
}

// A number of bit length c: its leading one and random bits below it.
std::uint64_t NumberOfCategory(unsigned c, std::mt19937_64& rng) {
  if (c == 0) return 0;
  const std::uint64_t lead = std::uint64_t{1} << (c - 1);
  return lead | (rng() & (lead - 1));
}

// Integers whose `stream` holds numbers of the bit lengths in `categories`, each about as often
// (a shuffled cycle through the list; an entry listed twice comes twice as often). Every list
// holds 0, so that the minimum offset and the smallest delta are 0 and the stream's numbers are
// exactly these; they go to `numbers` in block order, with the deltas' placeholders.
std::vector<std::int64_t> IntsWithCategories(int stream, std::size_t n,
                                             const std::vector<unsigned>& categories,
                                             std::mt19937_64& rng,
                                             std::vector<std::uint64_t>* numbers = nullptr) {
  std::vector<unsigned> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = categories[i % categories.size()];
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::int64_t> ints(n);
  std::int64_t x = 0, delta = 0;
  if (numbers != nullptr) numbers->clear();
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t u = NumberOfCategory(order[i], rng);
    if (numbers != nullptr) {
      const bool placeholder =
          (stream != kOffsets && i == 0) || (stream == kSecondDifferences && i == 1);
      numbers->push_back(placeholder ? 0 : u);
    }
    switch (stream) {
      case kOffsets:
        ints[i] = static_cast<std::int64_t>(u);
        break;
      case kDeltasAbove:
        ints[i] = x += static_cast<std::int64_t>(u);
        break;
      case kZigZagDeltas:
        ints[i] = x += UnZigZag(u);
        break;
      default:  // number i >= 2 is zigzag(delta i - delta i-1)
        delta += UnZigZag(u);
        ints[i] = x += delta;
    }
  }
  return ints;
}

// Bit lengths that make the encoder pick Rice parameter k: one length most of the time (k = 0),
// or 6, 12 and all of 0..top equally often (k = 1, 2, 3: the unary parts of flat ranks shrink by
// more than the k low bits cost), all up to `top`.
std::vector<unsigned> CategoriesForK(unsigned k, unsigned top) {
  std::vector<unsigned> categories;
  switch (k) {
    case 0:
      categories.assign(7, 0);
      categories.insert(categories.end(), {3, top - 5, top});
      break;
    case 1:
    case 2: {
      const unsigned ranks = k == 1 ? 6 : 12;
      for (unsigned j = 0; j < ranks; ++j) categories.push_back(j * top / (ranks - 1));
      break;
    }
    default:
      for (unsigned c = 0; c <= top; ++c) categories.push_back(c);
  }
  return categories;
}

// Where a kAlpRanked block's parts are, and its codes. Blocks without exceptions only: their
// fields run to the block's end.
struct Layout {
  std::size_t rank_at = 0;  // the byte of R and k, then the table
  unsigned ranks = 0;
  unsigned k = 0;
  unsigned widest = 0;
  std::size_t unary_at = 0;  // after U
  std::size_t unary_bytes = 0;
  std::size_t lows_at = 0;
  std::size_t fields_at = 0;
  std::vector<unsigned> quotients;  // code i's rank >> k
  std::vector<unsigned> code_ranks;
  std::vector<std::uint64_t> numbers;  // code i's number, from its category and field
  std::uint64_t unary_bits = 0;
  std::uint64_t field_bits = 0;
};

Layout ParseRanked(const std::vector<std::uint8_t>& block, std::size_t n) {
  Layout l;
  const int flags = StreamFlags(block);
  const int varints = ((flags & kDeltaFlag) != 0 ? 1 : 0) +
                      ((flags & kSecondOrderFlag) != 0 ? 1 : 0) +
                      ((flags & kZigZagFlag) == 0 ? 1 : 0);
  std::size_t at = kAlpRankedHeaderBytes;
  for (int i = 0; i < varints; ++i) {
    while (block[at] & 0x80) ++at;
    ++at;
  }
  l.rank_at = at;
  l.ranks = block[at] & 0x3f;
  l.k = block[at] >> 6;
  const std::uint8_t* table = block.data() + at + 1;
  for (unsigned r = 0; r < l.ranks; ++r) l.widest = std::max<unsigned>(l.widest, table[r]);
  at += 1 + l.ranks;
  l.unary_bytes = block[at] | static_cast<std::size_t>(block[at + 1]) << 8;
  l.unary_at = at + 2;
  l.lows_at = l.unary_at + l.unary_bytes;
  l.fields_at = l.lows_at + (n * l.k + 7) / 8;
  unsigned zeros = 0;
  for (std::uint64_t bit = 0; bit < 8 * l.unary_bytes && l.quotients.size() < n; ++bit) {
    if ((block[l.unary_at + bit / 8] >> (bit % 8)) & 1) {
      l.quotients.push_back(zeros);
      zeros = 0;
      l.unary_bits = bit + 1;
    } else {
      ++zeros;
    }
  }
  for (std::size_t i = 0; i < l.quotients.size(); ++i) {
    unsigned low = 0;
    for (unsigned b = 0; b < l.k; ++b) {
      const std::size_t bit = l.k * i + b;
      low |= ((block[l.lows_at + bit / 8] >> (bit % 8)) & 1u) << b;
    }
    const unsigned rank = (l.quotients[i] << l.k) | low;
    l.code_ranks.push_back(rank);
    const unsigned c = rank < l.ranks ? table[rank] : 0;
    std::uint64_t number = c == 0 ? 0 : std::uint64_t{1} << (c - 1);
    for (unsigned b = 0; b + 1 < c; ++b) {
      const std::uint64_t bit = 8 * l.fields_at + l.field_bits + b;
      if (bit / 8 < block.size()) number |= std::uint64_t{(block[bit / 8] >> (bit % 8)) & 1u} << b;
    }
    l.numbers.push_back(number);
    l.field_bits += c == 0 ? 0 : c - 1;
  }
  return l;
}

// `block` with `unary` in place of its unary stream (U set to its length).
std::vector<std::uint8_t> WithUnary(const std::vector<std::uint8_t>& block, const Layout& l,
                                    const std::vector<std::uint8_t>& unary) {
  std::vector<std::uint8_t> out(block.begin(),
                                block.begin() + static_cast<std::ptrdiff_t>(l.unary_at));
  out[l.unary_at - 2] = static_cast<std::uint8_t>(unary.size());
  out[l.unary_at - 1] = static_cast<std::uint8_t>(unary.size() >> 8);
  out.insert(out.end(), unary.begin(), unary.end());
  out.insert(out.end(), block.begin() + static_cast<std::ptrdiff_t>(l.lows_at), block.end());
  return out;
}

// The unary stream of `quotients`: that many 0 bits and a 1 each, zero bits to a whole byte.
std::vector<std::uint8_t> UnaryOf(const std::vector<unsigned>& quotients) {
  std::vector<std::uint8_t> unary;
  std::uint64_t bit = 0;
  for (unsigned q : quotients) {
    bit += q;
    unary.resize(bit / 8 + 1, 0);
    unary[bit / 8] = static_cast<std::uint8_t>(unary[bit / 8] | 1u << (bit % 8));
    ++bit;
  }
  return unary;
}

std::vector<std::uint8_t> UnaryOf(const std::vector<std::uint8_t>& block, const Layout& l) {
  return {block.begin() + static_cast<std::ptrdiff_t>(l.unary_at),
          block.begin() + static_cast<std::ptrdiff_t>(l.lows_at)};
}

// Expects `block`, decoded as `n` doubles from an exact-size heap copy at every kernel level, to
// be Corruption naming the encoding and `needle`.
void ExpectCorrupt(const std::vector<std::uint8_t>& block, std::size_t n, Workspace& ws,
                   const std::string& needle, const std::string& what) {
  ActiveLevelRestorer restorer;
  for (simd::IsaLevel level : Levels()) {
    ASSERT_TRUE(simd::ForceIsa(level));
    std::vector<double> back(n);
    const Status st = DecodeExact(block, block.size(), back, ws);
    EXPECT_TRUE(st.IsCorruption())
        << what << " at " << simd::IsaName(level) << ": " << st.ToString();
    EXPECT_NE(st.ToString().find("alp_ranked"), std::string::npos) << what << ": " << st.ToString();
    EXPECT_NE(st.ToString().find(needle), std::string::npos) << what << ": " << st.ToString();
  }
}

template <typename T>
void EachStreamRoundTrips() {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(5);
  for (int stream = 0; stream < 4; ++stream) {
    for (const std::size_t n : {77, 300, 1023, 1024}) {
      const auto v = FromInts<T>(StreamInts(stream, n, rng), 100);
      const std::string what = std::string(kStreamNames[stream]) + " n " + std::to_string(n);
      const std::vector<std::uint8_t> block = RoundTripAtEveryLevel(v, *ws, what);
      // Second differences need a full block; such short blocks take the deltas.
      if (stream != kSecondDifferences || n == kBlockCapacity) {
        EXPECT_EQ(StreamFlags(block), kStreamFlags[stream]) << what;
      }
    }
  }
}

TEST(AlpRanked, EachStreamRoundTripsInFullAndShortBlocks) { EachStreamRoundTrips<double>(); }
TEST(AlpRanked, FloatsRoundTrip) { EachStreamRoundTrips<float>(); }

// One and two values through the forced encoding, which writes them raw where that is smaller (a
// single value; two floats), and written by the encoding itself: both decode at every level.
template <typename T>
void TinyBlocksRoundTrip() {
  auto ws = std::make_unique<Workspace>();
  ActiveLevelRestorer restorer;
  // Hundredths that floats hold exactly too, so that no value is an exception.
  const std::vector<std::vector<T>> cases = {
      {T{12.25}}, {T{-5.5}}, {T{1.25}, T{1.5}}, {T{7.0}, T{-300.75}}};
  for (const std::vector<T>& v : cases) {
    std::vector<std::uint8_t> forced;
    const EncodeResult r = EncodeExact<T>(FloatEncoding::kAlpRanked, v, *ws, forced);
    std::vector<std::uint8_t> direct(MaxEncodedFloatBytes(v.size(), sizeof(T)) + 64);
    direct.resize(EncodeAlpRanked<T>(v, 2, 0, *ws, direct));
    ASSERT_GT(direct.size(), 0u);
    ASSERT_EQ(direct[0], static_cast<std::uint8_t>(FloatEncoding::kAlpRanked));
    if (v.size() == 1) {
      EXPECT_NE(r.encoding, FloatEncoding::kAlpRanked);
      EXPECT_EQ(StreamFlags(direct), 0);  // no deltas in a single value
    }
    for (simd::IsaLevel level : Levels()) {
      ASSERT_TRUE(simd::ForceIsa(level));
      for (const std::vector<std::uint8_t>* block : {&forced, &direct}) {
        std::vector<T> back(v.size());
        const Status st = DecodeExact(*block, block->size(), back, *ws);
        ASSERT_TRUE(st.ok()) << st.ToString();
        EXPECT_TRUE(BitEqual(v, back)) << v.size() << " at " << simd::IsaName(level);
      }
    }
  }
}

TEST(AlpRanked, OneAndTwoValuesRoundTrip) {
  TinyBlocksRoundTrip<double>();
  TinyBlocksRoundTrip<float>();
}

// Every stream with each Rice parameter, its categories all within the AVX-512 kernel's 32-bit
// lanes (<= 25) or some past them (up to 47 for offsets; the deltas' widest are kept low enough
// that their sums stay within ALP's integers), in full and short blocks. The block is read
// here too: its codes are the stream's numbers, in lane order in full blocks of deltas (code
// t = 16 g + p is number 128 (p / 2) + 2 g + p % 2) and in block order otherwise.
TEST(AlpRanked, EveryRiceParameterWithNarrowAndWideFields) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(7);
  const unsigned kWideTop[] = {47, 40, 38, 30};
  for (int stream = 0; stream < 4; ++stream) {
    for (unsigned k = 0; k <= 3; ++k) {
      for (const bool wide : {false, true}) {
        for (const std::size_t n : {300, 1024}) {
          if (stream == kSecondDifferences && n != kBlockCapacity) continue;
          const unsigned top = wide ? kWideTop[stream] : simd::kRankedNarrowCategory;
          std::vector<std::uint64_t> numbers;
          const auto v = FromInts<double>(
              IntsWithCategories(stream, n, CategoriesForK(k, top), rng, &numbers), 1);
          const std::string what = std::string(kStreamNames[stream]) + " k " + std::to_string(k) +
                                   (wide ? " wide" : " narrow") + " n " + std::to_string(n);
          const std::vector<std::uint8_t> block = RoundTripAtEveryLevel(v, *ws, what);
          ASSERT_EQ(block[0], static_cast<std::uint8_t>(FloatEncoding::kAlpRanked)) << what;
          EXPECT_EQ(StreamFlags(block), kStreamFlags[stream]) << what;
          const Layout l = ParseRanked(block, n);
          EXPECT_EQ(l.k, k) << what;
          EXPECT_EQ(l.widest > simd::kRankedNarrowCategory, wide) << what << " " << l.widest;
          const bool lanes = stream != kOffsets && n == kBlockCapacity;
          std::vector<std::uint64_t> in_code_order(n);
          for (std::size_t t = 0; t < n; ++t) {
            // Lane order: code t = 16 g + p is number 128 (p / 2) + 2 g + p % 2.
            in_code_order[t] = numbers[lanes ? 128 * (t % 16 / 2) + 2 * (t / 16) + t % 2 : t];
          }
          EXPECT_EQ(l.numbers, in_code_order) << what;
        }
      }
    }
  }
}

// Floats' ALP integers stay below 2^21, so their offsets are narrow; each Rice parameter still.
TEST(AlpRanked, FloatsTakeEveryRiceParameter) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(8);
  for (unsigned k = 0; k <= 3; ++k) {
    for (const std::size_t n : {300, 1024}) {
      const auto v =
          FromInts<float>(IntsWithCategories(kOffsets, n, CategoriesForK(k, 21), rng), 1);
      const std::string what = "floats k " + std::to_string(k) + " n " + std::to_string(n);
      const std::vector<std::uint8_t> block = RoundTripAtEveryLevel(v, *ws, what);
      EXPECT_EQ(StreamFlags(block), kStreamFlags[kOffsets]) << what;
      EXPECT_EQ(ParseRanked(block, n).k, k) << what;
    }
  }
}

TEST(AlpRanked, ExceptionsAndDividedValuesComeBack) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(6);
  for (int stream = 0; stream < 4; ++stream) {
    for (const std::size_t n : {300, 1024}) {
      auto v = FromInts<double>(StreamInts(stream, n, rng), 100);
      v[0] = 1.0 / 3.0;  // exceptions: first, middle, last, and a NaN
      v[n / 2] = std::nan("7");
      v[n - 1] = 1e300;
      v[n / 3] = 0.1234567;  // more decimals than the block's pair: divided or an exception
      const std::string what = std::string(kStreamNames[stream]) + " n " + std::to_string(n);
      const std::vector<std::uint8_t> block = RoundTripAtEveryLevel(v, *ws, what);
      EXPECT_GT(block[kAlpZstdExceptionCountOffset], 0) << what;
    }
  }
  auto f = FromInts<float>(StreamInts(kZigZagDeltas, 1024, rng), 100);
  f[3] = std::bit_cast<float>(0x7fc00123u);
  f[1000] = 3e38f;
  f[511] = 1.0f / 3.0f;
  const std::vector<std::uint8_t> block = RoundTripAtEveryLevel(f, *ws, "floats");
  EXPECT_GT(block[kAlpZstdExceptionCountOffset], 0);
}

// Numbers below 2^47 are coded (category 47, a 46-bit field); a number of 2^47 in every stream
// leaves the encoding nothing to write, and a stream that would need one is passed over for
// another.
TEST(AlpRanked, NumbersBelow2To47AreCodedAndLargerOnesFallBack) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(12);
  constexpr std::int64_t kLimit = std::int64_t{1} << 47;
  for (const std::size_t n : {300, 1024}) {
    // 0 and numbers just below 2^47 by turns: offsets of category 47, deltas twice as wide.
    std::vector<std::int64_t> ints(n);
    for (std::size_t i = 0; i < n; ++i) {
      ints[i] = i % 2 == 0 ? 0 : static_cast<std::int64_t>(NumberOfCategory(47, rng));
    }
    ints[1] = kLimit - 1;
    const std::string what = "n " + std::to_string(n);
    const std::vector<std::uint8_t> block =
        RoundTripAtEveryLevel(FromInts<double>(ints, 1), *ws, what);
    EXPECT_EQ(StreamFlags(block), kStreamFlags[kOffsets]) << what;
    EXPECT_EQ(ParseRanked(block, n).widest, 47u) << what;

    // One of them 2^47: no stream can be coded.
    ints[1] = kLimit;
    const auto v = FromInts<double>(ints, 1);
    std::vector<std::uint8_t> fallback;
    const EncodeResult r = EncodeExact<double>(FloatEncoding::kAlpRanked, v, *ws, fallback);
    EXPECT_NE(r.encoding, FloatEncoding::kAlpRanked) << what;
    std::vector<double> back(n);
    ASSERT_TRUE(DecodeExact(fallback, fallback.size(), back, *ws).ok()) << what;
    EXPECT_TRUE(BitEqual(v, back)) << what;
    std::vector<std::uint8_t> room(MaxEncodedFloatBytes(n, 8));
    EXPECT_EQ(EncodeAlpRanked<double>(v, 0, 0, *ws, room), 0u) << what;

    // A steep rise to 2^48: the offsets pass 2^47, the deltas above the smallest are small.
    std::int64_t x = 0;
    const std::int64_t step = 2 * kLimit / static_cast<std::int64_t>(n);
    for (auto& i : ints) i = x += step + static_cast<std::int64_t>(rng() % 1000);
    ASSERT_GE(ints.back(), kLimit);
    const std::vector<std::uint8_t> rise =
        RoundTripAtEveryLevel(FromInts<double>(ints, 1), *ws, "rise " + what);
    EXPECT_EQ(StreamFlags(rise), kStreamFlags[kDeltasAbove]) << what;
  }
}

// Blocks of each stream, short and full, with every Rice parameter, none with exceptions (their
// fields end the block).
std::vector<std::pair<std::vector<double>, std::vector<std::uint8_t>>> CorruptibleBlocks(
    Workspace& ws) {
  std::vector<std::pair<std::vector<double>, std::vector<std::uint8_t>>> blocks;
  std::mt19937_64 rng(11);
  for (int stream = 0; stream < 4; ++stream) {
    for (const std::size_t n : {300, 1024}) {
      if (stream == kSecondDifferences && n != kBlockCapacity) continue;
      const unsigned k = static_cast<unsigned>(stream + n / kBlockCapacity) % 4;
      const bool wide = n == kBlockCapacity;
      const unsigned top = wide ? 30 : simd::kRankedNarrowCategory;
      auto v = FromInts<double>(IntsWithCategories(stream, n, CategoriesForK(k, top), rng), 1);
      std::vector<std::uint8_t> block;
      EXPECT_EQ(EncodeExact<double>(FloatEncoding::kAlpRanked, v, ws, block).encoding,
                FloatEncoding::kAlpRanked);
      EXPECT_EQ(StreamFlags(block), kStreamFlags[stream]);
      EXPECT_EQ(block[kAlpZstdExceptionCountOffset] | block[kAlpZstdExceptionCountOffset + 1], 0);
      blocks.emplace_back(std::move(v), std::move(block));
    }
  }
  return blocks;
}

TEST(AlpRanked, CorruptBlocksNameTheField) {
  auto ws = std::make_unique<Workspace>();
  // Corruptions that need room in a last byte: counted so that each is tried at least once.
  int unary_padding = 0, field_padding = 0;
  for (const auto& [v, block] : CorruptibleBlocks(*ws)) {
    const std::size_t n = v.size();
    const Layout l = ParseRanked(block, n);
    const std::string what = "flags " + std::to_string(StreamFlags(block)) + " k " +
                             std::to_string(l.k) + " n " + std::to_string(n);
    // The parse agrees with the encoder: every code, unary bits to the last byte, fields to the
    // block's end.
    ASSERT_EQ(l.quotients.size(), n) << what;
    ASSERT_EQ((l.unary_bits + 7) / 8, l.unary_bytes) << what;
    ASSERT_EQ(l.fields_at + (l.field_bits + 7) / 8, block.size()) << what;
    std::vector<double> back(n);
    ASSERT_TRUE(DecodeExact(block, block.size(), back, *ws).ok()) << what;

    // The rank byte: no ranks; more ranks than categories.
    ExpectCorrupt(WithByte(block, l.rank_at, static_cast<std::uint8_t>(l.k << 6)), n, *ws,
                  "0 ranks", what);
    ExpectCorrupt(WithByte(block, l.rank_at, static_cast<std::uint8_t>(l.k << 6 | 49)), n, *ws,
                  "49 ranks", what);
    // A category past 47 in the table, first and last.
    ExpectCorrupt(WithByte(block, l.rank_at + 1, 48), n, *ws, "category 48 > 47", what);
    ExpectCorrupt(WithByte(block, l.rank_at + l.ranks, 255), n, *ws, "category 255 > 47", what);
    // A unary stream one byte longer than what follows the table holds, and the longest one.
    {
      const std::size_t room = block.size() - l.unary_at - (n * l.k + 7) / 8;
      std::vector<std::uint8_t> past = block;
      past[l.unary_at - 2] = static_cast<std::uint8_t>(room + 1);
      past[l.unary_at - 1] = static_cast<std::uint8_t>((room + 1) >> 8);
      ExpectCorrupt(past, n, *ws, "of unary codes", what);
      past[l.unary_at - 2] = past[l.unary_at - 1] = 0xff;
      ExpectCorrupt(past, n, *ws, "of unary codes", what);
    }
    // The unary stream without its last byte: the last codes run past it.
    {
      std::vector<std::uint8_t> unary = UnaryOf(block, l);
      unary.pop_back();
      ExpectCorrupt(WithUnary(block, l, unary), n, *ws, "runs past the unary stream", what);
    }
    // Set bits after the last code: in a byte of their own, or in the last byte's padding.
    {
      std::vector<std::uint8_t> unary = UnaryOf(block, l);
      unary.push_back(0x10);
      ExpectCorrupt(WithUnary(block, l, unary), n, *ws, "bits after the last code", what);
      if (l.unary_bits % 8 != 0) {
        ++unary_padding;
        const std::size_t last = l.unary_at + l.unary_bytes - 1;
        ExpectCorrupt(WithByte(block, last, static_cast<std::uint8_t>(block[last] | 0x80)), n, *ws,
                      "bits after the last code", what);
      }
    }
    // A zero byte after the last code's: the codes no longer end in the stream's last byte.
    {
      std::vector<std::uint8_t> unary = UnaryOf(block, l);
      unary.push_back(0);
      ExpectCorrupt(WithUnary(block, l, unary), n, *ws, "codes end in byte", what);
    }
    // A longer unary run: the code of the highest rank (first, middle and last such code) gets a
    // rank past the table.
    for (const std::size_t which : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
      std::vector<std::size_t> highest;
      const unsigned top_rank = *std::max_element(l.code_ranks.begin(), l.code_ranks.end());
      for (std::size_t i = 0; i < n; ++i) {
        if (l.code_ranks[i] == top_rank) highest.push_back(i);
      }
      const std::size_t i = which == 0   ? highest.front()
                            : which == 1 ? highest[highest.size() / 2]
                                         : highest.back();
      std::vector<unsigned> quotients = l.quotients;
      quotients[i] += ((l.ranks - top_rank) >> l.k) + 1;
      ASSERT_GE((quotients[i] << l.k) | (l.code_ranks[i] & ((1u << l.k) - 1)), l.ranks);
      ExpectCorrupt(WithUnary(block, l, UnaryOf(quotients)), n, *ws, "a code of rank", what);
    }
    // Fields that end before the block's last byte, and set bits in their padding.
    {
      std::vector<std::uint8_t> longer = block;
      longer.push_back(0);
      ExpectCorrupt(longer, n, *ws, "fields end at bit", what);
      if (l.field_bits % 8 != 0) {
        ++field_padding;
        ExpectCorrupt(
            WithByte(block, block.size() - 1, static_cast<std::uint8_t>(block.back() | 0x80)), n,
            *ws, "zero padding", what);
      }
    }
    // Flags: second differences on a short block or without zigzag, deltas without the
    // placeholder, zigzag without deltas, and a flag the encoding does not use.
    const auto flags = static_cast<std::uint8_t>(block[kAlpZstdFlagsOffset]);
    if (n != kBlockCapacity || (flags & kZigZagFlag) == 0) {
      ExpectCorrupt(
          WithByte(block, kAlpZstdFlagsOffset, static_cast<std::uint8_t>(flags | kSecondOrderFlag)),
          n, *ws, "second differences without zigzag or a full block", what);
    }
    if ((flags & kDeltaFlag) != 0) {
      ExpectCorrupt(WithByte(block, kAlpZstdFlagsOffset,
                             static_cast<std::uint8_t>(flags & ~kPlaceholderFlag)),
                    n, *ws, "disagree", what);
    } else {
      ExpectCorrupt(WithByte(block, kAlpZstdFlagsOffset, static_cast<std::uint8_t>(kZigZagFlag)), n,
                    *ws, "disagree", what);
    }
    ExpectCorrupt(
        WithByte(block, kAlpZstdFlagsOffset, static_cast<std::uint8_t>(flags | kLaneFlag)), n, *ws,
        "unknown flags", what);
  }
  EXPECT_GT(unary_padding, 0);
  EXPECT_GT(field_padding, 0);
}

// Every truncation of blocks of each stream (some with exceptions and divided values) is
// Corruption, and a random bit flipped in each byte gives Corruption or a valid decode, at every
// level, each from a heap copy of exactly its size so that an over-read is an ASan report.
TEST(AlpRanked, EveryTruncationIsCorruptAndFlipsAreSafe) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::pair<std::vector<double>, std::vector<std::uint8_t>>> blocks =
      CorruptibleBlocks(*ws);
  std::mt19937_64 rng(13);
  for (int stream = 0; stream < 4; stream += 3) {
    auto v = FromInts<double>(StreamInts(stream, 1024, rng), 100);
    v[5] = 1.0 / 3.0;
    v[900] = 0.1234567;
    std::vector<std::uint8_t> block;
    ASSERT_EQ(EncodeExact<double>(FloatEncoding::kAlpRanked, v, *ws, block).encoding,
              FloatEncoding::kAlpRanked);
    EXPECT_GT(block[kAlpZstdExceptionCountOffset], 0);
    blocks.emplace_back(std::move(v), std::move(block));
  }
  ActiveLevelRestorer restorer;
  for (simd::IsaLevel level : Levels()) {
    ASSERT_TRUE(simd::ForceIsa(level));
    for (const auto& [v, block] : blocks) {
      std::vector<double> back(v.size());
      for (std::size_t size = 0; size < block.size(); ++size) {
        const Status st = DecodeExact(block, size, back, *ws);
        ASSERT_TRUE(st.IsCorruption()) << "cut to " << size << " of " << block.size() << " at "
                                       << simd::IsaName(level) << ": " << st.ToString();
      }
      for (std::size_t at = 0; at < block.size(); ++at) {
        const std::vector<std::uint8_t> flipped =
            WithByte(block, at, static_cast<std::uint8_t>(block[at] ^ (1u << (rng() % 8))));
        const Status st = DecodeExact(flipped, flipped.size(), back, *ws);
        EXPECT_TRUE(st.ok() || st.IsCorruption()) << st.ToString();
      }
    }
  }
}

}  // namespace
}  // namespace ingot::codec
