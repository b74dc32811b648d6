// Little-endian bit streams for the Gorilla encoding: bit 0 of the stream is bit 0 of byte 0.
//
// The writer counts bits only in a dry run (kDryRun), so the size estimate and the encoder share
// one code path. The reader works on a zero-padded copy, so a field read near the end of a
// truncated stream reads zeros instead of out of bounds; the caller checks the position against
// the real length after every value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ingot::codec {

template <bool kDryRun>
class BitWriter {
 public:
  BitWriter(std::uint8_t* out, std::size_t capacity_bytes) : out_(out), capacity_(capacity_bytes) {}

  // REQUIRES: width <= 64 and value < 2^width.
  void Put(std::uint64_t value, unsigned width) {
    if constexpr (kDryRun) {
      bits_ += width;
    } else {
      if (width == 0) return;
      acc_ |= value << used_;
      if (used_ + width >= 64) {
        Flush();
        const unsigned spill = used_ + width - 64;
        acc_ = spill == 0 ? 0 : value >> (width - spill);
        used_ = spill;
      } else {
        used_ += width;
      }
    }
  }

  // Bytes of the finished stream; writes the last partial word. Over capacity sets overflow().
  std::size_t Finish() {
    if constexpr (kDryRun) {
      return (bits_ + 7) / 8;
    } else {
      const std::size_t tail = (used_ + 7) / 8;
      if (pos_ + tail > capacity_) {
        overflow_ = true;
      } else if (tail > 0) {
        std::memcpy(out_ + pos_, &acc_, tail);
      }
      return pos_ + tail;
    }
  }

  bool overflow() const { return overflow_; }
  // Bits written so far.
  std::size_t bits() const {
    if constexpr (kDryRun) return bits_;
    return pos_ * 8 + used_;
  }

 private:
  void Flush() {
    if (pos_ + 8 > capacity_) {
      overflow_ = true;
    } else {
      std::memcpy(out_ + pos_, &acc_, 8);
    }
    pos_ += 8;
  }

  std::uint8_t* out_;
  std::size_t capacity_;
  std::size_t pos_ = 0;
  std::uint64_t acc_ = 0;
  unsigned used_ = 0;
  std::size_t bits_ = 0;
  bool overflow_ = false;
};

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
