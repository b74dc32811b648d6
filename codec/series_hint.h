// SeriesHint: what the codec learned from recent blocks of one series.
//
// The ALP exponent/factor pairs that won the last blocks are tried first on a small sample, so that
// the per-block search is nearly free for a series whose data keeps its shape. A hint is a small
// trivially copyable value owned by the series (the storage layer keeps one per series); a
// default-constructed hint means "nothing known yet" and triggers a full search.
//
// Thread safety: a value; owned and used by the series' single writer.
#pragma once

#include <cstdint>

namespace ingot::codec {

struct SeriesHint {
  static constexpr int kPairs = 3;
  // Most recent winning (exponent, factor) pairs; exponent 0xff marks an empty slot.
  std::uint8_t exponent[kPairs] = {0xff, 0xff, 0xff};
  std::uint8_t factor[kPairs] = {0xff, 0xff, 0xff};
  // Encoding chosen for the previous block (a FloatEncoding value), 0xff when unknown.
  std::uint8_t last_encoding = 0xff;
  // Blocks since the last full search; forces a re-search periodically.
  std::uint8_t blocks_since_search = 0;
};

}  // namespace ingot::codec
