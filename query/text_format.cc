#include "query/text_format.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace ingot {
namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr std::int64_t kNsPerMilli = 1'000'000;

// Two ASCII digits per entry: "00", "01", ... "99".
constexpr char kDigitPairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// Writes the decimal digits of `v` ending at `end`; returns the first digit's position.
char* WriteDigitsBackwards(std::uint64_t v, char* end) {
  while (v >= 100) {
    const auto pair = static_cast<unsigned>(v % 100);
    v /= 100;
    end -= 2;
    std::memcpy(end, kDigitPairs + 2 * pair, 2);
  }
  if (v >= 10) {
    end -= 2;
    std::memcpy(end, kDigitPairs + 2 * v, 2);
  } else {
    *--end = static_cast<char>('0' + v);
  }
  return end;
}

int CountDigits(std::uint64_t v) {
  int n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

// Digits go straight to their final place (counting them first): building them in a local
// buffer and copying it out stalls on store forwarding.
// Writes exactly 8 digits of v < 10^8 as four independent digit pairs.
void WriteEightDigits(std::uint64_t v, char* p) {
  const auto hi = static_cast<unsigned>(v / 10000);
  const auto lo = static_cast<unsigned>(v % 10000);
  std::memcpy(p, kDigitPairs + 2 * (hi / 100), 2);
  std::memcpy(p + 2, kDigitPairs + 2 * (hi % 100), 2);
  std::memcpy(p + 4, kDigitPairs + 2 * (lo / 100), 2);
  std::memcpy(p + 6, kDigitPairs + 2 * (lo % 100), 2);
}

char* WriteUnsigned(std::uint64_t v, char* p) {
  // Long numbers (millisecond timestamps) are split so that the low 8 digits do not wait on
  // a chain of divisions.
  if (v >= 100'000'000) {
    p = WriteUnsigned(v / 100'000'000, p);
    WriteEightDigits(v % 100'000'000, p);
    return p + 8;
  }
  char* end = p + CountDigits(v);
  WriteDigitsBackwards(v, end);
  return end;
}

// `whole` then '.' then `frac` as exactly `frac_digits` digits, trailing zeros trimmed.
char* WriteFixedPoint(bool negative, std::uint64_t whole, std::uint64_t frac, int frac_digits,
                      char* p) {
  if (negative) *p++ = '-';
  p = WriteUnsigned(whole, p);
  if (frac == 0) return p;
  while (frac % 10 == 0) {
    frac /= 10;
    --frac_digits;
  }
  *p++ = '.';
  for (int i = frac_digits - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  return p + frac_digits;
}

constexpr double kPow10[] = {1.0, 10.0, 100.0, 1000.0, 10000.0};

}  // namespace

char* WriteInt(std::int64_t v, char* p) {
  if (v < 0) {
    *p++ = '-';
    return WriteUnsigned(~static_cast<std::uint64_t>(v) + 1, p);
  }
  return WriteUnsigned(static_cast<std::uint64_t>(v), p);
}

char* WriteDouble(double v, char* p) {
  int decimals_hint = 0;
  return WriteDouble(v, p, &decimals_hint);
}

char* WriteDouble(double v, char* p, int* decimals_hint) {
  if (std::isnan(v)) {
    std::memcpy(p, "NaN", 3);
    return p + 3;
  }
  if (std::isinf(v)) {
    std::memcpy(p, v > 0 ? "+Inf" : "-Inf", 4);
    return p + 4;
  }
  const double a = std::fabs(v);
  // Fast path for the common case of measured values: integers and numbers with a few decimals.
  // n / 10^k (both exact doubles) is correctly rounded, so equality with v proves that the
  // decimal text of n with k decimals parses back to v; the smallest such k is the shortest text.
  if (a >= 1e-4 && a < 1e14) {
    const auto whole = static_cast<std::int64_t>(v);
    if (static_cast<double>(whole) == v) return WriteInt(whole, p);
    // Values of one series usually carry the same number of decimals: try the last count
    // first. A larger count than needed is still right: the decimal with k digits that maps to
    // v is unique (see below), so it is the shorter one padded with zeros, which are trimmed.
    if (const int k = *decimals_hint; k >= 1 && k <= 4) {
      const double scaled = v * kPow10[k];
      const auto n = static_cast<std::int64_t>(scaled + (scaled < 0 ? -0.5 : 0.5));
      if (n < (std::int64_t{1} << 52) && n > -(std::int64_t{1} << 52) &&
          static_cast<double>(n) / kPow10[k] == v) {
        const std::uint64_t un = n < 0 ? ~static_cast<std::uint64_t>(n) + 1
                                       : static_cast<std::uint64_t>(n);
        const auto scale = static_cast<std::uint64_t>(kPow10[k]);
        return WriteFixedPoint(n < 0, un / scale, un % scale, k, p);
      }
    }
    for (int k = 1; k <= 4; ++k) {
      // Any rounding will do: the candidate is verified below.
      const double scaled = v * kPow10[k];
      const auto n = static_cast<std::int64_t>(scaled + (scaled < 0 ? -0.5 : 0.5));
      // Below 2^52 the decimals 10^-k apart are wider apart than v's ulp, so at most one of
      // them maps to v: the one found is also the one closest to v, as to_chars picks.
      if (n >= (std::int64_t{1} << 52) || n <= -(std::int64_t{1} << 52)) break;
      if (static_cast<double>(n) / kPow10[k] == v) {
        *decimals_hint = k;
        const std::uint64_t un = n < 0 ? ~static_cast<std::uint64_t>(n) + 1
                                       : static_cast<std::uint64_t>(n);
        const auto scale = static_cast<std::uint64_t>(kPow10[k]);
        return WriteFixedPoint(n < 0, un / scale, un % scale, k, p);
      }
    }
  }
  const bool fixed = (a >= 1e-6 && a < 1e21) || a == 0;
  const auto result = std::to_chars(p, p + kMaxDoubleChars, v,
                                    fixed ? std::chars_format::fixed
                                          : std::chars_format::scientific);
  return result.ptr;
}

char* WriteMillis(std::int64_t ts_ns, char* p) {
  const bool negative = ts_ns < 0;
  const std::uint64_t u =
      negative ? ~static_cast<std::uint64_t>(ts_ns) + 1 : static_cast<std::uint64_t>(ts_ns);
  return WriteFixedPoint(negative, u / kNsPerMilli, u % kNsPerMilli, 6, p);
}

void AppendInt(std::int64_t v, std::string* out) {
  char buf[kMaxIntChars + 8];
  out->append(buf, WriteInt(v, buf));
}

void AppendDouble(double v, std::string* out) {
  char buf[kMaxDoubleChars];
  out->append(buf, WriteDouble(v, buf));
}

void AppendMillis(std::int64_t ts_ns, std::string* out) {
  char buf[kMaxIntChars + 8];
  out->append(buf, WriteMillis(ts_ns, buf));
}

void AppendSeconds(std::int64_t ts_ns, std::string* out) {
  const bool negative = ts_ns < 0;
  const std::uint64_t u =
      negative ? ~static_cast<std::uint64_t>(ts_ns) + 1 : static_cast<std::uint64_t>(ts_ns);
  char buf[kMaxIntChars + 24];
  out->append(buf, WriteFixedPoint(negative, u / kNsPerSecond, u % kNsPerSecond, 9, buf));
}

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses "[-+]digits[.digits]" scaled by `unit_ns` exactly (fraction digits beyond the unit's
// resolution are truncated). False when the text is not of that form or overflows.
bool ParseScaledDecimal(std::string_view text, std::int64_t unit_ns, std::int64_t* ns) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  std::uint64_t whole = 0;
  std::size_t digits = 0;
  while (i < text.size() && IsDigit(text[i])) {
    whole = whole * 10 + static_cast<std::uint64_t>(text[i++] - '0');
    if (++digits > 18) return false;
  }
  std::uint64_t frac_ns = 0;
  std::size_t frac_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::uint64_t scale = static_cast<std::uint64_t>(unit_ns);
    while (i < text.size() && IsDigit(text[i])) {
      scale /= 10;
      frac_ns += static_cast<std::uint64_t>(text[i++] - '0') * scale;
      ++frac_digits;
    }
  }
  if (i != text.size() || (digits == 0 && frac_digits == 0)) return false;
  const auto unit = static_cast<std::uint64_t>(unit_ns);
  if (whole > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / unit) {
    return false;
  }
  const std::uint64_t total = whole * unit + frac_ns;
  if (total > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
  *ns = negative ? -static_cast<std::int64_t>(total) : static_cast<std::int64_t>(total);
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date.
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool ReadFixedDigits(std::string_view text, std::size_t* pos, int count, int* value) {
  if (*pos + static_cast<std::size_t>(count) > text.size()) return false;
  int v = 0;
  for (int k = 0; k < count; ++k) {
    const char c = text[*pos + static_cast<std::size_t>(k)];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *pos += static_cast<std::size_t>(count);
  *value = v;
  return true;
}

bool Expect(std::string_view text, std::size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}

bool ParseRfc3339(std::string_view text, std::int64_t* ns) {
  std::size_t pos = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadFixedDigits(text, &pos, 4, &year) || !Expect(text, &pos, '-') ||
      !ReadFixedDigits(text, &pos, 2, &month) || !Expect(text, &pos, '-') ||
      !ReadFixedDigits(text, &pos, 2, &day)) {
    return false;
  }
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) {
    return false;
  }
  ++pos;
  if (!ReadFixedDigits(text, &pos, 2, &hour) || !Expect(text, &pos, ':') ||
      !ReadFixedDigits(text, &pos, 2, &minute) || !Expect(text, &pos, ':') ||
      !ReadFixedDigits(text, &pos, 2, &second)) {
    return false;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return false;
  }
  std::int64_t frac_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::int64_t scale = kNsPerSecond;
    std::size_t digits = 0;
    while (pos < text.size() && IsDigit(text[pos])) {
      scale /= 10;
      frac_ns += (text[pos++] - '0') * scale;
      ++digits;
    }
    if (digits == 0) return false;
  }
  std::int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const bool negative = text[pos++] == '-';
    int oh = 0, om = 0;
    if (!ReadFixedDigits(text, &pos, 2, &oh) || !Expect(text, &pos, ':') ||
        !ReadFixedDigits(text, &pos, 2, &om) || oh > 23 || om > 59) {
      return false;
    }
    offset_s = (oh * 3600 + om * 60) * (negative ? -1 : 1);
  } else {
    return false;
  }
  if (pos != text.size()) return false;
  const std::int64_t days =
      DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const std::int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  *ns = seconds * kNsPerSecond + frac_ns;
  return true;
}

}  // namespace

namespace {
Status TimeInRange(std::string_view text, std::int64_t ns) {
  if (ns > -kMaxTimeMagnitudeNs && ns < kMaxTimeMagnitudeNs) return Status::OK();
  return Status::InvalidArgument("time \"" + std::string(text) +
                                 "\" is out of range (years 1823 to 2116)");
}
}  // namespace

Status ParseTimeNs(std::string_view text, std::int64_t* ns) {
  if (text.empty()) return Status::InvalidArgument("empty time");
  if (ParseScaledDecimal(text, kNsPerSecond, ns)) return TimeInRange(text, *ns);
  if (ParseRfc3339(text, ns)) return TimeInRange(text, *ns);
  // Exponent notation ("1.7e9") as a last resort, at microsecond resolution.
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(seconds) &&
      std::fabs(seconds) < 9.2e9) {
    *ns = std::llround(seconds * 1e6) * 1000;
    return TimeInRange(text, *ns);
  }
  return Status::InvalidArgument("cannot parse \"" + std::string(text) +
                                 "\" as Unix seconds or an RFC 3339 time");
}

Status ParseDurationNs(std::string_view text, std::int64_t* ns, bool allow_zero) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("cannot parse \"" + std::string(text) + "\" as a duration (" +
                                   std::string(why) + ")");
  };
  if (text.empty()) return bad("empty");
  std::int64_t total = 0;
  if (!ParseScaledDecimal(text, kNsPerSecond, &total)) {
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::uint64_t n = 0;
      std::size_t digits = 0;
      while (pos < text.size() && IsDigit(text[pos])) {
        n = n * 10 + static_cast<std::uint64_t>(text[pos++] - '0');
        if (++digits > 18) return bad("too large");
      }
      if (digits == 0) return bad("expected a number");
      std::size_t unit_end = pos;
      while (unit_end < text.size() && !IsDigit(text[unit_end])) ++unit_end;
      const std::string_view unit = text.substr(pos, unit_end - pos);
      pos = unit_end;
      std::int64_t unit_ns;
      if (unit == "ms") {
        unit_ns = kNsPerMilli;
      } else if (unit == "s") {
        unit_ns = kNsPerSecond;
      } else if (unit == "m") {
        unit_ns = 60 * kNsPerSecond;
      } else if (unit == "h") {
        unit_ns = 3600 * kNsPerSecond;
      } else if (unit == "d") {
        unit_ns = 86400 * kNsPerSecond;
      } else if (unit == "w") {
        unit_ns = 7 * 86400 * kNsPerSecond;
      } else if (unit == "y") {
        unit_ns = 365 * 86400 * kNsPerSecond;
      } else {
        return bad(unit.empty() ? "missing unit" : "unknown unit '" + std::string(unit) + "'");
      }
      if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / unit_ns) ||
          total > std::numeric_limits<std::int64_t>::max() -
                      static_cast<std::int64_t>(n) * unit_ns) {
        return bad("too large");
      }
      total += static_cast<std::int64_t>(n) * unit_ns;
    }
  }
  if (total < 0) return bad("negative");
  if (total >= kMaxTimeMagnitudeNs) return bad("too large: 146 years at most");
  if (total == 0 && !allow_zero) return bad("must be positive");
  *ns = total;
  return Status::OK();
}

std::string FormatDuration(std::int64_t ns) {
  if (ns == 0) return "0s";
  std::string out;
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  const std::int64_t units[] = {86400 * kNsPerSecond, 3600 * kNsPerSecond, 60 * kNsPerSecond,
                                kNsPerSecond, kNsPerMilli};
  const char* names[] = {"d", "h", "m", "s", "ms"};
  for (int i = 0; i < 5; ++i) {
    if (ns >= units[i]) {
      AppendInt(ns / units[i], &out);
      out += names[i];
      ns %= units[i];
    }
  }
  if (ns > 0) {
    AppendInt(ns, &out);
    out += "ns";
  }
  return out;
}

}  // namespace ingot
