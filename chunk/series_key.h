// Series identity: the value type of a series, its compact id, and its canonical key.
//
// The canonical key of a series is
//
//   measurement { ',' tag_key '=' tag_value } ' ' field
//
// with tags sorted by key and every component escaped so that the key is unambiguous: a backslash,
// comma, equals sign or space inside a component is written as a backslash followed by the byte.
// Two series are the same series exactly when their canonical keys are byte-equal.
//
// Thread safety: free functions over caller buffers; reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/status.h"

namespace ingot {

// The value type of a series, fixed when the series is created.
// persisted: never renumber
enum class ValueType : std::uint8_t { kFloat = 0, kInteger = 1, kBoolean = 2 };
inline constexpr int kValueTypeCount = 3;

// "float", "integer", "boolean".
const char* ValueTypeName(ValueType type) noexcept;

// Dense ids assigned from 1 in creation order; 0 is never a valid id.
using SeriesId = std::uint64_t;
inline constexpr SeriesId kInvalidSeriesId = 0;

using TagView = std::pair<std::string_view, std::string_view>;

// Writes the canonical key of (measurement, tags, field) to `*out` (replacing its contents; the
// string's capacity is reused, so a caller that keeps one string allocates only while keys grow).
// REQUIRES: `tags_sorted_unescaped` is sorted by key with no duplicate keys; components unescaped.
void BuildSeriesKey(std::string_view measurement, std::span<const TagView> tags_sorted_unescaped,
                    std::string_view field, std::string* out);

struct SeriesKeyParts {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;  // unescaped, in key order
  std::string field;
};

// Splits a canonical key back into its unescaped parts. InvalidArgument for a malformed key
// (dangling escape, missing field, empty measurement or field, tag without '=').
Status ParseSeriesKey(std::string_view key, SeriesKeyParts* out);

}  // namespace ingot
