#include "query/binary_export.h"

#include <bit>
#include <cstring>

namespace ingot {

static_assert(std::endian::native == std::endian::little,
              "the binary export writes host-order integers and doubles as little-endian");

namespace {
std::uint32_t LoadU32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::size_t Padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }
}  // namespace

void AppendBinaryStreamHeader(std::string* out) {
  out->append(kBinaryExportMagic, 4);
  out->push_back(static_cast<char>(kBinaryExportVersion));
  out->append(3, '\0');
}

void AppendBinaryFrameHeader(BinaryFrameTag tag, std::uint32_t length, std::string* out) {
  char buf[8];
  const auto t = static_cast<std::uint32_t>(tag);
  std::memcpy(buf, &t, 4);
  std::memcpy(buf + 4, &length, 4);
  out->append(buf, 8);
}

void AppendBinaryTextFrame(BinaryFrameTag tag, std::string_view text, std::string* out) {
  AppendBinaryFrameHeader(tag, static_cast<std::uint32_t>(text.size()), out);
  out->append(text);
  out->append(Padded(text.size()) - text.size(), '\0');
}

Status ParseBinaryExport(std::string_view stream, std::vector<ExportedSeries>* out) {
  out->clear();
  if (stream.size() < 8 || std::memcmp(stream.data(), kBinaryExportMagic, 4) != 0) {
    return Status::Corruption("not a binary export stream (bad magic)");
  }
  if (static_cast<std::uint8_t>(stream[4]) != kBinaryExportVersion) {
    return Status::Corruption("binary export version " +
                              std::to_string(static_cast<std::uint8_t>(stream[4])) +
                              " is not supported");
  }
  std::size_t pos = 8;
  while (pos + kBinaryFrameHeaderBytes <= stream.size()) {
    const std::uint32_t tag = LoadU32(stream.data() + pos);
    const std::uint32_t length = LoadU32(stream.data() + pos + 4);
    pos += kBinaryFrameHeaderBytes;
    const std::size_t left = stream.size() - pos;
    switch (static_cast<BinaryFrameTag>(tag)) {
      case BinaryFrameTag::kSeries:
      case BinaryFrameTag::kError: {
        if (Padded(length) > left) {
          return Status::Corruption("frame at offset " + std::to_string(pos - 8) +
                                    " overruns the stream");
        }
        std::string text(stream.substr(pos, length));
        pos += Padded(length);
        if (tag == static_cast<std::uint32_t>(BinaryFrameTag::kError)) {
          return Status::IOError("server error: " + text);
        }
        out->push_back({std::move(text), {}, {}});
        break;
      }
      case BinaryFrameTag::kPoints: {
        if (out->empty()) return Status::Corruption("points frame before any series frame");
        if (length == 0 || static_cast<std::uint64_t>(length) * 16 > left) {
          return Status::Corruption("points frame of " + std::to_string(length) +
                                    " points at offset " + std::to_string(pos - 8) +
                                    " overruns the stream");
        }
        ExportedSeries& s = out->back();
        const std::size_t old = s.ts_ns.size();
        s.ts_ns.resize(old + length);
        s.values.resize(old + length);
        std::memcpy(s.ts_ns.data() + old, stream.data() + pos, length * 8ull);
        std::memcpy(s.values.data() + old, stream.data() + pos + length * 8ull, length * 8ull);
        pos += length * 16ull;
        break;
      }
      case BinaryFrameTag::kEnd:
        if (length != out->size()) {
          return Status::Corruption("end frame counts " + std::to_string(length) +
                                    " series, the stream has " + std::to_string(out->size()));
        }
        if (pos != stream.size()) return Status::Corruption("bytes after the end frame");
        return Status::OK();
      default:
        return Status::Corruption("unknown frame tag " + std::to_string(tag) + " at offset " +
                                  std::to_string(pos - 8));
    }
  }
  return Status::Corruption("stream ends without an end frame");
}

}  // namespace ingot
