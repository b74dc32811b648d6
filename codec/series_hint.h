// SeriesHint: what the codec learned from recent blocks of one series.
//
// The ALP exponent/factor pairs that won the last blocks are tried first on a small sample, so that
// the per-block search is nearly free for a series whose data keeps its shape. A hint is a small
// trivially copyable value owned by the series (the storage layer keeps one per series); a
// default-constructed hint means "nothing known yet" and triggers a full search. Beyond ALP, it
// remembers which encoding won and how big the block was, so the next block of the series
// usually runs one encoder only.
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
  // Bytes of the block at the last exact comparison of every candidate, and the runner-up's size
  // then (exact, or its estimate when it was far off). While blocks written with last_encoding
  // alone stay near last_bytes, the other encodings are only checked on samples; a size jump (a
  // small one when the runner-up was close), a sample that favours another encoding, or the
  // periodic comparison (blocks_since_choice) compares them all exactly again.
  std::uint16_t last_bytes = 0;
  std::uint16_t runner_up_bytes = 0;
  std::uint8_t blocks_since_choice = 0;
  // ALP-RD's split (right part width) when last_encoding is ALP-RD; the dictionary is cheap to
  // rebuild for a known split.
  std::uint8_t rd_right_bits = 0;
};

}  // namespace ingot::codec
