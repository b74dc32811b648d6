// Series identity: the value type of a series, its compact id, and its canonical key.
//
// A series is its label set: a metric name and tags (labels), as Prometheus
// sees it. A line-protocol series (measurement, tags, field) has the metric
// name `<measurement>_<field>`, so `cpu usage_user=1` and `cpu_usage user=1`
// write the same series, as would a remote-write sample of `cpu_usage_user`.
// The canonical key of a series is
//
//   metric_name { ',' tag_key '=' tag_value }
//
// with tags sorted by key and every component escaped so that the key is unambiguous: a backslash,
// comma, equals sign or space inside a component is written as a backslash followed by the byte.
// Two series are the same series exactly when their canonical keys are byte-equal.
//
// Keys written before series were label sets (`measurement{,tag=value} field`, with an unescaped
// space before the field) still parse, as the name `<measurement>_<field>`; SeriesIndex
// canonicalizes them when it loads them.
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

// Writes the canonical key of the line-protocol series (measurement, tags, field), whose metric
// name is `<measurement>_<field>`, to `*out` (replacing its contents; the string's capacity is
// reused, so a caller that keeps one string allocates only while keys grow).
// REQUIRES: `tags_sorted_unescaped` is sorted by key with no duplicate keys; components unescaped.
void BuildSeriesKey(std::string_view measurement, std::span<const TagView> tags_sorted_unescaped,
                    std::string_view field, std::string* out);

// Writes the canonical key of the series (metric name, tags). Same requirements.
void BuildLabelSetKey(std::string_view metric_name, std::span<const TagView> tags_sorted_unescaped,
                      std::string* out);

struct SeriesKeyParts {
  std::string name;                                       // the metric name, unescaped
  std::vector<std::pair<std::string, std::string>> tags;  // unescaped, in key order
  bool legacy = false;  // the key has the older `measurement,tags field` form
};

// Splits a canonical key (or a legacy one) back into its unescaped parts. InvalidArgument for a
// malformed key (dangling escape, empty name or field, tag without '=', bytes after the key).
Status ParseSeriesKey(std::string_view key, SeriesKeyParts* out);

}  // namespace ingot
