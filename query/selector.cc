#include "query/selector.h"

#include <algorithm>
#include <cstdint>

namespace ingot {
namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

void SkipSpace(std::string_view text, std::size_t* pos) {
  while (*pos < text.size() &&
         (text[*pos] == ' ' || text[*pos] == '\t' || text[*pos] == '\n' || text[*pos] == '\r')) {
    ++*pos;
  }
}

Status ErrorAt(std::string_view text, std::size_t pos, std::string_view what) {
  std::string message(what);
  message += " at offset ";
  message += std::to_string(pos);
  message += ", found ";
  if (pos < text.size()) {
    message += '\'';
    message += text[pos];
    message += '\'';
  } else {
    message += "end of input";
  }
  return Status::InvalidArgument(message);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool LabelMatcher::Matches(std::string_view label_value) const {
  switch (op) {
    case MatchOp::kEqual: return label_value == value;
    case MatchOp::kNotEqual: return label_value != value;
    case MatchOp::kRegexMatch: return re2::RE2::FullMatch(label_value, *regex);
    case MatchOp::kRegexNoMatch: return !re2::RE2::FullMatch(label_value, *regex);
  }
  return false;
}

Status MakeMatcher(std::string name, MatchOp op, std::string value, LabelMatcher* out) {
  out->name = std::move(name);
  out->op = op;
  out->value = std::move(value);
  out->regex.reset();
  if (op == MatchOp::kRegexMatch || op == MatchOp::kRegexNoMatch) {
    re2::RE2::Options options;
    options.set_log_errors(false);
    options.set_dot_nl(true);
    auto regex = std::make_shared<re2::RE2>(out->value, options);
    if (!regex->ok()) {
      return Status::InvalidArgument("invalid regular expression \"" + out->value +
                                     "\" for label " + out->name + ": " + regex->error());
    }
    out->regex = std::move(regex);
  }
  return Status::OK();
}

Status ParseStringLiteral(std::string_view text, std::size_t* pos, std::string* out) {
  out->clear();
  const std::size_t start = *pos;
  if (start >= text.size()) return ErrorAt(text, start, "expected a quoted string");
  const char quote = text[start];
  if (quote != '"' && quote != '\'' && quote != '`') {
    return ErrorAt(text, start, "expected a quoted string");
  }
  std::size_t i = start + 1;
  if (quote == '`') {
    const std::size_t end = text.find('`', i);
    if (end == std::string_view::npos) return ErrorAt(text, start, "unterminated raw string");
    out->assign(text.substr(i, end - i));
    *pos = end + 1;
    return Status::OK();
  }
  while (i < text.size()) {
    const char c = text[i];
    if (c == quote) {
      *pos = i + 1;
      return Status::OK();
    }
    if (c == '\n') break;
    if (c != '\\') {
      out->push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= text.size()) break;
    const char e = text[i + 1];
    i += 2;
    switch (e) {
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'v': out->push_back('\v'); break;
      case '\\': out->push_back('\\'); break;
      case '"':
      case '\'':
        if (e != quote) return ErrorAt(text, i - 1, "invalid escape in string");
        out->push_back(e);
        break;
      case 'x':
      case 'u':
      case 'U': {
        const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        std::uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
          const int h = i < text.size() ? HexValue(text[i]) : -1;
          if (h < 0) return ErrorAt(text, i, "invalid hex escape in string");
          v = v * 16 + static_cast<std::uint32_t>(h);
          ++i;
        }
        if (e == 'x') {
          out->push_back(static_cast<char>(v));
        } else {
          if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) {
            return ErrorAt(text, i - 1, "invalid Unicode code point in string");
          }
          AppendUtf8(v, out);
        }
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          std::uint32_t v = static_cast<std::uint32_t>(e - '0');
          for (int k = 0; k < 2; ++k) {
            if (i >= text.size() || text[i] < '0' || text[i] > '7') {
              return ErrorAt(text, i, "invalid octal escape in string");
            }
            v = v * 8 + static_cast<std::uint32_t>(text[i++] - '0');
          }
          if (v > 255) return ErrorAt(text, i - 1, "octal escape out of range in string");
          out->push_back(static_cast<char>(v));
          break;
        }
        return ErrorAt(text, i - 1, "invalid escape in string");
    }
  }
  return ErrorAt(text, start, "unterminated string");
}

Status ParseSelectorAt(std::string_view text, std::size_t* pos, Selector* out) {
  out->matchers.clear();
  const std::size_t begin = *pos;
  SkipSpace(text, pos);
  bool any = false;
  if (*pos < text.size() && (IsNameStart(text[*pos]) || text[*pos] == ':')) {
    const std::size_t start = *pos;
    while (*pos < text.size() && (IsNameChar(text[*pos]) || text[*pos] == ':')) ++*pos;
    LabelMatcher m;
    INGOT_RETURN_IF_ERROR(MakeMatcher(std::string(kMetricNameLabel), MatchOp::kEqual,
                                      std::string(text.substr(start, *pos - start)), &m));
    out->matchers.push_back(std::move(m));
    any = true;
    SkipSpace(text, pos);
  }
  if (*pos < text.size() && text[*pos] == '{') {
    any = true;
    ++*pos;
    for (;;) {
      SkipSpace(text, pos);
      if (*pos < text.size() && text[*pos] == '}') {
        ++*pos;
        break;
      }
      std::string name;
      bool quoted_name = false;
      if (*pos < text.size() && (text[*pos] == '"' || text[*pos] == '\'' || text[*pos] == '`')) {
        INGOT_RETURN_IF_ERROR(ParseStringLiteral(text, pos, &name));
        quoted_name = true;
      } else if (*pos < text.size() && IsNameStart(text[*pos])) {
        const std::size_t start = *pos;
        while (*pos < text.size() && IsNameChar(text[*pos])) ++*pos;
        name.assign(text.substr(start, *pos - start));
      } else {
        return ErrorAt(text, *pos, "expected a label name or '}' in selector");
      }
      SkipSpace(text, pos);
      LabelMatcher m;
      if (quoted_name && *pos < text.size() && (text[*pos] == ',' || text[*pos] == '}')) {
        INGOT_RETURN_IF_ERROR(
            MakeMatcher(std::string(kMetricNameLabel), MatchOp::kEqual, std::move(name), &m));
      } else {
        MatchOp op;
        const std::string_view rest = text.substr(std::min(*pos, text.size()));
        if (rest.starts_with("=~")) {
          op = MatchOp::kRegexMatch;
          *pos += 2;
        } else if (rest.starts_with("!~")) {
          op = MatchOp::kRegexNoMatch;
          *pos += 2;
        } else if (rest.starts_with("!=")) {
          op = MatchOp::kNotEqual;
          *pos += 2;
        } else if (rest.starts_with("=")) {
          op = MatchOp::kEqual;
          *pos += 1;
        } else {
          return ErrorAt(text, *pos,
                         "expected one of =, !=, =~, !~ after label \"" + name + "\"");
        }
        SkipSpace(text, pos);
        std::string value;
        INGOT_RETURN_IF_ERROR(ParseStringLiteral(text, pos, &value));
        INGOT_RETURN_IF_ERROR(MakeMatcher(std::move(name), op, std::move(value), &m));
      }
      out->matchers.push_back(std::move(m));
      SkipSpace(text, pos);
      if (*pos < text.size() && text[*pos] == ',') {
        ++*pos;
        continue;
      }
      if (*pos < text.size() && text[*pos] == '}') {
        ++*pos;
        break;
      }
      return ErrorAt(text, *pos, "expected ',' or '}' in selector");
    }
  }
  if (!any) return ErrorAt(text, *pos, "expected a metric name or '{'");
  bool selective = false;
  for (const LabelMatcher& m : out->matchers) selective = selective || !m.Matches("");
  if (!selective) {
    return Status::InvalidArgument(
        "selector \"" + std::string(text.substr(begin, *pos - begin)) +
        "\" must contain at least one matcher that does not match the empty string");
  }
  return Status::OK();
}

Status ParseSelector(std::string_view text, Selector* out) {
  std::size_t pos = 0;
  INGOT_RETURN_IF_ERROR(ParseSelectorAt(text, &pos, out));
  SkipSpace(text, &pos);
  if (pos != text.size()) return ErrorAt(text, pos, "unexpected text after selector");
  return Status::OK();
}

}  // namespace ingot
