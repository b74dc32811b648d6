// Selector: a Prometheus series selector such as
//
//   cpu_usage_idle{hostname="host_1",region=~"us-.*"}      {__name__=~"cpu_.*"}
//
// Matchers are `=`, `!=`, `=~`, `!~`; regular expressions use RE2 syntax and are anchored at both
// ends (they must match the whole label value, as in Prometheus), with `.` matching newlines.
// Values are quoted with "..." or '...' (Go escapes: \n \t \\ \" \' \xHH \uHHHH \UHHHHHHHH and
// octal \NNN) or with `...` (raw). A label name may itself be quoted to allow any characters, and
// a lone quoted string inside the braces names the metric (`{"cpu.usage"}`), as in Prometheus 3.
// A label a series does not have has the value "", so `region=""` selects series without it.
//
// Thread safety: a parsed Selector is immutable and may be shared between threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <re2/re2.h>

#include "config/status.h"

namespace ingot {

enum class MatchOp { kEqual, kNotEqual, kRegexMatch, kRegexNoMatch };

struct LabelMatcher {
  std::string name;
  MatchOp op = MatchOp::kEqual;
  std::string value;
  std::shared_ptr<const re2::RE2> regex;  // set for the regex kinds

  bool Matches(std::string_view label_value) const;
};

struct Selector {
  // The metric name given before the braces (or as a lone quoted string) becomes a
  // `__name__` matcher like any other.
  std::vector<LabelMatcher> matchers;
};

inline constexpr std::string_view kMetricNameLabel = "__name__";

// Parses a whole selector. InvalidArgument names the problem and its byte offset; a selector
// whose every matcher matches the empty string (`{region=~".*"}`) is rejected as in Prometheus.
Status ParseSelector(std::string_view text, Selector* out);

// Parses a selector starting at `*pos` of `text` and advances `*pos` past it; used by the
// expression parser. Offsets in errors are relative to `text`.
Status ParseSelectorAt(std::string_view text, std::size_t* pos, Selector* out);

// Builds a matcher (compiling the regex for the regex kinds). InvalidArgument for a bad regex.
Status MakeMatcher(std::string name, MatchOp op, std::string value, LabelMatcher* out);

// Parses a quoted string literal at `*pos` ("...", '...' or `...`) into `*out`.
Status ParseStringLiteral(std::string_view text, std::size_t* pos, std::string* out);

}  // namespace ingot
