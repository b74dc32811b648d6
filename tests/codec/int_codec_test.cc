// Integer codec: exact round trips and the regular-interval fast path.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "codec/codec.h"
#include "codec/format.h"

namespace ingot::codec {
namespace {

std::size_t RoundTrip(const std::vector<std::int64_t>& v, Workspace& ws) {
  std::vector<std::uint8_t> buf(MaxEncodedIntBytes(v.size()));
  const std::size_t bytes = EncodeInts(v, ws, buf);
  EXPECT_LE(bytes, buf.size());
  std::vector<std::int64_t> back(v.size());
  const Status st = DecodeInts({buf.data(), bytes}, back, ws);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(v, back);
  return bytes;
}

TEST(IntCodecTest, RegularTimestampsCostAFewBytes) {
  auto ws = std::make_unique<Workspace>();
  std::vector<std::int64_t> ts(1024);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    ts[i] = 1700000000000000000 + static_cast<std::int64_t>(i) * 10000000000;
  }
  EXPECT_LE(RoundTrip(ts, *ws), 28u);
}

TEST(IntCodecTest, JitteredTimestampsAndCounters) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(1);
  for (std::size_t n : {1, 2, 3, 4, 17, 1000, 1023, 1024}) {
    std::vector<std::int64_t> ts(n), counter(n), random(n), extremes(n);
    std::int64_t t = 1700000000000000000;
    for (std::size_t i = 0; i < n; ++i) {
      t += 1000000000 + static_cast<std::int64_t>(rng() % 2000000) - 1000000;
      ts[i] = t;
      counter[i] = static_cast<std::int64_t>(i * i);
      random[i] = static_cast<std::int64_t>(rng());
      extremes[i] = (i % 2) ? std::numeric_limits<std::int64_t>::max()
                            : std::numeric_limits<std::int64_t>::min();
    }
    const std::size_t ts_bytes = RoundTrip(ts, *ws);
    if (n == 1024) {
      EXPECT_LT(ts_bytes, 1024u * 3);  // ~21 bits of jitter
    }
    RoundTrip(counter, *ws);
    RoundTrip(random, *ws);
    RoundTrip(extremes, *ws);
  }
}

// Delta and delta-of-delta blocks whose packed numbers are not all equal take the unpack and the
// running sums (the regular-interval fast path does not apply): a jittered clock takes delta, a
// jittered quadratic (an accelerating counter) delta-of-delta; both round-trip at every length.
TEST(IntCodecTest, DeltaAndDeltaOfDeltaSumsRoundTrip) {
  auto ws = std::make_unique<Workspace>();
  std::mt19937_64 rng(2);
  for (std::size_t n : {2, 3, 9, 100, 1000, 1024}) {
    std::vector<std::int64_t> clock(n), curve(n);
    std::int64_t t = 1700000000000000000;
    for (std::size_t i = 0; i < n; ++i) {
      t += 1000000000 + static_cast<std::int64_t>(rng() % 2000000);
      clock[i] = t;
      const auto k = static_cast<std::int64_t>(i);
      curve[i] = 5000 * k * k + static_cast<std::int64_t>(rng() % 7);
    }
    for (const auto& [values, want] :
         {std::pair{&clock, IntEncoding::kDelta}, std::pair{&curve, IntEncoding::kDeltaOfDelta}}) {
      std::vector<std::uint8_t> buf(MaxEncodedIntBytes(n));
      const std::size_t bytes = EncodeInts(*values, *ws, buf);
      ASSERT_GT(bytes, 0u);
      if (n >= 100) {  // shorter blocks may take FOR (fewer header bytes)
        ASSERT_EQ(buf[0], static_cast<std::uint8_t>(want)) << "n " << n;
      }
      std::vector<std::int64_t> back(n);
      ASSERT_TRUE(DecodeInts({buf.data(), bytes}, back, *ws).ok());
      EXPECT_EQ(back, *values) << "n " << n << " encoding " << int{buf[0]};
    }
  }
}

}  // namespace
}  // namespace ingot::codec
