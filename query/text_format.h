// Text primitives of the query responses and parameters: numbers, JSON strings, timestamps and
// durations, written into caller-owned strings (capacity reused, no allocation once warmed up).
//
// Numbers are written as Prometheus writes them: the shortest text that parses back to the same
// double (std::to_chars), in fixed notation for 1e-6 <= |v| < 1e21 and exponent notation
// otherwise, with NaN, +Inf and -Inf spelled "NaN", "+Inf", "-Inf".
//
// Thread safety: free functions over caller buffers; reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/json_string.h"
#include "config/status.h"

namespace ingot {

// Room a Write* function below needs at `p` (it may store scratch bytes past the text it returns).
inline constexpr std::size_t kMaxDoubleChars = 64;
inline constexpr std::size_t kMaxIntChars = 32;

// Raw writers for bulk output: write at `p` and return the end of what was written.
char* WriteDouble(double v, char* p);
// The same text, faster for runs of values with the same number of decimals: `*decimals_hint`
// (start with 0) carries that number from one call to the next.
char* WriteDouble(double v, char* p, int* decimals_hint);
char* WriteInt(std::int64_t v, char* p);
char* WriteMillis(std::int64_t ts_ns, char* p);  // needs kMaxIntChars + 16 bytes

// Appends the shortest round-trip text of `v` (see above).
void AppendDouble(double v, std::string* out);
void AppendInt(std::int64_t v, std::string* out);
// Milliseconds since the epoch: an integer when `ts_ns` is a whole millisecond, else with the
// exact fraction ("1700000000123.456").
void AppendMillis(std::int64_t ts_ns, std::string* out);
// Seconds since the epoch with the exact fraction, trailing zeros trimmed ("1700000000.5").
void AppendSeconds(std::int64_t ts_ns, std::string* out);

// Times and durations a client sends are bounded by 2^62 ns (year 1823 to 2116, 146 years), so
// that a time plus or minus a duration always fits in 64 bits.
inline constexpr std::int64_t kMaxTimeMagnitudeNs = std::int64_t{1} << 62;

// A time parameter: Unix seconds with an optional fraction ("1700000000.123"), or RFC 3339
// ("2023-11-14T22:13:20.123Z", "...+02:00"), within ±kMaxTimeMagnitudeNs. InvalidArgument
// otherwise.
Status ParseTimeNs(std::string_view text, std::int64_t* ns);
// A duration parameter: seconds with an optional fraction ("30", "1.5") or a Prometheus duration
// ("30s", "5m", "1h30m", "250ms", "2d", "1w", "1y"), below kMaxTimeMagnitudeNs. Must be > 0
// unless `allow_zero`.
Status ParseDurationNs(std::string_view text, std::int64_t* ns, bool allow_zero = false);
// A duration written the Prometheus way ("1h30m", "250ms", "0s").
std::string FormatDuration(std::int64_t ns);

}  // namespace ingot
