// Reading protobuf's wire format straight from a buffer, without generated classes: the remote
// write decoder (ingest/) and the remote read handler (query/) walk their messages with it.
//
// Every field is a tag (varint: field number << 3 | wire type) followed by its value:
//
//   wire type 0  varint              int64 (two's complement in 10 bytes when negative)
//   wire type 1  8 bytes little end  double, fixed64
//   wire type 2  varint length, then that many bytes: string, bytes or embedded message
//   wire type 3  start group ... end group (wire type 4) of the same field: obsolete, skipped
//   wire type 5  4 bytes
//
// Fields may come in any order and repeat; unknown fields are skipped (protobuf's own rules, so
// that any conforming encoder is read as protoc's parser reads it).
//
// Thread safety: a WireReader is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ingot::protobuf {

enum WireType : std::uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Nested groups skipped at most: protobuf's own recursion limit, so that nothing protobuf reads is
// refused here.
inline constexpr int kMaxGroupDepth = 100;

// Reads protobuf wire format from a buffer. Every read checks
// the bounds; a failed read leaves a static reason in error() and the reader at the offending
// byte.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : begin_(reinterpret_cast<const std::uint8_t*>(bytes.data())),
        p_(begin_),
        end_(begin_ + bytes.size()) {}

  bool done() const { return p_ == end_; }
  // Bytes read so far.
  std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
  const char* error() const { return error_; }

  // A varint of at most 10 bytes; bits past the 64th are dropped, as protobuf does.
  bool ReadVarint(std::uint64_t* out) {
    // Fast path: one byte (small field tags, lengths and most timestamps' last bytes).
    if (p_ < end_ && *p_ < 0x80) {
      *out = *p_++;
      return true;
    }
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return Fail("truncated varint");
      const std::uint8_t byte = *p_++;
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;  // the 10th byte's high bits drop
      if (byte < 0x80) {
        *out = v;
        return true;
      }
    }
    return Fail("varint longer than 10 bytes");
  }
  // A field tag: field number and wire type. As protobuf reads tags: at most 5 bytes, the value
  // cut to 32 bits.
  bool ReadTag(std::uint32_t* field, std::uint32_t* wire_type) {
    std::uint32_t tag = 0;
    for (int shift = 0;; shift += 7) {
      if (shift == 35) return Fail("field tag longer than 5 bytes");
      if (p_ == end_) return Fail("truncated varint");
      const std::uint8_t byte = *p_++;
      tag |= static_cast<std::uint32_t>(byte & 0x7f) << shift;
      if (byte < 0x80) break;
    }
    *field = tag >> 3;
    *wire_type = tag & 7;
    if (*field == 0) return Fail("field number 0");
    return true;
  }
  bool ReadFixed64(std::uint64_t* out) {
    if (end_ - p_ < 8) return Fail("truncated 8-byte value");
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p_[i];  // little endian, any host
    p_ += 8;
    *out = v;
    return true;
  }
  bool ReadLengthDelimited(std::string_view* out) {
    std::uint64_t length = 0;
    if (!ReadVarint(&length)) return false;
    if (length > static_cast<std::uint64_t>(end_ - p_)) {
      return Fail("length-delimited field longer than its message");
    }
    *out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(length));
    p_ += length;
    return true;
  }
  // Skips the value of an unknown (or skipped) field whose tag was just read.
  bool Skip(std::uint32_t field, std::uint32_t wire_type);

 private:
  bool Fail(const char* reason) {
    error_ = reason;
    return false;
  }
  bool SkipGroup(std::uint32_t field);

  const std::uint8_t* begin_;
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  const char* error_ = "";
};

}  // namespace ingot::protobuf
