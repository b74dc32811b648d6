#include "chunk/series_key.h"

#include <array>
#include <cstdint>

namespace ingot {

namespace {

bool NeedsEscape(char c) { return c == '\\' || c == ',' || c == '=' || c == ' '; }

void AppendEscaped(std::string_view s, std::string* out) {
  for (char c : s) {
    if (NeedsEscape(c)) out->push_back('\\');
    out->push_back(c);
  }
}

// The bytes a component may end at, as bit masks over a byte's class.
enum : std::uint8_t { kEscape = 1, kComma = 2, kSpace = 4, kEquals = 8 };
constexpr std::uint8_t kEndsName = kComma | kSpace;
constexpr std::uint8_t kEndsTagKey = kEquals | kComma | kSpace;
constexpr std::uint8_t kEndsField = 0;
constexpr std::array<std::uint8_t, 256> kByteClass = [] {
  std::array<std::uint8_t, 256> c{};
  c['\\'] = kEscape;
  c[','] = kComma;
  c[' '] = kSpace;
  c['='] = kEquals;
  return c;
}();

// Reads one escaped component starting at `*pos` up to (not including) the first unescaped byte
// of a class in `stops`; returns false on a dangling escape.
bool ReadComponent(std::string_view key, std::size_t* pos, std::uint8_t stops, std::string* out) {
  out->clear();
  const std::uint8_t special = stops | kEscape;
  std::size_t i = *pos;
  while (i < key.size()) {
    // A run of plain bytes goes in at once; keys rarely hold escapes.
    std::size_t j = i;
    while (j < key.size() && (kByteClass[static_cast<unsigned char>(key[j])] & special) == 0) ++j;
    out->append(key.data() + i, j - i);
    i = j;
    if (i >= key.size() || key[i] != '\\') break;
    if (i + 1 >= key.size()) return false;
    out->push_back(key[i + 1]);
    i += 2;
  }
  *pos = i;
  return true;
}

void AppendTags(std::span<const TagView> tags, std::string* out) {
  for (const auto& [k, v] : tags) {
    out->push_back(',');
    AppendEscaped(k, out);
    out->push_back('=');
    AppendEscaped(v, out);
  }
}

}  // namespace

const char* ValueTypeName(ValueType type) noexcept {
  switch (type) {
    case ValueType::kFloat:
      return "float";
    case ValueType::kInteger:
      return "integer";
    case ValueType::kBoolean:
      return "boolean";
  }
  return "unknown";
}

void BuildSeriesKey(std::string_view measurement, std::span<const TagView> tags_sorted_unescaped,
                    std::string_view field, std::string* out) {
  out->clear();
  AppendEscaped(measurement, out);
  out->push_back('_');
  AppendEscaped(field, out);
  AppendTags(tags_sorted_unescaped, out);
}

void BuildLabelSetKey(std::string_view metric_name, std::span<const TagView> tags_sorted_unescaped,
                      std::string* out) {
  out->clear();
  AppendEscaped(metric_name, out);
  AppendTags(tags_sorted_unescaped, out);
}

Status ParseSeriesKey(std::string_view key, SeriesKeyParts* out) {
  out->tags.clear();
  out->legacy = false;
  std::size_t pos = 0;
  auto bad = [&](std::string_view why) {
    std::string msg = "series key '";
    msg.append(key).append("': ").append(why).append(" at byte ").append(std::to_string(pos));
    return Status::InvalidArgument(msg);
  };
  if (!ReadComponent(key, &pos, kEndsName, &out->name)) return bad("dangling escape");
  if (out->name.empty()) return bad("empty metric name");
  std::string k, v;
  while (pos < key.size() && key[pos] == ',') {
    ++pos;
    if (!ReadComponent(key, &pos, kEndsTagKey, &k)) return bad("dangling escape");
    if (pos >= key.size() || key[pos] != '=') return bad("tag without '='");
    ++pos;
    if (!ReadComponent(key, &pos, kEndsName, &v)) return bad("dangling escape");
    out->tags.emplace_back(k, v);
  }
  if (pos < key.size() && key[pos] == ' ') {
    // Legacy form: the measurement so far, then the field.
    ++pos;
    std::string field;
    if (!ReadComponent(key, &pos, kEndsField, &field)) return bad("dangling escape");
    if (field.empty()) return bad("empty field");
    out->name.append("_").append(field);
    out->legacy = true;
  }
  if (pos != key.size()) return bad("unexpected byte");
  return Status::OK();
}

}  // namespace ingot
