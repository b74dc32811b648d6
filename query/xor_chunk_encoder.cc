#include "query/xor_chunk_encoder.h"

#include <bit>
#include <cassert>

namespace ingot {
namespace {

// Whether `dod` is in the range a code of `bits` bits holds (asymmetric, as Prometheus'
// bitRange: its reader maps values above 2^(bits-1) to negatives).
bool FitsBits(std::int64_t dod, int bits) {
  const std::int64_t half = std::int64_t{1} << (bits - 1);
  return -(half - 1) <= dod && dod <= half;
}

}  // namespace

void XorChunkEncoder::Reset() {
  buf_[0] = 0;
  buf_[1] = 0;
  bit_pos_ = 16;
  count_ = 0;
  first_t_ = 0;
  t_ = 0;
  t_delta_ = 0;
  value_ = 0;
  leading_ = 0xff;
  trailing_ = 0;
}

void XorChunkEncoder::WriteBits(std::uint64_t v, int n) {
  while (n > 0) {
    const int used = static_cast<int>(bit_pos_ & 7);
    const int room = 8 - used;
    const int take = room < n ? room : n;
    const auto part = static_cast<std::uint8_t>((v >> (n - take)) & ((1u << take) - 1));
    std::uint8_t& byte = buf_[bit_pos_ >> 3];
    if (used == 0) byte = 0;  // a fresh byte: nothing of an earlier chunk may stay in it
    byte = static_cast<std::uint8_t>(byte | (part << (room - take)));
    bit_pos_ += static_cast<std::size_t>(take);
    n -= take;
  }
}

void XorChunkEncoder::WriteUvarint(std::uint64_t v) {
  while (v >= 0x80) {
    WriteBits((v & 0x7f) | 0x80, 8);
    v >>= 7;
  }
  WriteBits(v, 8);
}

void XorChunkEncoder::WriteValue(std::uint64_t bits) {
  const std::uint64_t delta = bits ^ value_;
  value_ = bits;
  if (delta == 0) {
    WriteBit(false);
    return;
  }
  WriteBit(true);
  auto leading = static_cast<std::uint8_t>(std::countl_zero(delta));
  const auto trailing = static_cast<std::uint8_t>(std::countr_zero(delta));
  if (leading >= 32) leading = 31;  // the count has 5 bits
  if (leading_ != 0xff && leading >= leading_ && trailing >= trailing_) {
    // Fits the previous window: only its meaningful bits.
    WriteBit(false);
    WriteBits(delta >> trailing_, 64 - leading_ - trailing_);
    return;
  }
  leading_ = leading;
  trailing_ = trailing;
  WriteBit(true);
  WriteBits(leading, 5);
  const int significant = 64 - leading - trailing;
  WriteBits(static_cast<std::uint64_t>(significant) & 63, 6);  // 64 is written as 0
  WriteBits(delta >> trailing, significant);
}

void XorChunkEncoder::Append(std::int64_t t_ms, std::uint64_t value_bits) {
  assert(count_ < kMaxSamples);
  if (count_ == 0) {
    // Signed varint: zigzag, then unsigned.
    WriteUvarint((static_cast<std::uint64_t>(t_ms) << 1) ^ static_cast<std::uint64_t>(t_ms >> 63));
    WriteBits(value_bits, 64);
    value_ = value_bits;
    first_t_ = t_ms;
  } else if (count_ == 1) {
    t_delta_ = static_cast<std::uint64_t>(t_ms) - static_cast<std::uint64_t>(t_);
    WriteUvarint(t_delta_);
    WriteValue(value_bits);
  } else {
    const std::uint64_t t_delta = static_cast<std::uint64_t>(t_ms) - static_cast<std::uint64_t>(t_);
    const auto dod = static_cast<std::int64_t>(t_delta - t_delta_);
    t_delta_ = t_delta;
    const auto code = static_cast<std::uint64_t>(dod);
    if (dod == 0) {
      WriteBit(false);
    } else if (FitsBits(dod, 14)) {
      WriteBits(0b10, 2);
      WriteBits(code & ((1u << 14) - 1), 14);
    } else if (FitsBits(dod, 17)) {
      WriteBits(0b110, 3);
      WriteBits(code & ((1u << 17) - 1), 17);
    } else if (FitsBits(dod, 20)) {
      WriteBits(0b1110, 4);
      WriteBits(code & ((1u << 20) - 1), 20);
    } else {
      WriteBits(0b1111, 4);
      WriteBits(code, 64);
    }
    WriteValue(value_bits);
  }
  t_ = t_ms;
  ++count_;
  buf_[0] = static_cast<std::uint8_t>(count_ >> 8);
  buf_[1] = static_cast<std::uint8_t>(count_);
}

}  // namespace ingot
