#include "ingest/line_protocol_escape.h"

#include <cassert>

namespace ingot::ingest {
namespace {

// The byte that `\c` stands for in `context`, or 0 when `\c` is not an escape there (the
// backslash is then literal and `c` is read on its own).
inline char Unescaped(char c, EscapeContext context) noexcept {
  switch (context) {
    case EscapeContext::kMeasurement:
      return (c == ',' || c == ' ') ? c : '\0';
    case EscapeContext::kTagKey:
    case EscapeContext::kTagValue:
    case EscapeContext::kFieldKey:
      return (c == ',' || c == '=' || c == ' ') ? c : '\0';
    case EscapeContext::kStringValue:
      switch (c) {
        case '\\':
        case '"':
          return c;
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        default:
          return '\0';
      }
  }
  return '\0';
}

template <typename Sink>
inline void UnescapeInto(std::string_view raw, EscapeContext context, Sink&& sink) {
  const std::size_t n = raw.size();
  std::size_t i = 0;
  while (i < n) {
    const char c = raw[i];
    if (c == '\\' && i + 1 < n) {
      const char u = Unescaped(raw[i + 1], context);
      if (u != '\0') {
        sink(u);
        i += 2;
        continue;
      }
    }
    sink(c);
    ++i;
  }
}

}  // namespace

std::size_t Unescape(std::string_view raw, EscapeContext context, std::span<char> out) noexcept {
  assert(out.size() >= raw.size());
  if (!MayNeedUnescape(raw)) {
    raw.copy(out.data(), raw.size());
    return raw.size();
  }
  char* w = out.data();
  UnescapeInto(raw, context, [&w](char c) { *w++ = c; });
  return static_cast<std::size_t>(w - out.data());
}

void AppendUnescaped(std::string_view raw, EscapeContext context, std::string* out) {
  out->reserve(out->size() + raw.size());
  UnescapeInto(raw, context, [out](char c) { out->push_back(c); });
}

void AppendEscaped(std::string_view text, EscapeContext context, std::string* out) {
  out->reserve(out->size() + text.size());
  for (const char c : text) {
    bool escape = false;
    switch (context) {
      case EscapeContext::kMeasurement:
        escape = c == ',' || c == ' ';
        break;
      case EscapeContext::kTagKey:
      case EscapeContext::kTagValue:
      case EscapeContext::kFieldKey:
        escape = c == ',' || c == '=' || c == ' ';
        break;
      case EscapeContext::kStringValue:
        escape = c == '\\' || c == '"';
        break;
    }
    if (escape) out->push_back('\\');
    out->push_back(c);
  }
}

}  // namespace ingot::ingest
