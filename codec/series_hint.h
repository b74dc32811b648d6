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

#include <cstddef>
#include <cstdint>
#include <span>

namespace ingot::codec {

struct SeriesHint {
  static constexpr int kPairs = 3;
  // last_encoding and runner_up_encoding when there is none.
  static constexpr std::uint8_t kNoEncoding = 0xff;
  // Most recent winning (exponent, factor) pairs; exponent 0xff marks an empty slot.
  std::uint8_t exponent[kPairs] = {0xff, 0xff, 0xff};
  std::uint8_t factor[kPairs] = {0xff, 0xff, 0xff};
  // Encoding chosen for the previous block (a FloatEncoding value), 0xff when unknown.
  std::uint8_t last_encoding = 0xff;
  // Blocks since the last full search (wraps); every few blocks the neighbours of the favourite
  // pair are tried on the sample, which moves a hint found on an odd block to a better pair
  // without another full search.
  std::uint8_t blocks_since_search = 0;
  // Bytes of the block at the last comparison of the candidates, and the blocks since then. While
  // blocks written with last_encoding alone stay near last_bytes, the other encodings are only
  // checked on samples; a size jump lets every candidate be estimated, a clear sample win
  // switches, and a periodic exact comparison catches what the samples miss. Comparisons keep a
  // minimum gap of blocks, so a series whose block sizes swing does not compare on every block.
  std::uint16_t last_bytes = 0;
  std::uint8_t blocks_since_choice = 0;
  // The encoding that last lost to last_encoding on an exact size (0xff when none) and that size.
  // When blocks written with last_encoding become bigger than that, the runner-up is written
  // again: sample estimates miss what only a whole-block encode sees (outliers, delta coding).
  std::uint8_t runner_up_encoding = 0xff;
  std::uint16_t runner_up_bytes = 0;
  // ALP-RD's split (right part width) when last_encoding is ALP-RD; the dictionary is cheap to
  // rebuild for a known split.
  std::uint8_t rd_right_bits = 0;
  // Reviewed blocks that skip ALP's estimate: set after an estimate came out far above the block
  // written (values that are not decimals), so that such a series does not pay for it often.
  std::uint8_t alp_pause_blocks = 0;
};

// A hint saved beside a series' checkpointed head, so that a restart encodes the series' next
// chunk warm instead of searching as for a new series: a format byte, then every field in a fixed
// order (16-bit fields little-endian).
inline constexpr std::size_t kSavedHintBytes = 17;

void SaveHint(const SeriesHint& hint, std::span<std::uint8_t, kSavedHintBytes> out) noexcept;

// False (and *hint untouched) when the bytes are not a saved hint of this format or hold values
// no encoder produces; the caller then starts from a default hint, which costs only speed.
bool LoadHint(std::span<const std::uint8_t> bytes, SeriesHint* hint) noexcept;

}  // namespace ingot::codec
