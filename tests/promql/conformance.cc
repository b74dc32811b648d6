#include "tests/promql/conformance.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <utility>

#include "chunk/series_key.h"
#include "chunk/series_reader.h"
#include "chunk/shard_engine.h"
#include "chunk/storage.h"
#include "config/clock.h"
#include "config/options.h"
#include "query/promql_engine.h"
#include "query/promql_parser.h"
#include "query/series_catalog.h"
#include "tests/support/temp_dir.h"

namespace ingot::promqltest {
namespace {

// The scripts' data starts at Unix time 0. Retention is off and late points have no age limit, so
// the clock only paces background work, which these short runs do not need.
constexpr std::int64_t kClockNs = 0;
constexpr int kShards = 2;
// Points per Append: loads go in batches as ingest sends them.
constexpr std::size_t kBatchPoints = 4096;

// Concatenation by append (GCC 12 misreads chains of operator+ as overlapping copies).
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

std::string Points(std::size_t n) {
  std::string out = std::to_string(n);
  out.append(n == 1 ? " point" : " points");
  return out;
}

std::string Seconds(std::int64_t ns) {
  std::string out = FormatValue(static_cast<double>(ns) / 1e9);
  out.push_back('s');
  return out;
}

// One sample of a result as the HTTP API would return it.
struct Sample {
  const LabelSet* labels;
  double value;
};

const ExpectedSeries* FindExpected(const EvalCase& c, const LabelSet& labels) {
  for (const ExpectedSeries& e : c.expected) {
    if (e.labels == labels) return &e;
  }
  return nullptr;
}

std::string DuplicateLabels(const std::vector<const LabelSet*>& all) {
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      if (*all[i] == *all[j]) {
        std::string out = "the result has two series with labels ";
        out.append(FormatLabels(*all[i]));
        return out;
      }
    }
  }
  return {};
}

using promql::QueryResult;
using promql::SeriesResult;

std::string CompareInstant(const EvalCase& c, const QueryResult& result) {
  if (result.type == promql::ValueType::kString) return "expected a vector or scalar, got a string";
  if (result.type == promql::ValueType::kMatrix)
    return "expected an instant vector, got a range vector";
  if (result.type == promql::ValueType::kScalar) {
    const double got = result.scalar.empty() ? std::nan("") : result.scalar[0];
    if (!c.expected_scalar) {
      std::string out = "expected a vector, got scalar ";
      out.append(FormatValue(got));
      return out;
    }
    if (!AlmostEqual(*c.expected_scalar, got)) {
      std::string out = "expected scalar ";
      out.append(FormatValue(*c.expected_scalar)).append(", got ").append(FormatValue(got));
      return out;
    }
    return {};
  }
  std::vector<Sample> samples;
  std::vector<const LabelSet*> labels;
  for (const SeriesResult& s : result.series) {
    if (s.present.empty() || !s.present[0]) continue;
    samples.push_back({&s.labels, s.values[0]});
    labels.push_back(&s.labels);
  }
  if (c.expected_scalar) {
    std::string out = "expected scalar ";
    out.append(FormatValue(*c.expected_scalar)).append(", got a vector of ");
    out.append(std::to_string(samples.size())).append(" series");
    return out;
  }
  for (std::size_t pos = 0; pos < samples.size(); ++pos) {
    const Sample& s = samples[pos];
    const ExpectedSeries* e = FindExpected(c, *s.labels);
    if (e == nullptr) {
      std::string out = "unexpected series ";
      out.append(FormatLabels(*s.labels)).append(" = ").append(FormatValue(s.value));
      return out;
    }
    if (c.ordered && e->position != static_cast<int>(pos) + 1) {
      std::string out = "expected ";
      out.append(FormatLabels(*s.labels)).append(" at position ");
      out.append(std::to_string(e->position)).append(", got it at ");
      out.append(std::to_string(pos + 1));
      return out;
    }
    if (e->values.empty() || e->values[0].kind != SequenceValue::Kind::kFloat) {
      std::string out = "expected no sample for ";
      out.append(FormatLabels(*s.labels)).append(", got ").append(FormatValue(s.value));
      return out;
    }
    if (!AlmostEqual(e->values[0].value, s.value)) {
      std::string out = "expected ";
      out.append(FormatValue(e->values[0].value)).append(" for ").append(FormatLabels(*s.labels));
      out.append(", got ").append(FormatValue(s.value));
      return out;
    }
  }
  for (const ExpectedSeries& e : c.expected) {
    const bool found = std::any_of(samples.begin(), samples.end(),
                                   [&](const Sample& s) { return *s.labels == e.labels; });
    if (!found) {
      std::string out = "expected series ";
      out.append(FormatLabels(e.labels)).append(" not found");
      return out;
    }
  }
  return DuplicateLabels(labels);
}

// Compares series of points on the grid start, start + step, ... end (a range query's steps, or
// the times an expected range vector lists).
std::string CompareRange(const EvalCase& c, const std::vector<SeriesResult>& series,
                         std::int64_t start_ns, std::int64_t step_ns, std::int64_t end_ns) {
  struct Grid {
    std::int64_t start_ns, step_ns, end_ns;
  } const grid{start_ns, step_ns, end_ns};
  const std::size_t steps =
      static_cast<std::size_t>((grid.end_ns - grid.start_ns) / grid.step_ns) + 1;
  std::vector<const LabelSet*> labels;
  for (const SeriesResult& s : series) {
    labels.push_back(&s.labels);
    std::vector<std::pair<std::int64_t, double>> got;
    for (std::size_t i = 0; i < s.values.size() && i < s.present.size(); ++i) {
      if (s.present[i]) {
        got.emplace_back(grid.start_ns + static_cast<std::int64_t>(i) * grid.step_ns, s.values[i]);
      }
    }
    const ExpectedSeries* e = FindExpected(c, s.labels);
    if (e == nullptr) {
      std::string out = "unexpected series ";
      out.append(FormatLabels(s.labels)).append(" with ").append(Points(got.size()));
      return out;
    }
    if (e->values.size() > steps) {
      std::string out = "expected ";
      out.append(std::to_string(e->values.size())).append(" steps for ");
      out.append(FormatLabels(e->labels)).append(", but the range has ");
      out.append(std::to_string(steps));
      return out;
    }
    std::vector<std::pair<std::int64_t, double>> want;
    for (std::size_t i = 0; i < e->values.size(); ++i) {
      if (e->values[i].kind == SequenceValue::Kind::kFloat) {
        want.emplace_back(grid.start_ns + static_cast<std::int64_t>(i) * grid.step_ns,
                          e->values[i].value);
      }
    }
    for (std::size_t i = 0; i < want.size() || i < got.size(); ++i) {
      if (i >= want.size() || i >= got.size() || want[i].first != got[i].first) {
        // The first step where one has a point and the other has not.
        const std::int64_t t = i >= want.size()  ? got[i].first
                               : i >= got.size() ? want[i].first
                                                 : std::min(want[i].first, got[i].first);
        const bool wanted = i < want.size() && want[i].first == t;
        std::string out = "expected ";
        out.append(Points(want.size())).append(" for ").append(FormatLabels(e->labels));
        out.append(", got ").append(Points(got.size())).append(": at t=").append(Seconds(t));
        out.append(wanted ? " expected " : " got ");
        out.append(FormatValue(wanted ? want[i].second : got[i].second));
        out.append(wanted ? ", got none" : ", expected none");
        return out;
      }
      if (!AlmostEqual(want[i].second, got[i].second)) {
        std::string out = "expected ";
        out.append(FormatValue(want[i].second)).append(" at t=").append(Seconds(want[i].first));
        out.append(" for ").append(FormatLabels(e->labels)).append(", got ");
        out.append(FormatValue(got[i].second));
        return out;
      }
    }
  }
  for (const ExpectedSeries& e : c.expected) {
    const bool found = std::any_of(series.begin(), series.end(),
                                   [&](const SeriesResult& s) { return s.labels == e.labels; });
    if (!found) {
      std::string out = "expected series ";
      out.append(FormatLabels(e.labels)).append(" not found");
      return out;
    }
  }
  std::string duplicate = DuplicateLabels(labels);
  if (!duplicate.empty()) return duplicate;
  for (std::size_t i = 1; i < series.size(); ++i) {
    if (CompareLabels(series[i - 1].labels, series[i].labels) > 0) {
      std::string out = "the matrix is not sorted by labels: ";
      out.append(FormatLabels(series[i - 1].labels)).append(" comes before ");
      out.append(FormatLabels(series[i].labels));
      return out;
    }
  }
  return {};
}

// Judges a result's annotations of one kind as promqltest does: `expect warn` needs at least one,
// each `expect warn msg:` line one that matches, `expect no_warn` none. A case that says nothing
// about them accepts any.
std::string CompareAnnotations(std::string_view kind, bool expected, bool none,
                               const std::vector<MessageMatch>& wanted,
                               const std::vector<std::string>& got) {
  auto listed = [&] {
    std::string out = "[";
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (i) out.append("; ");
      out.append(got[i]);
    }
    out.push_back(']');
    return out;
  };
  if (none && !got.empty()) return Cat({"expected no ", kind, " annotations, got ", listed()});
  if ((expected || !wanted.empty()) && got.empty()) {
    return Cat({"expected ", kind, " annotations, got none"});
  }
  for (const MessageMatch& m : wanted) {
    if (std::none_of(got.begin(), got.end(), [&](const std::string& a) { return m.Matches(a); })) {
      return Cat({"expected a ", kind, " annotation matching \"", m.text, "\", got ", listed()});
    }
  }
  return {};
}

// Runs the commands of one script against its own store.
class Runner {
 public:
  Runner() : clock_(kClockNs) {}
  ~Runner() { Close(); }

  void Run(const Script& script, ScriptReport* report) {
    report->name = script.name;
    report->cases.clear();
    for (const Command& cmd : script.commands) {
      switch (cmd.kind) {
        case Command::Kind::kClear:
          Close();
          break;
        case Command::Kind::kLoad:
          if (load_status_.ok()) {
            Status st = Load(cmd.load);
            if (!st.ok()) {
              std::string context = "load at line ";
              context.append(std::to_string(cmd.line));
              load_status_ = st.WithContext(context);
            }
          }
          break;
        case Command::Kind::kEval:
          report->cases.push_back(Eval(cmd.eval));
          break;
      }
    }
    Close();
  }

 private:
  Status Open() {
    if (storage_) return Status::OK();
    dir_ = std::make_unique<testing::TempDir>();
    StorageOptions options = testing::TestStorageOptions(dir_->path());
    options.retention_s = 0;
    options.late_max_age_s = 0;
    INGOT_RETURN_IF_ERROR(Storage::Open(options, kShards, clock_, &storage_));
    catalog_ = std::make_unique<SeriesCatalog>(storage_->index());
    return Status::OK();
  }

  void Close() {
    catalog_.reset();
    if (storage_) (void)storage_->Close();
    storage_.reset();
    dir_.reset();
    load_status_ = Status::OK();
  }

  Status Load(const LoadCommand& load) {
    INGOT_RETURN_IF_ERROR(Open());
    std::vector<std::vector<PointRecord>> points(kShards);
    std::vector<std::vector<std::uint8_t>> definitions(kShards);
    std::string key;
    std::vector<TagView> tags;
    for (const SeriesDef& def : load.series) {
      std::vector<std::pair<std::int64_t, std::uint64_t>> samples;
      for (std::size_t i = 0; i < def.values.size(); ++i) {
        if (def.values[i].kind != SequenceValue::Kind::kFloat) continue;
        samples.emplace_back(static_cast<std::int64_t>(i) * load.interval_ns,
                             std::bit_cast<std::uint64_t>(def.values[i].value));
      }
      if (samples.empty()) continue;  // a series without samples does not exist
      std::string_view name;
      tags.clear();
      for (const auto& [k, v] : def.labels) {
        if (k == "__name__") {
          name = v;
        } else {
          tags.emplace_back(k, v);  // sorted: the label set is
        }
      }
      if (name.empty()) {
        return Status::InvalidArgument(
            Cat({"series without a metric name at line ", std::to_string(def.line)}));
      }
      BuildLabelSetKey(name, tags, &key);
      ResolvedSeries resolved;
      Status st = storage_->index().Resolve(key, ValueType::kFloat, &resolved);
      if (!st.ok()) return st.WithContext(key);
      if (resolved.type != ValueType::kFloat) {
        return Status::InvalidArgument(Cat({"series ", key, " exists with another value type"}));
      }
      const auto shard = static_cast<std::size_t>(storage_->ShardOf(resolved.sid));
      if (resolved.definition_pending) {
        storage_->index().AppendDefinition(resolved.sid, &definitions[shard]);
      }
      for (const auto& [ts_ns, bits] : samples) {
        points[shard].push_back({resolved.sid, ts_ns, bits, ValueType::kFloat});
      }
    }
    for (std::size_t shard = 0; shard < points.size(); ++shard) {
      const std::span<const PointRecord> all = points[shard];
      for (std::size_t at = 0; at < all.size(); at += kBatchPoints) {
        const auto batch = all.subspan(at, std::min(kBatchPoints, all.size() - at));
        // The definitions go ahead of the first points that use them.
        const std::span<const std::uint8_t> defs =
            at == 0 ? std::span<const std::uint8_t>(definitions[shard])
                    : std::span<const std::uint8_t>();
        AppendResult result;
        INGOT_RETURN_IF_ERROR(
            storage_->shard(static_cast<int>(shard)).Append(batch, defs, &result));
        if (result.accepted != batch.size()) {
          return Status::InvalidArgument(Cat(
              {std::to_string(batch.size() - result.accepted), " of ", std::to_string(batch.size()),
               " points rejected (too old ", std::to_string(result.rejected_too_old), ", expired ",
               std::to_string(result.rejected_expired), ", type ",
               std::to_string(result.rejected_type), ")"}));
        }
      }
    }
    return Status::OK();
  }

  CaseResult Eval(const EvalCase& c) {
    CaseResult r;
    r.line = c.line;
    r.expr = c.expr;
    auto fail = [&](std::string reason) {
      r.outcome = Outcome::kFailed;
      r.reason = std::move(reason);
      return r;
    };
    if (c.native_histogram) {
      r.outcome = Outcome::kSkipped;
      r.reason = "native histograms";
      return r;
    }
    if (!load_status_.ok()) return fail(load_status_.ToString());
    Status st = Open();
    if (!st.ok()) return fail(Cat({"cannot open a store: ", st.ToString()}));

    std::unique_ptr<promql::Expr> expr;
    st = promql::Parse(c.expr, &expr);
    const bool parsed = st.ok();
    QueryResult result;
    if (parsed) {
      // As the HTTP API evaluates a query (query_routes.cc): default limits and lookback.
      const QueryOptions defaults;
      promql::QueryParams params;
      params.lookback_ns = static_cast<std::int64_t>(defaults.lookback_ms) * 1'000'000;
      params.max_series = defaults.max_series;
      params.max_samples = defaults.max_points;
      params.start_ns = c.start_ns;
      params.end_ns = c.end_ns;
      params.step_ns = c.kind == EvalKind::kRange ? c.step_ns : 1'000'000;
      params.query = c.expr;
      SeriesReader reader(*storage_);
      std::vector<CorruptChunk> damage;
      reader.SkipDamage(&damage);
      st = promql::Evaluate(*expr, params, *catalog_, reader, &result);
      if (st.ok() && !damage.empty()) {
        return fail(Cat({"damaged data left out of the answer: ", damage[0].status.ToString()}));
      }
    }
    if (!st.ok()) {
      const std::string_view message = st.message();
      // Ingot appends the list of what it supports to "unsupported" errors; the first part says
      // what is missing, which is enough for a report.
      const std::string_view brief = message.substr(0, message.find(" (supported: "));
      if (!c.fail) return fail(Cat({parsed ? "evaluation error: " : "parse error: ", brief}));
      if (!parsed) {
        return fail(
            Cat({"expected an evaluation error, but the expression does not parse: ", brief}));
      }
      if (!c.fail_message.Matches(message)) {
        std::string reason = "expected an error matching \"";
        reason.append(c.fail_message.text).append("\", got: ").append(message);
        return fail(std::move(reason));
      }
      r.outcome = Outcome::kPassed;
      return r;
    }
    if (c.fail) return fail("expected an error, got none");
    std::string reason =
        CompareAnnotations("warning", c.warn, c.no_warn, c.warnings, result.warnings);
    if (reason.empty())
      reason = CompareAnnotations("info", c.info, c.no_info, c.infos, result.infos);
    if (!reason.empty()) return fail(std::move(reason));
    reason = CompareResult(c, result);
    if (!reason.empty()) return fail(std::move(reason));
    r.outcome = Outcome::kPassed;
    return r;
  }

  ManualClock clock_;
  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<SeriesCatalog> catalog_;
  Status load_status_;  // the first failed load since the last clear
};

}  // namespace

bool AlmostEqual(double a, double b, double epsilon) {
  constexpr double kMinNormal = std::numeric_limits<double>::min();  // 0x0010000000000000
  if (std::isnan(a) && std::isnan(b)) return true;
  if (a == b) return true;
  const double abs_sum = std::abs(a) + std::abs(b);
  const double diff = std::abs(a - b);
  if (a == 0 || b == 0 || abs_sum < kMinNormal) return diff < epsilon * kMinNormal;
  return diff / std::min(abs_sum, std::numeric_limits<double>::max()) < epsilon;
}

int CompareLabels(const LabelSet& a, const LabelSet& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i].first != b[i].first) return a[i].first < b[i].first ? -1 : 1;
    if (a[i].second != b[i].second) return a[i].second < b[i].second ? -1 : 1;
  }
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

std::size_t ScriptReport::Count(Outcome outcome) const {
  return static_cast<std::size_t>(std::count_if(
      cases.begin(), cases.end(), [&](const CaseResult& c) { return c.outcome == outcome; }));
}

void RunScript(const Script& script, ScriptReport* report) {
  Runner runner;
  runner.Run(script, report);
}

std::string CompareResult(const EvalCase& c, const QueryResult& result) {
  if (c.expected_string) {
    if (result.type != promql::ValueType::kString) return "expected a string, got another type";
    if (result.string_value != *c.expected_string) {
      std::string out = "expected string \"";
      out.append(*c.expected_string).append("\", got \"").append(result.string_value).append("\"");
      return out;
    }
    return {};
  }
  if (c.expect_range_vector) {
    if (result.type != promql::ValueType::kMatrix)
      return "expected a range vector, got another type";
    // The samples sit on the listed grid; one off it is a difference of its own.
    std::vector<SeriesResult> series;
    const std::int64_t start = c.range_vector_start_ns, step = c.range_vector_step_ns;
    const std::size_t steps = static_cast<std::size_t>((c.end_ns - start) / step) + 1;
    for (const promql::RangeSeriesResult& r : result.ranges) {
      SeriesResult s;
      s.labels = r.labels;
      s.values.assign(steps, 0);
      s.present.assign(steps, 0);
      for (std::size_t i = 0; i < r.ts.size(); ++i) {
        const std::int64_t off = r.ts[i] - start;
        if (off < 0 || off % step != 0 || static_cast<std::size_t>(off / step) >= steps) {
          std::string out = "unexpected sample at t=";
          out.append(Seconds(r.ts[i])).append(" for ").append(FormatLabels(r.labels));
          return out;
        }
        s.values[static_cast<std::size_t>(off / step)] = r.values[i];
        s.present[static_cast<std::size_t>(off / step)] = 1;
      }
      series.push_back(std::move(s));
    }
    return CompareRange(c, series, start, step, c.end_ns);
  }
  if (c.kind == EvalKind::kInstant) return CompareInstant(c, result);
  if (c.ordered) return "expected an ordered result, but a range query returns a matrix";
  if (c.expected_scalar) return "expected a scalar, but a range query returns a matrix";
  if (result.type == promql::ValueType::kScalar) {
    // A number over a range is one series without labels, as the HTTP API answers it.
    std::vector<SeriesResult> series(1);
    series[0].values = result.scalar;
    series[0].present.assign(result.scalar.size(), 1);
    return CompareRange(c, series, c.start_ns, c.step_ns, c.end_ns);
  }
  return CompareRange(c, result.series, c.start_ns, c.step_ns, c.end_ns);
}

namespace {

// Native-histogram samples in a script's data are not loaded (Ingot stores floats), so the
// annotations Prometheus adds when an aggregation or comparison skips such a sample cannot arise.
constexpr std::string_view kIgnoredHistogramInfo =
    "expects the info annotation about an ignored native-histogram sample; Ingot stores no "
    "histogram samples, so there is none to ignore";

constexpr KnownException kKnownExceptions[] = {
    {"aggregators.test", R"(max({job="api-server"}))", kIgnoredHistogramInfo},
    {"aggregators.test", R"(min({job="api-server"}))", kIgnoredHistogramInfo},
    {"aggregators.test", R"(stddev({label="c"}))", kIgnoredHistogramInfo},
    {"aggregators.test", R"(stdvar({label="c"}))", kIgnoredHistogramInfo},
    {"operators.test", R"({job="app-server"} == 80)", kIgnoredHistogramInfo},
};

}  // namespace

std::span<const KnownException> KnownExceptions() { return kKnownExceptions; }

const KnownException* FindException(std::string_view file, const CaseResult& c) {
  for (const KnownException& e : kKnownExceptions) {
    if (e.file == file && e.expr == c.expr) return &e;
  }
  return nullptr;
}

std::string DefaultScriptDir() {
  const char* env = std::getenv("INGOT_PROMQL_TESTS");
  if (env != nullptr && *env != '\0') return env;
  std::filesystem::path dir(INGOT_SOURCE_DIR);
  dir /= "../shared/promql-tests";
  return dir.lexically_normal().string();
}

std::vector<std::string> ListScripts(const std::string& path) {
  std::vector<std::string> out;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    out.push_back(path);
    return out;
  }
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".test" && it->is_regular_file(ec)) {
      out.push_back(it->path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ingot::promqltest
