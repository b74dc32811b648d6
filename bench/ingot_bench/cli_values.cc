#include "bench/ingot_bench/cli_values.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ingot::bench {
namespace {

bool ParseUint(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

bool ParseDigits(std::string_view s, size_t pos, size_t len, int* v) {
  if (pos + len > s.size()) return false;
  int r = 0;
  for (size_t i = pos; i < pos + len; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    r = r * 10 + (s[i] - '0');
  }
  *v = r;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

Status ParseTarget(std::string_view text, Target* target) {
  *target = Target();
  target->text = std::string(text);
  if (text == "null") return Status::OK();
  std::string_view rest;
  if (text.starts_with("tcp://")) {
    target->kind = Target::Kind::kTcp;
    rest = text.substr(6);
  } else if (text.starts_with("http://")) {
    target->kind = Target::Kind::kHttp;
    rest = text.substr(7);
  } else {
    return Status::InvalidArgument("target '" + std::string(text) +
                                   "': expected tcp://host:port, http://host:port/path or null");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  target->path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (target->kind == Target::Kind::kTcp && target->path != "/") {
    return Status::InvalidArgument("target '" + std::string(text) + "': tcp targets have no path");
  }
  size_t colon;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("target '" + std::string(text) + "': unclosed '['");
    }
    target->host = std::string(authority.substr(1, close - 1));
    colon = close + 1 < authority.size() && authority[close + 1] == ':' ? close + 1
                                                                        : std::string_view::npos;
  } else {
    colon = authority.rfind(':');
    target->host = std::string(authority.substr(0, colon));
  }
  uint64_t port = 0;
  if (colon == std::string_view::npos || !ParseUint(authority.substr(colon + 1), &port) ||
      port == 0 || port > 65535 || target->host.empty()) {
    return Status::InvalidArgument("target '" + std::string(text) +
                                   "': expected host:port with a port in 1..65535");
  }
  target->port = static_cast<uint16_t>(port);
  return Status::OK();
}

Status ParseDurationNs(std::string_view text, int64_t* ns) {
  struct Unit {
    std::string_view suffix;
    double ns;
  };
  // Longest suffixes first so that "ms" is not read as "s".
  static constexpr Unit kUnits[] = {{"ns", 1.0},   {"us", 1e3},        {"ms", 1e6},
                                    {"s", 1e9},    {"m", 60e9},        {"h", 3600e9},
                                    {"d", 86400e9}};
  double scale = 1e9;
  std::string_view number = text;
  for (const Unit& unit : kUnits) {
    if (text.size() > unit.suffix.size() && text.ends_with(unit.suffix)) {
      number = text.substr(0, text.size() - unit.suffix.size());
      scale = unit.ns;
      break;
    }
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size() || value < 0 ||
      !std::isfinite(value) || value * scale > 9.2e18) {
    return Status::InvalidArgument("duration '" + std::string(text) +
                                   "': expected e.g. 500ms, 10s, 5m, 1h or seconds");
  }
  *ns = static_cast<int64_t>(std::llround(value * scale));
  return Status::OK();
}

Status ParseTimeNs(std::string_view text, int64_t* ns) {
  const Status bad = Status::InvalidArgument(
      "time '" + std::string(text) +
      "': expected RFC 3339 (2024-01-01T00:00:00Z) or integer nanoseconds");
  uint64_t integer = 0;
  if (ParseUint(text, &integer)) {
    if (integer > static_cast<uint64_t>(INT64_MAX)) return bad;
    *ns = static_cast<int64_t>(integer);
    return Status::OK();
  }
  int year, month, day, hour, minute, second;
  if (!ParseDigits(text, 0, 4, &year) || text.size() < 20 || text[4] != '-' ||
      !ParseDigits(text, 5, 2, &month) || text[7] != '-' || !ParseDigits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') ||
      !ParseDigits(text, 11, 2, &hour) || text[13] != ':' || !ParseDigits(text, 14, 2, &minute) ||
      text[16] != ':' || !ParseDigits(text, 17, 2, &second)) {
    return bad;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad;
  }
  size_t pos = 19;
  int64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100'000'000;
    const size_t digits_begin = pos;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
      fraction_ns += (text[pos] - '0') * scale;
      scale /= 10;
    }
    if (pos == digits_begin) return bad;
  }
  int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int off_h, off_m;
    if (!ParseDigits(text, pos + 1, 2, &off_h) || pos + 3 >= text.size() ||
        text[pos + 3] != ':' || !ParseDigits(text, pos + 4, 2, &off_m)) {
      return bad;
    }
    offset_s = (off_h * 3600 + off_m * 60) * (text[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return bad;
  }
  if (pos != text.size()) return bad;
  const int64_t seconds = DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 +
                          second - offset_s;
  *ns = seconds * 1'000'000'000 + fraction_ns;
  return Status::OK();
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> items;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

std::string FormatSeconds(int64_t ns) {
  char text[40];
  const int64_t ms = ns >= 0 ? ns / 1'000'000 : -((-ns + 999'999) / 1'000'000);
  const int64_t whole = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  std::snprintf(text, sizeof(text), "%lld.%03lld", static_cast<long long>(whole),
                static_cast<long long>(ms - whole * 1000));
  return text;
}

}  // namespace ingot::bench
