#include "config/protobuf_wire.h"

namespace ingot::protobuf {

bool WireReader::Skip(std::uint32_t field, std::uint32_t wire_type) {
  std::uint64_t ignored = 0;
  std::string_view bytes;
  switch (wire_type) {
    case kVarint:
      return ReadVarint(&ignored);
    case kFixed64:
      return ReadFixed64(&ignored);
    case kLengthDelimited:
      return ReadLengthDelimited(&bytes);
    case kStartGroup:
      return SkipGroup(field);
    case kEndGroup:
      return Fail("end of a group that was not started");
    case kFixed32:
      if (end_ - p_ < 4) return Fail("truncated 4-byte value");
      p_ += 4;
      return true;
    default:
      return Fail("invalid wire type 6 or 7");
  }
}

bool WireReader::SkipGroup(std::uint32_t field) {
  // Groups nest; the open ones are kept on a small stack rather than by recursion.
  std::uint32_t open[kMaxGroupDepth];
  int depth = 0;
  open[depth++] = field;
  while (depth > 0) {
    std::uint32_t f = 0, w = 0;
    if (!ReadTag(&f, &w)) return false;
    if (w == kStartGroup) {
      if (depth == kMaxGroupDepth) return Fail("groups nested too deeply");
      open[depth++] = f;
    } else if (w == kEndGroup) {
      if (open[depth - 1] != f) return Fail("group ended by another field number");
      --depth;
    } else if (!Skip(f, w)) {
      return false;
    }
  }
  return true;
}

}  // namespace ingot::protobuf
