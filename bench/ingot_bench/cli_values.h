// Parsing of the tool's flag values: targets, durations, times, comma lists.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/status.h"

namespace ingot::bench {

struct Target {
  enum class Kind { kNull, kTcp, kHttp };
  Kind kind = Kind::kNull;
  std::string host;
  uint16_t port = 0;
  std::string path;  // for kHttp: path and query, "/" when absent
  std::string text;  // as given
};

// "null", "tcp://host:port", "http://host:port[/path[?query]]". IPv6 hosts go in brackets.
Status ParseTarget(std::string_view text, Target* target);

// "250ms", "10s", "5m", "2h", "1.5s" or a plain number of seconds.
Status ParseDurationNs(std::string_view text, int64_t* ns);

// RFC 3339 ("2024-01-01T00:00:00Z", "2024-01-01T02:00:00.5+02:00") or integer nanoseconds.
Status ParseTimeNs(std::string_view text, int64_t* ns);

// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string> SplitList(std::string_view text);

// Seconds since the epoch with millisecond decimals, as Prometheus-style APIs take them.
std::string FormatSeconds(int64_t ns);

}  // namespace ingot::bench
