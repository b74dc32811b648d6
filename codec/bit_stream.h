// The reader of the little-endian Gorilla bit stream: bit 0 of the stream is bit 0 of byte 0.
// (The writer is the word-at-a-time GorillaWriter in float_compress.cc.)
//
// The reader works on a zero-padded copy, so a field read near the end of a truncated stream reads
// zeros instead of out of bounds; the caller checks the position against the real length after
// every value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ingot::codec {

// Reads from a buffer that has at least 16 readable bytes past the stream's end.
class BitReader {
 public:
  explicit BitReader(const std::uint8_t* padded) : data_(padded) {}

  // The next up to 56 bits, without consuming them.
  std::uint64_t Peek() const {
    std::uint64_t w;
    std::memcpy(&w, data_ + pos_ / 8, 8);
    return w >> (pos_ % 8);
  }

  void Skip(unsigned width) { pos_ += width; }

  // REQUIRES: width <= 64.
  std::uint64_t Get(unsigned width) {
    if (width == 0) return 0;
    std::uint64_t lo;
    std::memcpy(&lo, data_ + pos_ / 8, 8);
    const unsigned shift = pos_ % 8;
    lo >>= shift;
    if (shift != 0 && shift + width > 64) {
      lo |= static_cast<std::uint64_t>(data_[pos_ / 8 + 8]) << (64 - shift);
    }
    pos_ += width;
    return width == 64 ? lo : lo & ((1ull << width) - 1);
  }

  std::size_t position() const { return pos_; }

 private:
  const std::uint8_t* data_;
  std::size_t pos_ = 0;
};

}  // namespace ingot::codec
