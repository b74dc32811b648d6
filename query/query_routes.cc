#include "query/query_routes.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include "chunk/series_reader.h"
#include "config/clock.h"
#include "config/logging.h"
#include "config/metrics.h"
#include "config/url_encoding.h"
#include "config/version.h"
#include "query/export_writer.h"
#include "query/promql_engine.h"
#include "query/promql_parser.h"
#include "query/remote_read.h"
#include "query/series_catalog.h"
#include "query/series_fanout.h"
#include "query/text_format.h"
#include "query/tsdb_status.h"

namespace ingot {
namespace {

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();
// Prometheus refuses range queries with more steps than this per series.
constexpr std::int64_t kMaxStepsPerSeries = 11000;
constexpr std::size_t kResultPieceBytes = 1 << 20;

enum class Endpoint {
  kExport,
  kQuery,
  kQueryRange,
  kSeries,
  kLabels,
  kLabelValues,
  kTsdbStatus,
  kRemoteRead,
  kCount
};
constexpr const char* kEndpointNames[] = {"export", "query",        "query_range", "series",
                                          "labels", "label_values", "tsdb_status", "remote_read"};

struct QueryMetrics {
  Counter* queries[static_cast<int>(Endpoint::kCount)];
  Counter* errors;
  Counter* rejected;
  Counter* points;
  Counter* damaged;
  Histogram* seconds;
};

QueryMetrics& QueryCounters() {
  static QueryMetrics m = [] {
    QueryMetrics q;
    MetricsRegistry& r = MetricsRegistry::Default();
    for (int i = 0; i < static_cast<int>(Endpoint::kCount); ++i) {
      q.queries[i] = &r.AddCounter("ingot_queries_total", "Query requests by endpoint.",
                                   std::string("endpoint=\"") + kEndpointNames[i] + "\"");
    }
    q.errors = &r.AddCounter("ingot_query_errors_total", "Query requests answered with an error.");
    q.rejected = &r.AddCounter("ingot_queries_rejected_total",
                               "Query requests refused because query.max_concurrent were running.");
    q.points = &r.AddCounter("ingot_query_points_returned_total",
                             "Points written by the export endpoint.");
    q.damaged = &r.AddCounter("ingot_query_damaged_chunks_skipped_total",
                              "Damaged chunks (or unreadable blocks) left out of query answers "
                              "with a warning (query.damaged_chunks = \"skip\").");
    q.seconds = &r.AddHistogram("ingot_query_duration_seconds",
                                "Query latency until the last byte of the body was produced.",
                                ExponentialBuckets(0.0005, 2, 16));
    return q;
  }();
  return m;
}

void BadParam(HttpReply& reply, std::string_view name, std::string_view detail) {
  ErrorReply(reply, http::status::bad_request, "bad_data",
             "invalid parameter \"" + std::string(name) + "\": " + std::string(detail));
}

// Maps an evaluation or storage error to the Prometheus error shape.
void StatusReply(HttpReply& reply, const Status& st) {
  if (st.IsInvalidArgument()) {
    ErrorReply(reply, http::status::bad_request, "bad_data", st.message());
  } else if (st.IsBusy()) {
    ErrorReply(reply, http::status::unprocessable_entity, "execution", st.message());
  } else {
    ErrorReply(reply, http::status::internal_server_error, "internal", st.ToString());
  }
}

// A duration as Go's Prometheus prints it ("5m", "1h30m", "30s", "250ms", "0s").
void AppendGoDuration(std::int64_t ms, std::string* out) {
  if (ms <= 0) {
    out->append("0s");
    return;
  }
  constexpr std::pair<std::int64_t, const char*> kUnits[] = {{7 * 24 * 3600'000LL, "w"},
                                                             {24 * 3600'000LL, "d"},
                                                             {3600'000LL, "h"},
                                                             {60'000LL, "m"},
                                                             {1000LL, "s"},
                                                             {1LL, "ms"}};
  for (const auto& [unit, name] : kUnits) {
    if (ms >= unit) {
      AppendInt(ms / unit, out);
      out->append(name);
      ms %= unit;
    }
  }
}

std::string GoDuration(std::int64_t ms) {
  std::string text;
  AppendGoDuration(ms, &text);
  return text;
}

// When this process registered its routes: Prometheus' start and last configuration time.
std::chrono::system_clock::time_point ProcessStart() {
  static const std::chrono::system_clock::time_point start = std::chrono::system_clock::now();
  return start;
}

// RFC 3339 in UTC with nanoseconds, as Go prints a time ("2024-01-01T00:00:00.5Z").
void AppendRfc3339(std::chrono::system_clock::time_point t, std::string* out) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  out->append(buf, n);
  std::int64_t frac = ns % 1'000'000'000;
  if (frac != 0) {
    char digits[16];
    std::snprintf(digits, sizeof(digits), "%09lld", static_cast<long long>(frac));
    std::size_t len = 9;
    while (len > 0 && digits[len - 1] == '0') --len;
    out->push_back('.');
    out->append(digits, len);
  }
  out->push_back('Z');
}

// Fixed answers of Prometheus endpoints about data Ingot does not keep (metadata, rules, alerts,
// scrape targets, configuration): what Prometheus answers when it has none.
HttpHandler FixedAnswer(std::string data_json) {
  auto body =
      std::make_shared<const std::string>("{\"status\":\"success\",\"data\":" + data_json + "}\n");
  return [body](const HttpRequest&, HttpReply& reply) {
    SetReply(reply, http::status::ok, "application/json", std::string(*body));
  };
}

class Params {
 public:
  explicit Params(const HttpRequest& request) : params_(ParseQueryParams(request)) {}

  const std::string* Get(std::string_view name) const {
    const std::string* found = nullptr;
    for (const auto& [k, v] : params_) {
      if (k == name) found = &v;  // the last one wins, as in Go's url.Values.Get... of forms
    }
    return found;
  }
  std::vector<std::string> All(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : params_) {
      if (k == name) out.push_back(v);
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> params_;
};

// Reads time parameter `name` (or `fallback` when absent). False after filling a 400.
bool TimeParam(const Params& params, std::string_view name, std::optional<std::int64_t> fallback,
               std::int64_t* ns, HttpReply& reply) {
  const std::string* text = params.Get(name);
  if (text == nullptr || text->empty()) {
    if (fallback) {
      *ns = *fallback;
      return true;
    }
    BadParam(reply, name, "missing");
    return false;
  }
  Status st = ParseTimeNs(*text, ns);
  if (!st.ok()) {
    BadParam(reply, name, st.message());
    return false;
  }
  return true;
}

class QueryApi;

// Holds a query slot until the response body is complete.
class InFlight {
 public:
  InFlight(QueryApi& api, Endpoint endpoint);
  ~InFlight();

 private:
  QueryApi& api_;
  std::chrono::steady_clock::time_point start_;
};

class QueryApi : public std::enable_shared_from_this<QueryApi> {
 public:
  QueryApi(Storage& storage, const QueryOptions& options, promql::SeriesFanout* fanout)
      : storage_(storage),
        options_(options),
        fanout_(fanout),
        catalog_(storage.index()),
        storage_retention_(GoDuration(storage.options().retention_s * 1000)),
        remote_read_(storage, options) {}

  // Wraps a handler with the concurrency cap and the query metrics.
  HttpHandler Limited(Endpoint endpoint, void (QueryApi::*method)(const HttpRequest&, HttpReply&)) {
    std::shared_ptr<QueryApi> self = shared_from_this();
    return [self, endpoint, method](const HttpRequest& request, HttpReply& reply) {
      std::shared_ptr<InFlight> slot = self->Admit(endpoint, reply);
      if (!slot) return;
      ((*self).*method)(request, reply);
      const auto status = static_cast<unsigned>(reply.response.result());
      if (status >= 400) QueryCounters().errors->Add();
      if (reply.stream) {
        reply.stream = [slot, inner = std::move(reply.stream)](std::string* chunk) {
          return inner(chunk);
        };
      }
    };
  }

  std::shared_ptr<InFlight> Admit(Endpoint endpoint, HttpReply& reply) {
    const std::uint32_t running = in_flight_.fetch_add(1);
    if (running >= options_.max_concurrent) {
      in_flight_.fetch_sub(1);
      QueryCounters().rejected->Add();
      ErrorReply(reply, http::status::service_unavailable, "unavailable",
                 "too many concurrent queries: " + std::to_string(options_.max_concurrent) +
                     " are running (query.max_concurrent); retry later");
      return nullptr;
    }
    return std::make_shared<InFlight>(*this, endpoint);
  }

  void Release(std::chrono::steady_clock::duration elapsed) {
    QueryCounters().seconds->Observe(std::chrono::duration<double>(elapsed).count());
    in_flight_.fetch_sub(1);
  }

  // Resolves every match[] selector (union, sorted by id). False after filling the reply.
  // The ids matched by any of `selectors`, sorted; false (reply set) on a bad selector or limit.
  bool MatchAllIds(const std::vector<std::string>& selectors, std::vector<SeriesId>* out,
                   HttpReply& reply) {
    out->clear();
    std::vector<SeriesId> one;
    for (const std::string& text : selectors) {
      Selector selector;
      Status st = ParseSelector(text, &selector);
      if (!st.ok()) {
        BadParam(reply, "match[]", st.message());
        return false;
      }
      st = catalog_.MatchIds(selector, options_.max_series, &one);
      if (!st.ok()) {
        StatusReply(reply, st.WithContext(text));
        return false;
      }
      out->insert(out->end(), one.begin(), one.end());
    }
    std::sort(out->begin(), out->end());
    out->erase(std::unique(out->begin(), out->end()), out->end());
    if (out->size() > options_.max_series) {
      StatusReply(reply, Status::Busy("the selectors match " + std::to_string(out->size()) +
                                      " series, more than query.max_series = " +
                                      std::to_string(options_.max_series)));
      return false;
    }
    return true;
  }

  bool MatchAll(const std::vector<std::string>& selectors, std::vector<SeriesRef>* out,
                HttpReply& reply) {
    std::vector<SeriesId> ids;
    return MatchAllIds(selectors, &ids, reply) && DescribeAll(ids, out, reply);
  }

  // The labels of `ids`, leaving out series gone since they matched (retention).
  bool DescribeAll(const std::vector<SeriesId>& ids, std::vector<SeriesRef>* out,
                   HttpReply& reply) {
    out->clear();
    out->reserve(ids.size());
    for (SeriesId sid : ids) {
      SeriesRef info;
      Status st = catalog_.Describe(sid, &info);
      if (st.IsNotFound()) continue;
      if (!st.ok()) {
        StatusReply(reply, st);
        return false;
      }
      out->push_back(std::move(info));
    }
    return true;
  }

  // The optional start/end of the catalog endpoints (series, labels, label values): all time
  // when both are absent. False (and the reply written) when one is malformed or end < start.
  static bool CatalogWindow(const Params& params, std::int64_t* start_ns, std::int64_t* end_ns,
                            HttpReply& reply) {
    if (!TimeParam(params, "start", kMinTs, start_ns, reply) ||
        !TimeParam(params, "end", kMaxTs, end_ns, reply)) {
      return false;
    }
    if (*end_ns < *start_ns) {
      BadParam(reply, "end", "end timestamp must not be before start time");
      return false;
    }
    return true;
  }

  // Whether `sid` may hold points in [start_ns, end_ns]: its head buffer, then its sealed chunks
  // (a chunk whose time span overlaps counts, as a Prometheus block that overlaps does), then
  // late points.
  // `ts` and `values` are the caller's scratch.
  Status MayHavePointsIn(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
                         std::vector<std::int64_t>& ts, std::vector<double>& values, bool* found) {
    *found = false;
    INGOT_RETURN_IF_ERROR(
        storage_.shard(storage_.ShardOf(sid)).ReadHead(sid, start_ns, end_ns, &ts, &values));
    if (!ts.empty()) {
      *found = true;
      return Status::OK();
    }
    // A chunk found ends the walk early: the walk stops at the first non-OK status.
    const Status walk = storage_.ForEachChunk(sid, start_ns, end_ns, [&](const ChunkView& view) {
      if (view.count() == 0 || view.last_ts_ns() < start_ns || view.first_ts_ns > end_ns) {
        return Status::OK();
      }
      *found = true;
      return Status::Busy("found");
    });
    if (*found) return Status::OK();
    INGOT_RETURN_IF_ERROR(walk);
    if (storage_.MayHaveLateData(sid)) {
      INGOT_RETURN_IF_ERROR(storage_.ReadSeries(sid, start_ns, end_ns, &ts, &values));
      *found = !ts.empty();
    }
    return Status::OK();
  }

  // Keeps the ids that may hold points in the window (all of them for all time).
  bool KeepInWindow(std::vector<SeriesId>* ids, std::int64_t start_ns, std::int64_t end_ns,
                    HttpReply& reply) {
    if (start_ns == kMinTs && end_ns == kMaxTs) return true;
    std::size_t kept = 0;
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    for (SeriesId sid : *ids) {
      bool found = false;
      Status st = MayHavePointsIn(sid, start_ns, end_ns, ts, values, &found);
      if (!st.ok()) {
        StatusReply(reply, st);
        return false;
      }
      if (found) (*ids)[kept++] = sid;
    }
    ids->resize(kept);
    return true;
  }

  // The ids matched by the request's match[] selectors, or every series when there are none, that
  // may hold points in [start_ns, end_ns].
  bool CatalogIds(const std::vector<std::string>& selectors, std::int64_t start_ns,
                  std::int64_t end_ns, std::vector<SeriesId>* ids, HttpReply& reply) {
    if (selectors.empty()) {
      // Every series: query.max_series bounds what selectors may match, not the catalog, whose
      // label names and values these endpoints answer without a window too.
      Selector every;
      Status st = ParseSelector("{__name__=~\".+\"}", &every);
      if (st.ok()) st = catalog_.MatchIds(every, std::numeric_limits<std::size_t>::max(), ids);
      if (!st.ok()) {
        StatusReply(reply, st);
        return false;
      }
    } else if (!MatchAllIds(selectors, ids, reply)) {
      return false;
    }
    return KeepInWindow(ids, start_ns, end_ns, reply);
  }

  bool CatalogSeries(const std::vector<std::string>& selectors, std::int64_t start_ns,
                     std::int64_t end_ns, std::vector<SeriesRef>* out, HttpReply& reply) {
    std::vector<SeriesId> ids;
    return CatalogIds(selectors, start_ns, end_ns, &ids, reply) && DescribeAll(ids, out, reply);
  }

  // CatalogSeries over the cluster (through fanout_): the label sets, sorted and unique, of the
  // series matching any of `selectors` (every series when there is none) with a point in
  // [start_ns, end_ns]. `*warnings` gets the answer's "warnings" member when nodes did not answer
  // or damaged chunks were skipped.
  // False after filling the reply.
  bool ClusterSeries(const std::vector<std::string>& selectors, std::int64_t start_ns,
                     std::int64_t end_ns, std::vector<promql::Labels>* out, std::string* warnings,
                     HttpReply& reply) {
    out->clear();
    std::vector<std::string> texts = selectors;
    // As in CatalogIds, query.max_series bounds what selectors match, not the catalog (each node
    // still answers at most its own query.max_series).
    std::size_t max_series = options_.max_series;
    if (texts.empty()) {
      texts.emplace_back("{__name__=~\".+\"}");
      max_series = std::numeric_limits<std::size_t>::max();
    }
    std::vector<std::string> problems;
    std::vector<promql::FetchedSeries> one;
    // Bounded as a query is: query.timeout, on every node.
    promql::SelectContext context;
    context.deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
    std::vector<CorruptChunk> damage;
    if (options_.damaged_chunks == "skip") context.damage = &damage;
    for (const std::string& text : texts) {
      Selector selector;
      Status st = ParseSelector(text, &selector);
      if (!st.ok()) {
        BadParam(reply, "match[]", st.message());
        return false;
      }
      st = fanout_->SelectSeries(selector, start_ns, end_ns, max_series, context, &one, &problems);
      if (!st.ok()) {
        StatusReply(reply, selectors.empty() ? st : st.WithContext(text));
        return false;
      }
      for (promql::FetchedSeries& series : one) out->push_back(std::move(series.labels));
    }
    std::sort(out->begin(), out->end());
    out->erase(std::unique(out->begin(), out->end()), out->end());
    if (!selectors.empty() && out->size() > options_.max_series) {
      StatusReply(reply, Status::Busy("the selectors match " + std::to_string(out->size()) +
                                      " series, more than query.max_series = " +
                                      std::to_string(options_.max_series)));
      return false;
    }
    // One warning per node, however many selectors it missed.
    std::sort(problems.begin(), problems.end());
    problems.erase(std::unique(problems.begin(), problems.end()), problems.end());
    DamageWarnings(damage, warnings);
    AppendAnnotations(problems, {}, warnings);
    return true;
  }

  void RemoteRead(const HttpRequest& request, HttpReply& reply) {
    remote_read_.Handle(request, reply);
  }

  void Export(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    const std::vector<std::string> selectors = params.All("match[]");
    if (selectors.empty()) {
      BadParam(reply, "match[]", "missing: give at least one series selector");
      return;
    }
    ExportFormat format;
    const std::string* format_text = params.Get("format");
    Status st = ParseExportFormat(format_text ? *format_text : "", &format);
    if (!st.ok()) {
      BadParam(reply, "format", st.message());
      return;
    }
    std::int64_t start_ns, end_ns;
    if (!TimeParam(params, "start", kMinTs, &start_ns, reply) ||
        !TimeParam(params, "end", kMaxTs, &end_ns, reply)) {
      return;
    }
    if (end_ns < start_ns) {
      BadParam(reply, "end", "end timestamp must not be before start time");
      return;
    }
    std::vector<SeriesRef> series;
    if (!MatchAll(selectors, &series, reply)) return;
    std::uint64_t points = 0;
    st = EstimateExportPoints(storage_, series, start_ns, end_ns, &points);
    if (!st.ok()) {
      StatusReply(reply, st);
      return;
    }
    if (points > options_.max_points) {
      StatusReply(reply, Status::Busy("the export would return about " + std::to_string(points) +
                                      " points, more than query.max_points = " +
                                      std::to_string(options_.max_points)));
      return;
    }
    auto writer =
        std::make_shared<ExportWriter>(storage_, std::move(series), start_ns, end_ns, format);
    reply.response.result(http::status::ok);
    reply.response.set(http::field::content_type, ExportContentType(format));
    reply.stream = [writer](std::string* chunk) {
      const bool more = writer->Next(chunk);
      if (!more) QueryCounters().points->Add(writer->points_written());
      return more;
    };
  }

  // Shared by query and query_range: parses and evaluates. False after filling the reply.
  // `*warnings` gets the answer's "warnings" member (empty, or `,"warnings":[...]`).
  // `*stats` gets the data's "stats" member when the request asks for it (`stats=all`).
  bool Run(const Params& params, promql::QueryParams eval, promql::QueryResult* result,
           HttpReply& reply, std::string* warnings, std::string* stats) {
    const std::string* query = params.Get("query");
    if (query == nullptr || query->empty()) {
      BadParam(reply, "query", "missing");
      return false;
    }
    std::unique_ptr<promql::Expr> expr;
    Status st = promql::Parse(*query, &expr);
    if (!st.ok()) {
      BadParam(reply, "query", st.message());
      return false;
    }
    // The query's deadline: query.timeout, or the request's `timeout` when shorter.
    std::int64_t timeout_ns = static_cast<std::int64_t>(options_.timeout_ms) * 1'000'000;
    if (const std::string* text = params.Get("timeout"); text != nullptr && !text->empty()) {
      std::int64_t asked = 0;
      st = ParseDurationNs(*text, &asked, /*allow_zero=*/false);
      if (!st.ok()) {
        BadParam(reply, "timeout", st.message());
        return false;
      }
      timeout_ns = std::min(timeout_ns, asked);
    }
    eval.deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
    eval.query = *query;
    SeriesReader reader(storage_);
    std::vector<CorruptChunk> damage;
    if (options_.damaged_chunks == "skip") reader.SkipDamage(&damage);
    const auto started = std::chrono::steady_clock::now();
    st = promql::Evaluate(*expr, eval, catalog_, reader, result);
    if (!st.ok()) {
      StatusReply(reply, st);
      return false;
    }
    stats->clear();
    if (const std::string* want = params.Get("stats"); want != nullptr && !want->empty()) {
      // Prometheus' shape; Ingot has no queue or preparation phase worth timing apart.
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::string t;
      AppendDouble(seconds, &t);
      stats->append(",\"stats\":{\"timings\":{\"evalTotalTime\":").append(t);
      stats->append(",\"resultSortTime\":0,\"queryPreparationTime\":0,\"innerEvalTime\":")
          .append(t);
      stats->append(",\"execQueueTime\":0,\"execTotalTime\":").append(t);
      stats->append("},\"samples\":{\"totalQueryableSamples\":");
      AppendInt(static_cast<std::int64_t>(result->samples_read), stats);
      stats->append(",\"peakSamples\":");
      AppendInt(static_cast<std::int64_t>(result->peak_samples), stats);
      stats->append("}}");
    }
    DamageWarnings(damage, warnings);
    AppendAnnotations(result->warnings, result->infos, warnings);
    return true;
  }

  // Adds PromQL's annotations to the answer: warnings after any about damaged data, then
  // "infos", as Prometheus 3 answers.
  static void AppendAnnotations(const std::vector<std::string>& warnings,
                                const std::vector<std::string>& infos, std::string* out) {
    if (!warnings.empty()) {
      if (out->empty()) {
        out->append(",\"warnings\":[");
      } else {
        out->pop_back();  // the damage list's ']'
        out->push_back(',');
      }
      for (std::size_t i = 0; i < warnings.size(); ++i) {
        if (i) out->push_back(',');
        AppendJsonString(warnings[i], out);
      }
      out->push_back(']');
    }
    if (!infos.empty()) {
      out->append(",\"infos\":[");
      for (std::size_t i = 0; i < infos.size(); ++i) {
        if (i) out->push_back(',');
        AppendJsonString(infos[i], out);
      }
      out->push_back(']');
    }
  }

  // The answer's warnings for damaged data left out of it (at most kMaxWarnings listed).
  static void DamageWarnings(const std::vector<CorruptChunk>& damage, std::string* out) {
    out->clear();
    if (damage.empty()) return;
    QueryCounters().damaged->Add(damage.size());
    constexpr std::size_t kMaxWarnings = 10;
    out->append(",\"warnings\":[");
    for (std::size_t i = 0; i < damage.size() && i < kMaxWarnings; ++i) {
      if (i != 0) out->push_back(',');
      std::string text = "damaged data left out of the answer: points in [";
      text.append(std::to_string(damage[i].first_ts_ns)).append(", ");
      text.append(std::to_string(damage[i].last_ts_ns)).append("] ns: ");
      text.append(damage[i].status.message());
      AppendJsonString(text, out);
    }
    if (damage.size() > kMaxWarnings) {
      out->push_back(',');
      AppendJsonString(std::to_string(damage.size() - kMaxWarnings) +
                           " more damaged chunks left out of the answer",
                       out);
    }
    out->push_back(']');
  }

  promql::QueryParams BaseEval() const {
    promql::QueryParams eval;
    eval.lookback_ns = static_cast<std::int64_t>(options_.lookback_ms) * 1'000'000;
    eval.max_series = options_.max_series;
    eval.max_samples = options_.max_points;
    eval.fanout = fanout_;
    return eval;
  }

  void Query(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    std::int64_t t;
    if (!TimeParam(params, "time", SystemClock::Instance().NowNs(), &t, reply)) return;
    promql::QueryParams eval = BaseEval();
    eval.start_ns = eval.end_ns = t;
    promql::QueryResult result;
    std::string warnings, stats;
    if (!Run(params, eval, &result, reply, &warnings, &stats)) return;
    std::string body = "{\"status\":\"success\",\"data\":{\"resultType\":";
    switch (result.type) {
      case promql::ValueType::kScalar:
        body += "\"scalar\",\"result\":";
        AppendSample(t, result.scalar[0], &body);
        break;
      case promql::ValueType::kString:
        body += "\"string\",\"result\":[";
        AppendSeconds(t, &body);
        body.push_back(',');
        AppendJsonString(result.string_value, &body);
        body.push_back(']');
        break;
      case promql::ValueType::kMatrix: {
        body += "\"matrix\",\"result\":[";
        bool first = true;
        for (const promql::RangeSeriesResult& s : result.ranges) {
          if (!first) body.push_back(',');
          first = false;
          body += "{\"metric\":";
          AppendMetricJson(s.labels, &body);
          body += ",\"values\":[";
          for (std::size_t i = 0; i < s.ts.size(); ++i) {
            if (i != 0) body.push_back(',');
            AppendSample(s.ts[i], s.values[i], &body);
          }
          body += "]}";
        }
        body.push_back(']');
        break;
      }
      default: {
        body += "\"vector\",\"result\":[";
        bool first = true;
        for (const promql::SeriesResult& s : result.series) {
          if (!s.present[0]) continue;
          if (!first) body.push_back(',');
          first = false;
          body += "{\"metric\":";
          AppendMetricJson(s.labels, &body);
          body += ",\"value\":";
          AppendSample(t, s.values[0], &body);
          body.push_back('}');
        }
        body.push_back(']');
      }
    }
    body += stats;
    body += "}";
    body += warnings;
    body += "}\n";
    SetReply(reply, http::status::ok, "application/json", std::move(body));
  }

  void QueryRange(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    std::int64_t start_ns, end_ns, step_ns;
    if (!TimeParam(params, "start", std::nullopt, &start_ns, reply) ||
        !TimeParam(params, "end", std::nullopt, &end_ns, reply)) {
      return;
    }
    if (end_ns < start_ns) {
      BadParam(reply, "end", "end timestamp must not be before start time");
      return;
    }
    const std::string* step_text = params.Get("step");
    if (step_text == nullptr || step_text->empty()) {
      BadParam(reply, "step", "missing");
      return;
    }
    Status st = ParseDurationNs(*step_text, &step_ns, /*allow_zero=*/true);
    if (!st.ok()) {
      BadParam(reply, "step", st.message());
      return;
    }
    if (step_ns <= 0) {
      BadParam(reply, "step",
               "zero or negative query resolution step widths are not accepted. Try a positive "
               "integer");
      return;
    }
    // end >= start, so the difference is exact in unsigned arithmetic (and may exceed INT64_MAX).
    const std::uint64_t span_ns =
        static_cast<std::uint64_t>(end_ns) - static_cast<std::uint64_t>(start_ns);
    if (span_ns / static_cast<std::uint64_t>(step_ns) > kMaxStepsPerSeries) {
      ErrorReply(reply, http::status::bad_request, "bad_data",
                 "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing "
                 "the query resolution (?step=XX)");
      return;
    }
    promql::QueryParams eval = BaseEval();
    eval.start_ns = start_ns;
    eval.end_ns = end_ns;
    eval.step_ns = step_ns;
    auto result = std::make_shared<promql::QueryResult>();
    auto warnings = std::make_shared<std::string>();
    auto stats = std::make_shared<std::string>();
    if (!Run(params, eval, result.get(), reply, warnings.get(), stats.get())) return;
    if (result->type == promql::ValueType::kScalar) {
      // A number over a range is one series without labels.
      promql::SeriesResult s;
      s.values = std::move(result->scalar);
      s.present.assign(s.values.size(), 1);
      result->series.push_back(std::move(s));
    }
    // An instant query's grid (start == end) has one step whatever `step` says.
    if (start_ns == end_ns) eval.step_ns = 1;
    reply.response.result(http::status::ok);
    reply.response.set(http::field::content_type, "application/json");
    // The body is written a few series at a time: a wide range over many series is large.
    auto next = std::make_shared<std::size_t>(0);
    reply.stream = [result, next, eval, warnings, stats](std::string* chunk) {
      if (*next == 0)
        chunk->append(
            "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
            "\"result\":[");
      while (*next < result->series.size() && chunk->size() < kResultPieceBytes) {
        const promql::SeriesResult& s = result->series[*next];
        if (*next != 0) chunk->push_back(',');
        chunk->append("{\"metric\":");
        AppendMetricJson(s.labels, chunk);
        chunk->append(",\"values\":[");
        bool first = true;
        for (std::size_t i = 0; i < s.values.size(); ++i) {
          if (!s.present[i]) continue;
          if (!first) chunk->push_back(',');
          first = false;
          AppendSample(eval.start_ns + static_cast<std::int64_t>(i) * eval.step_ns, s.values[i],
                       chunk);
        }
        chunk->append("]}");
        ++*next;
      }
      if (*next < result->series.size()) return true;
      chunk->append("]");
      chunk->append(*stats);
      chunk->append("}");
      chunk->append(*warnings);
      chunk->append("}\n");
      return false;
    };
  }

  void Series(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    const std::vector<std::string> selectors = params.All("match[]");
    if (selectors.empty()) {
      BadParam(reply, "match[]", "no match[] parameter provided");
      return;
    }
    // Described one at a time while the answer is written, a piece at a time: a million matched
    // series cost their ids (4 bytes each) and one piece of the answer, not their labels or the
    // whole answer.
    std::int64_t start_ns, end_ns;
    if (!CatalogWindow(params, &start_ns, &end_ns, reply)) return;
    if (fanout_ != nullptr) {
      std::vector<promql::Labels> series;
      std::string warnings;
      if (!ClusterSeries(selectors, start_ns, end_ns, &series, &warnings, reply)) return;
      std::string body = "{\"status\":\"success\",\"data\":[";
      for (std::size_t i = 0; i < series.size(); ++i) {
        if (i != 0) body.push_back(',');
        AppendMetricJson(series[i], &body);
      }
      body += "]";
      body += warnings;
      body += "}\n";
      SetReply(reply, http::status::ok, "application/json", std::move(body));
      return;
    }
    auto ids = std::make_shared<std::vector<SeriesId>>();
    if (!MatchAllIds(selectors, ids.get(), reply)) return;
    if (!KeepInWindow(ids.get(), start_ns, end_ns, reply)) return;
    reply.response.result(http::status::ok);
    reply.response.set(http::field::content_type, "application/json");
    auto next = std::make_shared<std::size_t>(0);
    auto written = std::make_shared<bool>(false);
    reply.stream = [this, ids, next, written](std::string* chunk) {
      if (*next == 0) chunk->append("{\"status\":\"success\",\"data\":[");
      while (*next < ids->size() && chunk->size() < kResultPieceBytes) {
        SeriesRef info;
        const SeriesId sid = (*ids)[(*next)++];
        Status st = catalog_.Describe(sid, &info);
        if (st.IsNotFound()) continue;  // gone since it matched (retention)
        if (!st.ok()) {
          // The status line is sent: end the body short of valid JSON so no client takes a
          // partial list for the whole one.
          Logger("query")->error("/api/v1/series: cannot describe series {}: {}", sid,
                                 st.ToString());
          return false;
        }
        if (*written) chunk->push_back(',');
        *written = true;
        info->AppendMetricJson(chunk);
      }
      if (*next < ids->size()) return true;
      chunk->append("]}\n");
      return false;
    };
  }

  // `warnings`: the answer's "warnings" member, or empty.
  template <typename Text>
  static void StringListReply(HttpReply& reply, const std::vector<Text>& items,
                              std::string_view warnings = {}) {
    std::string body = "{\"status\":\"success\",\"data\":[";
    std::size_t bytes = 64 + warnings.size();
    for (const Text& item : items) bytes += item.size() + 3;
    body.reserve(bytes);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i != 0) body.push_back(',');
      AppendJsonString(items[i], &body);
    }
    body += "]";
    body += warnings;
    body += "}\n";
    SetReply(reply, http::status::ok, "application/json", std::move(body));
  }

  void Labels(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    const std::vector<std::string> selectors = params.All("match[]");
    std::int64_t start_ns, end_ns;
    if (!CatalogWindow(params, &start_ns, &end_ns, reply)) return;
    if (fanout_ != nullptr) {
      std::vector<promql::Labels> series;
      std::string warnings;
      if (!ClusterSeries(selectors, start_ns, end_ns, &series, &warnings, reply)) return;
      std::vector<std::string> names;
      for (const promql::Labels& labels : series) {
        for (const auto& label : labels) names.push_back(label.first);
      }
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      StringListReply(reply, names, warnings);
      return;
    }
    const bool all_time = start_ns == kMinTs && end_ns == kMaxTs;
    if (selectors.empty() && all_time) {
      StringListReply(reply, catalog_.LabelNames());
      return;
    }
    std::vector<SeriesRef> series;
    if (!CatalogSeries(selectors, start_ns, end_ns, &series, reply)) return;
    std::vector<std::string> names;
    if (!series.empty()) names.emplace_back(kMetricNameLabel);
    for (const SeriesRef& info : series) {
      for (const auto& label : info->labels) names.push_back(label.first);
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    StringListReply(reply, names);
  }

  void LabelValues(const HttpRequest& request, HttpReply& reply) {
    constexpr std::string_view kPrefix = "/api/v1/label/";
    constexpr std::string_view kSuffix = "/values";
    const std::string_view path = TargetPath(request.target());
    if (!path.starts_with(kPrefix) || !path.ends_with(kSuffix) ||
        path.size() <= kPrefix.size() + kSuffix.size()) {
      ErrorReply(reply, http::status::not_found, "not_found",
                 "no such endpoint: " + std::string(path) + " (use /api/v1/label/<name>/values)");
      return;
    }
    const std::string name =
        UrlDecode(path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size()));
    const Params params(request);
    const std::vector<std::string> selectors = params.All("match[]");
    std::int64_t start_ns, end_ns;
    if (!CatalogWindow(params, &start_ns, &end_ns, reply)) return;
    if (fanout_ != nullptr) {
      std::vector<promql::Labels> series;
      std::string warnings;
      if (!ClusterSeries(selectors, start_ns, end_ns, &series, &warnings, reply)) return;
      std::vector<std::string> values;
      for (const promql::Labels& labels : series) {
        for (const auto& [k, v] : labels) {
          if (k == name && !v.empty()) values.push_back(v);
        }
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      StringListReply(reply, values, warnings);
      return;
    }
    const bool all_time = start_ns == kMinTs && end_ns == kMaxTs;
    if (selectors.empty() && all_time) {
      StringListReply(reply, catalog_.LabelValues(name));
      return;
    }
    std::vector<SeriesRef> series;
    if (!CatalogSeries(selectors, start_ns, end_ns, &series, reply)) return;
    std::vector<std::string> values;
    for (const SeriesRef& info : series) {
      const std::string_view v = info->Label(name);
      if (!v.empty()) values.emplace_back(v);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    StringListReply(reply, values);
  }

  // POST /internal/force_merge (VictoriaMetrics' name): merges every late chunk into the chunks
  // family, then compacts the chunk families so that replaced chunks stop taking disk space.
  // Runs to completion before answering; meant for maintenance and measurements.

  // Ingot stores no exemplars: the query and window are validated as Prometheus does, and the
  // answer is an empty list.
  void QueryExemplars(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    const std::string* query = params.Get("query");
    if (query == nullptr || query->empty()) {
      BadParam(reply, "query", "missing");
      return;
    }
    std::unique_ptr<promql::Expr> expr;
    if (Status st = promql::Parse(*query, &expr); !st.ok()) {
      BadParam(reply, "query", st.message());
      return;
    }
    std::int64_t start_ns, end_ns;
    if (!CatalogWindow(params, &start_ns, &end_ns, reply)) return;
    SetReply(reply, http::status::ok, "application/json", "{\"status\":\"success\",\"data\":[]}\n");
  }

  // Prometheus' runtime facts, with Ingot's values where it has them.
  void RuntimeInfo(const HttpRequest&, HttpReply& reply) {
    std::string body = "{\"status\":\"success\",\"data\":{\"startTime\":\"";
    AppendRfc3339(ProcessStart(), &body);
    body += "\",\"CWD\":";
    std::error_code ec;
    AppendJsonString(std::filesystem::current_path(ec).string(), &body);
    body += ",\"reloadConfigSuccess\":true,\"lastConfigTime\":\"";
    AppendRfc3339(ProcessStart(), &body);
    body += "\",\"corruptionCount\":";
    AppendInt(static_cast<std::int64_t>(QueryCounters().damaged->Value()), &body);
    body += ",\"goroutineCount\":0,\"GOMAXPROCS\":";
    AppendInt(static_cast<std::int64_t>(std::thread::hardware_concurrency()), &body);
    body += ",\"GOGC\":\"\",\"GODEBUG\":\"\",\"storageRetention\":\"";
    body += storage_retention_;
    body += "\"}}\n";
    SetReply(reply, http::status::ok, "application/json", std::move(body));
  }

  // The query settings under the names of Prometheus' flags that mean the same.
  void Flags(const HttpRequest&, HttpReply& reply) {
    std::string body = "{\"status\":\"success\",\"data\":{\"query.lookback-delta\":\"";
    AppendGoDuration(options_.lookback_ms, &body);
    body += "\",\"query.max-concurrency\":\"";
    AppendInt(options_.max_concurrent, &body);
    body += "\",\"query.max-samples\":\"";
    AppendInt(static_cast<std::int64_t>(options_.max_points), &body);
    body += "\",\"query.timeout\":\"";
    AppendGoDuration(options_.timeout_ms, &body);
    body += "\",\"storage.tsdb.retention.time\":\"";
    body += storage_retention_;
    body += "\"}}\n";
    SetReply(reply, http::status::ok, "application/json", std::move(body));
  }

  void TsdbStatus(const HttpRequest& request, HttpReply& reply) {
    const Params params(request);
    std::size_t top_n = kTsdbStatusDefaultTopN;
    for (std::string_view name : {"limit", "topN"}) {
      const std::string* text = params.Get(name);
      if (text == nullptr) continue;
      Status st = ParseTsdbStatusTopN(*text, &top_n);
      if (!st.ok()) {
        BadParam(reply, name, st.message());
        return;
      }
    }
    SetReply(reply, http::status::ok, "application/json",
             TsdbStatusJson(storage_.index().Stats(top_n)));
  }

 private:
  static void AppendSample(std::int64_t t_ns, double v, std::string* out) {
    out->push_back('[');
    AppendSeconds(t_ns, out);
    out->append(",\"");
    AppendDouble(v, out);
    out->append("\"]");
  }

  friend class InFlight;
  Storage& storage_;
  const QueryOptions options_;
  promql::SeriesFanout* const fanout_;  // null: this node's data only
  SeriesCatalog catalog_;
  const std::string storage_retention_;  // Go duration text, "0s" when kept forever
  std::atomic<std::uint32_t> in_flight_{0};
  const RemoteReadHandler remote_read_;  // POST /api/v1/read (query/remote_read.h)
};

InFlight::InFlight(QueryApi& api, Endpoint endpoint)
    : api_(api), start_(std::chrono::steady_clock::now()) {
  QueryCounters().queries[static_cast<int>(endpoint)]->Add();
}

InFlight::~InFlight() { api_.Release(std::chrono::steady_clock::now() - start_); }

void BuildInfo(const HttpRequest&, HttpReply& reply) {
  // `version` is the Prometheus release whose query semantics Ingot follows (range windows open on
  // the left, as since Prometheus 3.0); Grafana picks features by it.
  std::string body =
      "{\"status\":\"success\",\"data\":{\"application\":\"ingot\",\"version\":\"3.0.0\","
      "\"ingotVersion\":\"";
  body += kVersion;
  body +=
      "\",\"revision\":\"\",\"branch\":\"\",\"buildUser\":\"\",\"buildDate\":\"\","
      "\"goVersion\":\"\"}}\n";
  SetReply(reply, http::status::ok, "application/json", std::move(body));
}

}  // namespace

void RegisterQueryRoutes(HttpRouter& router, Storage& storage, const QueryOptions& options,
                         promql::SeriesFanout* fanout) {
  (void)ProcessStart();  // the start time reported by /api/v1/status/runtimeinfo
  auto api = std::make_shared<QueryApi>(storage, options, fanout);
  QueryCounters();
  router.Add(http::verb::get, "/api/v1/export", api->Limited(Endpoint::kExport, &QueryApi::Export));
  router.Add(http::verb::post, "/api/v1/export",
             api->Limited(Endpoint::kExport, &QueryApi::Export));
  for (http::verb verb : {http::verb::get, http::verb::post}) {
    router.Add(verb, "/api/v1/query", api->Limited(Endpoint::kQuery, &QueryApi::Query));
    router.Add(verb, "/api/v1/query_range",
               api->Limited(Endpoint::kQueryRange, &QueryApi::QueryRange));
    router.Add(verb, "/api/v1/series", api->Limited(Endpoint::kSeries, &QueryApi::Series));
    router.Add(verb, "/api/v1/labels", api->Limited(Endpoint::kLabels, &QueryApi::Labels));
    router.AddPrefix(verb, "/api/v1/label/",
                     api->Limited(Endpoint::kLabelValues, &QueryApi::LabelValues));
  }
  router.Add(http::verb::post, "/api/v1/read",
             api->Limited(Endpoint::kRemoteRead, &QueryApi::RemoteRead));
  router.Add(http::verb::get, "/api/v1/status/buildinfo", BuildInfo);
  for (http::verb verb : {http::verb::get, http::verb::post}) {
    router.Add(verb, "/api/v1/query_exemplars",
               api->Limited(Endpoint::kSeries, &QueryApi::QueryExemplars));
  }
  router.Add(http::verb::get, "/api/v1/metadata", FixedAnswer("{}"));
  router.Add(http::verb::get, "/api/v1/targets/metadata", FixedAnswer("[]"));
  router.Add(http::verb::get, "/api/v1/targets",
             FixedAnswer("{\"activeTargets\":[],\"droppedTargets\":[]}"));
  router.Add(http::verb::get, "/api/v1/rules", FixedAnswer("{\"groups\":[]}"));
  router.Add(http::verb::get, "/api/v1/alerts", FixedAnswer("{\"alerts\":[]}"));
  router.Add(http::verb::get, "/api/v1/alertmanagers",
             FixedAnswer("{\"activeAlertmanagers\":[],\"droppedAlertmanagers\":[]}"));
  router.Add(http::verb::get, "/api/v1/status/config", FixedAnswer("{\"yaml\":\"\"}"));
  router.Add(http::verb::get, "/api/v1/status/walreplay",
             FixedAnswer("{\"min\":0,\"max\":0,\"current\":0}"));
  router.Add(
      http::verb::get, "/api/v1/status/runtimeinfo",
      [api](const HttpRequest& request, HttpReply& reply) { api->RuntimeInfo(request, reply); });
  router.Add(http::verb::get, "/api/v1/status/flags",
             [api](const HttpRequest& request, HttpReply& reply) { api->Flags(request, reply); });
  router.Add(http::verb::get, "/api/v1/status/tsdb",
             api->Limited(Endpoint::kTsdbStatus, &QueryApi::TsdbStatus));
}

}  // namespace ingot
