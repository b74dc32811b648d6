// XorChunkEncoder: writes Prometheus' XOR chunk (the `chunkenc.EncXOR` chunk of its TSDB), the
// chunk encoding of remote read's STREAMED_XOR_CHUNKS responses (query/remote_read_format.h).
//
// Layout (bits are written most significant first, bytes in order):
//
//   +-----------+-------------------------------+----------------------------------------------+
//   | u16 count | sample 0                      | sample 1          | samples 2 .. count-1     |
//   | big end.  | ts: signed varint (zigzag)    | ts: uvarint of    | ts: delta-of-delta code  |
//   |           | value: 64 raw bits            | the delta         | value: XOR code          |
//   |           |                               | value: XOR code   |                          |
//   +-----------+-------------------------------+----------------------------------------------+
//
//   delta-of-delta (dod = delta - previous delta), two's complement in the given width:
//     '0'                 dod == 0: regular intervals, the common case, cost one bit
//     '10'   + 14 bits    -8191 <= dod <= 8192
//     '110'  + 17 bits    -65535 <= dod <= 65536
//     '1110' + 20 bits    -524287 <= dod <= 524288
//     '1111' + 64 bits    anything else
//
//   XOR code of a value against the previous one (delta = bits ^ previous bits):
//     '0'                                 delta == 0 (a repeated value)
//     '10' + meaningful bits              the delta fits the previous window (its leading and
//                                         trailing zero counts are at least the window's)
//     '11' + 5 bits leading zeros (at most 31) + 6 bits significant bit count (64 written as 0)
//          + the significant bits         a new window
//
// Values are stored as their bits, so NaN payloads (staleness markers), -0.0 and infinities
// round-trip exactly.
//
// Thread safety: not thread-safe; one encoder per writer. No allocation: the chunk is built in the
// encoder's own fixed buffer; bytes() stays valid until the next Reset() or Append().
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ingot {

class XorChunkEncoder {
 public:
  // Samples per chunk, as Prometheus cuts them (its head chunks and remote-read chunks).
  static constexpr std::size_t kMaxSamples = 120;
  // The largest chunk of kMaxSamples: header, first sample (10 + 8 bytes), second (10 bytes of
  // delta plus a 77-bit value), then 4 + 64 bits of timestamp and 77 bits of value per sample.
  static constexpr std::size_t kMaxBytes =
      (8 * (2 + 18 + 10) + 77 + (kMaxSamples - 2) * 145 + 7) / 8;

  XorChunkEncoder() { Reset(); }

  // Starts an empty chunk.
  void Reset();
  // REQUIRES: count() < kMaxSamples; t_ms greater than the previous sample's.
  void Append(std::int64_t t_ms, std::uint64_t value_bits);

  std::size_t count() const { return count_; }
  std::int64_t min_time_ms() const { return first_t_; }
  std::int64_t max_time_ms() const { return t_; }
  // The chunk so far, header included.
  std::span<const std::uint8_t> bytes() const { return {buf_, (bit_pos_ + 7) / 8}; }

 private:
  void WriteBits(std::uint64_t v, int n);
  void WriteBit(bool bit) { WriteBits(bit ? 1 : 0, 1); }
  void WriteUvarint(std::uint64_t v);
  void WriteValue(std::uint64_t bits);

  std::uint8_t buf_[kMaxBytes];
  std::size_t bit_pos_ = 0;
  std::size_t count_ = 0;
  std::int64_t first_t_ = 0;
  std::int64_t t_ = 0;
  std::uint64_t t_delta_ = 0;
  std::uint64_t value_ = 0;
  std::uint8_t leading_ = 0xff;  // 0xff: no window yet
  std::uint8_t trailing_ = 0;
};

}  // namespace ingot
