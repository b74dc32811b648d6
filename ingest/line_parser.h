// LineParser: a zero-copy parser for InfluxDB line protocol.
//
//   measurement[,tag_key=tag_value...] field_key=field_value[,field_key=field_value...] [timestamp]
//
// The parser works over the caller's buffer: measurement, tag and field keys, and string values
// come back as views into the input, still escaped (see ingest/line_protocol_escape.h to unescape
// them). Numbers and booleans come back typed. The accepted language is the one of InfluxData's
// reference decoder (github.com/influxdata/line-protocol/v2); docs/line-protocol.md lists the
// rules and the decisions taken where implementations disagree, and
// tests/ingest/lp_conformance_test.cc checks them against the reference's corpus.
//
// Typical use on a connection's read buffer:
//
//   LineParser parser(Precision::kNanoseconds);
//   std::size_t pos = 0;
//   std::string_view line;
//   while (NextLine(buffer, &pos, &line, /*end_of_input=*/false)) {
//     ParsedLine point;
//     ParseError error;
//     switch (parser.Parse(line, receive_ts_ns, &point, &error)) { ... }
//   }
//   // buffer[pos..] is an incomplete line: keep it and read more.
//
// Thread safety: a LineParser is used by one thread at a time (one per connection or per I/O
// thread). The free functions are reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ingot::ingest {

// Unit of the timestamps in the input. Timestamps are converted to nanoseconds.
enum class Precision : unsigned char {
  kNanoseconds,
  kMicroseconds,
  kMilliseconds,
  kSeconds,
  kMinutes,  // InfluxDB 1.x HTTP only
  kHours,    // InfluxDB 1.x HTTP only
};

// Parses "ns", "us", "ms", "s" (and InfluxDB 1.x's "n" and "u"). Returns false for anything else.
bool ParsePrecision(std::string_view name, Precision* out) noexcept;
std::string_view PrecisionName(Precision precision) noexcept;
// Nanoseconds per unit: 1, 1000, 1000000 or 1000000000.
std::int64_t PrecisionNanos(Precision precision) noexcept;

enum class FieldType : unsigned char {
  kFloat,   // 1.5, -2, 1e9 (no suffix)
  kInt,     // 42i: int64
  kUint,    // 42u: uint64
  kBool,    // t T true True TRUE f F false False FALSE
  kString,  // "quoted"
};

std::string_view FieldTypeName(
    FieldType type) noexcept;  // "float", "int", "uint", "bool", "string"

struct Tag {
  std::string_view key;    // escaped as in the input (EscapeContext::kTagKey)
  std::string_view value;  // escaped as in the input (EscapeContext::kTagValue)
};

struct Field {
  std::string_view key;  // escaped as in the input (EscapeContext::kFieldKey)
  // The value as written: a number without its i/u suffix, a boolean spelling, or a string's
  // contents without the quotes and still escaped (EscapeContext::kStringValue).
  std::string_view text;
  FieldType type = FieldType::kFloat;
  union {
    double float_value;        // kFloat
    std::int64_t int_value;    // kInt
    std::uint64_t uint_value;  // kUint
    bool bool_value;           // kBool
  };

  Field() : uint_value(0) {}
};

// One parsed entry. All views point into the line passed to LineParser::Parse and the spans into
// the parser's own arrays: both stay valid until the next Parse call on the same parser or until
// the input buffer changes, whichever comes first.
struct ParsedLine {
  std::string_view measurement;  // escaped (EscapeContext::kMeasurement), never empty
  std::span<const Tag> tags;     // in input order; keys are unique
  // In input order, at least one. A key may repeat; InfluxDB keeps the last value.
  std::span<const Field> fields;
  // The measurement and tags exactly as written ("cpu,host=a,region=eu"): a cheap key for a
  // per-connection series cache. Two lines with equal prefixes name the same series; lines with
  // different prefixes may still (tag order, escaping) and need the canonical key.
  std::string_view series_prefix;
  std::int64_t ts_ns = 0;
  bool has_timestamp = false;  // false: ts_ns is the default time truncated to the precision
};

// Why a line was rejected. `reason` is a static string; `offset` is the byte offset in the line
// where the problem was found.
struct ParseError {
  std::string_view reason;
  std::size_t offset = 0;

  // "reason at byte N near '...excerpt...'", with control bytes shown as \xNN. Allocates: for
  // (rate-limited) logging only.
  std::string Describe(std::string_view line, std::size_t max_excerpt_bytes = 40) const;
};

enum class ParseResult : unsigned char {
  kPoint,  // *out holds a point
  kSkip,   // blank line or comment
  kError,  // *error says why; the line must be dropped
};

class LineParser {
 public:
  // Limits that bound the parser's memory; a line past one is an error.
  static constexpr std::size_t kMaxTags = 256;
  static constexpr std::size_t kMaxFields = 1024;

  explicit LineParser(Precision precision = Precision::kNanoseconds);

  LineParser(const LineParser&) = delete;
  LineParser& operator=(const LineParser&) = delete;

  Precision precision() const noexcept { return precision_; }
  void set_precision(Precision precision) noexcept { precision_ = precision; }

  // Parses one entry: `line` without its terminating '\n' (one trailing '\r' is tolerated). A
  // quoted string value may contain raw newlines, so an entry can span several physical lines;
  // NextLine splits a buffer accordingly. A line without a timestamp gets `default_ts_ns`
  // truncated to the precision. Does not allocate once the parser has seen its largest line.
  ParseResult Parse(std::string_view line, std::int64_t default_ts_ns, ParsedLine* out,
                    ParseError* error);

 private:
  Precision precision_;
  std::vector<Tag> tags_;
  std::vector<Field> fields_;
  // Holds a number with its '_' separators removed (a rare spelling), reused.
  std::string number_scratch_;
};

// Finds the next entry in `buffer` starting at `*pos`. On success sets `*line` to the entry
// without its "\n" or "\r\n", advances `*pos` past the terminator and returns true. An entry ends
// at the first newline that is not inside a quoted string field value. When no terminator
// follows, returns the rest as the last entry if `end_of_input` (an HTTP body), and otherwise
// returns false leaving `*pos` at the start of the incomplete entry (a TCP stream: read more).
bool NextLine(std::string_view buffer, std::size_t* pos, std::string_view* line,
              bool end_of_input) noexcept;

// Parses a float the way the reference does (Go's strconv.ParseFloat): decimal with optional
// exponent, '_' digit separators, hexadecimal with a 'p' exponent. Infinity, NaN and values that
// overflow are errors; values that underflow become zero. Exact: rounds to nearest.
bool ParseFloatValue(std::string_view text, double* out, std::string* scratch);

// Parses a decimal int64/uint64 (optional '-' for int64 only). Overflow is an error.
bool ParseInt64(std::string_view text, std::int64_t* out) noexcept;
bool ParseUint64(std::string_view text, std::uint64_t* out) noexcept;

}  // namespace ingot::ingest
