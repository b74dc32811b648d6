// Line-protocol escaping: turning the escaped tokens that LineParser returns into their text.
//
// Each part of a line has its own escape set (InfluxDB line protocol, as decoded by InfluxData's
// reference decoder):
//   measurement        \,  "\ "                    -> comma, space
//   tag key/value,
//   field key          \,  \=  "\ "                -> comma, equals, space
//   string field value \\  \"  \n  \r  \t          -> backslash, quote, newline, CR, tab
// A backslash before any other byte is kept as a literal backslash. Unescaping never lengthens a
// token, so an output buffer as long as the input always suffices.
//
// Thread safety: pure functions over caller buffers.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace ingot::ingest {

enum class EscapeContext : unsigned char {
  kMeasurement,
  kTagKey,
  kTagValue,
  kFieldKey,
  kStringValue,
};

// True when `raw` contains a backslash, i.e. when its unescaped text may differ from it. Tokens
// without a backslash can be used as they are.
inline bool MayNeedUnescape(std::string_view raw) noexcept {
  return raw.find('\\') != std::string_view::npos;
}

// Writes the unescaped text of `raw` (a token as returned by LineParser) into `out` and returns
// the number of bytes written.
// REQUIRES: out.size() >= raw.size().
std::size_t Unescape(std::string_view raw, EscapeContext context, std::span<char> out) noexcept;

// Appends the unescaped text of `raw` to `*out` (slow paths and tests).
void AppendUnescaped(std::string_view raw, EscapeContext context, std::string* out);

// Appends `text` escaped for `context` to `*out`, so that parsing it back yields `text`. For
// kStringValue the surrounding quotes are not written. Used to write canonical line protocol.
void AppendEscaped(std::string_view text, EscapeContext context, std::string* out);

}  // namespace ingot::ingest
