#include "chunk/series_key.h"

namespace ingot {

namespace {

bool NeedsEscape(char c) { return c == '\\' || c == ',' || c == '=' || c == ' '; }

void AppendEscaped(std::string_view s, std::string* out) {
  for (char c : s) {
    if (NeedsEscape(c)) out->push_back('\\');
    out->push_back(c);
  }
}

// Reads one escaped component starting at `*pos` up to (not including) the first unescaped byte
// in `stops`; returns false on a dangling escape.
bool ReadComponent(std::string_view key, std::size_t* pos, std::string_view stops,
                   std::string* out) {
  out->clear();
  const auto is_stop = [stops](char c) {
    for (const char s : stops) {
      if (c == s) return true;
    }
    return false;
  };
  std::size_t i = *pos;
  while (i < key.size()) {
    // A run of plain characters goes in at once; keys rarely hold escapes.
    std::size_t j = i;
    while (j < key.size() && key[j] != '\\' && !is_stop(key[j])) ++j;
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
  if (!ReadComponent(key, &pos, ", ", &out->name)) return bad("dangling escape");
  if (out->name.empty()) return bad("empty metric name");
  std::string k, v;
  while (pos < key.size() && key[pos] == ',') {
    ++pos;
    if (!ReadComponent(key, &pos, "=, ", &k)) return bad("dangling escape");
    if (pos >= key.size() || key[pos] != '=') return bad("tag without '='");
    ++pos;
    if (!ReadComponent(key, &pos, ", ", &v)) return bad("dangling escape");
    out->tags.emplace_back(k, v);
  }
  if (pos < key.size() && key[pos] == ' ') {
    // Legacy form: the measurement so far, then the field.
    ++pos;
    std::string field;
    if (!ReadComponent(key, &pos, "", &field)) return bad("dangling escape");
    if (field.empty()) return bad("empty field");
    out->name.append("_").append(field);
    out->legacy = true;
  }
  if (pos != key.size()) return bad("unexpected byte");
  return Status::OK();
}

}  // namespace ingot
