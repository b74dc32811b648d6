#include "query/promql_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <utility>

#include "query/depth_guard.h"
#include "query/text_format.h"

namespace ingot::promql {
namespace {

constexpr std::int64_t kNsPerMilli = 1000 * 1000;
constexpr std::int64_t kNsPerSecond = 1000 * kNsPerMilli;

// ---------------------------------------------------------------------------------------------
// Text helpers

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
bool IsHexDigit(char c) { return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// Length of the well-formed UTF-8 sequence starting at s[i], or 0.
std::size_t Utf8Length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  std::size_t len;
  std::uint32_t cp;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0;
  return len;
}

void AppendHexByte(unsigned char b, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->append("\\x");
  out->push_back(kHex[b >> 4]);
  out->push_back(kHex[b & 15]);
}

// Appends `s` in double quotes with Go's escapes (as Go's %q does for valid text; bytes that are
// not UTF-8 become \xNN), so that the lexer reads back exactly `s`.
void AppendQuoted(std::string_view s, std::string* out) {
  out->push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\a': out->append("\\a"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\v': out->append("\\v"); break;
      default:
        if (u < 0x20 || u == 0x7F) {
          AppendHexByte(u, out);
        } else if (u < 0x80) {
          out->push_back(c);
        } else if (const std::size_t len = Utf8Length(s, i); len > 0) {
          out->append(s.substr(i, len));
          i += len;
          continue;
        } else {
          AppendHexByte(u, out);
        }
    }
    ++i;
  }
  out->push_back('"');
}

std::string Quoted(std::string_view s) {
  std::string out;
  AppendQuoted(s, &out);
  return out;
}

// Go's %q of the character at s[i], as in "unexpected character: 'x'".
std::string QuotedChar(std::string_view s, std::size_t i) {
  std::string out = "'";
  const std::size_t len = Utf8Length(s, i);
  const auto u = static_cast<unsigned char>(s[i]);
  if (len > 1) {
    out.append(s.substr(i, len));
  } else if (s[i] == '\'' || s[i] == '\\') {
    out.push_back('\\');
    out.push_back(s[i]);
  } else if (len == 1 && u >= 0x20 && u != 0x7F) {
    out.push_back(s[i]);
  } else {
    AppendHexByte(u, &out);
  }
  out.push_back('\'');
  return out;
}

// Go's %#U of an ASCII character: "U+0071 'q'".
std::string CodePoint(char c) {
  char buf[16];
  const auto u = static_cast<unsigned char>(c);
  std::snprintf(buf, sizeof(buf), "U+%04X", u);
  std::string out = buf;
  if (u >= 0x20 && u < 0x7F) {
    out.append(" '");
    out.push_back(c);
    out.push_back('\'');
  }
  return out;
}

// A label name that needs no quotes: [a-zA-Z_][a-zA-Z0-9_]*.
bool IsPlainLabelName(std::string_view name) {
  if (name.empty() || !IsAlpha(name[0])) return false;
  return std::all_of(name.begin(), name.end(), IsAlnum);
}

void AppendLabelName(std::string_view name, std::string* out) {
  if (IsPlainLabelName(name)) {
    out->append(name);
  } else {
    AppendQuoted(name, out);
  }
}

std::string Int(std::int64_t v) { return std::to_string(v); }

// ---------------------------------------------------------------------------------------------
// Numbers and durations

enum class NumberError { kNone, kSyntax, kRange };

// Go's rule for underscores in number literals: each one separates two digits, or follows the
// 0x prefix. Appends `text` without them to `*out`.
bool StripUnderscores(std::string_view text, bool hex, std::string* out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '_') {
      out->push_back(text[i]);
      continue;
    }
    const bool after_prefix = hex && i == 2;
    const bool digit_before = i > 0 && (hex ? IsHexDigit(text[i - 1]) : IsDigit(text[i - 1]));
    const bool digit_after =
        i + 1 < text.size() && (hex ? IsHexDigit(text[i + 1]) : IsDigit(text[i + 1]));
    if (!(after_prefix || digit_before) || !digit_after) return false;
  }
  return true;
}

// The value of number digits without underscores (see NumberValue).
NumberError DigitsValue(std::string_view text, bool hex, double* out) {
  constexpr auto kMaxInt = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const char* const last = text.data() + text.size();
  if (hex) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data() + 2, last, v, 16);
    if (text.size() == 2 || ec != std::errc() || end != last || v > kMaxInt) {
      return NumberError::kSyntax;  // Prometheus reads hex as an integer only
    }
    *out = static_cast<double>(v);
    return NumberError::kNone;
  }
  if (text.size() > 1 && text[0] == '0' &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '7'; })) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), last, v, 8);
    if (ec == std::errc() && end == last && v <= kMaxInt) {
      *out = static_cast<double>(v);
      return NumberError::kNone;
    }
    // Too large for an integer: Prometheus then reads the digits as a decimal float.
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), last, v);
  if (end != last) return NumberError::kSyntax;
  if (ec == std::errc::result_out_of_range) {
    // Overflow is an error; underflow gives 0 or a subnormal, as strtod does.
    const std::string copy(text);
    v = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(v)) return NumberError::kRange;
  } else if (ec != std::errc()) {
    return NumberError::kSyntax;
  }
  *out = v;
  return NumberError::kNone;
}

// The value of a number token as Prometheus reads it: an integer in Go syntax first (0x1f, 010
// octal, 1_000), a float otherwise (1.5, .5, 1e-3, Inf, NaN).
NumberError NumberValue(std::string_view text, double* out) {
  if (EqualsIgnoreCase(text, "inf")) {
    *out = std::numeric_limits<double>::infinity();
    return NumberError::kNone;
  }
  if (EqualsIgnoreCase(text, "nan")) {
    *out = std::numeric_limits<double>::quiet_NaN();
    return NumberError::kNone;
  }
  const bool hex = text.size() >= 2 && text[0] == '0' && Lower(text[1]) == 'x';
  if (text.find('_') == std::string_view::npos) return DigitsValue(text, hex, out);
  std::string digits;
  if (!StripUnderscores(text, hex, &digits)) return NumberError::kSyntax;
  return DigitsValue(digits, hex, out);
}

// A duration token ("5m", "1h30m", "250ms"): units in the order y, w, d, h, m, s, ms, each at
// most once, as Prometheus requires. The value comes from the one duration parser.
bool DurationValue(std::string_view text, std::int64_t* ns, std::string* error) {
  int last_rank = -1;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t digits = i;
    while (i < text.size() && IsDigit(text[i])) ++i;
    int rank = -1;
    if (i > digits && i < text.size()) {
      const std::string_view rest = text.substr(i);
      const std::size_t unit = std::string_view("ywdhms").find(rest[0]);
      if (rest.starts_with("ms")) {
        rank = 6;
      } else if (unit != std::string_view::npos) {
        rank = static_cast<int>(unit);
      }
    }
    if (rank <= last_rank) {
      *error = "not a valid duration string: ";
      error->append(Quoted(text));
      return false;
    }
    i += rank == 6 ? 2 : 1;
    last_rank = rank;
  }
  const Status st = ParseDurationNs(text, ns, /*allow_zero=*/true);
  if (!st.ok()) {
    error->assign(st.message());
    return false;
  }
  return true;
}

// Go's time.Duration.Seconds().
double Seconds(std::int64_t ns) {
  return static_cast<double>(ns / kNsPerSecond) +
         static_cast<double>(ns % kNsPerSecond) / static_cast<double>(kNsPerSecond);
}

// ---------------------------------------------------------------------------------------------
// Lexer

enum class Tok : std::uint8_t {
  kEof,
  kError,  // text is the message
  kIdentifier,
  kMetricIdentifier,  // an identifier with a colon
  kNumber,
  kDuration,
  kString,  // text includes the quotes
  kLeftParen,
  kRightParen,
  kLeftBrace,
  kRightBrace,
  kLeftBracket,
  kRightBracket,
  kComma,
  kColon,
  kAssign,
  // Operators.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kAtan2,
  kEqlc,
  kNeq,
  kGtr,
  kLss,
  kGte,
  kLte,
  kAnd,
  kOr,
  kUnless,
  kEqlRegex,
  kNeqRegex,
  kAt,
  // Aggregators, in the order of AggregateOp.
  kSum,
  kAvg,
  kCount,
  kMin,
  kMax,
  kGroup,
  kStddev,
  kStdvar,
  kTopk,
  kBottomk,
  kCountValues,
  kQuantile,
  kLimitk,
  kLimitRatio,
  // Keywords.
  kBool,
  kBy,
  kGroupLeft,
  kGroupRight,
  kIgnoring,
  kOffset,
  kOn,
  kWithout,
  // Preprocessors (`@ start()`), also function names.
  kStart,
  kEnd,
  kStep,
};

bool IsOperatorTok(Tok t) { return t >= Tok::kAdd && t <= Tok::kAt; }
bool IsAggregatorTok(Tok t) { return t >= Tok::kSum && t <= Tok::kLimitRatio; }
bool IsKeywordTok(Tok t) { return t >= Tok::kBool && t <= Tok::kWithout; }
bool IsPreprocessorTok(Tok t) { return t >= Tok::kStart && t <= Tok::kStep; }

struct Keyword {
  std::string_view word;
  Tok tok;
};

constexpr Keyword kKeywords[] = {
    {"and", Tok::kAnd},
    {"or", Tok::kOr},
    {"unless", Tok::kUnless},
    {"atan2", Tok::kAtan2},
    {"sum", Tok::kSum},
    {"avg", Tok::kAvg},
    {"count", Tok::kCount},
    {"min", Tok::kMin},
    {"max", Tok::kMax},
    {"group", Tok::kGroup},
    {"stddev", Tok::kStddev},
    {"stdvar", Tok::kStdvar},
    {"topk", Tok::kTopk},
    {"bottomk", Tok::kBottomk},
    {"count_values", Tok::kCountValues},
    {"quantile", Tok::kQuantile},
    {"limitk", Tok::kLimitk},
    {"limit_ratio", Tok::kLimitRatio},
    {"bool", Tok::kBool},
    {"by", Tok::kBy},
    {"group_left", Tok::kGroupLeft},
    {"group_right", Tok::kGroupRight},
    {"ignoring", Tok::kIgnoring},
    {"offset", Tok::kOffset},
    {"on", Tok::kOn},
    {"without", Tok::kWithout},
    {"start", Tok::kStart},
    {"end", Tok::kEnd},
    {"step", Tok::kStep},
    {"inf", Tok::kNumber},
    {"nan", Tok::kNumber},
};

Tok WordToken(std::string_view word) {
  if (word.size() <= 12) {
    for (const Keyword& k : kKeywords) {
      if (EqualsIgnoreCase(word, k.word)) return k.tok;
    }
  }
  return Tok::kIdentifier;
}

struct Token {
  Tok kind = Tok::kEof;
  std::uint32_t pos = 0;
  std::string_view text;
};

// Splits the query into tokens. Like Prometheus' lexer it has three modes: expressions, the
// inside of `{...}` (label matchers: no keywords, no colons in names) and the inside of `[...]`
// (numbers, durations and a colon). After an error it returns the same error token forever.
class Lexer {
 public:
  explicit Lexer(std::string_view input) : in_(input) {}

  Token Next() {
    if (failed_) return Token{Tok::kError, error_pos_, error_};
    if (brace_open_) return LexInsideBraces();
    if (bracket_open_) return LexInsideBrackets();
    return LexExpression();
  }

 private:
  // Returns the token [start, end) and follows the nesting it opens or closes.
  Token Emit(Tok kind, std::size_t start, std::size_t end) {
    pos_ = end;
    switch (kind) {
      case Tok::kLeftParen: ++paren_depth_; break;
      case Tok::kRightParen: --paren_depth_; break;
      case Tok::kLeftBrace: brace_open_ = true; break;
      case Tok::kRightBrace: brace_open_ = false; break;
      case Tok::kLeftBracket: bracket_open_ = true; break;
      case Tok::kRightBracket: bracket_open_ = false; break;
      default: break;
    }
    return Token{kind, static_cast<std::uint32_t>(start), in_.substr(start, end - start)};
  }

  Token CloseParen(std::size_t start) {
    if (paren_depth_ == 0) return Error(start, "unexpected right parenthesis ')'");
    return Emit(Tok::kRightParen, start, start + 1);
  }

  Token Error(std::size_t at, std::string message) {
    failed_ = true;
    error_ = std::move(message);
    error_pos_ = static_cast<std::uint32_t>(at);
    return Token{Tok::kError, error_pos_, error_};
  }

  void SkipSpaceAndComments() {
    while (pos_ < in_.size()) {
      if (IsSpace(in_[pos_])) {
        ++pos_;
      } else if (in_[pos_] == '#') {
        while (pos_ < in_.size() && in_[pos_] != '\n' && in_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  bool At(std::size_t i, char c) const { return i < in_.size() && in_[i] == c; }

  Token LexExpression() {
    SkipSpaceAndComments();
    const std::size_t start = pos_;
    if (start >= in_.size()) {
      if (paren_depth_ > 0) return Error(start, "unclosed left parenthesis");
      return Token{Tok::kEof, static_cast<std::uint32_t>(start), {}};
    }
    const char c = in_[start];
    switch (c) {
      case ',': return Emit(Tok::kComma, start, start + 1);
      case '(': return Emit(Tok::kLeftParen, start, start + 1);
      case ')': return CloseParen(start);
      case '{': return Emit(Tok::kLeftBrace, start, start + 1);
      case '[': return Emit(Tok::kLeftBracket, start, start + 1);
      case ']': return Error(start, "unexpected right bracket ']'");
      case '@': return Emit(Tok::kAt, start, start + 1);
      case '+': return Emit(Tok::kAdd, start, start + 1);
      case '-': return Emit(Tok::kSub, start, start + 1);
      case '*': return Emit(Tok::kMul, start, start + 1);
      case '/': return Emit(Tok::kDiv, start, start + 1);
      case '%': return Emit(Tok::kMod, start, start + 1);
      case '^': return Emit(Tok::kPow, start, start + 1);
      case '=':
        if (At(start + 1, '=')) return Emit(Tok::kEqlc, start, start + 2);
        if (At(start + 1, '~')) return Error(start, "unexpected character after '=': '~'");
        return Emit(Tok::kAssign, start, start + 1);
      case '!':
        if (At(start + 1, '=')) return Emit(Tok::kNeq, start, start + 2);
        return Error(start, AfterBang("unexpected character after '!': ", start + 1));
      case '<':
        if (At(start + 1, '=')) return Emit(Tok::kLte, start, start + 2);
        return Emit(Tok::kLss, start, start + 1);
      case '>':
        if (At(start + 1, '=')) return Emit(Tok::kGte, start, start + 2);
        return Emit(Tok::kGtr, start, start + 1);
      case '"':
      case '\'': return LexString(start);
      case '`': return LexRawString(start);
      default: break;
    }
    if (IsDigit(c) || (c == '.' && start + 1 < in_.size() && IsDigit(in_[start + 1]))) {
      return LexNumberOrDuration(start);
    }
    if (IsAlpha(c) || c == ':') {
      std::size_t end = start + 1;
      bool colon = c == ':';
      while (end < in_.size() && (IsAlnum(in_[end]) || in_[end] == ':')) {
        colon = colon || in_[end] == ':';
        ++end;
      }
      const std::string_view word = in_.substr(start, end - start);
      return Emit(colon ? Tok::kMetricIdentifier : WordToken(word), start, end);
    }
    std::string message = "unexpected character: ";
    message.append(QuotedChar(in_, start));
    return Error(start, std::move(message));
  }

  std::string AfterBang(std::string_view prefix, std::size_t i) const {
    std::string message(prefix);
    if (i < in_.size()) {
      message.append(QuotedChar(in_, i));
    } else {
      message.append("end of input");
    }
    return message;
  }

  Token LexInsideBraces() {
    SkipSpaceAndComments();
    const std::size_t start = pos_;
    if (start >= in_.size()) return Error(start, "unexpected end of input inside braces");
    const char c = in_[start];
    if (IsAlpha(c)) {
      std::size_t end = start + 1;
      while (end < in_.size() && IsAlnum(in_[end])) ++end;
      return Emit(Tok::kIdentifier, start, end);
    }
    switch (c) {
      case ',': return Emit(Tok::kComma, start, start + 1);
      case '"':
      case '\'': return LexString(start);
      case '`': return LexRawString(start);
      case '=':
        if (At(start + 1, '~')) return Emit(Tok::kEqlRegex, start, start + 2);
        return Emit(Tok::kAssign, start, start + 1);
      case '!':
        if (At(start + 1, '~')) return Emit(Tok::kNeqRegex, start, start + 2);
        if (At(start + 1, '=')) return Emit(Tok::kNeq, start, start + 2);
        return Error(start, AfterBang("unexpected character after '!' inside braces: ", start + 1));
      case '{': return Error(start, "unexpected left brace '{'");
      case '}': return Emit(Tok::kRightBrace, start, start + 1);
      default: break;
    }
    std::string message = "unexpected character inside braces: ";
    message.append(QuotedChar(in_, start));
    return Error(start, std::move(message));
  }

  Token LexInsideBrackets() {
    while (pos_ < in_.size() && IsSpace(in_[pos_])) ++pos_;
    const std::size_t start = pos_;
    if (start >= in_.size()) return Error(start, "unexpected end of input in duration expression");
    const char c = in_[start];
    if (IsDigit(c) || (c == '.' && start + 1 < in_.size() && IsDigit(in_[start + 1]))) {
      return LexNumberOrDuration(start);
    }
    switch (c) {
      case ']': return Emit(Tok::kRightBracket, start, start + 1);
      case ':': return Emit(Tok::kColon, start, start + 1);
      case '[': return Error(start, "unexpected left bracket '['");
      // Operators lex as tokens so that the parser can say where they are not allowed.
      case '(': return Emit(Tok::kLeftParen, start, start + 1);
      case ')': return CloseParen(start);
      case ',': return Emit(Tok::kComma, start, start + 1);
      case '+': return Emit(Tok::kAdd, start, start + 1);
      case '-': return Emit(Tok::kSub, start, start + 1);
      case '*': return Emit(Tok::kMul, start, start + 1);
      case '/': return Emit(Tok::kDiv, start, start + 1);
      case '%': return Emit(Tok::kMod, start, start + 1);
      case '^': return Emit(Tok::kPow, start, start + 1);
      default: break;
    }
    std::string message = "unexpected character: ";
    message.append(QuotedChar(in_, start));
    message.append(", expected ':'");
    return Error(start, std::move(message));
  }

  // A number or a duration, scanned exactly as Prometheus' lexer scans them (so that what it
  // rejects, and the text its message quotes, are the same): a decimal or hex number with
  // underscores between digits; if letters follow, a duration such as 1h30m or 250ms, whose
  // units the parser checks. The number's value is read later (NumberValue).
  Token LexNumberOrDuration(std::size_t start) {
    pos_ = start;
    if (ScanNumber()) return Emit(Tok::kNumber, start, pos_);
    if (ScanDurationUnits()) return Emit(Tok::kDuration, start, pos_);
    std::string message = "bad number or duration syntax: ";
    message.append(Quoted(in_.substr(start, pos_ - start)));
    return Error(start, std::move(message));
  }

  // Consumes the next character if it is one of `set`.
  bool Accept(std::string_view set) {
    if (pos_ < in_.size() && set.find(in_[pos_]) != std::string_view::npos) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool NextIs(std::string_view set) const {
    return pos_ < in_.size() && set.find(in_[pos_]) != std::string_view::npos;
  }

  bool ScanNumber() {
    const std::size_t initial = pos_;
    std::string_view digits = "0123456789";
    if (Accept("0") && Accept("xX")) {
      Accept("_");
      digits = "0123456789abcdefABCDEF";
    }
    Accept(".");
    Accept(digits);
    bool dot = false;
    bool exponent = false;
    while (NextIs(digits) || NextIs("._eE")) {
      if (NextIs(".") && dot) {
        Accept(".");
        return false;
      }
      if (NextIs("eE") && exponent) {
        Accept("eE");
        return false;
      }
      if (Accept(".")) {
        dot = true;
        if (Accept("_.") || digits.size() > 10) return false;  // no hex fractions
        continue;
      }
      if (Accept("eE")) {
        exponent = true;
        Accept("+-");
        if (Accept("._eE") || pos_ >= in_.size()) return false;
        continue;
      }
      if (Accept("_")) {
        if (Accept("._eE") || pos_ >= in_.size()) return false;
        continue;
      }
      while (Accept(digits)) {
      }
    }
    return pos_ != initial && (pos_ >= in_.size() || !IsAlnum(in_[pos_]));
  }

  // After ScanNumber stopped at a letter: [smhdwy][s] {digits [smhdw][s]}, not followed by a
  // letter or digit. Bad units ("hs") are left to the parser, as Prometheus does.
  bool ScanDurationUnits() {
    if (!Accept("smhdwy")) return false;
    Accept("s");
    while (Accept("0123456789")) {
      while (Accept("0123456789")) {
      }
      if (!Accept("smhdw")) return false;
      Accept("s");
    }
    if (pos_ < in_.size() && IsAlnum(in_[pos_])) {
      ++pos_;  // the offending character is part of the quoted text
      return false;
    }
    return true;
  }

  // A "..." or '...' string with Go escapes, checked as Prometheus' lexer checks it.
  Token LexString(std::size_t start) {
    const char quote = in_[start];
    std::size_t i = start + 1;
    for (;;) {
      if (i >= in_.size() || in_[i] == '\n') return Error(start, "unterminated quoted string");
      const char c = in_[i];
      if (c == quote) return Emit(Tok::kString, start, i + 1);
      if (static_cast<unsigned char>(c) >= 0x80) {
        const std::size_t len = Utf8Length(in_, i);
        if (len == 0) return Error(start, "invalid UTF-8 rune");
        i += len;
        continue;
      }
      if (c != '\\') {
        ++i;
        continue;
      }
      ++i;
      if (i >= in_.size()) return Error(start, "escape sequence not terminated");
      const char e = in_[i++];
      int digits = 0;
      int base = 16;
      std::uint32_t max = 255;
      switch (e) {
        case 'a':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
        case 'v':
        case '\\': continue;
        case 'x': digits = 2; break;
        case 'u':
          digits = 4;
          max = 0x10FFFF;
          break;
        case 'U':
          digits = 8;
          max = 0x10FFFF;
          break;
        default:
          if (e == quote) continue;
          if (e >= '0' && e <= '7') {
            digits = 2;  // after the first
            base = 8;
            break;
          }
          return Error(start, std::string("unknown escape sequence ").append(CodePoint(e)));
      }
      std::uint32_t v = base == 8 ? static_cast<std::uint32_t>(e - '0') : 0;
      for (int k = 0; k < digits; ++k, ++i) {
        if (i >= in_.size()) return Error(start, "escape sequence not terminated");
        const char d = in_[i];
        const int dv = IsDigit(d) ? d - '0' : IsHexDigit(d) ? Lower(d) - 'a' + 10 : 99;
        if (dv >= base) {
          std::string message = "illegal character ";
          message.append(CodePoint(d));
          message.append(" in escape sequence");
          return Error(start, std::move(message));
        }
        v = v * static_cast<std::uint32_t>(base) + static_cast<std::uint32_t>(dv);
      }
      if (v > max || (v >= 0xD800 && v < 0xE000)) {
        return Error(start, "escape sequence is an invalid Unicode code point");
      }
    }
  }

  Token LexRawString(std::size_t start) {
    std::size_t i = start + 1;
    for (;;) {
      if (i >= in_.size()) return Error(start, "unterminated raw string");
      if (in_[i] == '`') return Emit(Tok::kString, start, i + 1);
      const std::size_t len = Utf8Length(in_, i);
      if (len == 0) return Error(start, "invalid UTF-8 rune");
      i += len;
    }
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  int paren_depth_ = 0;
  bool brace_open_ = false;
  bool bracket_open_ = false;
  bool failed_ = false;
  std::uint32_t error_pos_ = 0;
  std::string error_;
};

// How Prometheus names a token in "unexpected ..." messages.
std::string Describe(const Token& t) {
  auto value = [&](std::string_view kind) {
    std::string out(kind);
    out.push_back(' ');
    if (t.text.size() > 10) {
      out.append(Quoted(t.text.substr(0, 10)));
      out.append("...");
    } else {
      out.append(Quoted(t.text));
    }
    return out;
  };
  switch (t.kind) {
    case Tok::kEof: return "end of input";
    case Tok::kError: return std::string(t.text);
    case Tok::kIdentifier: return std::string("identifier ").append(Quoted(t.text));
    case Tok::kMetricIdentifier: return std::string("metric identifier ").append(Quoted(t.text));
    case Tok::kNumber: return value("number");
    case Tok::kDuration: return value("duration");
    case Tok::kString: return value("string");
    default: break;
  }
  std::string out;
  if (IsOperatorTok(t.kind)) {
    out = "<op:";
  } else if (IsAggregatorTok(t.kind)) {
    out = "<aggr:";
  } else if (IsKeywordTok(t.kind)) {
    out = "<";
  } else {
    return Quoted(t.text);
  }
  out.append(t.text);
  out.push_back('>');
  return out;
}

int Precedence(Tok t) {
  switch (t) {
    case Tok::kOr: return 1;
    case Tok::kAnd:
    case Tok::kUnless: return 2;
    case Tok::kEqlc:
    case Tok::kNeq:
    case Tok::kGtr:
    case Tok::kLss:
    case Tok::kGte:
    case Tok::kLte: return 3;
    case Tok::kAdd:
    case Tok::kSub: return 4;
    case Tok::kMul:
    case Tok::kDiv:
    case Tok::kMod:
    case Tok::kAtan2: return 5;
    case Tok::kPow: return 6;
    default: return 0;
  }
}
constexpr int kPowPrecedence = 6;

BinaryOp ToBinaryOp(Tok t) {
  switch (t) {
    case Tok::kAdd: return BinaryOp::kAdd;
    case Tok::kSub: return BinaryOp::kSub;
    case Tok::kMul: return BinaryOp::kMul;
    case Tok::kDiv: return BinaryOp::kDiv;
    case Tok::kMod: return BinaryOp::kMod;
    case Tok::kPow: return BinaryOp::kPow;
    case Tok::kAtan2: return BinaryOp::kAtan2;
    case Tok::kEqlc: return BinaryOp::kEql;
    case Tok::kNeq: return BinaryOp::kNeq;
    case Tok::kGtr: return BinaryOp::kGtr;
    case Tok::kLss: return BinaryOp::kLss;
    case Tok::kGte: return BinaryOp::kGte;
    case Tok::kLte: return BinaryOp::kLte;
    case Tok::kAnd: return BinaryOp::kAnd;
    case Tok::kOr: return BinaryOp::kOr;
    default: return BinaryOp::kUnless;
  }
}

// Words that may name a metric (Prometheus' metric_identifier): identifiers and the keywords
// that cannot be confused with an operator or modifier there.
bool CanBeMetricName(Tok t) {
  switch (t) {
    case Tok::kIdentifier:
    case Tok::kMetricIdentifier:
    case Tok::kBy:
    case Tok::kWithout:
    case Tok::kOffset:
    case Tok::kAnd:
    case Tok::kOr:
    case Tok::kUnless:
    case Tok::kStart:
    case Tok::kEnd:
    case Tok::kStep: return true;
    default: return IsAggregatorTok(t);
  }
}

// Words that may name a label in by (...), on (...), group_left (...) (Prometheus' maybe_label).
bool CanBeLabelName(Tok t) {
  return t == Tok::kIdentifier || IsAggregatorTok(t) || IsKeywordTok(t) || IsPreprocessorTok(t) ||
         t == Tok::kAnd || t == Tok::kOr || t == Tok::kUnless || t == Tok::kAtan2;
}

bool IsDurationOrNumber(Tok t) { return t == Tok::kNumber || t == Tok::kDuration; }

int MaxHeight(const std::unique_ptr<Expr>& a) { return a ? a->height : 0; }

TimeModifiers* ModifiersOf(Expr* e) {
  switch (e->kind) {
    case NodeKind::kVectorSelector: return &e->As<VectorSelector>().time;
    case NodeKind::kMatrixSelector: return &e->As<MatrixSelector>().vector->time;
    case NodeKind::kSubquery: return &e->As<Subquery>().time;
    default: return nullptr;
  }
}

// ---------------------------------------------------------------------------------------------
// Parser
//
// The functions on the recursion path (ParseExpr, ParseUnary, ParsePostfix, ParsePrimary,
// ParseParen, ParseCall, ParseArguments, ParseAggregate, Check, ExpectType) keep their frames
// small: everything else, error messages above all, lives in functions marked noinline, so that
// kMaxDepth levels fit in a few hundred KiB of stack.

// Where a type was expected, for "expected type X in <context>, got Y".
enum class TypeContext : std::uint8_t { kAggregationExpression, kAggregationParameter, kCall };

class Parser {
 public:
  Parser(std::string_view query, const ParseOptions& options)
      : query_(query), lexer_(query), options_(options) {}

  Status Parse(std::unique_ptr<Expr>* out) {
    if (query_.size() > kMaxQueryBytes) {
      std::string message = "query of ";
      message.append(Int(static_cast<std::int64_t>(query_.size())));
      message.append(" bytes exceeds the limit of ");
      message.append(Int(static_cast<std::int64_t>(kMaxQueryBytes)));
      message.append(" bytes");
      return Status::InvalidArgument(message);
    }
    Advance();
    if (tok_.kind == Tok::kEof) return ErrorAt(0, "no expression found in input");
    std::unique_ptr<Expr> expr;
    INGOT_RETURN_IF_ERROR(ParseExpr(0, &expr));
    if (tok_.kind != Tok::kEof) return Unexpected("", "");
    INGOT_RETURN_IF_ERROR(Check(expr.get()));
    *out = std::move(expr);
    return Status::OK();
  }

 private:
  // --- Tokens and errors ---

  [[gnu::noinline]] void Advance() {
    prev_end_ = tok_.pos + static_cast<std::uint32_t>(tok_.text.size());
    if (has_peek_) {
      tok_ = peek_;
      has_peek_ = false;
    } else {
      tok_ = lexer_.Next();
    }
  }

  [[gnu::noinline]] Tok PeekKind() {
    if (!has_peek_) {
      peek_ = lexer_.Next();
      has_peek_ = true;
    }
    return peek_.kind;
  }

  // "line:column" of a byte offset, both from 1, as Prometheus writes positions.
  std::string Position(std::uint32_t pos) const {
    const std::string_view before = query_.substr(0, std::min<std::size_t>(pos, query_.size()));
    const auto line = static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t last_break = before.rfind('\n');
    const std::size_t column =
        last_break == std::string_view::npos ? before.size() + 1 : before.size() - last_break;
    std::string out = std::to_string(line + 1);
    out.push_back(':');
    out.append(std::to_string(column));
    return out;
  }

  [[gnu::noinline]] Status ErrorAt(std::uint32_t pos, std::string_view message) const {
    std::string text = Position(pos);
    text.append(": parse error: ");
    text.append(message);
    return Status::InvalidArgument(text);
  }

  // "unexpected <token>[ in <context>][, expected <expected>]", or the lexer's own error.
  [[gnu::noinline]] Status Unexpected(std::string_view context, std::string_view expected) const {
    if (tok_.kind == Tok::kError) return ErrorAt(tok_.pos, tok_.text);
    std::string message = "unexpected ";
    message.append(Describe(tok_));
    if (!context.empty()) {
      message.append(" in ");
      message.append(context);
    }
    if (!expected.empty()) {
      message.append(", expected ");
      message.append(expected);
    }
    return ErrorAt(tok_.pos, message);
  }

  [[gnu::noinline]] Status TooDeep(std::uint32_t pos) const {
    std::string message = "expression nested more than ";
    message.append(Int(kMaxDepth));
    message.append(" levels deep");
    return ErrorAt(pos, message);
  }

  Status CheckHeight(const Expr& e) const {
    return e.height <= kMaxDepth ? Status::OK() : TooDeep(e.pos.start);
  }


  // --- Literals ---

  [[gnu::noinline]] Status TokenNumber(double* v) const {
    const NumberError error = NumberValue(tok_.text, v);
    if (error == NumberError::kNone) return Status::OK();
    std::string message = "error parsing number ";
    message.append(Quoted(tok_.text));
    message.append(error == NumberError::kRange ? ": value out of range" : ": invalid syntax");
    return ErrorAt(tok_.pos, message);
  }

  [[gnu::noinline]] Status TokenDurationNs(std::int64_t* ns) const {
    if (tok_.kind == Tok::kDuration) {
      std::string error;
      if (!DurationValue(tok_.text, ns, &error)) return ErrorAt(tok_.pos, error);
      return Status::OK();
    }
    // A plain number of seconds, truncated to milliseconds as Prometheus does.
    double seconds = 0;
    INGOT_RETURN_IF_ERROR(TokenNumber(&seconds));
    const double ms = std::trunc(seconds * 1000);
    if (!(std::fabs(ms) < static_cast<double>(kMaxTimeMagnitudeNs / kNsPerMilli))) {
      return ErrorAt(tok_.pos, "duration out of range");
    }
    *ns = static_cast<std::int64_t>(ms) * kNsPerMilli;
    return Status::OK();
  }

  [[gnu::noinline]] Status TokenString(std::string* out) const {
    std::size_t pos = 0;
    const Status st = ParseStringLiteral(tok_.text, &pos, out);
    if (!st.ok()) return ErrorAt(tok_.pos, st.message());
    return Status::OK();
  }

  // A number, duration or string at the start of an expression.
  [[gnu::noinline]] Status ParseLiteral(std::unique_ptr<Expr>* out) {
    const PositionRange pos{tok_.pos, tok_.pos + static_cast<std::uint32_t>(tok_.text.size())};
    if (tok_.kind == Tok::kString) {
      auto str = std::make_unique<StringLiteral>();
      INGOT_RETURN_IF_ERROR(TokenString(&str->value));
      str->pos = pos;
      *out = std::move(str);
    } else {
      auto number = std::make_unique<NumberLiteral>();
      if (tok_.kind == Tok::kNumber) {
        INGOT_RETURN_IF_ERROR(TokenNumber(&number->value));
      } else {
        std::int64_t ns = 0;
        INGOT_RETURN_IF_ERROR(TokenDurationNs(&ns));
        number->value = Seconds(ns);
      }
      number->pos = pos;
      *out = std::move(number);
    }
    Advance();
    return Status::OK();
  }

  // --- Expressions ---

  // Binary operators of precedence >= min_precedence, by precedence climbing.
  Status ParseExpr(int min_precedence, std::unique_ptr<Expr>* out) {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return TooDeep(tok_.pos);
    INGOT_RETURN_IF_ERROR(ParseUnary(out));
    for (;;) {
      const int precedence = Precedence(tok_.kind);
      if (precedence == 0 || precedence < min_precedence) return Status::OK();
      auto bin = std::make_unique<BinaryExpr>();
      INGOT_RETURN_IF_ERROR(ParseOperator(bin.get()));
      // `^` is right-associative, everything else left-associative.
      const int next = precedence == kPowPrecedence ? precedence : precedence + 1;
      INGOT_RETURN_IF_ERROR(ParseExpr(next, &bin->rhs));
      bin->lhs = std::move(*out);
      bin->type = bin->lhs->type == ValueType::kScalar && bin->rhs->type == ValueType::kScalar
                      ? ValueType::kScalar
                      : ValueType::kVector;
      bin->pos = {bin->lhs->pos.start, bin->rhs->pos.end};
      bin->height = 1 + std::max(bin->lhs->height, bin->rhs->height);
      INGOT_RETURN_IF_ERROR(CheckHeight(*bin));
      *out = std::move(bin);
    }
  }

  // op [bool] [on|ignoring (labels) [group_left|group_right [(labels)]]]
  [[gnu::noinline]] Status ParseOperator(BinaryExpr* bin) {
    bin->op = ToBinaryOp(tok_.kind);
    bin->op_pos = tok_.pos;
    Advance();
    if (tok_.kind == Tok::kBool) {
      bin->return_bool = true;
      Advance();
    }
    if (tok_.kind != Tok::kOn && tok_.kind != Tok::kIgnoring) return Status::OK();
    bin->matching.on = tok_.kind == Tok::kOn;
    Advance();
    INGOT_RETURN_IF_ERROR(ParseGroupingLabels(&bin->matching.matching_labels));
    if (tok_.kind != Tok::kGroupLeft && tok_.kind != Tok::kGroupRight) return Status::OK();
    bin->matching.card =
        tok_.kind == Tok::kGroupLeft ? Cardinality::kManyToOne : Cardinality::kOneToMany;
    Advance();
    // As in Prometheus, a parenthesis right after group_x is its label list.
    if (tok_.kind == Tok::kLeftParen) {
      INGOT_RETURN_IF_ERROR(ParseGroupingLabels(&bin->matching.include));
    }
    return Status::OK();
  }

  // ( [label {, label} [,]] )
  [[gnu::noinline]] Status ParseGroupingLabels(std::vector<std::string>* labels) {
    if (tok_.kind != Tok::kLeftParen) return Unexpected("grouping opts", "\"(\"");
    Advance();
    labels->clear();
    while (tok_.kind != Tok::kRightParen) {
      if (CanBeLabelName(tok_.kind)) {
        labels->emplace_back(tok_.text);
      } else if (tok_.kind == Tok::kString) {
        std::string label;
        INGOT_RETURN_IF_ERROR(TokenString(&label));
        if (label.empty()) return Unexpected("grouping opts", "label");
        labels->push_back(std::move(label));
      } else {
        return Unexpected("grouping opts", "label");
      }
      Advance();
      if (tok_.kind == Tok::kComma) {
        Advance();
      } else if (tok_.kind != Tok::kRightParen) {
        return Unexpected("grouping opts", "\",\" or \")\"");
      }
    }
    Advance();
    return Status::OK();
  }

  // A sign binds less tightly than `^` (-2^2 is -4) and as tightly as `*`; on a number literal
  // it is folded into the literal.
  Status ParseUnary(std::unique_ptr<Expr>* out) {
    if (tok_.kind != Tok::kAdd && tok_.kind != Tok::kSub) return ParsePostfix(out);
    const bool negative = tok_.kind == Tok::kSub;
    const std::uint32_t sign_pos = tok_.pos;
    Advance();
    INGOT_RETURN_IF_ERROR(ParseExpr(kPowPrecedence, out));
    return ApplySign(negative, sign_pos, out);
  }

  [[gnu::noinline]] Status ApplySign(bool negative, std::uint32_t sign_pos,
                                     std::unique_ptr<Expr>* operand) {
    if ((*operand)->kind == NodeKind::kNumberLiteral) {
      auto& number = (*operand)->As<NumberLiteral>();
      if (negative) number.value = -number.value;
      number.pos.start = sign_pos;
      return Status::OK();
    }
    auto unary = std::make_unique<UnaryExpr>();
    unary->op = negative ? BinaryOp::kSub : BinaryOp::kAdd;
    unary->type = (*operand)->type;
    unary->pos = {sign_pos, (*operand)->pos.end};
    unary->height = 1 + (*operand)->height;
    unary->expr = std::move(*operand);
    INGOT_RETURN_IF_ERROR(CheckHeight(*unary));
    *operand = std::move(unary);
    return Status::OK();
  }

  // A primary expression followed by any number of [range], [range:step], offset and @.
  Status ParsePostfix(std::unique_ptr<Expr>* out) {
    INGOT_RETURN_IF_ERROR(ParsePrimary(out));
    for (;;) {
      switch (tok_.kind) {
        case Tok::kLeftBracket: INGOT_RETURN_IF_ERROR(ParseRangeOrSubquery(out)); break;
        case Tok::kOffset: INGOT_RETURN_IF_ERROR(ParseOffset(out->get())); break;
        case Tok::kAt: INGOT_RETURN_IF_ERROR(ParseAt(out->get())); break;
        default: return Status::OK();
      }
    }
  }

  Status ParsePrimary(std::unique_ptr<Expr>* out) {
    switch (tok_.kind) {
      case Tok::kNumber:
      case Tok::kDuration:
      case Tok::kString: return ParseLiteral(out);
      case Tok::kLeftParen: return ParseParen(out);
      case Tok::kLeftBrace: return ParseVectorSelector(out);
      case Tok::kIdentifier:
      case Tok::kStart:
      case Tok::kEnd:
      case Tok::kStep:
        if (PeekKind() == Tok::kLeftParen) return ParseCall(out);
        return ParseVectorSelector(out);
      default: break;
    }
    if (IsAggregatorTok(tok_.kind)) {
      const Tok next = PeekKind();
      if (next == Tok::kLeftParen || next == Tok::kBy || next == Tok::kWithout) {
        return ParseAggregate(out);
      }
    }
    if (CanBeMetricName(tok_.kind)) return ParseVectorSelector(out);
    return Unexpected("", "");
  }

  Status ParseParen(std::unique_ptr<Expr>* out) {
    auto paren = std::make_unique<ParenExpr>();
    paren->pos.start = tok_.pos;
    Advance();
    INGOT_RETURN_IF_ERROR(ParseExpr(0, &paren->expr));
    if (tok_.kind != Tok::kRightParen) return Unexpected("", "\")\"");
    Advance();
    paren->pos.end = prev_end_;
    paren->type = paren->expr->type;
    paren->height = 1 + paren->expr->height;
    INGOT_RETURN_IF_ERROR(CheckHeight(*paren));
    *out = std::move(paren);
    return Status::OK();
  }

  // [metric_name] [{ matchers }]
  [[gnu::noinline]] Status ParseVectorSelector(std::unique_ptr<Expr>* out) {
    auto vs = std::make_unique<VectorSelector>();
    vs->pos.start = tok_.pos;
    if (tok_.kind != Tok::kLeftBrace) {
      vs->metric_name.assign(tok_.text);
      LabelMatcher m;
      INGOT_RETURN_IF_ERROR(
          MakeMatcher(std::string(kMetricNameLabel), MatchOp::kEqual, vs->metric_name, &m));
      vs->selector.matchers.push_back(std::move(m));
      Advance();
    }
    if (tok_.kind == Tok::kLeftBrace) INGOT_RETURN_IF_ERROR(ParseLabelMatchers(vs.get()));
    vs->pos.end = prev_end_;
    *out = std::move(vs);
    return Status::OK();
  }

  static bool MatchOpOf(Tok t, MatchOp* op) {
    switch (t) {
      case Tok::kAssign: *op = MatchOp::kEqual; return true;
      case Tok::kNeq: *op = MatchOp::kNotEqual; return true;
      case Tok::kEqlRegex: *op = MatchOp::kRegexMatch; return true;
      case Tok::kNeqRegex: *op = MatchOp::kRegexNoMatch; return true;
      default: return false;
    }
  }

  // { [matcher {, matcher} [,]] } where a matcher is `name op "value"`, `"name" op "value"` or
  // a lone `"metric name"`.
  Status ParseLabelMatchers(VectorSelector* vs) {
    Advance();
    while (tok_.kind != Tok::kRightBrace) {
      const std::uint32_t name_pos = tok_.pos;
      std::string name;
      const bool quoted = tok_.kind == Tok::kString;
      if (quoted) {
        INGOT_RETURN_IF_ERROR(TokenString(&name));
      } else if (tok_.kind == Tok::kIdentifier) {
        name.assign(tok_.text);
      } else {
        return Unexpected("label matching", "identifier or \"}\"");
      }
      Advance();
      MatchOp op = MatchOp::kEqual;
      std::string value;
      if (MatchOpOf(tok_.kind, &op)) {
        Advance();
        if (tok_.kind != Tok::kString) return Unexpected("label matching", "string");
        INGOT_RETURN_IF_ERROR(TokenString(&value));
        Advance();
      } else if (quoted) {
        value = std::move(name);
        name.assign(kMetricNameLabel);
      } else {
        return Unexpected("label matching", "label matching operator");
      }
      LabelMatcher m;
      const Status st = MakeMatcher(std::move(name), op, std::move(value), &m);
      if (!st.ok()) return ErrorAt(name_pos, st.message());
      vs->selector.matchers.push_back(std::move(m));
      if (tok_.kind == Tok::kComma) {
        Advance();
      } else if (tok_.kind != Tok::kRightBrace) {
        return Unexpected("label matching", "\",\" or \"}\"");
      }
    }
    Advance();
    return Status::OK();
  }

  // ( [expr {, expr}] ), the arguments of a call or an aggregation.
  Status ParseArguments(std::vector<std::unique_ptr<Expr>>* args) {
    Advance();
    if (tok_.kind == Tok::kRightParen) {
      Advance();
      return Status::OK();
    }
    for (;;) {
      args->emplace_back();
      INGOT_RETURN_IF_ERROR(ParseExpr(0, &args->back()));
      if (tok_.kind == Tok::kRightParen) {
        Advance();
        return Status::OK();
      }
      if (tok_.kind != Tok::kComma) return Unexpected("", "\",\" or \")\"");
      Advance();
      if (tok_.kind == Tok::kRightParen) return TrailingComma();
    }
  }

  [[gnu::noinline]] Status TrailingComma() const {
    return ErrorAt(prev_end_ - 1, "trailing commas not allowed in function call args");
  }

  Status ParseCall(std::unique_ptr<Expr>* out) {
    auto call = std::make_unique<Call>();
    call->pos.start = tok_.pos;
    const std::string_view name = tok_.text;
    Advance();
    INGOT_RETURN_IF_ERROR(ParseArguments(&call->args));
    INGOT_RETURN_IF_ERROR(FinishCall(name, call.get()));
    *out = std::move(call);
    return Status::OK();
  }

  [[gnu::noinline]] Status FinishCall(std::string_view name, Call* call) {
    call->pos.end = prev_end_;
    call->func = FindFunction(name);
    if (call->func == nullptr) {
      std::string message = "unknown function with name ";
      message.append(Quoted(name));
      return ErrorAt(call->pos.start, message);
    }
    if (call->func->experimental && !options_.experimental_functions) {
      std::string message = "function ";
      message.append(Quoted(name));
      message.append(" is not enabled");
      return ErrorAt(call->pos.start, message);
    }
    call->type = call->func->return_type;
    for (const auto& arg : call->args) call->height = std::max(call->height, 1 + arg->height);
    return CheckHeight(*call);
  }

  [[gnu::noinline]] Status ParseAggregateModifier(AggregateExpr* agg) {
    agg->without = tok_.kind == Tok::kWithout;
    Advance();
    return ParseGroupingLabels(&agg->grouping);
  }

  // op [by|without (labels)] ( [param,] expr ) [by|without (labels)]
  Status ParseAggregate(std::unique_ptr<Expr>* out) {
    auto agg = std::make_unique<AggregateExpr>();
    agg->op = static_cast<AggregateOp>(static_cast<int>(tok_.kind) - static_cast<int>(Tok::kSum));
    agg->pos.start = tok_.pos;
    Advance();
    const bool modifier_first = tok_.kind == Tok::kBy || tok_.kind == Tok::kWithout;
    if (modifier_first) INGOT_RETURN_IF_ERROR(ParseAggregateModifier(agg.get()));
    if (tok_.kind != Tok::kLeftParen) return Unexpected("aggregation", "");
    std::vector<std::unique_ptr<Expr>> args;
    INGOT_RETURN_IF_ERROR(ParseArguments(&args));
    if (!modifier_first && (tok_.kind == Tok::kBy || tok_.kind == Tok::kWithout)) {
      INGOT_RETURN_IF_ERROR(ParseAggregateModifier(agg.get()));
    }
    INGOT_RETURN_IF_ERROR(FinishAggregate(&args, agg.get()));
    *out = std::move(agg);
    return Status::OK();
  }

  [[gnu::noinline]] Status FinishAggregate(std::vector<std::unique_ptr<Expr>>* args,
                                           AggregateExpr* agg) {
    agg->pos.end = prev_end_;
    if (args->empty()) {
      return ErrorAt(agg->pos.start, "no arguments for aggregate expression provided");
    }
    std::size_t wanted = 1;
    if (TakesParameter(agg->op)) {
      if ((agg->op == AggregateOp::kLimitk || agg->op == AggregateOp::kLimitRatio) &&
          !options_.experimental_functions) {
        std::string message(AggregateOpName(agg->op));
        message.append("() is experimental and not enabled");
        return ErrorAt(agg->pos.start, message);
      }
      wanted = 2;
    }
    if (args->size() != wanted) {
      std::string message = "wrong number of arguments for aggregate expression provided, ";
      message.append("expected ");
      message.append(Int(static_cast<std::int64_t>(wanted)));
      message.append(", got ");
      message.append(Int(static_cast<std::int64_t>(args->size())));
      return ErrorAt(agg->pos.start, message);
    }
    if (wanted == 2) agg->param = std::move(args->front());
    agg->expr = std::move(args->back());
    agg->height = 1 + std::max(MaxHeight(agg->expr), MaxHeight(agg->param));
    return CheckHeight(*agg);
  }

  // [range] after a vector selector, or [range:step] / [range:] after any expression.
  [[gnu::noinline]] Status ParseRangeOrSubquery(std::unique_ptr<Expr>* expr) {
    const std::uint32_t bracket = tok_.pos;
    Advance();
    if (!IsDurationOrNumber(tok_.kind)) {
      return Unexpected("subquery selector", "number or duration");
    }
    std::int64_t range_ns = 0;
    INGOT_RETURN_IF_ERROR(TokenDurationNs(&range_ns));
    if (range_ns <= 0) return ErrorAt(tok_.pos, "duration must be greater than 0");
    Advance();
    if (tok_.kind == Tok::kRightBracket) {
      Advance();
      Expr* e = expr->get();
      if (e->kind != NodeKind::kVectorSelector) {
        return ErrorAt(bracket, "ranges only allowed for vector selectors");
      }
      if (e->As<VectorSelector>().time.offset_ns != 0) {
        return ErrorAt(bracket, "no offset modifiers allowed before range");
      }
      if (e->As<VectorSelector>().time.at != AtModifier::kNone) {
        return ErrorAt(bracket, "no @ modifiers allowed before range");
      }
      auto matrix = std::make_unique<MatrixSelector>();
      matrix->vector.reset(static_cast<VectorSelector*>(expr->release()));
      matrix->range_ns = range_ns;
      matrix->pos = {matrix->vector->pos.start, prev_end_};
      matrix->height = 1 + matrix->vector->height;
      *expr = std::move(matrix);
      return Status::OK();
    }
    if (tok_.kind != Tok::kColon) return Unexpected("subquery or range", "\":\" or \"]\"");
    Advance();
    auto sub = std::make_unique<Subquery>();
    sub->range_ns = range_ns;
    if (IsDurationOrNumber(tok_.kind)) {
      INGOT_RETURN_IF_ERROR(TokenDurationNs(&sub->step_ns));
      Advance();
      if (tok_.kind != Tok::kRightBracket) return Unexpected("subquery selector", "\"]\"");
    } else if (tok_.kind != Tok::kRightBracket) {
      return Unexpected("subquery selector", "number or duration or \"]\"");
    }
    Advance();
    sub->pos = {(*expr)->pos.start, prev_end_};
    sub->height = 1 + (*expr)->height;
    sub->expr = std::move(*expr);
    INGOT_RETURN_IF_ERROR(CheckHeight(*sub));
    *expr = std::move(sub);
    return Status::OK();
  }

  // offset [-]duration
  [[gnu::noinline]] Status ParseOffset(Expr* e) {
    Advance();
    const bool negative = tok_.kind == Tok::kSub;
    if (negative) Advance();
    if (!IsDurationOrNumber(tok_.kind)) return Unexpected("offset", "number or duration");
    std::int64_t ns = 0;
    INGOT_RETURN_IF_ERROR(TokenDurationNs(&ns));
    Advance();
    TimeModifiers* time = ModifiersOf(e);
    if (time == nullptr) {
      return ErrorAt(e->pos.start,
                     "offset modifier must be preceded by an instant vector selector or range "
                     "vector selector or a subquery");
    }
    if (time->offset_ns != 0) return ErrorAt(e->pos.start, "offset may not be set multiple times");
    time->offset_ns = negative ? -ns : ns;
    e->pos.end = prev_end_;
    return Status::OK();
  }

  // @ [+|-]number | @ duration | @ start() | @ end()
  [[gnu::noinline]] Status ParseAt(Expr* e) {
    Advance();
    AtModifier at = AtModifier::kTimestamp;
    std::int64_t at_ns = 0;
    if (tok_.kind == Tok::kStart || tok_.kind == Tok::kEnd) {
      at = tok_.kind == Tok::kStart ? AtModifier::kStart : AtModifier::kEnd;
      Advance();
      if (tok_.kind != Tok::kLeftParen) return Unexpected("@", "timestamp");
      Advance();
      if (tok_.kind != Tok::kRightParen) return Unexpected("@", "timestamp");
      Advance();
    } else {
      const bool negative = tok_.kind == Tok::kSub;
      if (negative || tok_.kind == Tok::kAdd) Advance();
      if (!IsDurationOrNumber(tok_.kind)) return Unexpected("@", "timestamp");
      double seconds = 0;
      if (tok_.kind == Tok::kNumber) {
        INGOT_RETURN_IF_ERROR(TokenNumber(&seconds));
      } else {
        std::int64_t ns = 0;
        INGOT_RETURN_IF_ERROR(TokenDurationNs(&ns));
        seconds = Seconds(ns);
      }
      Advance();
      if (negative) seconds = -seconds;
      const double ms = std::round(seconds * 1000);
      if (!(std::fabs(ms) < static_cast<double>(kMaxTimeMagnitudeNs / kNsPerMilli))) {
        std::string message = "timestamp out of bounds for @ modifier: ";
        if (std::isnan(seconds)) {
          message.append("NaN");
        } else if (std::isinf(seconds)) {
          message.append(seconds > 0 ? "+Inf" : "-Inf");
        } else {
          message.append(std::to_string(seconds));  // %f, as Prometheus writes it
        }
        return ErrorAt(e->pos.start, message);
      }
      at_ns = static_cast<std::int64_t>(ms) * kNsPerMilli;
    }
    TimeModifiers* time = ModifiersOf(e);
    if (time == nullptr) {
      return ErrorAt(e->pos.start,
                     "@ modifier must be preceded by an instant vector selector or range vector "
                     "selector or a subquery");
    }
    if (time->at != AtModifier::kNone) {
      return ErrorAt(e->pos.start, "@ <timestamp> may not be set multiple times");
    }
    time->at = at;
    time->at_ns = at_ns;
    e->pos.end = prev_end_;
    return Status::OK();
  }

  // --- Type checks: Prometheus' checkAST, in its order. Recursion is bounded by the height. ---

  Status Check(Expr* e) {
    switch (e->kind) {
      case NodeKind::kNumberLiteral:
      case NodeKind::kStringLiteral: return Status::OK();
      case NodeKind::kVectorSelector: return CheckSelector(e->As<VectorSelector>());
      case NodeKind::kMatrixSelector: return Check(e->As<MatrixSelector>().vector.get());
      case NodeKind::kParen: return Check(e->As<ParenExpr>().expr.get());
      case NodeKind::kSubquery: {
        Expr* inner = e->As<Subquery>().expr.get();
        INGOT_RETURN_IF_ERROR(Check(inner));
        return inner->type == ValueType::kVector ? Status::OK() : SubqueryTypeError(*e, *inner);
      }
      case NodeKind::kUnary: {
        Expr* inner = e->As<UnaryExpr>().expr.get();
        INGOT_RETURN_IF_ERROR(Check(inner));
        const bool ok = inner->type == ValueType::kScalar || inner->type == ValueType::kVector;
        return ok ? Status::OK() : UnaryTypeError(*e, *inner);
      }
      case NodeKind::kAggregate: {
        auto& agg = e->As<AggregateExpr>();
        INGOT_RETURN_IF_ERROR(
            ExpectType(agg.expr.get(), ValueType::kVector, TypeContext::kAggregationExpression));
        if (agg.param == nullptr) return Status::OK();
        const ValueType want =
            agg.op == AggregateOp::kCountValues ? ValueType::kString : ValueType::kScalar;
        return ExpectType(agg.param.get(), want, TypeContext::kAggregationParameter);
      }
      case NodeKind::kBinary: {
        auto& bin = e->As<BinaryExpr>();
        INGOT_RETURN_IF_ERROR(Check(bin.lhs.get()));
        INGOT_RETURN_IF_ERROR(Check(bin.rhs.get()));
        return CheckOperands(&bin);
      }
      case NodeKind::kCall: {
        auto& call = e->As<Call>();
        INGOT_RETURN_IF_ERROR(CheckArgumentCount(&call));
        const Function& f = *call.func;
        for (std::size_t i = 0; i < call.args.size(); ++i) {
          std::size_t k = i;
          if (k >= static_cast<std::size_t>(f.num_args)) {
            if (f.variadic == 0) break;
            k = static_cast<std::size_t>(f.num_args) - 1;
          }
          INGOT_RETURN_IF_ERROR(
              ExpectType(call.args[i].get(), f.arg_types[k], TypeContext::kCall, &f));
        }
        return Status::OK();
      }
    }
    return Status::OK();
  }

  Status ExpectType(Expr* e, ValueType want, TypeContext context, const Function* f = nullptr) {
    INGOT_RETURN_IF_ERROR(Check(e));
    return e->type == want ? Status::OK() : TypeError(e->pos.start, want, context, f, e->type);
  }

  [[gnu::noinline]] Status TypeError(std::uint32_t pos, ValueType want, TypeContext context,
                                     const Function* f, ValueType got) const {
    std::string message = "expected type ";
    message.append(ValueTypeName(want));
    switch (context) {
      case TypeContext::kAggregationExpression: message.append(" in aggregation expression"); break;
      case TypeContext::kAggregationParameter: message.append(" in aggregation parameter"); break;
      case TypeContext::kCall:
        message.append(" in call to function ");
        message.append(Quoted(f->name));
        break;
    }
    message.append(", got ");
    message.append(ValueTypeName(got));
    return ErrorAt(pos, message);
  }

  [[gnu::noinline]] Status SubqueryTypeError(const Expr& sub, const Expr& inner) const {
    std::string message = "subquery is only allowed on instant vector, got ";
    message.append(ValueTypeName(inner.type));
    message.append(" instead");
    return ErrorAt(sub.pos.start, message);
  }

  [[gnu::noinline]] Status UnaryTypeError(const Expr& unary, const Expr& inner) const {
    std::string message =
        "unary expression only allowed on expressions of type scalar or instant vector, got ";
    message.append(Quoted(ValueTypeName(inner.type)));
    return ErrorAt(unary.pos.start, message);
  }

  [[gnu::noinline]] Status CheckSelector(VectorSelector& vs) const {
    if (!vs.metric_name.empty()) {
      for (std::size_t i = 1; i < vs.selector.matchers.size(); ++i) {
        const LabelMatcher& m = vs.selector.matchers[i];
        if (m.name == kMetricNameLabel) {
          std::string message = "metric name must not be set twice: ";
          message.append(Quoted(vs.metric_name));
          message.append(" or ");
          message.append(Quoted(m.value));
          return ErrorAt(vs.pos.start, message);
        }
      }
      return Status::OK();
    }
    if (vs.bypass_empty_matcher_check) return Status::OK();
    for (const LabelMatcher& m : vs.selector.matchers) {
      if (!m.Matches("")) return Status::OK();
    }
    return ErrorAt(vs.pos.start, "vector selector must contain at least one non-empty matcher");
  }

  // The checks of a binary expression itself, once both sides are checked.
  [[gnu::noinline]] Status CheckOperands(BinaryExpr* bin) const {
    const ValueType lt = bin->lhs->type;
    const ValueType rt = bin->rhs->type;
    const bool comparison = IsComparison(bin->op);
    const bool set = IsSetOperator(bin->op);
    if (bin->return_bool && !comparison) {
      return ErrorAt(bin->op_pos, "bool modifier can only be used on comparison operators");
    }
    if (comparison && !bin->return_bool && lt == ValueType::kScalar && rt == ValueType::kScalar) {
      return ErrorAt(bin->op_pos, "comparisons between scalars must use BOOL modifier");
    }
    VectorMatching& vm = bin->matching;
    if (set && vm.card == Cardinality::kOneToOne) vm.card = Cardinality::kManyToMany;
    if (vm.on) {
      for (const std::string& label : vm.matching_labels) {
        if (std::find(vm.include.begin(), vm.include.end(), label) != vm.include.end()) {
          std::string message = "label ";
          message.append(Quoted(label));
          message.append(" must not occur in ON and GROUP clause at once");
          return ErrorAt(bin->op_pos, message);
        }
      }
    }
    const char* const kOperands =
        "binary expression must contain only scalar and instant vector types";
    if (lt != ValueType::kScalar && lt != ValueType::kVector) {
      return ErrorAt(bin->lhs->pos.start, kOperands);
    }
    if (rt != ValueType::kScalar && rt != ValueType::kVector) {
      return ErrorAt(bin->rhs->pos.start, kOperands);
    }
    if (lt != ValueType::kVector || rt != ValueType::kVector) {
      if (!vm.matching_labels.empty()) {
        return ErrorAt(bin->pos.start, "vector matching only allowed between instant vectors");
      }
      vm = VectorMatching{};
    } else if (set && vm.card != Cardinality::kManyToMany) {
      std::string message = "no grouping allowed for ";
      message.append(Quoted(BinaryOpName(bin->op)));
      message.append(" operation");
      return ErrorAt(bin->pos.start, message);
    }
    if (set && (lt == ValueType::kScalar || rt == ValueType::kScalar)) {
      std::string message = "set operator ";
      message.append(Quoted(BinaryOpName(bin->op)));
      message.append(" not allowed in binary scalar expression");
      return ErrorAt(bin->pos.start, message);
    }
    return Status::OK();
  }

  // The number of arguments, and info()'s label selector, before the arguments' own checks.
  [[gnu::noinline]] Status CheckArgumentCount(Call* call) const {
    const Function& f = *call->func;
    const auto nargs = static_cast<std::size_t>(f.num_args);
    const std::size_t got = call->args.size();
    auto count_error = [&](std::string_view bound, std::size_t n) {
      std::string message = "expected ";
      message.append(bound);
      message.append(Int(static_cast<std::int64_t>(n)));
      message.append(" argument(s) in call to ");
      message.append(Quoted(f.name));
      message.append(", got ");
      message.append(Int(static_cast<std::int64_t>(got)));
      return ErrorAt(call->pos.start, message);
    };
    if (f.variadic == 0) {
      if (got != nargs) return count_error("", nargs);
    } else if (got + 1 < nargs) {
      return count_error("at least ", nargs - 1);
    } else if (f.variadic > 0 && got > nargs - 1 + static_cast<std::size_t>(f.variadic)) {
      return count_error("at most ", nargs - 1 + static_cast<std::size_t>(f.variadic));
    }
    if (f.name == "info" && got > 1) {
      // The second argument selects info series by their labels only.
      Expr* labels = call->args[1].get();
      if (labels->type != ValueType::kVector) {
        return TypeError(call->pos.start, ValueType::kVector, TypeContext::kCall, &f, labels->type);
      }
      if (labels->kind != NodeKind::kVectorSelector) {
        return ErrorAt(labels->pos.start, "expected label selectors only");
      }
      auto& vs = labels->As<VectorSelector>();
      if (!vs.metric_name.empty()) {
        return ErrorAt(labels->pos.start,
                       "expected label selectors only, got vector selector instead");
      }
      vs.bypass_empty_matcher_check = true;
    }
    return Status::OK();
  }

  std::string_view query_;
  Lexer lexer_;
  const ParseOptions& options_;
  Token tok_;
  Token peek_;
  bool has_peek_ = false;
  std::uint32_t prev_end_ = 0;  // end of the last token consumed
  int depth_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Printer

void AppendDuration(std::int64_t ns, std::string* out) { out->append(FormatDuration(ns)); }

[[gnu::noinline]] void AppendLabelList(const std::vector<std::string>& labels, std::string* out) {
  out->push_back('(');
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out->append(", ");
    AppendLabelName(labels[i], out);
  }
  out->push_back(')');
}

[[gnu::noinline]] void AppendModifiers(const TimeModifiers& time, std::string* out) {
  switch (time.at) {
    case AtModifier::kNone: break;
    case AtModifier::kStart: out->append(" @ start()"); break;
    case AtModifier::kEnd: out->append(" @ end()"); break;
    case AtModifier::kTimestamp: {
      // Seconds with milliseconds, as Prometheus prints them ("@ 100.000").
      const std::int64_t ms = time.at_ns / kNsPerMilli;
      out->append(" @ ");
      if (ms < 0) out->push_back('-');
      const std::uint64_t abs_ms =
          ms < 0 ? 0 - static_cast<std::uint64_t>(ms) : static_cast<std::uint64_t>(ms);
      out->append(std::to_string(abs_ms / 1000));
      char frac[8];
      std::snprintf(frac, sizeof(frac), ".%03u", static_cast<unsigned>(abs_ms % 1000));
      out->append(frac);
      break;
    }
  }
  if (time.offset_ns != 0) {
    out->append(" offset ");
    AppendDuration(time.offset_ns, out);
  }
}

std::string_view MatchOpText(MatchOp op) {
  switch (op) {
    case MatchOp::kEqual: return "=";
    case MatchOp::kNotEqual: return "!=";
    case MatchOp::kRegexMatch: return "=~";
    case MatchOp::kRegexNoMatch: return "!~";
  }
  return "=";
}

[[gnu::noinline]] void AppendSelector(const VectorSelector& vs, std::string* out) {
  out->append(vs.metric_name);
  std::vector<std::string> matchers;
  const std::size_t first = vs.metric_name.empty() ? 0 : 1;
  for (std::size_t i = first; i < vs.selector.matchers.size(); ++i) {
    const LabelMatcher& m = vs.selector.matchers[i];
    std::string text;
    AppendLabelName(m.name, &text);
    text.append(MatchOpText(m.op));
    AppendQuoted(m.value, &text);
    matchers.push_back(std::move(text));
  }
  if (matchers.empty() && !vs.metric_name.empty()) return;
  std::sort(matchers.begin(), matchers.end());
  out->push_back('{');
  for (std::size_t i = 0; i < matchers.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(matchers[i]);
  }
  out->push_back('}');
}

void AppendNumber(double v, std::string* out) {
  if (std::isinf(v)) {
    out->append(v > 0 ? "Inf" : "-Inf");
  } else {
    AppendDouble(v, out);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names and the function table

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kNone: return "none";
    case ValueType::kScalar: return "scalar";
    case ValueType::kVector: return "instant vector";
    case ValueType::kMatrix: return "range vector";
    case ValueType::kString: return "string";
  }
  return "none";
}

std::string_view BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return "/";
    case BinaryOp::kMod: return "%";
    case BinaryOp::kPow: return "^";
    case BinaryOp::kAtan2: return "atan2";
    case BinaryOp::kEql: return "==";
    case BinaryOp::kNeq: return "!=";
    case BinaryOp::kGtr: return ">";
    case BinaryOp::kLss: return "<";
    case BinaryOp::kGte: return ">=";
    case BinaryOp::kLte: return "<=";
    case BinaryOp::kAnd: return "and";
    case BinaryOp::kOr: return "or";
    case BinaryOp::kUnless: return "unless";
  }
  return "?";
}

bool IsComparison(BinaryOp op) { return op >= BinaryOp::kEql && op <= BinaryOp::kLte; }
bool IsSetOperator(BinaryOp op) { return op >= BinaryOp::kAnd && op <= BinaryOp::kUnless; }

std::string_view AggregateOpName(AggregateOp op) {
  static constexpr std::string_view kNames[] = {
      "sum",    "avg",  "count",   "min",          "max",      "group",  "stddev",
      "stdvar", "topk", "bottomk", "count_values", "quantile", "limitk", "limit_ratio"};
  return kNames[static_cast<int>(op)];
}

bool TakesParameter(AggregateOp op) {
  switch (op) {
    case AggregateOp::kTopk:
    case AggregateOp::kBottomk:
    case AggregateOp::kCountValues:
    case AggregateOp::kQuantile:
    case AggregateOp::kLimitk:
    case AggregateOp::kLimitRatio: return true;
    default: return false;
  }
}

namespace {

constexpr ValueType kS = ValueType::kScalar;
constexpr ValueType kV = ValueType::kVector;
constexpr ValueType kM = ValueType::kMatrix;
constexpr ValueType kStr = ValueType::kString;

constexpr Function Fn(std::string_view name, std::initializer_list<ValueType> args,
                      ValueType result = kV, int variadic = 0, bool experimental = false) {
  Function f;
  f.name = name;
  for (ValueType t : args) f.arg_types[static_cast<std::size_t>(f.num_args++)] = t;
  f.variadic = variadic;
  f.return_type = result;
  f.experimental = experimental;
  return f;
}

constexpr bool kExperimental = true;

// Prometheus 3.x' functions (promql/parser/functions.go), sorted by name.
constexpr Function kFunctions[] = {
    Fn("abs", {kV}),
    Fn("absent", {kV}),
    Fn("absent_over_time", {kM}),
    Fn("acos", {kV}),
    Fn("acosh", {kV}),
    Fn("asin", {kV}),
    Fn("asinh", {kV}),
    Fn("atan", {kV}),
    Fn("atanh", {kV}),
    Fn("avg_over_time", {kM}),
    Fn("ceil", {kV}),
    Fn("changes", {kM}),
    Fn("clamp", {kV, kS, kS}),
    Fn("clamp_max", {kV, kS}),
    Fn("clamp_min", {kV, kS}),
    Fn("cos", {kV}),
    Fn("cosh", {kV}),
    Fn("count_over_time", {kM}),
    Fn("day_of_month", {kV}, kV, 1),
    Fn("day_of_week", {kV}, kV, 1),
    Fn("day_of_year", {kV}, kV, 1),
    Fn("days_in_month", {kV}, kV, 1),
    Fn("deg", {kV}),
    Fn("delta", {kM}),
    Fn("deriv", {kM}),
    Fn("double_exponential_smoothing", {kM, kS, kS}, kV, 0, kExperimental),
    Fn("end", {}, kS, 0, kExperimental),
    Fn("exp", {kV}),
    Fn("first_over_time", {kM}),
    Fn("floor", {kV}),
    Fn("histogram_avg", {kV}),
    Fn("histogram_count", {kV}),
    Fn("histogram_fraction", {kS, kS, kV}),
    Fn("histogram_quantile", {kS, kV}),
    Fn("histogram_quantiles", {kV, kStr, kS, kS}, kV, -1, kExperimental),
    Fn("histogram_stddev", {kV}),
    Fn("histogram_stdvar", {kV}),
    Fn("histogram_sum", {kV}),
    Fn("hour", {kV}, kV, 1),
    Fn("idelta", {kM}),
    Fn("increase", {kM}),
    Fn("info", {kV, kV}, kV, 1, kExperimental),
    Fn("irate", {kM}),
    Fn("label_join", {kV, kStr, kStr, kStr}, kV, -1),
    Fn("label_replace", {kV, kStr, kStr, kStr, kStr}),
    Fn("last_over_time", {kM}),
    Fn("ln", {kV}),
    Fn("log10", {kV}),
    Fn("log2", {kV}),
    Fn("mad_over_time", {kM}, kV, 0, kExperimental),
    Fn("max_of", {kS, kS}, kS, 0, kExperimental),
    Fn("max_over_time", {kM}),
    Fn("min_of", {kS, kS}, kS, 0, kExperimental),
    Fn("min_over_time", {kM}),
    Fn("minute", {kV}, kV, 1),
    Fn("month", {kV}, kV, 1),
    Fn("pi", {}, kS),
    Fn("predict_linear", {kM, kS}),
    Fn("present_over_time", {kM}),
    Fn("quantile_over_time", {kS, kM}),
    Fn("rad", {kV}),
    Fn("range", {}, kS, 0, kExperimental),
    Fn("rate", {kM}),
    Fn("resets", {kM}),
    Fn("round", {kV, kS}, kV, 1),
    Fn("scalar", {kV}, kS),
    Fn("sgn", {kV}),
    Fn("sin", {kV}),
    Fn("sinh", {kV}),
    Fn("sort", {kV}),
    Fn("sort_by_label", {kV, kStr}, kV, -1, kExperimental),
    Fn("sort_by_label_desc", {kV, kStr}, kV, -1, kExperimental),
    Fn("sort_desc", {kV}),
    Fn("sqrt", {kV}),
    Fn("start", {}, kS, 0, kExperimental),
    Fn("stddev_over_time", {kM}),
    Fn("stdvar_over_time", {kM}),
    Fn("step", {}, kS, 0, kExperimental),
    Fn("sum_over_time", {kM}),
    Fn("tan", {kV}),
    Fn("tanh", {kV}),
    Fn("time", {}, kS),
    Fn("timestamp", {kV}),
    Fn("ts_of_first_over_time", {kM}, kV, 0, kExperimental),
    Fn("ts_of_last_over_time", {kM}, kV, 0, kExperimental),
    Fn("ts_of_max_over_time", {kM}, kV, 0, kExperimental),
    Fn("ts_of_min_over_time", {kM}, kV, 0, kExperimental),
    Fn("vector", {kS}),
    Fn("year", {kV}, kV, 1),
};

}  // namespace

std::span<const Function> Functions() { return kFunctions; }

const Function* FindFunction(std::string_view name) {
  const auto it =
      std::lower_bound(std::begin(kFunctions), std::end(kFunctions), name,
                       [](const Function& f, std::string_view n) { return f.name < n; });
  return it != std::end(kFunctions) && it->name == name ? &*it : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Entry points

Status Parse(std::string_view query, std::unique_ptr<Expr>* out, const ParseOptions& options) {
  Parser parser(query, options);
  return parser.Parse(out);
}

Status Parse(std::string_view query, std::unique_ptr<Expr>* out) {
  return Parse(query, out, ParseOptions{});
}

void AppendExpr(const Expr& e, std::string* out) {
  switch (e.kind) {
    case NodeKind::kNumberLiteral: AppendNumber(e.As<NumberLiteral>().value, out); return;
    case NodeKind::kStringLiteral: AppendQuoted(e.As<StringLiteral>().value, out); return;
    case NodeKind::kVectorSelector: {
      const auto& vs = e.As<VectorSelector>();
      AppendSelector(vs, out);
      AppendModifiers(vs.time, out);
      return;
    }
    case NodeKind::kMatrixSelector: {
      const auto& ms = e.As<MatrixSelector>();
      AppendSelector(*ms.vector, out);
      out->push_back('[');
      AppendDuration(ms.range_ns, out);
      out->push_back(']');
      AppendModifiers(ms.vector->time, out);
      return;
    }
    case NodeKind::kSubquery: {
      const auto& sub = e.As<Subquery>();
      AppendExpr(*sub.expr, out);
      out->push_back('[');
      AppendDuration(sub.range_ns, out);
      out->push_back(':');
      if (sub.step_ns != 0) AppendDuration(sub.step_ns, out);
      out->push_back(']');
      AppendModifiers(sub.time, out);
      return;
    }
    case NodeKind::kUnary: {
      const auto& unary = e.As<UnaryExpr>();
      out->append(BinaryOpName(unary.op));
      AppendExpr(*unary.expr, out);
      return;
    }
    case NodeKind::kBinary: {
      const auto& bin = e.As<BinaryExpr>();
      // The parser never puts a negative literal left of `^` (-2^2 is -(2^2)); keep it that way.
      const bool wrap = bin.op == BinaryOp::kPow && bin.lhs->kind == NodeKind::kNumberLiteral &&
                        std::signbit(bin.lhs->As<NumberLiteral>().value);
      if (wrap) out->push_back('(');
      AppendExpr(*bin.lhs, out);
      if (wrap) out->push_back(')');
      out->push_back(' ');
      out->append(BinaryOpName(bin.op));
      if (bin.return_bool) out->append(" bool");
      const VectorMatching& vm = bin.matching;
      const bool grouped = vm.card == Cardinality::kManyToOne || vm.card == Cardinality::kOneToMany;
      if (vm.on || !vm.matching_labels.empty() || grouped) {
        out->append(vm.on ? " on " : " ignoring ");
        AppendLabelList(vm.matching_labels, out);
        if (grouped) {
          out->append(vm.card == Cardinality::kManyToOne ? " group_left " : " group_right ");
          AppendLabelList(vm.include, out);
        }
      }
      out->push_back(' ');
      AppendExpr(*bin.rhs, out);
      return;
    }
    case NodeKind::kAggregate: {
      const auto& agg = e.As<AggregateExpr>();
      out->append(AggregateOpName(agg.op));
      if (agg.without || !agg.grouping.empty()) {
        out->append(agg.without ? " without " : " by ");
        AppendLabelList(agg.grouping, out);
        out->push_back(' ');
      }
      out->push_back('(');
      if (agg.param != nullptr) {
        AppendExpr(*agg.param, out);
        out->append(", ");
      }
      AppendExpr(*agg.expr, out);
      out->push_back(')');
      return;
    }
    case NodeKind::kCall: {
      const auto& call = e.As<Call>();
      out->append(call.func->name);
      out->push_back('(');
      for (std::size_t i = 0; i < call.args.size(); ++i) {
        if (i > 0) out->append(", ");
        AppendExpr(*call.args[i], out);
      }
      out->push_back(')');
      return;
    }
    case NodeKind::kParen:
      out->push_back('(');
      AppendExpr(*e.As<ParenExpr>().expr, out);
      out->push_back(')');
      return;
  }
}

std::string ToString(const Expr& expr) {
  std::string out;
  AppendExpr(expr, &out);
  return out;
}

}  // namespace ingot::promql
