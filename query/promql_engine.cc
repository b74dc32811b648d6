#include "query/promql_engine.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <mutex>
#include <numbers>
#include <numeric>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <re2/re2.h>

#include "query/promql_functions.h"
#include "query/series_fanout.h"
#include "query/work_pool.h"

namespace ingot::promql {
namespace {

// Prometheus' staleness marker: the NaN a scraper writes when a series disappears.
constexpr std::uint64_t kStaleMarkerBits = 0x7ff0000000000002ull;
bool IsStale(double v) { return std::bit_cast<std::uint64_t>(v) == kStaleMarkerBits; }
bool AnyStale(std::span<const double> vs) {
  return AnyNaN(vs) && std::any_of(vs.begin(), vs.end(), IsStale);
}

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::int64_t SatAdd(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMaxTs : kMinTs;
  return r;
}

double Seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// The evaluation times of one node: `n` steps from `start`, `step` apart.
struct Grid {
  std::int64_t start = 0;
  std::int64_t step = 1;
  std::size_t n = 1;
  std::int64_t At(std::size_t i) const { return start + static_cast<std::int64_t>(i) * step; }
};

// One series of an instant vector over a grid.
struct Column {
  Labels labels;
  std::vector<double> v;
  std::vector<std::uint8_t> present;
  bool drop_name = false;  // `__name__` goes at the end of the evaluation

  void Init(std::size_t n) {
    v.assign(n, 0.0);
    present.assign(n, 0);
  }
  bool Any() const { return std::find(present.begin(), present.end(), 1) != present.end(); }
};

struct Value {
  ValueType type = ValueType::kVector;
  std::vector<double> scalar;  // kScalar: one per step
  std::vector<Column> vec;     // kVector
  std::string str;             // kString
};

std::string_view LabelOf(const Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return {};
}

void SetLabel(Labels* labels, std::string_view name, std::string_view value) {
  auto it = std::lower_bound(labels->begin(), labels->end(), name,
                             [](const auto& l, std::string_view n) { return l.first < n; });
  if (it != labels->end() && it->first == name) {
    if (value.empty()) {
      labels->erase(it);
    } else {
      it->second.assign(value);
    }
  } else if (!value.empty()) {
    labels->emplace(it, std::string(name), std::string(value));
  }
}

void DropName(Labels* labels) { SetLabel(labels, kMetricNameLabel, ""); }

// A label set's identity for hashing: names and values separated by a byte no UTF-8 text has.
void AppendKey(const Labels& labels, std::string* key) {
  for (const auto& [k, v] : labels) {
    key->append(k).push_back('\xff');
    key->append(v).push_back('\xff');
  }
}

// Prometheus' labels.String(): {a="1", b="2"}.
std::string LabelsText(const Labels& labels) {
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out.append(", ");
    out.append(labels[i].first).append("=\"");
    for (char c : labels[i].second) {
      if (c == '"' || c == '\\') out.push_back('\\');
      if (c == '\n') {
        out.append("\\n");
        continue;
      }
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

Status ExecError(std::string message) { return Status::Busy(message); }

Status SameLabelsetError() {
  return ExecError("vector cannot contain metrics with the same labelset");
}

bool ValidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80         ? 1
                      : (c >> 5) == 6  ? 2
                      : (c >> 4) == 14 ? 3
                      : (c >> 3) == 30 ? 4
                                       : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

bool ValidLabelName(std::string_view name) { return !name.empty() && ValidUtf8(name); }

// Collects output series keyed by label set; two values for one label set at one step are an
// error (`duplicate`).
class Merger {
 public:
  Merger(std::size_t n, std::vector<Column>* out) : n_(n), out_(out) {}

  std::size_t Get(const Labels& labels, bool drop_name) {
    key_.clear();
    AppendKey(labels, &key_);
    auto [it, inserted] = index_.try_emplace(key_, out_->size());
    if (inserted) {
      Column c;
      c.labels = labels;
      c.drop_name = drop_name;
      c.Init(n_);
      out_->push_back(std::move(c));
    }
    return it->second;
  }

  // False when the series already has a value at `step`.
  bool Set(std::size_t index, std::size_t step, double v) {
    Column& c = (*out_)[index];
    if (c.present[step]) return false;
    c.present[step] = 1;
    c.v[step] = v;
    return true;
  }

 private:
  std::size_t n_;
  std::vector<Column>* out_;
  std::unordered_map<std::string, std::size_t> index_;
  std::string key_;
};

const Expr& Unwrap(const Expr& e) {
  const Expr* p = &e;
  while (p->kind == NodeKind::kParen) p = p->As<ParenExpr>().expr.get();
  return *p;
}

// Natural order of label values for sort_by_label: runs of digits compare as numbers.
int NaturalCompare(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9';
    const bool db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && a[ie] >= '0' && a[ie] <= '9') ++ie;
      while (je < b.size() && b[je] >= '0' && b[je] <= '9') ++je;
      std::string_view na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
      if (int c = na.compare(nb); c != 0) return c < 0 ? -1 : 1;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j])
        return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
      ++i;
      ++j;
    }
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

int CompareLabels(const Labels& a, const Labels& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (int c = a[i].first.compare(b[i].first); c != 0) return c;
    if (int c = a[i].second.compare(b[i].second); c != 0) return c;
  }
  return a.size() == b.size() ? 0 : a.size() < b.size() ? -1 : 1;
}

// Go's strconv.FormatFloat(f, 'f', -1, 64), as count_values writes values.
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[512];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

double ApplyArith(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kMod:
      return std::fmod(a, b);
    case BinaryOp::kPow:
      return std::pow(a, b);
    case BinaryOp::kAtan2:
      return std::atan2(a, b);
    default:
      return kNaN;
  }
}

bool ApplyCompare(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kEql:
      return a == b;
    case BinaryOp::kNeq:
      return a != b;
    case BinaryOp::kGtr:
      return a > b;
    case BinaryOp::kLss:
      return a < b;
    case BinaryOp::kGte:
      return a >= b;
    case BinaryOp::kLte:
      return a <= b;
    default:
      return false;
  }
}

// Go regexp's Expand for label_replace: $1, ${1}, $name, ${name}, $$.
void ExpandReplacement(std::string_view tmpl, const re2::RE2& re,
                       std::span<const re2::StringPiece> groups, std::string* out) {
  const auto& names = re.NamedCapturingGroups();
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 >= tmpl.size()) {
      out->push_back(tmpl[i]);
      continue;
    }
    if (tmpl[i + 1] == '$') {
      out->push_back('$');
      ++i;
      continue;
    }
    std::string_view name;
    std::size_t next;
    auto is_name_char = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    };
    if (tmpl[i + 1] == '{') {
      const std::size_t close = tmpl.find('}', i + 2);
      if (close == std::string_view::npos) {
        out->push_back('$');
        continue;
      }
      name = tmpl.substr(i + 2, close - i - 2);
      bool ok = !name.empty();
      for (char c : name) ok = ok && is_name_char(c);
      if (!ok) {
        out->push_back('$');
        continue;
      }
      next = close + 1;
    } else {
      std::size_t e = i + 1;
      while (e < tmpl.size() && is_name_char(tmpl[e])) ++e;
      if (e == i + 1) {
        out->push_back('$');
        continue;
      }
      name = tmpl.substr(i + 1, e - i - 1);
      next = e;
    }
    int index = -1;
    int number = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), number);
    if (ec == std::errc() && p == name.data() + name.size()) {
      index = number;
    } else if (auto it = names.find(std::string(name)); it != names.end()) {
      index = it->second;
    }
    if (index >= 0 && static_cast<std::size_t>(index) < groups.size() &&
        groups[static_cast<std::size_t>(index)].data() != nullptr) {
      const re2::StringPiece g = groups[static_cast<std::size_t>(index)];
      out->append(g.data(), g.size());
    }
    i = next - 1;
  }
}

class Engine {
 public:
  Engine(const QueryParams& params, SeriesCatalog& catalog, SeriesReader& reader)
      : params_(params), catalog_(catalog), reader_(reader) {}

  Status Eval(const Expr& e, const Grid& g, Value* out) {
    INGOT_RETURN_IF_ERROR(Tick());
    switch (e.kind) {
      case NodeKind::kNumberLiteral:
        out->type = ValueType::kScalar;
        out->scalar.assign(g.n, e.As<NumberLiteral>().value);
        return Status::OK();
      case NodeKind::kStringLiteral:
        out->type = ValueType::kString;
        out->str = e.As<StringLiteral>().value;
        return Status::OK();
      case NodeKind::kParen:
        return Eval(*e.As<ParenExpr>().expr, g, out);
      case NodeKind::kVectorSelector:
        return EvalSelector(e.As<VectorSelector>(), g, /*sample_times=*/false, out);
      case NodeKind::kMatrixSelector:
      case NodeKind::kSubquery:
        return Status::InvalidArgument(
            "a range vector is not allowed here: range vectors are arguments of functions such "
            "as rate, or the whole expression of an instant query");
      case NodeKind::kUnary:
        return EvalUnary(e.As<UnaryExpr>(), g, out);
      case NodeKind::kBinary:
        return EvalBinary(e.As<BinaryExpr>(), g, out);
      case NodeKind::kAggregate:
        return EvalAggregate(e.As<AggregateExpr>(), g, out);
      case NodeKind::kCall:
        return EvalCall(e.As<Call>(), g, out);
    }
    return Status::InvalidArgument("unknown expression");
  }

  // A range vector at one time: the samples of each series in its window.
  Status EvalMatrix(const Expr& e, std::int64_t t, std::vector<RangeSeriesResult>* out) {
    const Grid g{t, 1, 1};
    RangeSource src;
    INGOT_RETURN_IF_ERROR(OpenRange(Unwrap(e), g, &src));
    std::vector<std::int64_t> ts_buf;
    std::vector<double> vs_buf;
    constexpr std::size_t kBlock = 64;  // series read through one iterator (Prepare)
    for (std::size_t s = 0; s < src.count(); ++s) {
      if (s % kBlock == 0) {
        INGOT_RETURN_IF_ERROR(src.Prepare(reader_, s, std::min(src.count(), s + kBlock)));
      }
      Labels labels;
      bool drop_name = false;
      std::span<const std::int64_t> ts;
      std::span<const double> vs;
      INGOT_RETURN_IF_ERROR(
          src.Load(this, reader_, s, &labels, &drop_name, &ts_buf, &vs_buf, &ts, &vs));
      const std::int64_t end = src.refs[0];
      const std::int64_t start = SatSub(end, src.range);
      RangeSeriesResult r;
      for (std::size_t i = 0; i < ts.size(); ++i) {
        if (ts[i] > start && ts[i] <= end) {
          r.ts.push_back(ts[i]);
          r.values.push_back(vs[i]);
        }
      }
      if (r.ts.empty()) continue;
      if (drop_name) DropName(&labels);
      r.labels = std::move(labels);
      INGOT_RETURN_IF_ERROR(Charge(r.ts.size()));
      out->push_back(std::move(r));
    }
    Release(&src.sel);
    return Status::OK();
  }

  // Checks the deadline now and then (a clock read per call would cost more than small steps).
  Status Tick() { return Tick(&ticks_); }
  // With a counter of the calling thread's own (workers of a parallel loop).
  Status Tick(std::uint64_t* ticks) const {
    if ((++*ticks & 63) != 1) return Status::OK();  // the first call checks too
    if (std::chrono::steady_clock::now() > params_.deadline) {
      return Status::Busy("query timed out: it ran past its deadline (query.timeout)");
    }
    return Status::OK();
  }

  // Accounts for points held; Busy past max_samples.
  // Thread-safe: workers of a parallel loop charge too.
  Status Charge(std::uint64_t points) {
    const std::uint64_t now = held_.fetch_add(points, std::memory_order_relaxed) + points;
    std::uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    if (now > params_.max_samples) {
      return Status::Busy(
          "query processing would load too many samples into memory in query "
          "execution (more than query.max_points = " +
          std::to_string(params_.max_samples) + ")");
    }
    return Status::OK();
  }
  void Refund(std::uint64_t points) { held_.fetch_sub(points, std::memory_order_relaxed); }
  void RefundValue(const Value& v, std::size_t n) {
    Refund(static_cast<std::uint64_t>(v.vec.size()) * n);
  }

 private:
  // The time a selector or subquery looks at for evaluation time `t`: its `@` time when it has
  // one, minus its offset.
  std::int64_t RefTime(const TimeModifiers& tm, std::int64_t t) const {
    std::int64_t base = t;
    switch (tm.at) {
      case AtModifier::kNone:
        break;
      case AtModifier::kTimestamp:
        base = tm.at_ns;
        break;
      case AtModifier::kStart:
        base = params_.start_ns;
        break;
      case AtModifier::kEnd:
        base = params_.end_ns;
        break;
    }
    return SatSub(base, tm.offset_ns);
  }

  struct Selected {
    std::vector<SeriesId> sids;  // empty when fetched
    // In the catalog's order (by id), or the fanout's (by labels); sorted where order matters.
    std::vector<Labels> labels;
    // Through QueryParams::fanout: every series' points over the range the selector reads
    // (`fetched[s].labels` moved to `labels[s]`), held and charged until Release.
    bool fetched_all = false;
    std::vector<FetchedSeries> fetched;
    std::uint64_t fetched_points = 0;

    std::size_t size() const { return labels.size(); }
  };

  // The series of `vs`. Through a fanout, also their points in [lo, hi]: the range every later
  // read of them asks for.
  Status Select(const VectorSelector& vs, std::int64_t lo, std::int64_t hi, Selected* out) {
    if (params_.fanout != nullptr) return Fetch(vs, lo, hi, out);
    INGOT_RETURN_IF_ERROR(catalog_.MatchIds(vs.selector, params_.max_series, &out->sids));
    out->labels.resize(out->sids.size());
    SeriesKeyParts parts;
    for (std::size_t i = 0; i < out->sids.size(); ++i) {
      INGOT_RETURN_IF_ERROR(catalog_.LabelsOf(out->sids[i], &parts, &out->labels[i]));
    }
    return Status::OK();
  }

  // Select through the fanout. The points all arrive before any is used, so unlike the reader's
  // one series at a time they count as held, against max_samples, until Release. The query's
  // deadline bounds the selection on every node, and damaged chunks on any node are skipped
  // into the reader's sink when it has one, as the reader would skip them here.
  Status Fetch(const VectorSelector& vs, std::int64_t lo, std::int64_t hi, Selected* out) {
    std::vector<std::string> problems;
    SelectContext context;
    context.deadline = params_.deadline;
    context.damage = reader_.damage_sink();
    const Status st = params_.fanout->Select(vs.selector, lo, hi, params_.max_series, context,
                                             &out->fetched, &problems);
    for (std::string& text : problems) Add(&warnings_, std::move(text));
    INGOT_RETURN_IF_ERROR(st);
    out->fetched_all = true;
    out->labels.resize(out->fetched.size());
    for (std::size_t i = 0; i < out->fetched.size(); ++i) {
      out->labels[i] = std::move(out->fetched[i].labels);
      out->fetched_points += out->fetched[i].ts.size();
    }
    read_.fetch_add(out->fetched_points, std::memory_order_relaxed);
    return Charge(out->fetched_points);
  }

  // Drops a selection's fetched points (nothing to do for one read from storage).
  void Release(Selected* sel) {
    if (!sel->fetched_all) return;
    Refund(sel->fetched_points);
    sel->fetched_points = 0;
    std::vector<FetchedSeries>().swap(sel->fetched);
  }

  // Instant selector: per step the newest sample in (ref - lookback, ref], unless stale. With
  // `sample_times` the value is the sample's time in seconds (timestamp()).
  Status EvalSelector(const VectorSelector& vs, const Grid& g, bool sample_times, Value* out) {
    out->type = ValueType::kVector;
    const bool fixed = vs.time.at != AtModifier::kNone;
    const std::size_t steps = fixed ? 1 : g.n;
    const std::int64_t first_ref = RefTime(vs.time, g.At(0));
    const std::int64_t last_ref = RefTime(vs.time, g.At(steps - 1));
    const std::int64_t lookback = params_.lookback_ns;
    const std::int64_t read_from = SatAdd(SatSub(first_ref, lookback), 1);
    Selected sel;
    INGOT_RETURN_IF_ERROR(Select(vs, read_from, last_ref, &sel));
    INGOT_RETURN_IF_ERROR(Charge(static_cast<std::uint64_t>(sel.size()) * g.n));
    for (std::size_t s = 0; s < sel.size(); ++s) {
      INGOT_RETURN_IF_ERROR(Tick());
      std::span<const std::int64_t> ts;
      std::span<const double> values;
      if (sel.fetched_all) {
        ts = sel.fetched[s].ts;
        values = sel.fetched[s].values;
      } else {
        INGOT_RETURN_IF_ERROR(reader_.Read(sel.sids[s], read_from, last_ref));
        read_.fetch_add(reader_.ts().size(), std::memory_order_relaxed);
        ts = reader_.ts();
        values = reader_.values();
      }
      if (ts.empty()) continue;
      Column c;
      c.Init(g.n);
      std::size_t next = 0;  // first point after the reference time
      bool any = false;
      for (std::size_t i = 0; i < steps; ++i) {
        const std::int64_t ref = RefTime(vs.time, g.At(i));
        while (next < ts.size() && ts[next] <= ref) ++next;
        if (next > 0 && ts[next - 1] > SatSub(ref, lookback) && !IsStale(values[next - 1])) {
          c.v[i] = sample_times ? Seconds(ts[next - 1]) : values[next - 1];
          c.present[i] = 1;
          any = true;
        }
      }
      if (!any) continue;
      if (fixed) {
        std::fill(c.v.begin() + 1, c.v.end(), c.v[0]);
        std::fill(c.present.begin() + 1, c.present.end(), c.present[0]);
      }
      c.labels = std::move(sel.labels[s]);
      out->vec.push_back(std::move(c));
    }
    Refund(static_cast<std::uint64_t>(sel.size() - out->vec.size()) * g.n);
    Release(&sel);
    return Status::OK();
  }

  // The series a range function reads: a matrix selector's (read one at a time) or a subquery's
  // (evaluated on its own grid), with the window end of every outer step.
  struct RangeSource {
    std::int64_t range = 0;
    std::vector<std::int64_t> refs;  // window end per outer step: (ref - range, ref]
    bool fixed = false;              // every step has the same window (`@`)
    // Matrix selector:
    Selected sel;
    // Subquery:
    bool is_subquery = false;
    Grid inner;
    Value inner_value;

    std::size_t count() const { return is_subquery ? inner_value.vec.size() : sel.size(); }

    // Series `s`'s samples covering every window, staleness markers removed, in *ts and *vs:
    // the reader's own columns (or the fetched ones) when there is no marker to remove (valid
    // until its next read), else copies in *ts_buf and *vs_buf. Its labels are moved to
    // *labels: each series is loaded once.
    Status Load(Engine* engine, SeriesReader& reader, std::size_t s, Labels* labels,
                bool* drop_name, std::vector<std::int64_t>* ts_buf, std::vector<double>* vs_buf,
                std::span<const std::int64_t>* ts, std::span<const double>* vs) {
      ts_buf->clear();
      vs_buf->clear();
      if (is_subquery) {
        Column& c = inner_value.vec[s];
        *labels = std::move(c.labels);
        *drop_name = c.drop_name;
        for (std::size_t i = 0; i < inner.n; ++i) {
          if (!c.present[i]) continue;
          ts_buf->push_back(inner.At(i));
          vs_buf->push_back(c.v[i]);
        }
        *ts = *ts_buf;
        *vs = *vs_buf;
        return Status::OK();
      }
      *labels = std::move(sel.labels[s]);
      *drop_name = false;
      std::span<const std::int64_t> rts;
      std::span<const double> rvs;
      if (sel.fetched_all) {
        rts = sel.fetched[s].ts;
        rvs = sel.fetched[s].values;
      } else {
        INGOT_RETURN_IF_ERROR(reader.Read(sel.sids[s], SatAdd(SatSub(lo, range), 1), hi));
        engine->read_.fetch_add(reader.ts().size(), std::memory_order_relaxed);
        rts = reader.ts();
        rvs = reader.values();
      }
      if (!AnyStale(rvs)) {
        *ts = rts;
        *vs = rvs;
        return Status::OK();
      }
      ts_buf->reserve(rts.size());
      vs_buf->reserve(rts.size());
      for (std::size_t i = 0; i < rts.size(); ++i) {
        if (IsStale(rvs[i])) continue;
        ts_buf->push_back(rts[i]);
        vs_buf->push_back(rvs[i]);
      }
      *ts = *ts_buf;
      *vs = *vs_buf;
      return Status::OK();
    }

    // Prepares `reader` for series [from, to) of a matrix selector, read in order by Load.
    Status Prepare(SeriesReader& reader, std::size_t from, std::size_t to) const {
      if (is_subquery || sel.fetched_all || from >= to) return Status::OK();
      return reader.PrepareBlock(std::span(sel.sids).subspan(from, to - from),
                                 SatAdd(SatSub(lo, range), 1), hi);
    }

    // The earliest and latest window end, set by OpenRange.
    std::int64_t lo = 0;
    std::int64_t hi = 0;
  };

  Status OpenRange(const Expr& e, const Grid& g, RangeSource* src) {
    if (e.kind == NodeKind::kMatrixSelector) {
      const auto& ms = e.As<MatrixSelector>();
      src->range = ms.range_ns;
      src->fixed = ms.vector->time.at != AtModifier::kNone;
      src->refs.resize(g.n);
      for (std::size_t i = 0; i < g.n; ++i) src->refs[i] = RefTime(ms.vector->time, g.At(i));
      src->lo = *std::min_element(src->refs.begin(), src->refs.end());
      src->hi = *std::max_element(src->refs.begin(), src->refs.end());
      return Select(*ms.vector, SatAdd(SatSub(src->lo, src->range), 1), src->hi, &src->sel);
    }
    if (e.kind != NodeKind::kSubquery) {
      return Status::InvalidArgument("expected a range vector");
    }
    const auto& sq = e.As<Subquery>();
    src->is_subquery = true;
    src->range = sq.range_ns;
    src->fixed = sq.time.at != AtModifier::kNone;
    src->refs.resize(g.n);
    for (std::size_t i = 0; i < g.n; ++i) src->refs[i] = RefTime(sq.time, g.At(i));
    const std::int64_t step = sq.step_ns > 0 ? sq.step_ns : params_.subquery_step_ns;
    const std::int64_t lo = *std::min_element(src->refs.begin(), src->refs.end());
    const std::int64_t hi = *std::max_element(src->refs.begin(), src->refs.end());
    // The first multiple of the step after lo - range, as Prometheus aligns subquery steps.
    const std::int64_t from = SatSub(lo, sq.range_ns);
    std::int64_t start = (from / step) * step;
    if (start <= from) start += step;
    src->inner.start = start;
    src->inner.step = step;
    if (hi < start) {
      src->inner.n = 0;
      src->inner_value.type = ValueType::kVector;
      return Status::OK();
    }
    const std::uint64_t n = static_cast<std::uint64_t>((hi - start) / step) + 1;
    if (n > params_.max_samples) {
      return Status::Busy(
          "subquery needs " + std::to_string(n) +
          " steps, more than query.max_points = " + std::to_string(params_.max_samples));
    }
    src->inner.n = static_cast<std::size_t>(n);
    INGOT_RETURN_IF_ERROR(Eval(*sq.expr, src->inner, &src->inner_value));
    if (src->inner_value.type != ValueType::kVector) {
      // A scalar subquery (`time()[5m:1m]`) is a single series without labels.
      Column c;
      c.Init(src->inner.n);
      for (std::size_t i = 0; i < src->inner.n; ++i) {
        c.v[i] = src->inner_value.scalar[i];
        c.present[i] = 1;
      }
      src->inner_value.type = ValueType::kVector;
      src->inner_value.vec.push_back(std::move(c));
    }
    return Status::OK();
  }

  Status EvalUnary(const UnaryExpr& u, const Grid& g, Value* out) {
    INGOT_RETURN_IF_ERROR(Eval(*u.expr, g, out));
    if (u.op != BinaryOp::kSub) return Status::OK();
    if (out->type == ValueType::kScalar) {
      for (double& v : out->scalar) v = -v;
      return Status::OK();
    }
    for (Column& c : out->vec) {
      for (double& v : c.v) v = -v;
      c.drop_name = true;
    }
    return Status::OK();
  }

  // ---- Binary operators ----

  Status EvalBinary(const BinaryExpr& b, const Grid& g, Value* out) {
    Value lhs, rhs;
    INGOT_RETURN_IF_ERROR(Eval(*b.lhs, g, &lhs));
    INGOT_RETURN_IF_ERROR(Eval(*b.rhs, g, &rhs));
    const bool cmp = IsComparison(b.op);
    if (lhs.type == ValueType::kScalar && rhs.type == ValueType::kScalar) {
      out->type = ValueType::kScalar;
      out->scalar.resize(g.n);
      for (std::size_t i = 0; i < g.n; ++i) {
        out->scalar[i] = cmp ? (ApplyCompare(b.op, lhs.scalar[i], rhs.scalar[i]) ? 1.0 : 0.0)
                             : ApplyArith(b.op, lhs.scalar[i], rhs.scalar[i]);
      }
      return Status::OK();
    }
    out->type = ValueType::kVector;
    if (lhs.type == ValueType::kVector && rhs.type == ValueType::kVector) {
      Status st =
          IsSetOperator(b.op) ? SetOp(b, g, &lhs, &rhs, out) : VectorOp(b, g, &lhs, &rhs, out);
      RefundValue(lhs, g.n);
      RefundValue(rhs, g.n);
      return st;
    }
    // A vector and a scalar: the operator applies to every sample.
    const bool vector_left = lhs.type == ValueType::kVector;
    Value& vec = vector_left ? lhs : rhs;
    const std::vector<double>& scalar = vector_left ? rhs.scalar : lhs.scalar;
    for (Column& c : vec.vec) {
      bool any = false;
      for (std::size_t i = 0; i < g.n; ++i) {
        if (!c.present[i]) continue;
        const double a = vector_left ? c.v[i] : scalar[i];
        const double s = vector_left ? scalar[i] : c.v[i];
        if (cmp) {
          const bool keep = ApplyCompare(b.op, a, s);
          if (b.return_bool) {
            c.v[i] = keep ? 1.0 : 0.0;
          } else if (!keep) {
            c.present[i] = 0;
            continue;
          }
          // Without bool, the vector's value stays whichever side it is on.
        } else {
          c.v[i] = ApplyArith(b.op, a, s);
        }
        any = true;
      }
      if (!cmp || b.return_bool) c.drop_name = true;
      if (any) out->vec.push_back(std::move(c));
    }
    return Status::OK();
  }

  // The key of the labels a vector match compares: on(...) the listed ones; ignoring(...) all but
  // the listed ones and `__name__`.
  static void MatchKey(const Labels& labels, const VectorMatching& m, std::string* key) {
    key->clear();
    for (const auto& [k, v] : labels) {
      const bool listed = std::find(m.matching_labels.begin(), m.matching_labels.end(), k) !=
                          m.matching_labels.end();
      const bool use = m.on ? listed : (!listed && k != kMetricNameLabel);
      if (!use) continue;
      key->append(k).push_back('\xff');
      key->append(v).push_back('\xff');
    }
  }

  static Labels MatchLabels(const Labels& labels, const VectorMatching& m) {
    Labels out;
    for (const auto& kv : labels) {
      const bool listed = std::find(m.matching_labels.begin(), m.matching_labels.end(), kv.first) !=
                          m.matching_labels.end();
      if (m.on ? listed : (!listed && kv.first != kMetricNameLabel)) out.push_back(kv);
    }
    return out;
  }

  // Assigns every series of both sides a match group id (same id: same matching labels).
  static void Groups(const VectorMatching& m, const Value& lhs, const Value& rhs,
                     std::vector<std::size_t>* lg, std::vector<std::size_t>* rg,
                     std::size_t* count) {
    std::unordered_map<std::string, std::size_t> ids;
    std::string key;
    auto assign = [&](const Value& v, std::vector<std::size_t>* out) {
      out->resize(v.vec.size());
      for (std::size_t s = 0; s < v.vec.size(); ++s) {
        MatchKey(v.vec[s].labels, m, &key);
        (*out)[s] = ids.try_emplace(key, ids.size()).first->second;
      }
    };
    assign(lhs, lg);
    assign(rhs, rg);
    *count = ids.size();
  }

  Status SetOp(const BinaryExpr& b, const Grid& g, Value* lhs, Value* rhs, Value* out) {
    std::vector<std::size_t> lg, rg;
    std::size_t groups;
    Groups(b.matching, *lhs, *rhs, &lg, &rg, &groups);
    std::vector<std::uint8_t> seen(groups);
    for (std::size_t i = 0; i < g.n; ++i) {
      INGOT_RETURN_IF_ERROR(Tick());
      std::fill(seen.begin(), seen.end(), 0);
      if (b.op == BinaryOp::kOr) {
        for (std::size_t s = 0; s < lhs->vec.size(); ++s) {
          if (lhs->vec[s].present[i]) seen[lg[s]] = 1;
        }
        for (std::size_t s = 0; s < rhs->vec.size(); ++s) {
          if (rhs->vec[s].present[i] && seen[rg[s]]) rhs->vec[s].present[i] = 0;
        }
      } else {
        for (std::size_t s = 0; s < rhs->vec.size(); ++s) {
          if (rhs->vec[s].present[i]) seen[rg[s]] = 1;
        }
        const bool keep_matched = b.op == BinaryOp::kAnd;
        for (std::size_t s = 0; s < lhs->vec.size(); ++s) {
          if (lhs->vec[s].present[i] && (seen[lg[s]] != 0) != keep_matched) {
            lhs->vec[s].present[i] = 0;
          }
        }
      }
    }
    for (Column& c : lhs->vec) {
      if (c.Any()) out->vec.push_back(std::move(c));
    }
    if (b.op == BinaryOp::kOr) {
      for (Column& c : rhs->vec) {
        if (c.Any()) out->vec.push_back(std::move(c));
      }
    }
    return Charge(static_cast<std::uint64_t>(out->vec.size()) * g.n);
  }

  Status VectorOp(const BinaryExpr& b, const Grid& g, Value* lhs, Value* rhs, Value* out) {
    const VectorMatching& m = b.matching;
    const bool cmp = IsComparison(b.op);
    // The "many" side is the left one unless group_right.
    const bool swap = m.card == Cardinality::kOneToMany;
    Value& many = swap ? *rhs : *lhs;
    Value& one = swap ? *lhs : *rhs;
    std::vector<std::size_t> many_g, one_g;
    std::size_t groups;
    Groups(m, many, one, &many_g, &one_g, &groups);
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> one_at(groups, kNone);  // the one side's series per group
    std::vector<std::size_t> many_count(groups, 0);  // one-to-one: lhs series per group
    // Output series per (many, one) pair, computed once.
    std::unordered_map<std::uint64_t, std::size_t> pair_out;
    Merger merger(g.n, &out->vec);
    for (std::size_t i = 0; i < g.n; ++i) {
      INGOT_RETURN_IF_ERROR(Tick());
      std::fill(one_at.begin(), one_at.end(), kNone);
      for (std::size_t s = 0; s < one.vec.size(); ++s) {
        if (!one.vec[s].present[i]) continue;
        std::size_t& slot = one_at[one_g[s]];
        if (slot != kNone) {
          return ExecError("found duplicate series for the match group " +
                           LabelsText(MatchLabels(one.vec[s].labels, m)) + " on the " +
                           (swap ? "left" : "right") + " hand-side of the operation: [" +
                           LabelsText(one.vec[slot].labels) + ", " + LabelsText(one.vec[s].labels) +
                           "];many-to-many matching not allowed: matching labels must be unique "
                           "on one side");
        }
        slot = s;
      }
      if (m.card == Cardinality::kOneToOne) std::fill(many_count.begin(), many_count.end(), 0);
      for (std::size_t s = 0; s < many.vec.size(); ++s) {
        if (!many.vec[s].present[i]) continue;
        const std::size_t o = one_at[many_g[s]];
        if (o == kNone) continue;
        if (m.card == Cardinality::kOneToOne && many_count[many_g[s]]++ > 0) {
          return ExecError(
              "multiple matches for labels: many-to-one matching must be explicit "
              "(group_left/group_right)");
        }
        const double fl = swap ? one.vec[o].v[i] : many.vec[s].v[i];
        const double fr = swap ? many.vec[s].v[i] : one.vec[o].v[i];
        double value;
        if (cmp) {
          const bool keep = ApplyCompare(b.op, fl, fr);
          if (b.return_bool) {
            value = keep ? 1.0 : 0.0;
          } else if (!keep) {
            continue;
          } else {
            value = fl;
          }
        } else {
          value = ApplyArith(b.op, fl, fr);
        }
        const std::uint64_t pair_key = (static_cast<std::uint64_t>(s) << 32) | o;
        auto [it, inserted] = pair_out.try_emplace(pair_key, 0);
        if (inserted) {
          Labels labels = many.vec[s].labels;
          if (m.card == Cardinality::kOneToOne) {
            if (m.on) {
              std::erase_if(labels, [&](const auto& l) {
                return std::find(m.matching_labels.begin(), m.matching_labels.end(), l.first) ==
                       m.matching_labels.end();
              });
            } else {
              std::erase_if(labels, [&](const auto& l) {
                return std::find(m.matching_labels.begin(), m.matching_labels.end(), l.first) !=
                       m.matching_labels.end();
              });
            }
          }
          for (const std::string& name : m.include) {
            SetLabel(&labels, name, LabelOf(one.vec[o].labels, name));
          }
          const bool drop = !cmp || b.return_bool || many.vec[s].drop_name;
          it->second = merger.Get(labels, drop);
          INGOT_RETURN_IF_ERROR(Charge(g.n));
        }
        if (!merger.Set(it->second, i, value)) {
          return ExecError(
              "multiple matches for labels: grouping labels must ensure unique matches");
        }
      }
    }
    return Status::OK();
  }

  // ---- Aggregations ----

  Status EvalAggregate(const AggregateExpr& a, const Grid& g, Value* out) {
    out->type = ValueType::kVector;
    if (FoldsWhileEvaluating(a)) {
      // The range function hands over its columns block by block in series order, folded here
      // while later blocks are computed: no column of the argument outlives its block, and each
      // is folded while it is still in cache. Same groups, same order, same sums as below.
      GroupSet grouping;
      Folder folder{a.op, g.n, {}, {}, {}, {}, {}};
      std::vector<std::size_t> group_of;
      std::uint64_t ticks = 0;
      BlockSink sink = [&](std::span<const Column> block) -> Status {
        group_of.resize(block.size());
        for (std::size_t s = 0; s < block.size(); ++s) {
          group_of[s] = grouping.Of(*this, a, block[s]);
        }
        const std::size_t before = folder.count.size() / std::max<std::size_t>(g.n, 1);
        if (grouping.labels.size() > before) {
          INGOT_RETURN_IF_ERROR(
              Charge(static_cast<std::uint64_t>(grouping.labels.size() - before) * g.n));
          folder.Resize(grouping.labels.size());
        }
        const Status st = folder.Fold(*this, block, group_of, 0, g.n, &ticks);
        Refund(static_cast<std::uint64_t>(block.size()) * g.n);
        return st;
      };
      Value in;
      block_sink_ = &sink;
      const Status st = Eval(*a.expr, g, &in);
      block_sink_ = nullptr;
      INGOT_RETURN_IF_ERROR(st);
      grouping.Finish();
      folder.Finish(grouping, &out->vec);
      return Status::OK();
    }
    Value in;
    INGOT_RETURN_IF_ERROR(Eval(*a.expr, g, &in));
    Value param;
    if (a.param) INGOT_RETURN_IF_ERROR(Eval(*a.param, g, &param));
    Status st = Aggregate(a, g, &in, param, out);
    RefundValue(in, g.n);
    return st;
  }

  Labels GroupLabels(const AggregateExpr& a, const Labels& labels) const {
    Labels out;
    for (const auto& kv : labels) {
      const bool listed =
          std::find(a.grouping.begin(), a.grouping.end(), kv.first) != a.grouping.end();
      if (a.without ? (!listed && kv.first != kMetricNameLabel) : listed) out.push_back(kv);
    }
    return out;
  }

  // The groups of an aggregation, as its series come in order: each group's labels (first seen
  // first) and whether it loses `__name__` at the end.
  struct GroupSet {
    std::unordered_map<std::string, std::size_t> ids;
    std::vector<Labels> labels;
    std::vector<std::uint8_t> drop;
    std::string key;  // scratch

    // The group of a series with `labels`, created when new.
    std::size_t Of(const Engine& e, const AggregateExpr& a, const Column& c) {
      Labels gl = e.GroupLabels(a, c.labels);
      key.clear();
      AppendKey(gl, &key);
      auto [it, inserted] = ids.try_emplace(key, labels.size());
      if (inserted) {
        labels.push_back(std::move(gl));
        drop.push_back(0);
      }
      // A group keeping `__name__` (by (__name__)) loses it at the end if any member was to lose
      // it: grouping happens on the names not yet dropped, as in Prometheus.
      if (c.drop_name) drop[it->second] = 1;
      return it->second;
    }
    void Finish() {
      for (std::size_t k = 0; k < labels.size(); ++k) {
        if (LabelOf(labels[k], kMetricNameLabel).empty()) drop[k] = 0;
      }
    }
  };

  // The state of sum, avg, count, group, min, max, stddev and stdvar: per group and step (index
  // k * n + i), folded series by series. The columns are read in order instead of across every
  // series at each step; each step takes its series in order, however the steps or the series
  // are split into pieces, so every split gives the same sums, bit for bit.
  struct Folder {
    AggregateOp op;
    std::size_t n;
    std::vector<double> acc, comp, mean;
    std::vector<std::uint32_t> count;
    std::vector<std::uint8_t> incremental;

    void Resize(std::size_t groups) {
      const std::size_t states = groups * n;
      // sum starts at -0.0: see KahanSumColumn.
      acc.resize(states, op == AggregateOp::kSum ? -0.0 : 0.0);
      comp.resize(states);
      mean.resize(states);
      count.resize(states);
      if (op == AggregateOp::kAvg) incremental.resize(states);
    }
    // Folds cols[s] (of group group_of[s]) for steps [from, to).
    Status Fold(const Engine& e, std::span<const Column> cols,
                std::span<const std::size_t> group_of, std::size_t from, std::size_t to,
                std::uint64_t* ticks) {
      for (std::size_t s = 0; s < cols.size(); ++s) {
        INGOT_RETURN_IF_ERROR(e.Tick(ticks));
        const Column& c = cols[s];
        const std::size_t base = group_of[s] * n;
        if (op == AggregateOp::kSum) {
          KahanSumColumn(c.v.data() + from, c.present.data() + from, to - from, &acc[base + from],
                         &comp[base + from]);
          for (std::size_t i = from; i < to; ++i) count[base + i] += c.present[i];
          continue;
        }
        for (std::size_t i = from; i < to; ++i) {
          if (!c.present[i]) continue;
          const std::size_t k = base + i;
          const double v = c.v[i];
          const bool first = count[k] == 0;
          const double cnt = static_cast<double>(++count[k]);
          switch (op) {
            case AggregateOp::kAvg:
              if (first) {
                acc[k] = v;
                break;
              }
              if (!incremental[k]) {
                double c2 = comp[k];
                const double sum = KahanSumInc(v, acc[k], &c2);
                if (!std::isinf(sum)) {
                  acc[k] = sum;
                  comp[k] = c2;
                  break;
                }
                // The sum overflowed: continue with an incremental mean.
                incremental[k] = 1;
                mean[k] = acc[k] / (cnt - 1);
                comp[k] /= cnt - 1;
              }
              if (std::isinf(mean[k])) {
                if (std::isinf(v) && (mean[k] > 0) == (v > 0)) break;
                if (!std::isinf(v) && !std::isnan(v)) break;
              }
              {
                const double current = mean[k] + comp[k];
                mean[k] = KahanSumInc(v / cnt - current / cnt, mean[k], &comp[k]);
              }
              break;
            case AggregateOp::kMin:
              if (first || v < acc[k] || std::isnan(acc[k])) acc[k] = v;
              break;
            case AggregateOp::kMax:
              if (first || v > acc[k] || std::isnan(acc[k])) acc[k] = v;
              break;
            case AggregateOp::kStddev:
            case AggregateOp::kStdvar: {
              const double delta = v - mean[k];
              mean[k] += delta / cnt;
              acc[k] += delta * (v - mean[k]);
              break;
            }
            default:
              break;
          }
        }
      }
      return Status::OK();
    }
    // The groups' columns, those with no value at any step left out.
    void Finish(const GroupSet& groups, std::vector<Column>* out) {
      for (std::size_t g = 0; g < groups.labels.size(); ++g) {
        Column o;
        o.labels = groups.labels[g];
        o.drop_name = groups.drop[g] != 0;
        o.Init(n);
        for (std::size_t i = 0; i < n; ++i) {
          const std::size_t k = g * n + i;
          if (count[k] == 0) continue;
          const double cnt = static_cast<double>(count[k]);
          double r = 0;
          switch (op) {
            case AggregateOp::kSum:
              r = acc[k] + comp[k];
              if (std::isinf(acc[k])) r = acc[k];
              break;
            case AggregateOp::kAvg:
              r = incremental[k] ? mean[k] + comp[k] : (acc[k] + comp[k]) / cnt;
              if (!incremental[k] && std::isinf(acc[k])) r = acc[k] / cnt;
              if (incremental[k] && std::isinf(mean[k])) r = mean[k];
              break;
            case AggregateOp::kCount:
              r = cnt;
              break;
            case AggregateOp::kGroup:
              r = 1;
              break;
            case AggregateOp::kMin:
            case AggregateOp::kMax:
              r = acc[k];
              break;
            case AggregateOp::kStdvar:
              r = acc[k] / cnt;
              break;
            case AggregateOp::kStddev:
              r = std::sqrt(acc[k] / cnt);
              break;
            default:
              break;
          }
          o.v[i] = r;
          o.present[i] = 1;
        }
        if (o.Any()) out->push_back(std::move(o));
      }
    }
  };

  // Whether an aggregation folds its argument's columns as a range function delivers them:
  // the folding operators, over a range function of the range vector alone (rate(x[5m]),
  // sum_over_time(x[1h]), ...).
  static bool FoldsWhileEvaluating(const AggregateExpr& a) {
    switch (a.op) {
      case AggregateOp::kSum:
      case AggregateOp::kAvg:
      case AggregateOp::kCount:
      case AggregateOp::kGroup:
      case AggregateOp::kMin:
      case AggregateOp::kMax:
      case AggregateOp::kStddev:
      case AggregateOp::kStdvar:
        break;
      default:
        return false;
    }
    if (a.param || a.expr->kind != NodeKind::kCall) return false;
    const Call& call = a.expr->As<Call>();
    return call.args.size() == 1 && FindRangeFunction(call.func->name) != nullptr;
  }

  Status Aggregate(const AggregateExpr& a, const Grid& g, Value* in, const Value& param,
                   Value* out) {
    const std::size_t n = g.n;
    std::vector<std::size_t> group_of(in->vec.size());
    GroupSet grouping;
    for (std::size_t s = 0; s < in->vec.size(); ++s)
      group_of[s] = grouping.Of(*this, a, in->vec[s]);
    grouping.Finish();
    std::vector<Labels>& group_labels = grouping.labels;
    const std::vector<std::uint8_t>& group_drop = grouping.drop;
    const std::size_t groups = group_labels.size();
    switch (a.op) {
      case AggregateOp::kTopk:
      case AggregateOp::kBottomk:
      case AggregateOp::kLimitk:
      case AggregateOp::kLimitRatio:
        return SelectK(a, g, in, param, group_of, groups, out);
      case AggregateOp::kCountValues:
        return CountValues(a, g, *in, param, group_of, group_labels, group_drop, out);
      default:
        break;
    }
    INGOT_RETURN_IF_ERROR(Charge(static_cast<std::uint64_t>(groups) * n));
    if (a.op == AggregateOp::kQuantile) {
      for (std::size_t i = 0; i < n; ++i) QuantileWarning(param.scalar[i], *a.param);
      out->vec.resize(groups);
      for (std::size_t k = 0; k < groups; ++k) {
        out->vec[k].labels = std::move(group_labels[k]);
        out->vec[k].drop_name = group_drop[k] != 0;
        out->vec[k].Init(n);
      }
      // Step by step: each group's values at a step are sorted for the quantile.
      std::vector<std::vector<double>> lists(groups);
      for (std::size_t i = 0; i < n; ++i) {
        INGOT_RETURN_IF_ERROR(Tick());
        for (auto& l : lists) l.clear();
        for (std::size_t s = 0; s < in->vec.size(); ++s) {
          if (in->vec[s].present[i]) lists[group_of[s]].push_back(in->vec[s].v[i]);
        }
        for (std::size_t k = 0; k < groups; ++k) {
          if (lists[k].empty()) continue;
          out->vec[k].v[i] = Quantile(param.scalar[i], lists[k]);
          out->vec[k].present[i] = 1;
        }
      }
      std::erase_if(out->vec, [](const Column& c) { return !c.Any(); });
      return Status::OK();
    }
    Folder folder{a.op, n, {}, {}, {}, {}, {}};
    folder.Resize(groups);
    // Steps are independent: a long range is folded in step ranges on the work pool.
    constexpr std::size_t kFoldSteps = 256;
    const std::size_t pieces = (n + kFoldSteps - 1) / kFoldSteps;
    if (pieces > 1 && in->vec.size() >= 64 && WorkPool::Instance().threads() > 1) {
      std::vector<Status> statuses(pieces);
      std::vector<std::uint64_t> ticks(pieces);
      WorkPool::Instance().ParallelFor(pieces, [&](std::size_t piece, std::size_t) {
        statuses[piece] = folder.Fold(*this, in->vec, group_of, piece * kFoldSteps,
                                      std::min(n, (piece + 1) * kFoldSteps), &ticks[piece]);
      });
      for (const Status& st : statuses) INGOT_RETURN_IF_ERROR(st);
    } else {
      INGOT_RETURN_IF_ERROR(folder.Fold(*this, in->vec, group_of, 0, n, &ticks_));
    }
    folder.Finish(grouping, &out->vec);
    return Status::OK();
  }

  Status SelectK(const AggregateExpr& a, const Grid& g, Value* in, const Value& param,
                 const std::vector<std::size_t>& group_of, std::size_t groups, Value* out) {
    const std::size_t n = g.n;
    const bool ratio = a.op == AggregateOp::kLimitRatio;
    // Ties and limitk's "first k" follow the series' label order, as in Prometheus. Only limitk
    // needs every series in that order; topk and bottomk compare labels on equal values only.
    const bool by_value = a.op == AggregateOp::kTopk || a.op == AggregateOp::kBottomk;
    std::vector<std::size_t> series(in->vec.size());
    std::iota(series.begin(), series.end(), 0);
    auto label_less = [&](std::size_t x, std::size_t y) {
      return CompareLabels(in->vec[x].labels, in->vec[y].labels) < 0;
    };
    if (a.op == AggregateOp::kLimitk) std::sort(series.begin(), series.end(), label_less);
    std::vector<std::int64_t> ks(n);
    std::vector<double> ratios(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double p = param.scalar[i];
      if (std::isnan(p)) {
        return ExecError(ratio ? "Ratio value is NaN" : "Parameter value is NaN");
      }
      if (ratio) {
        ratios[i] = std::clamp(p, -1.0, 1.0);
      } else {
        if (p >= 9.223372036854775807e18 || p < -9.223372036854775807e18) {
          // Go's %v of a float: the shortest form, exponent notation when large.
          char text[64];
          const auto r = std::to_chars(text, text + sizeof(text), p);
          const std::string shown =
              std::isinf(p) ? (p > 0 ? "+Inf" : "-Inf") : std::string(text, r.ptr);
          return ExecError("Scalar value " + shown + " overflows int64");
        }
        ks[i] = static_cast<std::int64_t>(p);
      }
    }
    // Which series each step keeps; the others lose their value there.
    std::vector<std::uint8_t> keep_any(in->vec.size());
    std::vector<std::vector<std::size_t>> members(groups);
    std::vector<double> offsets;
    if (ratio) {
      offsets.resize(in->vec.size());
      std::string key;
      for (std::size_t s = 0; s < in->vec.size(); ++s) {
        key.clear();
        AppendKey(in->vec[s].labels, &key);
        offsets[s] = static_cast<double>(std::hash<std::string>{}(key)) /
                     static_cast<double>(std::numeric_limits<std::size_t>::max());
      }
    }
    // Instant queries keep Prometheus' order: groups as first seen in label order (by the
    // label-least member of each), topk descending, bottomk ascending.
    std::vector<std::size_t> order;
    std::vector<std::size_t> group_order(groups);
    std::iota(group_order.begin(), group_order.end(), 0);
    if (n == 1 && groups > 1) {
      std::vector<std::size_t> least(groups, in->vec.size());
      for (std::size_t s : series) {
        std::size_t& l = least[group_of[s]];
        if (l == in->vec.size() || label_less(s, l)) l = s;
      }
      std::sort(group_order.begin(), group_order.end(),
                [&](std::size_t x, std::size_t y) { return label_less(least[x], least[y]); });
    }
    std::vector<std::uint8_t> kept(in->vec.size());
    for (std::size_t i = 0; i < n; ++i) {
      INGOT_RETURN_IF_ERROR(Tick());
      for (auto& m : members) m.clear();
      for (std::size_t s : series) {
        if (in->vec[s].present[i]) members[group_of[s]].push_back(s);
      }
      std::fill(kept.begin(), kept.end(), 0);
      for (std::size_t group : group_order) {
        auto& m = members[group];
        if (m.empty()) continue;
        if (ratio) {
          const double r = ratios[i];
          for (std::size_t s : m) {
            if ((r >= 0 && offsets[s] < r) || (r < 0 && offsets[s] >= 1.0 + r)) kept[s] = 1;
          }
          continue;
        }
        const std::int64_t k = ks[i];
        if (k < 1) continue;
        const std::size_t take = std::min<std::size_t>(m.size(), static_cast<std::size_t>(k));
        if (by_value) {
          // The best values first (NaN last), equal values in label order.
          const bool top = a.op == AggregateOp::kTopk;
          auto before = [&](std::size_t x, std::size_t y) {
            const double vx = in->vec[x].v[i], vy = in->vec[y].v[i];
            const bool nx = std::isnan(vx), ny = std::isnan(vy);
            if (nx != ny) return ny;
            if (!nx && vx != vy) return top ? vx > vy : vx < vy;
            return label_less(x, y);
          };
          std::partial_sort(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(take), m.end(),
                            before);
        }
        for (std::size_t j = 0; j < take; ++j) {
          kept[m[j]] = 1;
          if (n == 1) order.push_back(m[j]);
        }
      }
      for (std::size_t s = 0; s < in->vec.size(); ++s) {
        if (!kept[s]) in->vec[s].present[i] = 0;
        keep_any[s] |= kept[s];
      }
    }
    if (n == 1 && !ratio) {
      for (std::size_t s : order) out->vec.push_back(std::move(in->vec[s]));
      ordered_ = a.op != AggregateOp::kLimitk;
    } else {
      for (std::size_t s = 0; s < in->vec.size(); ++s) {
        if (keep_any[s]) out->vec.push_back(std::move(in->vec[s]));
      }
    }
    return Charge(static_cast<std::uint64_t>(out->vec.size()) * n);
  }

  Status CountValues(const AggregateExpr& /*a*/, const Grid& g, const Value& in, const Value& param,
                     const std::vector<std::size_t>& group_of,
                     const std::vector<Labels>& group_labels,
                     const std::vector<std::uint8_t>& group_drop, Value* out) {
    const std::string& label = param.str;
    if (!ValidLabelName(label)) return ExecError("invalid label name \"" + label + "\"");
    Merger merger(g.n, &out->vec);
    for (std::size_t i = 0; i < g.n; ++i) {
      INGOT_RETURN_IF_ERROR(Tick());
      for (std::size_t s = 0; s < in.vec.size(); ++s) {
        if (!in.vec[s].present[i]) continue;
        Labels labels = group_labels[group_of[s]];
        SetLabel(&labels, label, FormatValue(in.vec[s].v[i]));
        const std::size_t idx = merger.Get(labels, group_drop[group_of[s]] != 0);
        Column& c = out->vec[idx];
        if (!c.present[i]) {
          c.present[i] = 1;
          c.v[i] = 0;
        }
        c.v[i] += 1;
      }
    }
    return Charge(static_cast<std::uint64_t>(out->vec.size()) * g.n);
  }

  // ---- Functions ----

  Status ScalarArg(const Expr& e, const Grid& g, std::vector<double>* out) {
    Value v;
    INGOT_RETURN_IF_ERROR(Eval(e, g, &v));
    if (v.type != ValueType::kScalar) return Status::InvalidArgument("expected a scalar argument");
    *out = std::move(v.scalar);
    return Status::OK();
  }

  Status StringArg(const Expr& e, std::string* out) {
    const Expr& u = Unwrap(e);
    if (u.kind != NodeKind::kStringLiteral) return Status::InvalidArgument("expected a string");
    *out = u.As<StringLiteral>().value;
    return Status::OK();
  }

  Status EvalCall(const Call& call, const Grid& g, Value* out) {
    const std::string_view name = call.func->name;
    if (RangeFunction fn = FindRangeFunction(name); fn != nullptr) {
      return EvalRangeFunction(call, fn, g, out);
    }
    if (name == "absent_over_time") return EvalRangeFunction(call, nullptr, g, out);
    if (name == "time") {
      out->type = ValueType::kScalar;
      out->scalar.resize(g.n);
      for (std::size_t i = 0; i < g.n; ++i) out->scalar[i] = Seconds(g.At(i));
      return Status::OK();
    }
    if (name == "pi") {
      out->type = ValueType::kScalar;
      out->scalar.assign(g.n, std::numbers::pi);
      return Status::OK();
    }
    if (name == "start" || name == "end" || name == "range" || name == "step") {
      out->type = ValueType::kScalar;
      const double v = name == "start" ? Seconds(params_.start_ns)
                       : name == "end" ? Seconds(params_.end_ns)
                       : name == "range"
                           ? Seconds(params_.end_ns - params_.start_ns)
                           : Seconds(params_.start_ns == params_.end_ns ? 0 : params_.step_ns);
      out->scalar.assign(g.n, v);
      return Status::OK();
    }
    if (name == "min_of" || name == "max_of") {
      std::vector<double> x, y;
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[0], g, &x));
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[1], g, &y));
      out->type = ValueType::kScalar;
      out->scalar.resize(g.n);
      for (std::size_t i = 0; i < g.n; ++i) {
        // Go's math.Min/Max: NaN wins, and -0 is below +0.
        if (std::isnan(x[i]) || std::isnan(y[i])) {
          out->scalar[i] = kNaN;
        } else if (x[i] == y[i]) {
          out->scalar[i] = (std::signbit(x[i]) == (name == "min_of")) ? x[i] : y[i];
        } else {
          out->scalar[i] = name == "min_of" ? std::min(x[i], y[i]) : std::max(x[i], y[i]);
        }
      }
      return Status::OK();
    }
    if (name == "vector") {
      std::vector<double> s;
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[0], g, &s));
      out->type = ValueType::kVector;
      Column c;
      c.v = std::move(s);
      c.present.assign(g.n, 1);
      out->vec.push_back(std::move(c));
      return Charge(g.n);
    }
    if (name == "scalar") {
      Value v;
      INGOT_RETURN_IF_ERROR(Eval(*call.args[0], g, &v));
      out->type = ValueType::kScalar;
      out->scalar.assign(g.n, kNaN);
      std::vector<std::uint32_t> count(g.n);
      for (const Column& c : v.vec) {
        for (std::size_t i = 0; i < g.n; ++i) {
          if (c.present[i] && count[i]++ == 0) out->scalar[i] = c.v[i];
        }
      }
      for (std::size_t i = 0; i < g.n; ++i) {
        if (count[i] != 1) out->scalar[i] = kNaN;
      }
      RefundValue(v, g.n);
      return Status::OK();
    }
    if (name == "timestamp") {
      const Expr& arg = Unwrap(*call.args[0]);
      if (arg.kind == NodeKind::kVectorSelector) {
        INGOT_RETURN_IF_ERROR(EvalSelector(arg.As<VectorSelector>(), g, true, out));
      } else {
        INGOT_RETURN_IF_ERROR(Eval(arg, g, out));
        for (Column& c : out->vec) {
          for (std::size_t i = 0; i < g.n; ++i) c.v[i] = Seconds(g.At(i));
        }
      }
      for (Column& c : out->vec) c.drop_name = true;
      return Status::OK();
    }
    if (name == "absent") return EvalAbsent(call, g, out);
    if (name == "label_replace") return LabelReplace(call, g, out);
    if (name == "label_join") return LabelJoin(call, g, out);
    if (name == "histogram_quantile" || name == "histogram_quantiles" ||
        name == "histogram_fraction") {
      return HistogramQuantile(call, g, out);
    }
    if (name == "sort" || name == "sort_desc" || name == "sort_by_label" ||
        name == "sort_by_label_desc") {
      return Sort(call, g, out);
    }
    if (name.starts_with("histogram_")) {
      // Native-histogram functions: a float-only store has no histogram samples to give them.
      Value v;
      INGOT_RETURN_IF_ERROR(Eval(*call.args.back(), g, &v));
      out->type = ValueType::kVector;
      return Status::OK();
    }
    if (ValueFunction fn = FindValueFunction(name); fn != nullptr) {
      return EvalValueFunction(call, fn, g, out);
    }
    return Status::InvalidArgument("function \"" + std::string(name) + "\" is not supported");
  }

  Status EvalValueFunction(const Call& call, ValueFunction fn, const Grid& g, Value* out) {
    const std::string_view name = call.func->name;
    out->type = ValueType::kVector;
    if (call.args.empty()) {
      // Time functions without an argument read vector(time()).
      Column c;
      c.Init(g.n);
      for (std::size_t i = 0; i < g.n; ++i) {
        c.v[i] = fn(Seconds(g.At(i)), {});
        c.present[i] = 1;
      }
      out->vec.push_back(std::move(c));
      return Charge(g.n);
    }
    INGOT_RETURN_IF_ERROR(Eval(*call.args[0], g, out));
    std::vector<std::vector<double>> scalars(call.args.size() - 1);
    for (std::size_t k = 1; k < call.args.size(); ++k) {
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[k], g, &scalars[k - 1]));
    }
    const bool clamp = name == "clamp";
    double args[2];
    for (Column& c : out->vec) {
      for (std::size_t i = 0; i < g.n; ++i) {
        if (!c.present[i]) continue;
        for (std::size_t k = 0; k < scalars.size() && k < 2; ++k) args[k] = scalars[k][i];
        if (clamp && ClampDropsAll(args[0], args[1])) {
          c.present[i] = 0;
          continue;
        }
        c.v[i] =
            fn(c.v[i], std::span<const double>(args, std::min<std::size_t>(scalars.size(), 2)));
      }
      c.drop_name = true;
    }
    std::erase_if(out->vec, [](const Column& c) { return !c.Any(); });
    return Status::OK();
  }

  // Labels for absent()/absent_over_time(): the selector's equality matchers but the name.
  static Labels AbsentLabels(const Expr& arg) {
    const Expr& u = Unwrap(arg);
    const VectorSelector* vs = nullptr;
    if (u.kind == NodeKind::kVectorSelector) vs = &u.As<VectorSelector>();
    if (u.kind == NodeKind::kMatrixSelector) vs = u.As<MatrixSelector>().vector.get();
    Labels out;
    if (vs == nullptr) return out;
    // An equality matcher gives its label unless another matcher names the label too.
    std::vector<std::string_view> seen;
    for (const LabelMatcher& m : vs->selector.matchers) {
      if (m.name == kMetricNameLabel) continue;
      const bool repeated = std::find(seen.begin(), seen.end(), m.name) != seen.end();
      seen.push_back(m.name);
      SetLabel(
          &out, m.name,
          m.op == MatchOp::kEqual && !repeated ? std::string_view(m.value) : std::string_view());
    }
    return out;
  }

  Status EvalAbsent(const Call& call, const Grid& g, Value* out) {
    Value v;
    INGOT_RETURN_IF_ERROR(Eval(*call.args[0], g, &v));
    std::vector<std::uint8_t> has(g.n);
    for (const Column& c : v.vec) {
      for (std::size_t i = 0; i < g.n; ++i) has[i] |= c.present[i];
    }
    RefundValue(v, g.n);
    return AbsentResult(call, has, g, out);
  }

  Status AbsentResult(const Call& call, const std::vector<std::uint8_t>& has, const Grid& g,
                      Value* out) {
    out->type = ValueType::kVector;
    Column c;
    c.Init(g.n);
    for (std::size_t i = 0; i < g.n; ++i) {
      if (!has[i]) {
        c.v[i] = 1;
        c.present[i] = 1;
      }
    }
    if (!c.Any()) return Status::OK();
    c.labels = AbsentLabels(*call.args[0]);
    out->vec.push_back(std::move(c));
    return Charge(g.n);
  }

  Status EvalRangeFunction(const Call& call, RangeFunction fn, const Grid& g, Value* out) {
    // Taken before anything else is evaluated: a nested expression must not see it.
    BlockSink* const sink = std::exchange(block_sink_, nullptr);
    const std::string_view name = call.func->name;
    out->type = ValueType::kVector;
    std::size_t matrix_arg = 0;
    for (std::size_t k = 0; k < call.func->args().size(); ++k) {
      if (call.func->args()[k] == ValueType::kMatrix) matrix_arg = k;
    }
    std::vector<std::vector<double>> scalars;
    for (std::size_t k = 0; k < call.args.size(); ++k) {
      if (k == matrix_arg) continue;
      scalars.emplace_back();
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[k], g, &scalars.back()));
    }
    if (name == "double_exponential_smoothing") {
      for (std::size_t i = 0; i < g.n; ++i) {
        const double sf = scalars[0][i], tf = scalars[1][i];
        if (ValidSmoothingFactors(sf, tf)) continue;
        // Go's %f, as Prometheus words it.
        char text[64];
        const bool bad_sf = ValidSmoothingFactors(sf, 0.5) == false;
        std::snprintf(text, sizeof(text), "%f", bad_sf ? sf : tf);
        return ExecError(
            bad_sf ? std::string("invalid smoothing factor. Expected: 0 < sf < 1, got: ") + text
                   : std::string("invalid trend factor. Expected: 0 < tf < 1, got: ") + text);
      }
    }
    RangeSource src;
    INGOT_RETURN_IF_ERROR(OpenRange(Unwrap(*call.args[matrix_arg]), g, &src));
    const bool keeps_name = name == "last_over_time" || name == "first_over_time";
    // Under `@` every step reads the same window, computed once unless arguments vary by step.
    const bool once = src.fixed && scalars.empty();
    const std::size_t steps = once ? 1 : g.n;
    if (name == "quantile_over_time") {
      for (std::size_t i = 0; i < g.n; ++i) QuantileWarning(scalars[0][i], *call.args[0]);
    }
    // Series are independent: blocks of them go to the work pool, each thread with its own
    // reader and scratch; the blocks' results are joined in order.
    struct Worker {
      std::unique_ptr<SeriesReader> own_reader;
      SeriesReader* reader = nullptr;
      std::vector<CorruptChunk> damage;
      std::vector<std::int64_t> ts;
      std::vector<double> vs;
      std::vector<std::uint8_t> has;  // absent_over_time: a sample in the step's window
      BatchScratch batch;
      std::uint64_t ticks = 0;
    };
    const BatchRangeFunction batch = FindBatchRangeFunction(name);
    constexpr std::size_t kBlock = 64;
    const std::size_t count = src.count();
    const std::size_t blocks = (count + kBlock - 1) / kBlock;
    // Worth a second thread when the series are read from storage, there are several blocks and
    // enough work in them: many windows, or long ones (many samples per series). Below that, the
    // hand-offs to the pool's threads cost more than they save (measured on the dashboard's
    // instant queries: 1,000 series x one 5-minute window ran in 0.78 ms on one thread, 1.18 ms
    // on two).
    constexpr std::size_t kParallelWindows = 64 * 1024;
    constexpr std::int64_t kParallelRangeNs = 3600LL * 1'000'000'000;
    const bool parallel = !src.is_subquery && blocks > 1 && WorkPool::Instance().threads() > 1 &&
                          (count * steps >= kParallelWindows || src.range >= kParallelRangeNs);
    std::vector<Worker> workers(parallel ? WorkPool::Instance().threads() : 1);
    workers[0].reader = &reader_;
    std::vector<std::vector<Column>> results(blocks);
    std::vector<Status> statuses(blocks);
    auto run_block = [&](std::size_t block, std::size_t worker_id) -> Status {
      Worker& w = workers[worker_id];
      // Fetched points need no reader: the shared one is passed along but not read.
      if (w.reader == nullptr && src.sel.fetched_all) w.reader = &reader_;
      if (w.reader == nullptr) {
        w.own_reader = std::make_unique<SeriesReader>(reader_.storage());
        if (reader_.damage_sink() != nullptr) w.own_reader->SkipDamage(&w.damage);
        w.reader = w.own_reader.get();
      }
      if (fn == nullptr && w.has.empty()) w.has.assign(g.n, 0);
      double args[2];
      const std::size_t to = std::min(count, (block + 1) * kBlock);
      INGOT_RETURN_IF_ERROR(src.Prepare(*w.reader, block * kBlock, to));
      for (std::size_t s = block * kBlock; s < to; ++s) {
        INGOT_RETURN_IF_ERROR(Tick(&w.ticks));
        Labels labels;
        bool drop_name = false;
        std::span<const std::int64_t> ts;
        std::span<const double> vs;
        INGOT_RETURN_IF_ERROR(
            src.Load(this, *w.reader, s, &labels, &drop_name, &w.ts, &w.vs, &ts, &vs));
        if (ts.empty()) continue;
        INGOT_RETURN_IF_ERROR(Charge(ts.size()));
        if (ts.size() > std::numeric_limits<std::uint32_t>::max()) {
          return Status::Busy("a series holds more than 2^32 samples in one query's range");
        }
        Column c;
        c.Init(g.n);
        bool any = false;
        if (batch != nullptr) {
          batch(ts, vs, std::span(src.refs).first(steps), src.range, &w.batch, c.v.data(),
                c.present.data());
          any = std::find(c.present.begin(), c.present.begin() + static_cast<std::ptrdiff_t>(steps),
                          1) != c.present.begin() + static_cast<std::ptrdiff_t>(steps);
        } else {
          WindowCursor cursor;
          for (std::size_t i = 0; i < steps; ++i) {
            const std::int64_t end = src.refs[i];
            const std::int64_t start = SatSub(end, src.range);
            cursor.Move(ts, start, end);
            const std::size_t a = cursor.lo, b = cursor.hi;
            if (b <= a) continue;
            if (fn == nullptr) {
              w.has[i] = 1;
              continue;
            }
            for (std::size_t k = 0; k < scalars.size() && k < 2; ++k) args[k] = scalars[k][i];
            Window win{ts.subspan(a, b - a), vs.subspan(a, b - a), start, end,
                       src.fixed ? g.At(0) : g.At(i)};
            double r;
            if (fn(win, std::span<const double>(args, std::min<std::size_t>(scalars.size(), 2)),
                   &r)) {
              c.v[i] = r;
              c.present[i] = 1;
              any = true;
            }
          }
        }
        Refund(ts.size());
        if (fn == nullptr || !any) continue;
        if (once) {
          std::fill(c.v.begin() + 1, c.v.end(), c.v[0]);
          std::fill(c.present.begin() + 1, c.present.end(), c.present[0]);
        }
        c.labels = std::move(labels);
        c.drop_name = drop_name || !keeps_name;
        INGOT_RETURN_IF_ERROR(Charge(g.n));
        results[block].push_back(std::move(c));
      }
      return Status::OK();
    };
    // With a sink, finished blocks go to it in order as soon as every earlier block has gone:
    // whichever thread completes the next block in line hands over every ready block after it,
    // one thread at a time, while the others compute.
    std::mutex deliver_mu;
    std::vector<std::uint8_t> done(sink != nullptr ? blocks : 0);
    std::size_t next_block = 0;
    bool delivering = false;
    Status sink_status;
    auto deliver = [&](std::size_t block) {
      {
        std::lock_guard<std::mutex> lock(deliver_mu);
        done[block] = 1;
        if (delivering) return;
        delivering = true;
      }
      for (;;) {
        std::size_t b;
        {
          std::lock_guard<std::mutex> lock(deliver_mu);
          if (next_block == blocks || !done[next_block]) {
            delivering = false;
            return;
          }
          b = next_block++;
        }
        if (sink_status.ok() && statuses[b].ok()) sink_status = (*sink)(results[b]);
        std::vector<Column>().swap(results[b]);
      }
    };
    if (parallel) {
      WorkPool::Instance().ParallelFor(blocks, [&](std::size_t block, std::size_t worker_id) {
        statuses[block] = run_block(block, worker_id);
        if (sink != nullptr) deliver(block);
      });
    } else {
      for (std::size_t block = 0; block < blocks; ++block) {
        statuses[block] = run_block(block, 0);
        if (!statuses[block].ok()) break;
        if (sink != nullptr) deliver(block);
      }
    }
    for (const Status& st : statuses) INGOT_RETURN_IF_ERROR(st);
    INGOT_RETURN_IF_ERROR(sink_status);
    std::vector<std::uint8_t> has(g.n);
    for (Worker& w : workers) {
      if (reader_.damage_sink() != nullptr) {
        reader_.damage_sink()->insert(reader_.damage_sink()->end(), w.damage.begin(),
                                      w.damage.end());
      }
      for (std::size_t i = 0; i < w.has.size(); ++i) has[i] |= w.has[i];
    }
    for (auto& block : results) {
      for (Column& c : block) out->vec.push_back(std::move(c));
    }
    RefundValue(src.inner_value, src.inner.n);
    Release(&src.sel);
    if (fn == nullptr) {
      if (once) std::fill(has.begin() + 1, has.end(), has[0]);
      return AbsentResult(call, has, g, out);
    }
    return Status::OK();
  }

  // Re-keys series whose labels a function changed; two landing on one label set at one step are
  // an error.
  Status Relabel(std::vector<Column>* in, std::vector<Labels>* labels, const Grid& g, Value* out) {
    out->type = ValueType::kVector;
    Merger merger(g.n, &out->vec);
    for (std::size_t s = 0; s < in->size(); ++s) {
      const Column& c = (*in)[s];
      const std::size_t idx = merger.Get((*labels)[s], c.drop_name);
      for (std::size_t i = 0; i < g.n; ++i) {
        if (c.present[i] && !merger.Set(idx, i, c.v[i])) return SameLabelsetError();
      }
    }
    return Status::OK();
  }

  Status LabelReplace(const Call& call, const Grid& g, Value* out) {
    std::string dst, repl, src, regex;
    INGOT_RETURN_IF_ERROR(StringArg(*call.args[1], &dst));
    INGOT_RETURN_IF_ERROR(StringArg(*call.args[2], &repl));
    INGOT_RETURN_IF_ERROR(StringArg(*call.args[3], &src));
    INGOT_RETURN_IF_ERROR(StringArg(*call.args[4], &regex));
    re2::RE2::Options opts;
    opts.set_log_errors(false);
    opts.set_dot_nl(true);
    re2::RE2 re("(?s:" + regex + ")", opts);
    if (!re.ok()) {
      return Status::InvalidArgument("invalid regular expression in label_replace(): " + regex);
    }
    if (!ValidLabelName(dst)) {
      return Status::InvalidArgument("invalid destination label name in label_replace(): " + dst);
    }
    Value in;
    INGOT_RETURN_IF_ERROR(Eval(*call.args[0], g, &in));
    std::vector<Labels> labels(in.vec.size());
    std::vector<re2::StringPiece> groups(static_cast<std::size_t>(re.NumberOfCapturingGroups()) +
                                         1);
    std::string value;
    for (std::size_t s = 0; s < in.vec.size(); ++s) {
      Column& c = in.vec[s];
      labels[s] = c.labels;
      const std::string_view sv = LabelOf(c.labels, src);
      if (!re.Match(re2::StringPiece(sv.data(), sv.size()), 0, sv.size(), re2::RE2::ANCHOR_BOTH,
                    groups.data(), static_cast<int>(groups.size()))) {
        continue;
      }
      value.clear();
      ExpandReplacement(repl, re, groups, &value);
      SetLabel(&labels[s], dst, value);
      if (dst == kMetricNameLabel) c.drop_name = false;
    }
    return Relabel(&in.vec, &labels, g, out);
  }

  Status LabelJoin(const Call& call, const Grid& g, Value* out) {
    std::string dst, sep;
    INGOT_RETURN_IF_ERROR(StringArg(*call.args[1], &dst));
    INGOT_RETURN_IF_ERROR(StringArg(*call.args[2], &sep));
    std::vector<std::string> srcs(call.args.size() - 3);
    for (std::size_t k = 3; k < call.args.size(); ++k) {
      INGOT_RETURN_IF_ERROR(StringArg(*call.args[k], &srcs[k - 3]));
      if (!ValidLabelName(srcs[k - 3])) {
        return Status::InvalidArgument("invalid source label name in label_join(): " + srcs[k - 3]);
      }
    }
    if (!ValidLabelName(dst)) {
      return Status::InvalidArgument("invalid destination label name in label_join(): " + dst);
    }
    Value in;
    INGOT_RETURN_IF_ERROR(Eval(*call.args[0], g, &in));
    std::vector<Labels> labels(in.vec.size());
    std::string value;
    for (std::size_t s = 0; s < in.vec.size(); ++s) {
      Column& c = in.vec[s];
      labels[s] = c.labels;
      value.clear();
      for (std::size_t k = 0; k < srcs.size(); ++k) {
        if (k) value.append(sep);
        value.append(LabelOf(c.labels, srcs[k]));
      }
      SetLabel(&labels[s], dst, value);
      if (dst == kMetricNameLabel) c.drop_name = false;
    }
    return Relabel(&in.vec, &labels, g, out);
  }

  // histogram_quantile(q, v), histogram_quantiles(v, "label", q...) and
  // histogram_fraction(lower, upper, v) over classic `le` buckets: series are grouped by their
  // labels without `le` (the name goes at the end), each group's buckets per step.
  Status HistogramQuantile(const Call& call, const Grid& g, Value* out) {
    const std::string_view name = call.func->name;
    const bool fraction = name == "histogram_fraction";
    const bool many = name == "histogram_quantiles";
    const Expr& vector_arg = *call.args[many ? 0 : fraction ? 2 : 1];
    std::vector<std::vector<double>> params;  // per quantile (or lower, upper) per step
    std::string label;
    if (many) {
      INGOT_RETURN_IF_ERROR(StringArg(*call.args[1], &label));
      if (!ValidLabelName(label)) return ExecError("invalid label name \"" + label + "\"");
      for (std::size_t k = 2; k < call.args.size(); ++k) {
        params.emplace_back();
        INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[k], g, &params.back()));
      }
    } else if (fraction) {
      params.resize(2);
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[0], g, &params[0]));
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[1], g, &params[1]));
    } else {
      params.resize(1);
      INGOT_RETURN_IF_ERROR(ScalarArg(*call.args[0], g, &params[0]));
    }
    if (!fraction) {
      for (std::size_t k = 0; k < params.size(); ++k) {
        for (double q : params[k]) QuantileWarning(q, *call.args[many ? k + 2 : 0]);
      }
    }
    Value in;
    INGOT_RETURN_IF_ERROR(Eval(vector_arg, g, &in));
    out->type = ValueType::kVector;
    std::unordered_map<std::string, std::size_t> ids;
    std::vector<Labels> group_labels;
    std::vector<std::size_t> group_of(in.vec.size());
    std::vector<double> bound(in.vec.size());
    std::vector<std::uint8_t> usable(in.vec.size());
    std::string key;
    for (std::size_t s = 0; s < in.vec.size(); ++s) {
      const Column& c = in.vec[s];
      const std::string_view le = LabelOf(c.labels, "le");
      double b = 0;
      if (le.empty() || !ParseBound(le, &b)) {
        Warn("bucket label \"le\" is missing or has a malformed value of \"" + std::string(le) +
                 "\" for metric name \"" + std::string(LabelOf(c.labels, kMetricNameLabel)) + "\"",
             vector_arg);
        continue;
      }
      usable[s] = 1;
      bound[s] = b;
      Labels gl = c.labels;
      SetLabel(&gl, "le", "");
      key.clear();
      AppendKey(gl, &key);
      auto [it, inserted] = ids.try_emplace(key, group_labels.size());
      if (inserted) group_labels.push_back(std::move(gl));
      group_of[s] = it->second;
    }
    const std::size_t groups = group_labels.size();
    const std::size_t outputs = many ? params.size() : 1;
    // Output series: one per group (and quantile, for histogram_quantiles).
    Merger merger(g.n, &out->vec);
    std::vector<std::size_t> out_index(groups * outputs);
    for (std::size_t k = 0; k < groups; ++k) {
      for (std::size_t j = 0; j < outputs; ++j) {
        Labels labels = group_labels[k];
        if (many) {
          std::string q = FormatValue(params[j][0]);
          if (q.find_first_of(".eIN") == std::string::npos) q.append(".0");
          SetLabel(&labels, label, q);
        }
        const std::size_t before = out->vec.size();
        out_index[k * outputs + j] = merger.Get(labels, true);
        if (out->vec.size() == before) return SameLabelsetError();
      }
    }
    INGOT_RETURN_IF_ERROR(Charge(static_cast<std::uint64_t>(out->vec.size()) * g.n));
    std::vector<std::vector<Bucket>> buckets(groups);
    bool forced_any = false;
    std::string_view forced_name;
    for (std::size_t i = 0; i < g.n; ++i) {
      INGOT_RETURN_IF_ERROR(Tick());
      for (auto& b : buckets) b.clear();
      for (std::size_t s = 0; s < in.vec.size(); ++s) {
        if (usable[s] && in.vec[s].present[i]) {
          buckets[group_of[s]].push_back({bound[s], in.vec[s].v[i]});
        }
      }
      for (std::size_t k = 0; k < groups; ++k) {
        if (buckets[k].empty()) continue;
        for (std::size_t j = 0; j < outputs; ++j) {
          double r;
          if (fraction) {
            r = BucketFraction(params[0][i], params[1][i], buckets[k]);
          } else {
            bool forced = false;
            r = BucketQuantile(params[j][i], buckets[k], &forced);
            if (forced && !forced_any) {
              forced_any = true;
              forced_name = LabelOf(group_labels[k], kMetricNameLabel);
            }
          }
          merger.Set(out_index[k * outputs + j], i, r);
        }
      }
    }
    if (forced_any) {
      Info(
          "input to histogram_quantile needed to be fixed for monotonicity (see "
          "https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) "
          "for metric name \"" +
              std::string(forced_name) + "\"",
          vector_arg);
    }
    RefundValue(in, g.n);
    std::erase_if(out->vec, [](const Column& c) { return !c.Any(); });
    return Status::OK();
  }

  static bool ParseBound(std::string_view text, double* out) {
    std::string s(text);
    if (s == "+Inf" || s == "Inf" || s == "inf" || s == "+inf") {
      *out = std::numeric_limits<double>::infinity();
      return true;
    }
    char* end = nullptr;
    *out = std::strtod(s.c_str(), &end);
    return end != s.c_str() && *end == '\0';
  }

  Status Sort(const Call& call, const Grid& g, Value* out) {
    const std::string_view name = call.func->name;
    INGOT_RETURN_IF_ERROR(Eval(*call.args[0], g, out));
    if (params_.start_ns != params_.end_ns) {
      Warn("sort is ineffective for range queries since results are always ordered by labels",
           call);
      return Status::OK();
    }
    if (g.n != 1) return Status::OK();
    ordered_ = true;
    auto& vec = out->vec;
    // Equal values keep the label order.
    std::sort(vec.begin(), vec.end(), [](const Column& a, const Column& b) {
      return CompareLabels(a.labels, b.labels) < 0;
    });
    if (name == "sort" || name == "sort_desc") {
      const bool desc = name == "sort_desc";
      std::stable_sort(vec.begin(), vec.end(), [&](const Column& a, const Column& b) {
        const double x = a.v[0], y = b.v[0];
        if (std::isnan(x)) return false;
        if (std::isnan(y)) return true;
        return desc ? x > y : x < y;
      });
      return Status::OK();
    }
    std::vector<std::string> names(call.args.size() - 1);
    for (std::size_t k = 1; k < call.args.size(); ++k) {
      INGOT_RETURN_IF_ERROR(StringArg(*call.args[k], &names[k - 1]));
    }
    const bool desc = name == "sort_by_label_desc";
    std::stable_sort(vec.begin(), vec.end(), [&](const Column& a, const Column& b) {
      for (const std::string& l : names) {
        const int c = NaturalCompare(LabelOf(a.labels, l), LabelOf(b.labels, l));
        if (c != 0) return desc ? c > 0 : c < 0;
      }
      const int c = CompareLabels(a.labels, b.labels);
      return desc ? c > 0 : c < 0;
    });
    return Status::OK();
  }

 public:
  bool ordered() const { return ordered_; }
  std::uint64_t peak() const { return peak_.load(); }
  std::uint64_t read() const { return read_.load(); }
  std::vector<std::string>& warnings() { return warnings_; }
  std::vector<std::string>& infos() { return infos_; }

 private:
  // " (line:column)" of where `e` starts in the query text, as Prometheus ends annotations.
  std::string Where(const Expr& e) const {
    const std::string_view q = params_.query;
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < e.pos.start && i < q.size(); ++i) {
      if (q[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return " (" + std::to_string(line) + ":" + std::to_string(col) + ")";
  }
  static void Add(std::vector<std::string>* list, std::string text) {
    if (std::find(list->begin(), list->end(), text) == list->end())
      list->push_back(std::move(text));
  }
  void Warn(std::string_view text, const Expr& at) {
    Add(&warnings_, "PromQL warning: " + std::string(text) + Where(at));
  }
  void Info(std::string_view text, const Expr& at) {
    Add(&infos_, "PromQL info: " + std::string(text) + Where(at));
  }
  void QuantileWarning(double q, const Expr& at) {
    if (q >= 0 && q <= 1) return;
    char text[64];
    std::snprintf(text, sizeof(text), "%g", q);
    std::string v = text;
    if (std::isnan(q)) v = "NaN";
    if (std::isinf(q)) v = q > 0 ? "+Inf" : "-Inf";
    Warn("quantile value should be between 0 and 1, got " + v, at);
  }

 private:
  const QueryParams& params_;
  SeriesCatalog& catalog_;
  SeriesReader& reader_;
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::uint64_t> peak_{0};  // the most points held at once
  std::atomic<std::uint64_t> read_{0};  // points read from storage
  std::uint64_t ticks_ = 0;
  // Set by an aggregation for the range function that is its argument (FoldsWhileEvaluating),
  // which takes it on entry and hands it its columns block by block, in series order.
  using BlockSink = std::function<Status(std::span<const Column> block)>;
  BlockSink* block_sink_ = nullptr;
  bool ordered_ = false;
  std::vector<std::string> warnings_;
  std::vector<std::string> infos_;
};

}  // namespace

Status Evaluate(const Expr& expr, const QueryParams& params, SeriesCatalog& catalog,
                SeriesReader& reader, QueryResult* out) {
  *out = QueryResult();
  const bool instant = params.start_ns == params.end_ns;
  if (!instant && (params.step_ns <= 0 || params.end_ns < params.start_ns)) {
    return Status::InvalidArgument("evaluation needs step > 0 and end >= start");
  }
  Engine engine(params, catalog, reader);
  struct StatsOnExit {
    Engine& engine;
    QueryResult* out;
    ~StatsOnExit() {
      out->samples_read = engine.read();
      out->peak_samples = engine.peak();
    }
  } stats{engine, out};
  const Grid grid{params.start_ns, instant ? 1 : params.step_ns, params.steps()};
  if (expr.type == ValueType::kMatrix) {
    if (!instant) {
      return Status::InvalidArgument(
          "invalid expression type \"range vector\" for range query, must be Scalar or instant "
          "Vector");
    }
    out->type = ValueType::kMatrix;
    INGOT_RETURN_IF_ERROR(engine.EvalMatrix(expr, params.start_ns, &out->ranges));
    out->warnings = engine.warnings();
    std::sort(out->ranges.begin(), out->ranges.end(),
              [](const RangeSeriesResult& a, const RangeSeriesResult& b) {
                return CompareLabels(a.labels, b.labels) < 0;
              });
    for (std::size_t i = 1; i < out->ranges.size(); ++i) {
      if (out->ranges[i].labels == out->ranges[i - 1].labels) return SameLabelsetError();
    }
    return Status::OK();
  }
  if (expr.type == ValueType::kString && !instant) {
    return Status::InvalidArgument(
        "invalid expression type \"string\" for range query, must be Scalar or instant Vector");
  }
  Value v;
  INGOT_RETURN_IF_ERROR(engine.Eval(expr, grid, &v));
  out->type = v.type;
  out->warnings = engine.warnings();
  out->infos = engine.infos();
  if (v.type == ValueType::kScalar) {
    out->scalar = std::move(v.scalar);
    return Status::OK();
  }
  if (v.type == ValueType::kString) {
    out->string_value = std::move(v.str);
    return Status::OK();
  }
  // The names marked for dropping go now. Series left with one label set merge when their steps
  // do not overlap (`-metric_a or -metric_b`); a step with two values is an error.
  std::vector<Column> merged;
  {
    Merger merger(grid.n, &merged);
    for (Column& c : v.vec) {
      if (c.drop_name) DropName(&c.labels);
    }
    for (Column& c : v.vec) {
      const std::size_t before = merged.size();
      const std::size_t idx = merger.Get(c.labels, false);
      if (merged.size() != before) {
        merged[idx] = std::move(c);
        continue;
      }
      for (std::size_t i = 0; i < grid.n; ++i) {
        if (c.present[i] && !merger.Set(idx, i, c.v[i])) return SameLabelsetError();
      }
    }
  }
  v.vec = std::move(merged);
  // A range query's series are sorted by labels, as Prometheus answers; an instant vector keeps
  // its evaluation order.
  std::vector<std::size_t> order(v.vec.size());
  std::iota(order.begin(), order.end(), 0);
  if (!instant) {
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return CompareLabels(v.vec[a].labels, v.vec[b].labels) < 0;
    });
  }
  out->ordered = instant && engine.ordered();
  out->warnings = std::move(engine.warnings());
  out->infos = std::move(engine.infos());
  out->series.reserve(v.vec.size());
  auto take = [&](Column& c) {
    if (!c.Any()) return;
    SeriesResult r;
    r.labels = std::move(c.labels);
    r.values = std::move(c.v);
    r.present = std::move(c.present);
    out->series.push_back(std::move(r));
  };
  if (out->ordered) {
    for (Column& c : v.vec) take(c);
  } else {
    for (std::size_t i : order) take(v.vec[i]);
  }
  return Status::OK();
}

}  // namespace ingot::promql
