// The codec's contract of no allocation per block: after the caller's buffers exist, encoding and
// decoding blocks of every pattern, with new and warm hints, forced encodings and the integer
// codec, allocates nothing. A binary of its own, because it counts with a replaced global operator
// new.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "codec/codec.h"
#include "codec/float_encodings.h"
#include "codec_test_util.h"
#include "tests/support/allocation_counter.h"

namespace ingot::codec {
namespace {

using ingot::testing::AllocationCount;
using testing::Decode;
using testing::Encode;
using testing::EncodeAs;
using testing::kAllPatterns;
using testing::MakePattern;

constexpr std::size_t kBlocks = 24;

template <typename T>
struct Buffers {
  std::vector<std::vector<T>> inputs;
  std::vector<T> decoded = std::vector<T>(kBlockCapacity);
  std::vector<std::uint8_t> encoded =
      std::vector<std::uint8_t>(MaxEncodedFloatBytes(kBlockCapacity, sizeof(T)));
};

// Runs every float path over every pattern; returns the allocations counted meanwhile and fails
// the test on any round-trip error.
template <typename T>
long CountFloatPathAllocations(Workspace& ws, Buffers<T>& buf) {
  const long before = AllocationCount();
  for (const auto& values : buf.inputs) {
    SeriesHint hint;  // a new series, then warm for the following blocks
    for (std::size_t b = 0; b < kBlocks; ++b) {
      const std::span<const T> block(values.data() + b * kBlockCapacity, kBlockCapacity);
      const EncodeResult r = Encode<T>(block, hint, ws, buf.encoded);
      EXPECT_TRUE(Decode<T>({buf.encoded.data(), r.bytes}, buf.decoded, ws).ok());
    }
    for (FloatEncoding e : {FloatEncoding::kAlp, FloatEncoding::kAlpDelta, FloatEncoding::kAlpRd,
                            FloatEncoding::kGorilla, FloatEncoding::kXorGroups,
                            FloatEncoding::kRaw}) {
      SeriesHint forced;
      const EncodeResult r = EncodeAs<T>(e, {values.data(), kBlockCapacity}, forced, ws,
                                         buf.encoded);
      EXPECT_TRUE(Decode<T>({buf.encoded.data(), r.bytes}, buf.decoded, ws).ok());
    }
    // Short blocks take the paths of partial chunks.
    SeriesHint short_hint;
    const EncodeResult r = Encode<T>({values.data(), 100}, short_hint, ws, buf.encoded);
    EXPECT_TRUE(Decode<T>({buf.encoded.data(), r.bytes}, {buf.decoded.data(), 100}, ws).ok());
  }
  return AllocationCount() - before;
}

template <typename T>
void ExpectNoAllocations() {
  auto ws = std::make_unique<Workspace>();
  Buffers<T> buf;
  for (auto p : kAllPatterns) {
    buf.inputs.push_back(MakePattern<T>(p, kBlocks * kBlockCapacity, 7));
  }
  EXPECT_EQ(CountFloatPathAllocations(*ws, buf), 0);
}

// The counter itself works: otherwise every test here would pass without counting anything.
TEST(CodecNoAllocation, CounterSeesAnAllocation) {
  static std::unique_ptr<int> kept;  // stored, so the allocation cannot be elided
  const long before = AllocationCount();
  kept = std::make_unique<int>(7);
  EXPECT_EQ(AllocationCount() - before, 1);
}

TEST(CodecNoAllocation, DoubleBlocks) { ExpectNoAllocations<double>(); }

TEST(CodecNoAllocation, FloatBlocks) { ExpectNoAllocations<float>(); }

// The compact encodings (background rewrites) read back on the query path: once the Workspace's
// zstd contexts exist (made on first use), neither rewriting a block nor decoding one allocates.
TEST(CodecNoAllocation, CompactBlocks) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::vector<double>> inputs;
  for (auto p : kAllPatterns) inputs.push_back(MakePattern<double>(p, 4 * kBlockCapacity, 7));
  const std::size_t slot = MaxEncodedFloatBytes(kBlockCapacity, sizeof(double));
  std::vector<std::uint8_t> encoded(inputs.size() * 4 * slot);
  std::vector<std::size_t> sizes(inputs.size() * 4);
  std::vector<double> decoded(kBlockCapacity);
  bool written[kFloatEncodingCount] = {};
  const auto pass = [&] {
    for (std::size_t s = 0; s < inputs.size(); ++s) {
      SeriesHint hint;
      for (std::size_t b = 0; b < 4; ++b) {
        const std::size_t at = s * 4 + b;
        const std::span<const double> block(inputs[s].data() + b * kBlockCapacity, kBlockCapacity);
        const EncodeResult r =
            EncodeDoublesCompact(block, hint, *ws, {encoded.data() + at * slot, slot});
        sizes[at] = r.bytes;
        written[static_cast<int>(r.encoding)] = true;
        EXPECT_TRUE(DecodeDoubles({encoded.data() + at * slot, r.bytes}, decoded, *ws).ok());
      }
    }
  };
  pass();  // makes the zstd contexts
  const long before = AllocationCount();
  pass();
  EXPECT_EQ(AllocationCount() - before, 0);
  // The patterns reach the entropy coders, not only the ingest encodings.
  EXPECT_TRUE(written[static_cast<int>(FloatEncoding::kAlpRanked)] ||
              written[static_cast<int>(FloatEncoding::kAlpRice)]);
}

TEST(CodecNoAllocation, IntegerBlocks) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::int64_t> regular(kBlockCapacity);
  std::vector<std::int64_t> jittered(kBlockCapacity);
  for (std::size_t i = 0; i < kBlockCapacity; ++i) {
    regular[i] = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(i) * 10'000'000'000;
    jittered[i] = regular[i] + static_cast<std::int64_t>((i * 7919) % 1000);
  }
  std::vector<std::uint8_t> encoded(MaxEncodedIntBytes(kBlockCapacity));
  std::vector<std::int64_t> decoded(kBlockCapacity);
  const long before = AllocationCount();
  for (const auto* values : {&regular, &jittered}) {
    const std::size_t bytes = EncodeInts(*values, *ws, encoded);
    EXPECT_TRUE(DecodeInts({encoded.data(), bytes}, decoded, *ws).ok());
  }
  EXPECT_EQ(AllocationCount() - before, 0);
}

}  // namespace
}  // namespace ingot::codec
