#include "tests/promql/promql_script.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <re2/re2.h>

#include "query/selector.h"
#include "query/text_format.h"

namespace ingot::promqltest {
namespace {

// Patterns come from scripts and expressions; a bad one is reported (or simply does not match),
// not logged by RE2.
re2::RE2::Options QuietRegex() {
  re2::RE2::Options options;
  options.set_log_errors(false);
  return options;
}

// Repetition counts beyond this are a typo, not a test.
constexpr std::uint64_t kMaxRepeat = 10'000'000;

constexpr std::string_view kSpace = " \t\r\n\v\f";

std::string_view Trim(std::string_view s) {
  const std::size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  const std::size_t e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

bool IsSpace(char c) { return kSpace.find(c) != std::string_view::npos; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsMetricNameStart(char c) { return IsAlpha(c) || c == '_' || c == ':'; }
bool IsMetricNameChar(char c) { return IsMetricNameStart(c) || IsDigit(c); }
bool IsLabelNameStart(char c) { return IsAlpha(c) || c == '_'; }
bool IsLabelNameChar(char c) { return IsLabelNameStart(c) || IsDigit(c); }

// The next run of non-space characters of `*rest` (empty at the end); `*rest` moves past it.
std::string_view NextWord(std::string_view* rest) {
  std::string_view s = *rest;
  const std::size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) {
    *rest = {};
    return {};
  }
  s.remove_prefix(b);
  const std::size_t e = std::min(s.find_first_of(kSpace), s.size());
  *rest = s.substr(e);
  return s.substr(0, e);
}

Status Invalid(std::string_view what, std::string_view text) {
  std::string message(what);
  message.append(": \"").append(text).append("\"");
  return Status::InvalidArgument(message);
}

bool ParseRepeat(std::string_view digits, std::uint64_t* n) {
  if (digits.empty()) return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *n);
  return ec == std::errc() && end == digits.data() + digits.size() && *n <= kMaxRepeat;
}

// Go's strconv.ParseInt(s, 0, 64) for the unsigned part: 0x, 0o, 0b prefixes and a leading 0
// for octal.
bool ParseGoInt(std::string_view s, double* out) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'O')) {
    base = 8;
    s.remove_prefix(2);
  } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) {
    base = 2;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *out = static_cast<double>(v);
  return true;
}

// A number inside a value sequence: no hexadecimal there, `0x3` is "0 repeated".
bool ParseSequenceNumber(std::string_view s, double* out) {
  if (s.empty()) return false;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s[0] == '+' || s[0] == '-') return false;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *out = negative ? -v : v;
  return true;
}

// Splits `text` at white space outside `{{ ... }}`.
std::vector<std::string_view> SequenceItems(std::string_view text) {
  std::vector<std::string_view> items;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    if (i >= text.size()) break;
    const std::size_t start = i;
    int depth = 0;
    while (i < text.size() && (depth > 0 || !IsSpace(text[i]))) {
      if (text.compare(i, 2, "{{") == 0) {
        ++depth;
        i += 2;
      } else if (depth > 0 && text.compare(i, 2, "}}") == 0) {
        --depth;
        i += 2;
      } else {
        ++i;
      }
    }
    items.push_back(text.substr(start, i - start));
  }
  return items;
}

Status ParseItem(std::string_view item, std::vector<SequenceValue>* out) {
  if (item.find("{{") != std::string_view::npos) {
    // A native histogram: one sample, or N+1 after a trailing xN.
    const std::size_t close = item.rfind("}}");
    if (close == std::string_view::npos) return Invalid("unterminated histogram", item);
    std::string_view tail = item.substr(close + 2);
    std::uint64_t n = 0;
    if (!tail.empty()) {
      if (tail[0] != 'x' || !ParseRepeat(tail.substr(1), &n)) {
        return Invalid("bad histogram repetition", item);
      }
    }
    out->insert(out->end(), n + 1, SequenceValue{SequenceValue::Kind::kHistogram, 0});
    return Status::OK();
  }
  if (item == "_") {
    out->push_back({SequenceValue::Kind::kOmitted, 0});
    return Status::OK();
  }
  if (item.starts_with("_x")) {
    std::uint64_t n = 0;
    if (!ParseRepeat(item.substr(2), &n)) return Invalid("bad repetition", item);
    out->insert(out->end(), n, SequenceValue{SequenceValue::Kind::kOmitted, 0});
    return Status::OK();
  }
  if (item == "stale") {
    out->push_back({SequenceValue::Kind::kFloat, StaleNaN()});
    return Status::OK();
  }
  const std::size_t x = item.rfind('x');
  if (x == std::string_view::npos) {
    double v = 0;
    if (!ParseSequenceNumber(item, &v)) return Invalid("bad value", item);
    out->push_back({SequenceValue::Kind::kFloat, v});
    return Status::OK();
  }
  std::uint64_t n = 0;
  if (!ParseRepeat(item.substr(x + 1), &n)) return Invalid("bad repetition", item);
  const std::string_view prefix = item.substr(0, x);
  // The delta starts at the first sign that is not the sign of the base or of an exponent.
  std::size_t sign = std::string_view::npos;
  for (std::size_t k = 1; k < prefix.size(); ++k) {
    if ((prefix[k] == '+' || prefix[k] == '-') && prefix[k - 1] != 'e' && prefix[k - 1] != 'E') {
      sign = k;
      break;
    }
  }
  double base = 0;
  double delta = 0;
  if (!ParseSequenceNumber(prefix.substr(0, sign), &base) ||
      (sign != std::string_view::npos && !ParseSequenceNumber(prefix.substr(sign), &delta))) {
    return Invalid("bad expansion", item);
  }
  // Repeated addition, exactly as Prometheus' series parser accumulates.
  for (std::uint64_t i = 0; i <= n; ++i) {
    out->push_back({SequenceValue::Kind::kFloat, base});
    base += delta;
  }
  return Status::OK();
}

Status ParseLabelSet(std::string_view text, std::size_t* pos, LabelSet* labels) {
  labels->clear();
  std::size_t i = *pos;
  auto skip_space = [&] {
    while (i < text.size() && IsSpace(text[i])) ++i;
  };
  auto error = [&](std::string_view what) {
    std::string message(what);
    message.append(" at offset ").append(std::to_string(i)).append(" of \"");
    message.append(text).append("\"");
    return Status::InvalidArgument(message);
  };
  skip_space();
  std::string name;
  if (i < text.size() && IsMetricNameStart(text[i])) {
    const std::size_t start = i;
    while (i < text.size() && IsMetricNameChar(text[i])) ++i;
    name.assign(text.substr(start, i - start));
  }
  bool braces = false;
  if (i < text.size() && text[i] == '{') {
    braces = true;
    ++i;
    while (true) {
      skip_space();
      if (i >= text.size()) return error("unterminated label set");
      if (text[i] == '}') {
        ++i;
        break;
      }
      std::string key;
      const bool quoted = text[i] == '"' || text[i] == '\'' || text[i] == '`';
      if (quoted) {
        std::size_t p = i;
        Status st = ParseStringLiteral(text, &p, &key);
        if (!st.ok()) return error(st.message());
        i = p;
      } else if (IsLabelNameStart(text[i])) {
        const std::size_t start = i;
        while (i < text.size() && IsLabelNameChar(text[i])) ++i;
        key.assign(text.substr(start, i - start));
      } else {
        return error("expected a label name");
      }
      skip_space();
      if (quoted && i < text.size() && (text[i] == ',' || text[i] == '}')) {
        // A lone quoted string names the metric.
        if (!name.empty()) return error("two metric names");
        name = std::move(key);
      } else {
        if (i >= text.size() || text[i] != '=') return error("expected '='");
        ++i;
        skip_space();
        std::string value;
        std::size_t p = i;
        Status st = ParseStringLiteral(text, &p, &value);
        if (!st.ok()) return error(st.message());
        i = p;
        if (key == "__name__") {
          if (!name.empty()) return error("two metric names");
          name = std::move(value);
        } else {
          for (const auto& [k, v] : *labels) {
            if (k == key) return error("duplicate label name");
          }
          labels->emplace_back(std::move(key), std::move(value));
        }
      }
      skip_space();
      if (i < text.size() && text[i] == ',') {
        ++i;
      } else if (i >= text.size() || text[i] != '}') {
        return error("expected ',' or '}'");
      }
    }
  }
  if (name.empty() && !braces) return error("expected a metric name or '{'");
  if (!name.empty()) labels->emplace_back("__name__", std::move(name));
  std::erase_if(*labels, [](const auto& l) { return l.second.empty(); });
  std::sort(labels->begin(), labels->end());
  *pos = i;
  return Status::OK();
}

bool HasHistogram(const std::vector<SequenceValue>& values) {
  return std::any_of(values.begin(), values.end(), [](const SequenceValue& v) {
    return v.kind == SequenceValue::Kind::kHistogram;
  });
}

std::string_view MetricName(const LabelSet& labels) {
  for (const auto& [k, v] : labels) {
    if (k == "__name__") return v;
  }
  return {};
}

// Whether `expr` may select a metric in `names`: it names one outside strings, has a string equal
// to one (`{__name__="x"}`, `{"x"}`), or has a `__name__` matcher (=~, !=, !~) that selects one.
bool SelectsAny(std::string_view expr, const std::set<std::string, std::less<>>& names) {
  std::size_t i = 0;
  std::string_view last_word;
  std::string_view name_op;  // the operator right after `__name__`
  while (i < expr.size()) {
    const char ch = expr[i];
    if (IsSpace(ch)) {
      ++i;
      continue;
    }
    if (ch == '"' || ch == '\'' || ch == '`') {
      std::string value;
      std::size_t p = i;
      if (!ParseStringLiteral(expr, &p, &value).ok()) {
        ++i;
        continue;
      }
      if (names.count(value) != 0) return true;
      if (!name_op.empty()) {
        const re2::RE2 re(value, QuietRegex());
        for (const std::string& name : names) {
          const bool matches = re.ok() && re2::RE2::FullMatch(name, re);
          if ((name_op == "=~" && matches) || (name_op == "!~" && re.ok() && !matches) ||
              (name_op == "!=" && name != value)) {
            return true;
          }
        }
      }
      last_word = {};
      name_op = {};
      i = p;
      continue;
    }
    if (IsMetricNameStart(ch)) {
      const std::size_t start = i;
      while (i < expr.size() && IsMetricNameChar(expr[i])) ++i;
      last_word = expr.substr(start, i - start);
      if (names.count(last_word) != 0) return true;
      name_op = {};
      continue;
    }
    if (last_word == "__name__" && (ch == '=' || ch == '!')) {
      const std::string_view op = expr.substr(i, 2);
      name_op = op == "=~" || op == "!~" || op == "!=" ? op : expr.substr(i, 1);
      i += name_op.size();
      last_word = {};
      continue;
    }
    last_word = {};
    name_op = {};
    ++i;
  }
  return false;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view name, Script* out) : name_(name), out_(out) {
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = Trim(text.substr(start, end - start));
      if (line.starts_with('#')) line = {};
      lines_.push_back(line);
      start = end + 1;
    }
  }

  Status Parse() {
    out_->name.assign(name_);
    out_->commands.clear();
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const std::string_view l = lines_[i];
      if (l.empty()) continue;
      std::string_view rest = l;
      std::string word(NextWord(&rest));
      std::transform(word.begin(), word.end(), word.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      Command cmd;
      cmd.line = static_cast<int>(i) + 1;
      if (word == "clear") {
        cmd.kind = Command::Kind::kClear;
        histogram_names_.clear();
      } else if (word.starts_with("load")) {
        cmd.kind = Command::Kind::kLoad;
        INGOT_RETURN_IF_ERROR(ParseLoad(&i, &cmd.load));
      } else if (word.starts_with("eval")) {
        cmd.kind = Command::Kind::kEval;
        INGOT_RETURN_IF_ERROR(ParseEval(&i, &cmd.eval));
      } else {
        return Error(i, Invalid("invalid command", l).message());
      }
      out_->commands.push_back(std::move(cmd));
    }
    return Status::OK();
  }

 private:
  Status Error(std::size_t i, std::string_view what) const {
    std::string message(name_);
    message.append(":").append(std::to_string(i + 1)).append(": ").append(what);
    return Status::InvalidArgument(message);
  }

  Status Duration(std::size_t i, std::string_view text, bool allow_zero, std::int64_t* ns) const {
    Status st = ParseDurationNs(text, ns, allow_zero);
    if (!st.ok()) return Error(i, st.message());
    return Status::OK();
  }

  Status ParseLoad(std::size_t* index, LoadCommand* load) {
    const std::size_t i = *index;
    std::string_view rest = lines_[i];
    const std::string_view word = NextWord(&rest);
    if (word != "load" && word != "load_with_nhcb") {
      return Error(i, "invalid load command (load[_with_nhcb] <step:duration>)");
    }
    load->with_nhcb = word == "load_with_nhcb";
    const std::string_view interval = Trim(rest);
    if (interval.empty()) return Error(i, "load needs an interval");
    INGOT_RETURN_IF_ERROR(Duration(i, interval, /*allow_zero=*/false, &load->interval_ns));
    std::size_t j = i + 1;
    for (; j < lines_.size() && !lines_[j].empty(); ++j) {
      SeriesDef def;
      def.line = static_cast<int>(j) + 1;
      Status st = ParseSeriesLine(lines_[j], &def.labels, &def.values);
      if (!st.ok()) return Error(j, st.message());
      const std::string_view metric = MetricName(def.labels);
      if (HasHistogram(def.values)) histogram_names_.emplace(metric);
      if (load->with_nhcb) {
        // load_with_nhcb also writes native histograms with custom buckets under the base name.
        for (std::string_view suffix : {"_bucket", "_count", "_sum"}) {
          if (metric.ends_with(suffix)) {
            histogram_names_.emplace(metric.substr(0, metric.size() - suffix.size()));
          }
        }
      }
      load->series.push_back(std::move(def));
    }
    *index = j - 1;
    return Status::OK();
  }

  // `expect <kind> [msg|regex: <text>]`.
  Status ParseExpect(std::size_t i, std::string_view line, EvalCase* c) {
    std::string_view rest = line;
    NextWord(&rest);  // "expect"
    const std::string_view kind = NextWord(&rest);
    rest = Trim(rest);
    MessageMatch match;
    if (!rest.empty()) {
      std::string_view text;
      if (rest.starts_with("msg:")) {
        match.kind = MessageMatch::Kind::kExact;
        text = rest.substr(4);
      } else if (rest.starts_with("regex:")) {
        match.kind = MessageMatch::Kind::kRegex;
        text = rest.substr(6);
      } else {
        return Error(i, Invalid("invalid expect statement", line).message());
      }
      if (text.empty()) return Error(i, Invalid("invalid expect statement", line).message());
      match.text.assign(Trim(text));
      if (match.kind == MessageMatch::Kind::kRegex) {
        const re2::RE2 re(match.text, QuietRegex());
        if (!re.ok()) return Error(i, Invalid("invalid regex", match.text).message());
      }
    }
    if (kind == "ordered" || kind == "no_warn" || kind == "no_info") {
      // Prometheus accepts and ignores a message after these; so do we.
      if (kind == "ordered") c->ordered = true;
      if (kind == "no_warn") c->no_warn = true;
      if (kind == "no_info") c->no_info = true;
    } else if (kind == "fail") {
      if (saw_expect_fail_) return Error(i, "multiple expect fail lines are not allowed");
      saw_expect_fail_ = true;
      c->fail = true;
      c->fail_message = std::move(match);
    } else if (kind == "warn") {
      c->warnings.push_back(std::move(match));
    } else if (kind == "info") {
      c->infos.push_back(std::move(match));
    } else {
      return Error(i, Invalid("invalid expected error/annotation type", kind).message());
    }
    if (!c->infos.empty() && c->no_info) {
      return Error(i, "info and no_info cannot be used together");
    }
    if (!c->warnings.empty() && c->no_warn) {
      return Error(i, "warn and no_warn cannot be used together");
    }
    return Status::OK();
  }

  Status ParseEval(std::size_t* index, EvalCase* c) {
    const std::size_t i = *index;
    const std::string_view line = lines_[i];
    c->line = static_cast<int>(i) + 1;
    std::string_view rest = line;
    const std::string_view word = NextWord(&rest);
    const std::string_view kind = NextWord(&rest);
    auto bad = [&] {
      return Error(i,
                   "invalid evaluation command: must be either 'eval[_fail|_warn|_info|_ordered] "
                   "instant at <offset:duration> <query>' or 'eval[_fail|_warn|_info] range from "
                   "<from> to <to> step <step> <query>'");
    };
    std::string_view mod;
    if (word != "eval") {
      if (!word.starts_with("eval_")) return bad();
      mod = word.substr(5);
      if (mod != "fail" && mod != "warn" && mod != "info" && mod != "ordered") return bad();
    }
    if (kind == "instant") {
      c->kind = EvalKind::kInstant;
      if (NextWord(&rest) != "at") return bad();
      const std::string_view at = NextWord(&rest);
      c->expr.assign(Trim(rest));
      if (at.empty() || c->expr.empty()) return bad();
      INGOT_RETURN_IF_ERROR(Duration(i, at, /*allow_zero=*/true, &c->start_ns));
      c->end_ns = c->start_ns;
    } else if (kind == "range") {
      c->kind = EvalKind::kRange;
      if (mod == "ordered") return bad();
      if (NextWord(&rest) != "from") return bad();
      const std::string_view from = NextWord(&rest);
      if (NextWord(&rest) != "to") return bad();
      const std::string_view to = NextWord(&rest);
      if (NextWord(&rest) != "step") return bad();
      const std::string_view step = NextWord(&rest);
      c->expr.assign(Trim(rest));
      if (step.empty() || c->expr.empty()) return bad();
      INGOT_RETURN_IF_ERROR(Duration(i, from, /*allow_zero=*/true, &c->start_ns));
      INGOT_RETURN_IF_ERROR(Duration(i, to, /*allow_zero=*/true, &c->end_ns));
      INGOT_RETURN_IF_ERROR(Duration(i, step, /*allow_zero=*/false, &c->step_ns));
      if (c->end_ns < c->start_ns) return Error(i, "end timestamp is before start timestamp");
    } else {
      return bad();
    }
    c->fail = mod == "fail";
    c->warn = mod == "warn";
    c->info = mod == "info";
    c->ordered = mod == "ordered";
    saw_expect_fail_ = false;

    int position = 0;
    std::size_t j = i + 1;
    for (; j < lines_.size() && !lines_[j].empty(); ++j) {
      const std::string_view l = lines_[j];
      if (l.find("{{") != std::string_view::npos) c->native_histogram = true;
      if (c->fail && l.starts_with("expected_fail_message")) {
        c->fail_message = {MessageMatch::Kind::kExact,
                           std::string(Trim(l.substr(sizeof("expected_fail_message") - 1)))};
        break;
      }
      if (c->fail && l.starts_with("expected_fail_regexp")) {
        c->fail_message = {MessageMatch::Kind::kRegex,
                           std::string(Trim(l.substr(sizeof("expected_fail_regexp") - 1)))};
        if (!re2::RE2(c->fail_message.text, QuietRegex()).ok()) {
          return Error(j, Invalid("invalid regex", c->fail_message.text).message());
        }
        break;
      }
      if (l.starts_with("expect range vector")) {
        std::string_view r = l.substr(sizeof("expect range vector") - 1);
        std::int64_t start = 0, end = 0, step = 0;
        if (NextWord(&r) != "from") return Error(j, Invalid("invalid range vector", l).message());
        const std::string_view from = NextWord(&r);
        if (NextWord(&r) != "to") return Error(j, Invalid("invalid range vector", l).message());
        const std::string_view to = NextWord(&r);
        if (NextWord(&r) != "step") return Error(j, Invalid("invalid range vector", l).message());
        const std::string_view s = NextWord(&r);
        if (s.empty() || !Trim(r).empty()) {
          return Error(j, Invalid("invalid range vector", l).message());
        }
        INGOT_RETURN_IF_ERROR(Duration(j, from, true, &start));
        INGOT_RETURN_IF_ERROR(Duration(j, to, true, &end));
        INGOT_RETURN_IF_ERROR(Duration(j, s, false, &step));
        if (end < start) return Error(j, "end timestamp is before start timestamp");
        c->expect_range_vector = true;
        c->range_vector_start_ns = start;
        c->range_vector_step_ns = step;
        c->start_ns = c->end_ns = end;
        continue;
      }
      if (l.starts_with("expect string")) {
        constexpr std::string_view kPrefix = "expect string ";
        if (!l.starts_with(kPrefix) || l.size() == kPrefix.size()) {
          return Error(j,
                       "expected string literal not valid - a quoted string literal is required");
        }
        const std::string_view quoted = l.substr(kPrefix.size());
        std::string value;
        std::size_t p = 0;
        Status st = ParseStringLiteral(quoted, &p, &value);
        if (!st.ok() || p != quoted.size()) {
          return Error(j, "expected string literal not valid - check that the string is quoted");
        }
        c->expected_string = std::move(value);
        continue;
      }
      if (l.starts_with("expect ")) {
        INGOT_RETURN_IF_ERROR(ParseExpect(j, l, c));
        continue;
      }
      double scalar = 0;
      if (ParseNumber(l, &scalar)) {
        c->expected_scalar = scalar;
        break;
      }
      ExpectedSeries series;
      series.line = static_cast<int>(j) + 1;
      Status st = ParseSeriesLine(l, &series.labels, &series.values);
      if (!st.ok()) return Error(j, st.message());
      if (series.values.size() > 1 && c->kind == EvalKind::kInstant && !c->expect_range_vector) {
        return Error(j,
                     "expecting multiple values in instant evaluation not allowed (use 'expect "
                     "range vector' for a range vector result)");
      }
      series.position = ++position;
      auto same = std::find_if(c->expected.begin(), c->expected.end(),
                               [&](const ExpectedSeries& e) { return e.labels == series.labels; });
      if (same != c->expected.end()) {
        *same = std::move(series);
      } else {
        c->expected.push_back(std::move(series));
      }
    }
    *index = j < lines_.size() && !lines_[j].empty() ? j : j - 1;

    if (!c->native_histogram && !histogram_names_.empty()) {
      c->native_histogram = SelectsAny(c->expr, histogram_names_);
    }
    return Status::OK();
  }

  const std::string_view name_;
  Script* const out_;
  std::vector<std::string_view> lines_;
  // Metrics with native histogram samples since the last clear.
  std::set<std::string, std::less<>> histogram_names_;
  bool saw_expect_fail_ = false;
};

}  // namespace

double StaleNaN() { return std::bit_cast<double>(kStaleNaNBits); }

bool IsStaleNaN(double v) { return std::bit_cast<std::uint64_t>(v) == kStaleNaNBits; }

bool MessageMatch::Matches(std::string_view message) const {
  switch (kind) {
    case Kind::kAny:
      return true;
    case Kind::kExact:
      return message == text;
    case Kind::kRegex: {
      const re2::RE2 re(text, QuietRegex());
      return re.ok() && re2::RE2::PartialMatch(message, re);
    }
  }
  return false;
}

std::size_t Script::eval_count() const {
  return static_cast<std::size_t>(
      std::count_if(commands.begin(), commands.end(),
                    [](const Command& c) { return c.kind == Command::Kind::kEval; }));
}

Status ParseScript(std::string_view text, std::string_view name, Script* out) {
  Parser parser(text, name, out);
  return parser.Parse();
}

Status ParseScriptFile(const std::string& path, Script* out) {
  std::ifstream in(path, std::ios::binary);
  std::string cannot_read = "cannot read ";
  cannot_read.append(path);
  if (!in) return Status::IOError(cannot_read);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IOError(cannot_read);
  const std::size_t slash = path.find_last_of('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return ParseScript(text.str(), name, out);
}

Status ParseSequence(std::string_view text, std::vector<SequenceValue>* out) {
  for (std::string_view item : SequenceItems(text)) {
    INGOT_RETURN_IF_ERROR(ParseItem(item, out));
  }
  return Status::OK();
}

Status ParseSeriesLine(std::string_view text, LabelSet* labels,
                       std::vector<SequenceValue>* values) {
  std::size_t pos = 0;
  INGOT_RETURN_IF_ERROR(ParseLabelSet(text, &pos, labels));
  if (pos < text.size() && !IsSpace(text[pos])) {
    return Invalid("expected white space after the labels", text);
  }
  values->clear();
  return ParseSequence(text.substr(pos), values);
}

bool ParseNumber(std::string_view text, double* out) {
  std::string_view s = text;
  if (s.empty()) return false;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s[0] == '+' || s[0] == '-') return false;
  double v = 0;
  if (!ParseGoInt(s, &v)) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return false;
  }
  *out = negative ? -v : v;
  return true;
}

std::string FormatLabels(const LabelSet& labels) {
  std::string out;
  std::string_view name;
  for (const auto& [k, v] : labels) {
    if (k == "__name__") name = v;
  }
  out.append(name);
  if (!name.empty() && labels.size() == 1) return out;  // as Prometheus prints a bare name
  out.push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (k == "__name__") continue;
    if (!first) out.append(", ");
    first = false;
    out.append(k).append("=\"");
    for (char ch : v) {
      if (ch == '"' || ch == '\\') out.push_back('\\');
      if (ch == '\n') {
        out.append("\\n");
        continue;
      }
      out.push_back(ch);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return IsStaleNaN(v) ? "stale" : "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace ingot::promqltest
