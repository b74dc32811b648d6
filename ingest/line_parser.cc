#include "ingest/line_parser.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>

namespace ingot::ingest {
namespace {

// Byte classes. A token scan runs over bytes whose class has none of the token's stop bits, so
// the common bytes (letters, digits, '-', '.', '_') cost one table lookup each.
constexpr std::uint8_t kStopMeasurement = 1;  // ',' ' ' '\\' control bytes, >= 0x80
constexpr std::uint8_t kStopKey = 2;          // tag keys/values, field keys: also '='
constexpr std::uint8_t kStopValue = 4;        // unquoted field value: ',' ' ' '\r' '\n'
constexpr std::uint8_t kStopString = 8;       // quoted string: '"' '\\' >= 0x80
constexpr std::uint8_t kControl = 16;         // 0..31 and 127: not allowed in names or comments

constexpr std::array<std::uint8_t, 256> MakeClassTable() {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    std::uint8_t v = 0;
    const bool control = c < 32 || c == 127;
    const bool high = c >= 0x80;
    if (control) v |= kControl;
    if (control || high || c == ',' || c == ' ' || c == '\\') v |= kStopMeasurement | kStopKey;
    if (c == '=') v |= kStopKey;
    if (c == ',' || c == ' ' || c == '\r' || c == '\n') v |= kStopValue;
    if (c == '"' || c == '\\' || high) v |= kStopString;
    t[static_cast<std::size_t>(c)] = v;
  }
  return t;
}
constexpr std::array<std::uint8_t, 256> kClass = MakeClassTable();

inline std::uint8_t ClassOf(char c) noexcept { return kClass[static_cast<unsigned char>(c)]; }

// Strict UTF-8 check (no overlong forms, no surrogates, nothing past U+10FFFF), as the reference
// applies to names and string values. Only called for tokens holding a byte >= 0x80.
bool ValidUtf8(const char* p, const char* end) noexcept {
  while (p < end) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x80) {
      ++p;
      continue;
    }
    int len;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (end - p < len) return false;
    const auto c1 = static_cast<unsigned char>(p[1]);
    if (c1 < lo || c1 > hi) return false;
    for (int k = 2; k < len; ++k) {
      const auto ck = static_cast<unsigned char>(p[k]);
      if (ck < 0x80 || ck > 0xBF) return false;
    }
    p += len;
  }
  return true;
}

inline bool IsMeasurementEscape(char c) noexcept { return c == ',' || c == ' '; }
inline bool IsKeyEscape(char c) noexcept { return c == ',' || c == '=' || c == ' '; }
inline bool IsStringEscape(char c) noexcept {
  return c == '\\' || c == '"' || c == 'n' || c == 'r' || c == 't';
}

// Advances `p` over a measurement, key or tag value token: bytes outside `stop`, backslash
// escapes and non-ASCII bytes. A backslash before a byte that is not an escape there is a
// literal backslash. Sets *high when a byte >= 0x80 was seen (the token then needs a UTF-8
// check).
template <std::uint8_t kStop, bool (*kIsEscape)(char)>
inline const char* ScanName(const char* p, const char* end, bool* high) noexcept {
  for (;;) {
    while (p < end && (ClassOf(*p) & kStop) == 0) ++p;
    if (p == end) return p;
    const char c = *p;
    if (c == '\\') {
      p += (p + 1 < end && kIsEscape(p[1])) ? 2 : 1;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      *high = true;
      ++p;
    } else {
      return p;
    }
  }
}

inline bool IsDigit(char c) noexcept { return static_cast<unsigned>(c - '0') < 10; }

constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// Fast path for the common "[-]digits[.digits]" spelling. Exact: when the digits form an
// integer m <= 2^53 and there are k <= 22 decimals, m and 10^k are both exact doubles and IEEE
// division rounds m / 10^k correctly. Returns false when the spelling is not of that form.
inline bool ParseShortDecimal(const char* p, const char* end, double* out) noexcept {
  bool negative = false;
  if (p < end && *p == '-') {
    negative = true;
    ++p;
  }
  std::uint64_t mantissa = 0;
  int digits = 0;
  int decimals = 0;
  bool dot = false;
  for (; p < end; ++p) {
    const char c = *p;
    if (IsDigit(c)) {
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
      ++digits;
      decimals += dot ? 1 : 0;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      return false;
    }
  }
  if (digits == 0 || digits > 19 || decimals > 22) return false;
  if (mantissa > (std::uint64_t{1} << 53)) return false;
  double v = static_cast<double>(mantissa);
  if (decimals != 0) v /= kPow10[decimals];
  *out = negative ? -v : v;
  return true;
}

// Go's rule for '_' in numbers: only between digits, or between a base prefix and a digit.
bool UnderscoresOk(std::string_view s) noexcept {
  char saw = '^';
  std::size_t i = 0;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0') {
    const char b = static_cast<char>(s[1] | 0x20);
    if (b == 'b' || b == 'o' || b == 'x') {
      i = 2;
      saw = '0';
      hex = b == 'x';
    }
  }
  for (; i < s.size(); ++i) {
    const char c = s[i];
    const char lower = static_cast<char>(c | 0x20);
    if (IsDigit(c) || (hex && lower >= 'a' && lower <= 'f')) {
      saw = '0';
      continue;
    }
    if (c == '_') {
      if (saw != '0') return false;
      saw = '_';
      continue;
    }
    if (saw == '_') return false;
    saw = '!';
  }
  return saw != '_';
}

// For a decimal spelling that std::from_chars found out of range: true when its magnitude is
// huge (overflow), false when tiny (underflow).
bool DecimalOverflows(std::string_view s) noexcept {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  long leading_zeros_after_dot = 0;
  long int_digits = 0;
  bool seen_nonzero = false;
  bool dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      dot = true;
      continue;
    }
    if (!IsDigit(c)) break;
    if (!dot) {
      if (c != '0' || seen_nonzero) {
        seen_nonzero = true;
        ++int_digits;
      }
    } else if (!seen_nonzero) {
      if (c == '0') {
        ++leading_zeros_after_dot;
      } else {
        seen_nonzero = true;
      }
    }
  }
  long exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    for (; i < s.size() && IsDigit(s[i]); ++i) {
      if (exponent < 100000) exponent = exponent * 10 + (s[i] - '0');
    }
    if (negative) exponent = -exponent;
  }
  const long e10 =
      int_digits > 0 ? int_digits - 1 + exponent : -(leading_zeros_after_dot + 1) + exponent;
  return e10 >= 0;
}

// Floor of ts_ns to a multiple of unit_ns.
std::int64_t TruncateToUnit(std::int64_t ts_ns, std::int64_t unit_ns) noexcept {
  if (unit_ns == 1) return ts_ns;
  std::int64_t q = ts_ns / unit_ns;
  if (ts_ns % unit_ns < 0) --q;
  std::int64_t r;
  if (__builtin_mul_overflow(q, unit_ns, &r)) return (q + 1) * unit_ns;
  return r;
}

inline bool ParseBool(std::string_view s, bool* out) noexcept {
  switch (s.size()) {
    case 1:
      if (s[0] == 't' || s[0] == 'T') {
        *out = true;
        return true;
      }
      if (s[0] == 'f' || s[0] == 'F') {
        *out = false;
        return true;
      }
      return false;
    case 4:
      if (s == "true" || s == "True" || s == "TRUE") {
        *out = true;
        return true;
      }
      return false;
    case 5:
      if (s == "false" || s == "False" || s == "FALSE") {
        *out = false;
        return true;
      }
      return false;
    default:
      return false;
  }
}

}  // namespace

bool ParsePrecision(std::string_view name, Precision* out) noexcept {
  if (name == "ns" || name == "n") {
    *out = Precision::kNanoseconds;
  } else if (name == "us" || name == "u") {
    *out = Precision::kMicroseconds;
  } else if (name == "ms") {
    *out = Precision::kMilliseconds;
  } else if (name == "s") {
    *out = Precision::kSeconds;
  } else if (name == "m") {
    *out = Precision::kMinutes;
  } else if (name == "h") {
    *out = Precision::kHours;
  } else {
    return false;
  }
  return true;
}

std::string_view PrecisionName(Precision precision) noexcept {
  switch (precision) {
    case Precision::kNanoseconds:
      return "ns";
    case Precision::kMicroseconds:
      return "us";
    case Precision::kMilliseconds:
      return "ms";
    case Precision::kSeconds:
      return "s";
    case Precision::kMinutes:
      return "m";
    case Precision::kHours:
      return "h";
  }
  return "?";
}

std::int64_t PrecisionNanos(Precision precision) noexcept {
  switch (precision) {
    case Precision::kNanoseconds:
      return 1;
    case Precision::kMicroseconds:
      return 1000;
    case Precision::kMilliseconds:
      return 1000000;
    case Precision::kSeconds:
      return 1000000000;
    case Precision::kMinutes:
      return 60LL * 1000000000;
    case Precision::kHours:
      return 3600LL * 1000000000;
  }
  return 1;
}

std::string_view FieldTypeName(FieldType type) noexcept {
  switch (type) {
    case FieldType::kFloat:
      return "float";
    case FieldType::kInt:
      return "int";
    case FieldType::kUint:
      return "uint";
    case FieldType::kBool:
      return "bool";
    case FieldType::kString:
      return "string";
  }
  return "?";
}

bool ParseInt64(std::string_view text, std::int64_t* out) noexcept {
  const char* p = text.data();
  const char* end = p + text.size();
  bool negative = false;
  if (p < end && *p == '-') {
    negative = true;
    ++p;
  }
  if (p == end) return false;
  std::uint64_t magnitude = 0;
  for (; p < end; ++p) {
    if (!IsDigit(*p)) return false;
    if (__builtin_mul_overflow(magnitude, std::uint64_t{10}, &magnitude) ||
        __builtin_add_overflow(magnitude, static_cast<std::uint64_t>(*p - '0'), &magnitude)) {
      return false;
    }
  }
  constexpr std::uint64_t kMaxPositive = std::numeric_limits<std::int64_t>::max();
  if (negative) {
    if (magnitude > kMaxPositive + 1) return false;
    *out = static_cast<std::int64_t>(~magnitude + 1);
  } else {
    if (magnitude > kMaxPositive) return false;
    *out = static_cast<std::int64_t>(magnitude);
  }
  return true;
}

bool ParseUint64(std::string_view text, std::uint64_t* out) noexcept {
  if (text.empty()) return false;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (!IsDigit(c)) return false;
    if (__builtin_mul_overflow(v, std::uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<std::uint64_t>(c - '0'), &v)) {
      return false;
    }
  }
  *out = v;
  return true;
}

bool ParseFloatValue(std::string_view text, double* out, std::string* scratch) {
  if (ParseShortDecimal(text.data(), text.data() + text.size(), out)) return true;
  if (text.find('_') != std::string_view::npos) {
    if (!UnderscoresOk(text)) return false;
    scratch->clear();
    for (const char c : text) {
      if (c != '_') scratch->push_back(c);
    }
    text = *scratch;
  }
  const bool negative = !text.empty() && text[0] == '-';
  std::string_view body = negative ? text.substr(1) : text;
  double v = 0;
  if (body.size() > 2 && body[0] == '0' && (body[1] | 0x20) == 'x') {
    // Hexadecimal: Go requires the 'p' exponent; from_chars takes the digits without "0x".
    body.remove_prefix(2);
    const char first = static_cast<char>(body[0] | 0x20);
    if (!(IsDigit(body[0]) || (first >= 'a' && first <= 'f') || body[0] == '.')) return false;
    if (body.find_first_of("pP") == std::string_view::npos) return false;
    const auto r =
        std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::hex);
    if (r.ptr != body.data() + body.size()) return false;
    if (r.ec == std::errc::result_out_of_range) {
      // Out of range in hex: overflow unless the exponent is negative.
      const std::size_t pexp = body.find_first_of("pP");
      if (pexp + 1 < body.size() && body[pexp + 1] == '-') {
        v = 0;
      } else {
        return false;
      }
    } else if (r.ec != std::errc()) {
      return false;
    }
    if (negative) v = -v;
  } else {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ptr != text.data() + text.size()) return false;
    if (r.ec == std::errc::result_out_of_range) {
      if (DecimalOverflows(text)) return false;
      v = negative ? -0.0 : 0.0;
    } else if (r.ec != std::errc()) {
      return false;
    }
  }
  if (!std::isfinite(v)) return false;
  *out = v;
  return true;
}

std::string ParseError::Describe(std::string_view line, std::size_t max_excerpt_bytes) const {
  const std::size_t at = offset < line.size() ? offset : line.size();
  const std::size_t half = max_excerpt_bytes / 2;
  const std::size_t begin = at > half ? at - half : 0;
  const std::size_t stop = std::min(line.size(), begin + max_excerpt_bytes);
  std::string s(reason);
  s += " at byte ";
  s += std::to_string(offset);
  s += " near '";
  if (begin > 0) s += "...";
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = begin; i < stop; ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c < 32 || c == 127 || c == '\\' || c == '\'') {
      s += "\\x";
      s += kHex[c >> 4];
      s += kHex[c & 15];
    } else {
      s += static_cast<char>(c);
    }
  }
  if (stop < line.size()) s += "...";
  s += "'";
  return s;
}

LineParser::LineParser(Precision precision) : precision_(precision) {
  tags_.reserve(32);
  fields_.reserve(32);
  number_scratch_.reserve(64);
}

ParseResult LineParser::Parse(std::string_view line, std::int64_t default_ts_ns, ParsedLine* out,
                              ParseError* error) {
  const char* const begin = line.data();
  const char* p = begin;
  const char* end = begin + line.size();
  auto fail = [&](const char* at, std::string_view reason) {
    error->reason = reason;
    error->offset = static_cast<std::size_t>(at - begin);
    return ParseResult::kError;
  };

  if (end > p && end[-1] == '\r') --end;
  while (p < end && *p == ' ') ++p;
  if (p == end) return ParseResult::kSkip;
  if (*p == '#') {
    for (const char* q = p; q < end; ++q) {
      if (ClassOf(*q) & kControl) return fail(q, "invalid character in comment");
    }
    return ParseResult::kSkip;
  }

  // Measurement.
  bool high = false;
  const char* const measurement_begin = p;
  p = ScanName<kStopMeasurement, IsMeasurementEscape>(p, end, &high);
  if (p == measurement_begin) return fail(p, "invalid character at start of measurement");
  if (high && !ValidUtf8(measurement_begin, p)) {
    return fail(measurement_begin, "invalid UTF-8 in measurement");
  }
  out->measurement =
      std::string_view(measurement_begin, static_cast<std::size_t>(p - measurement_begin));

  // Tags.
  tags_.clear();
  if (p < end && *p == ',') {
    ++p;
    for (;;) {
      if (p == end) return fail(p, "expected tag key after comma, found end of line");
      if (*p == ' ' || *p == '\r' || *p == '\n') {
        return fail(p, "expected tag key after comma, found white space");
      }
      high = false;
      const char* const key_begin = p;
      p = ScanName<kStopKey, IsKeyEscape>(p, end, &high);
      if (p == key_begin) return fail(p, "expected tag key");
      if (p == end || *p != '=') return fail(p, "expected '=' after tag key");
      if (high && !ValidUtf8(key_begin, p)) return fail(key_begin, "invalid UTF-8 in tag key");
      const std::string_view key(key_begin, static_cast<std::size_t>(p - key_begin));
      ++p;
      high = false;
      const char* const value_begin = p;
      p = ScanName<kStopKey, IsKeyEscape>(p, end, &high);
      if (p == value_begin) return fail(p, "expected tag value");
      if (high && !ValidUtf8(value_begin, p))
        return fail(value_begin, "invalid UTF-8 in tag value");
      // Escaping is one-to-one on valid tokens, so equal keys are equal bytes.
      for (const Tag& t : tags_) {
        if (t.key == key) return fail(key_begin, "duplicate tag key");
      }
      if (tags_.size() == kMaxTags) return fail(key_begin, "too many tags (limit 256)");
      tags_.push_back(
          Tag{key, std::string_view(value_begin, static_cast<std::size_t>(p - value_begin))});
      if (p < end && *p == ',') {
        ++p;
        continue;
      }
      break;
    }
  }
  out->series_prefix =
      std::string_view(measurement_begin, static_cast<std::size_t>(p - measurement_begin));
  if (p == end) return fail(p, "missing fields");
  if (*p != ' ') return fail(p, "expected tag key or field");
  while (p < end && *p == ' ') ++p;

  // Fields.
  fields_.clear();
  for (;;) {
    high = false;
    const char* const key_begin = p;
    p = ScanName<kStopKey, IsKeyEscape>(p, end, &high);
    if (p == key_begin) {
      return fail(p, p == end ? "expected field key, found end of line"
                              : "invalid character at start of field key");
    }
    if (p == end) return fail(p, "expected '=' after field key, found end of line");
    if (*p != '=') return fail(p, "expected '=' after field key");
    if (high && !ValidUtf8(key_begin, p)) return fail(key_begin, "invalid UTF-8 in field key");
    if (fields_.size() == kMaxFields) return fail(key_begin, "too many fields (limit 1024)");
    Field& f = fields_.emplace_back();
    f.key = std::string_view(key_begin, static_cast<std::size_t>(p - key_begin));
    ++p;
    if (p == end) return fail(p, "expected field value, found end of line");
    const char* const value_begin = p;
    const char c = *p;
    if (c == '"') {
      ++p;
      high = false;
      for (;;) {
        while (p < end && (ClassOf(*p) & kStopString) == 0) ++p;
        if (p == end) return fail(value_begin, "unterminated string field value");
        if (*p == '"') break;
        if (*p == '\\') {
          p += (p + 1 < end && IsStringEscape(p[1])) ? 2 : 1;
        } else {
          high = true;
          ++p;
        }
      }
      if (high && !ValidUtf8(value_begin + 1, p)) {
        return fail(value_begin, "invalid UTF-8 in string field value");
      }
      f.text = std::string_view(value_begin + 1, static_cast<std::size_t>(p - value_begin - 1));
      f.type = FieldType::kString;
      ++p;
    } else {
      while (p < end && (ClassOf(*p) & kStopValue) == 0) ++p;
      const std::string_view text(value_begin, static_cast<std::size_t>(p - value_begin));
      if (c == 't' || c == 'T' || c == 'f' || c == 'F') {
        f.text = text;
        f.type = FieldType::kBool;
        if (!ParseBool(text, &f.bool_value)) return fail(value_begin, "invalid boolean value");
      } else if (IsDigit(c) || c == '-' || c == '.') {
        const char suffix = text.back();
        if (suffix == 'i') {
          f.text = text.substr(0, text.size() - 1);
          f.type = FieldType::kInt;
          if (!ParseInt64(f.text, &f.int_value)) {
            return fail(value_begin, "invalid or out of range integer value");
          }
        } else if (suffix == 'u') {
          f.text = text.substr(0, text.size() - 1);
          f.type = FieldType::kUint;
          if (!ParseUint64(f.text, &f.uint_value)) {
            return fail(value_begin, "invalid or out of range unsigned value");
          }
        } else {
          f.text = text;
          f.type = FieldType::kFloat;
          if (!ParseFloatValue(text, &f.float_value, &number_scratch_)) {
            return fail(value_begin, "invalid or out of range float value");
          }
        }
      } else {
        return fail(value_begin, "field value has unrecognized type");
      }
    }
    if (p == end) break;
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p != ' ') return fail(p, "unexpected character after field value");
    while (p < end && *p == ' ') ++p;
    break;
  }
  out->tags = std::span<const Tag>(tags_.data(), tags_.size());
  out->fields = std::span<const Field>(fields_.data(), fields_.size());

  // Timestamp.
  if (p == end) {
    out->has_timestamp = false;
    out->ts_ns = TruncateToUnit(default_ts_ns, PrecisionNanos(precision_));
    return ParseResult::kPoint;
  }
  const char* const ts_begin = p;
  while (p < end && (IsDigit(*p) || *p == '-')) ++p;
  const char* const ts_end = p;
  if (ts_begin == ts_end || (p < end && *p != ' ')) return fail(ts_begin, "invalid timestamp");
  while (p < end && *p == ' ') ++p;
  if (p != end) return fail(p, "unexpected text after timestamp");
  std::int64_t ts;
  if (!ParseInt64(std::string_view(ts_begin, static_cast<std::size_t>(ts_end - ts_begin)), &ts)) {
    return fail(ts_begin, "invalid or out of range timestamp");
  }
  if (__builtin_mul_overflow(ts, PrecisionNanos(precision_), &out->ts_ns)) {
    return fail(ts_begin, "timestamp out of range for the precision");
  }
  out->has_timestamp = true;
  return ParseResult::kPoint;
}

namespace {

// Slow path of NextLine for entries holding a '"': follows the grammar far enough to know which
// quotes open a string field value. Returns the index of the terminating '\n' or buffer.size().
std::size_t FindEntryEnd(std::string_view b, std::size_t i) noexcept {
  const std::size_t n = b.size();
  auto tail = [&](std::size_t from) {
    const std::size_t nl = b.find('\n', from);
    return nl == std::string_view::npos ? n : nl;
  };
  while (i < n && b[i] == ' ') ++i;
  if (i < n && b[i] == '#') return tail(i);
  // Measurement and tags: up to the first unescaped space.
  for (;;) {
    if (i >= n) return n;
    const char c = b[i];
    if (c == '\n') return i;
    if (c == '\\') {
      i += (i + 1 < n && IsKeyEscape(b[i + 1])) ? 2 : 1;
      continue;
    }
    if (c == ' ') break;
    ++i;
  }
  for (;;) {
    while (i < n && b[i] == ' ') ++i;
    // Field key.
    for (;;) {
      if (i >= n) return n;
      const char c = b[i];
      if (c == '\n') return i;
      if (c == '\\') {
        i += (i + 1 < n && IsKeyEscape(b[i + 1])) ? 2 : 1;
        continue;
      }
      if (c == '=') {
        ++i;
        break;
      }
      if (c == ' ' || c == ',') return tail(i);
      ++i;
    }
    // Field value.
    if (i < n && b[i] == '"') {
      ++i;
      for (;;) {
        if (i >= n) return n;
        const char c = b[i];
        if (c == '\\') {
          i += 2;  // the escaped byte is never a closing quote
          continue;
        }
        ++i;
        if (c == '"') break;
      }
    } else {
      while (i < n && b[i] != ',' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r') ++i;
    }
    if (i >= n) return n;
    if (b[i] == ',') {
      ++i;
      continue;
    }
    return tail(i);
  }
}

}  // namespace

bool NextLine(std::string_view buffer, std::size_t* pos, std::string_view* line,
              bool end_of_input) noexcept {
  const std::size_t start = *pos;
  const std::size_t n = buffer.size();
  if (start >= n) return false;
  const char* const b = buffer.data();
  const void* nl = std::memchr(b + start, '\n', n - start);
  std::size_t stop = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - b) : n;
  if (std::memchr(b + start, '"', stop - start) != nullptr) stop = FindEntryEnd(buffer, start);
  if (stop >= n) {
    if (!end_of_input) return false;
    *line = buffer.substr(start);
    *pos = n;
    return true;
  }
  *line = buffer.substr(start, stop - start);
  *pos = stop + 1;
  return true;
}

}  // namespace ingot::ingest
