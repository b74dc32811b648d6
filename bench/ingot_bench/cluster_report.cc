#include "bench/ingot_bench/cluster_report.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <limits>

#include <nlohmann/json.hpp>

#include "bench/ingot_bench/asio.h"
#include "bench/ingot_bench/cli_values.h"
#include "bench/ingot_bench/http_connection.h"
#include "bench/ingot_bench/report.h"

namespace ingot::bench {
namespace {

// Keys in the order they are set, so the JSON reads like the text report.
using Json = nlohmann::ordered_json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr std::string_view kStatusPath = "/internal/cluster/status";
constexpr std::string_view kMetricsPath = "/metrics";
// How much of an unexpected answer's body an error quotes.
constexpr size_t kQuotedBodyBytes = 200;

std::string Printf(const char* format, auto... args) {
  char text[512];
  std::snprintf(text, sizeof(text), format, args...);
  return text;
}

// --- Prometheus text format ---

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

void SkipBlanks(std::string_view line, size_t* pos) {
  while (*pos < line.size() && (line[*pos] == ' ' || line[*pos] == '\t')) ++*pos;
}

// A sample value or an `le` bound: a decimal or exponent number, "+Inf", "-Inf" or "NaN".
bool ParseNumber(std::string_view text, double* value) {
  if (text.starts_with('+')) text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseLabels(std::string_view line, size_t* pos, PromSample* sample) {
  ++*pos;  // '{'
  for (;;) {
    SkipBlanks(line, pos);
    if (*pos < line.size() && line[*pos] == '}') {
      ++*pos;
      return true;
    }
    const size_t name_begin = *pos;
    if (*pos >= line.size() || !IsNameStart(line[*pos]) || line[*pos] == ':') return false;
    while (*pos < line.size() && IsNameChar(line[*pos])) ++*pos;
    std::string name(line.substr(name_begin, *pos - name_begin));
    SkipBlanks(line, pos);
    if (*pos >= line.size() || line[*pos] != '=') return false;
    ++*pos;
    SkipBlanks(line, pos);
    if (*pos >= line.size() || line[*pos] != '"') return false;
    ++*pos;
    std::string value;
    for (;;) {
      if (*pos >= line.size()) return false;
      const char c = line[(*pos)++];
      if (c == '"') break;
      if (c != '\\') {
        value.push_back(c);
        continue;
      }
      if (*pos >= line.size()) return false;
      const char escaped = line[(*pos)++];
      value.push_back(escaped == 'n' ? '\n' : escaped);
    }
    sample->labels.emplace_back(std::move(name), std::move(value));
    SkipBlanks(line, pos);
    if (*pos < line.size() && line[*pos] == ',') {
      ++*pos;
    } else if (*pos >= line.size() || line[*pos] != '}') {
      return false;
    }
  }
}

bool ParseSampleLine(std::string_view line, PromSample* sample) {
  size_t pos = 0;
  SkipBlanks(line, &pos);
  const size_t name_begin = pos;
  if (pos >= line.size() || !IsNameStart(line[pos])) return false;
  while (pos < line.size() && IsNameChar(line[pos])) ++pos;
  sample->name = std::string(line.substr(name_begin, pos - name_begin));
  SkipBlanks(line, &pos);
  if (pos < line.size() && line[pos] == '{' && !ParseLabels(line, &pos, sample)) return false;
  SkipBlanks(line, &pos);
  const size_t value_begin = pos;
  while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t') ++pos;
  return ParseNumber(line.substr(value_begin, pos - value_begin), &sample->value);
}

double CounterDelta(double now, double before) { return now >= before ? now - before : now; }

// --- rendering ---

// Rows of cells padded to their column's width; a note row's last cell is a message that runs on
// and does not widen its column.
class Table {
 public:
  // `align` has one letter per column: 'l' or 'r'.
  Table(std::vector<std::string> header, std::string align)
      : align_(std::move(align)), rows_{{std::move(header), false}} {}

  void Row(std::vector<std::string> cells) { rows_.push_back({std::move(cells), false}); }
  void Note(std::vector<std::string> cells) { rows_.push_back({std::move(cells), true}); }

  // Without a single row of numbers the header would only head messages: it is left out.
  std::string Render(std::string_view indent) const {
    const bool header =
        std::any_of(rows_.begin() + 1, rows_.end(), [](const auto& row) { return !row.second; });
    const auto first = rows_.begin() + (header ? 0 : 1);
    std::vector<size_t> widths(align_.size(), 0);
    for (auto row = first; row != rows_.end(); ++row) {
      const auto& [cells, note] = *row;
      const size_t n = note ? cells.size() - 1 : cells.size();
      for (size_t i = 0; i < n && i < widths.size(); ++i) {
        widths[i] = std::max(widths[i], cells[i].size());
      }
    }
    std::string out;
    for (auto row = first; row != rows_.end(); ++row) {
      const auto& [cells, note] = *row;
      std::string line(indent);
      for (size_t i = 0; i < cells.size(); ++i) {
        if (i > 0) line += "  ";
        const bool last_of_note = note && i + 1 == cells.size();
        const size_t width = i < widths.size() && !last_of_note ? widths[i] : 0;
        const size_t pad = width > cells[i].size() ? width - cells[i].size() : 0;
        if (i < align_.size() && align_[i] == 'r' && !last_of_note) line.append(pad, ' ');
        line += cells[i];
        if (i >= align_.size() || align_[i] != 'r' || last_of_note) line.append(pad, ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::string align_;
  std::vector<std::pair<std::vector<std::string>, bool>> rows_;
};

std::string YesNo(bool v) { return v ? "yes" : "no"; }

std::string Count(double v) {
  return Printf("%llu", static_cast<unsigned long long>(std::llround(std::max(v, 0.0))));
}

std::string LatencyText(double seconds) {
  if (std::isnan(seconds)) return "-";
  if (seconds < 0.001) return Printf("%.3f ms", seconds * 1e3);
  if (seconds < 1) return Printf("%.2f ms", seconds * 1e3);
  return Printf("%.2f s", seconds);
}

// The quantile of an interval without observations is "-"; one in the +Inf bucket is "> bound".
std::string QuantileText(double q, const PromHistogram& h) {
  const std::string text = LatencyText(HistogramQuantile(q, h));
  return QuantileAboveLastBound(q, h) ? ">" + text : text;
}

// A counter as a count since start, or per second over the node's interval.
std::string Amount(double v, const NodeReport& node, bool watch, double scale = 1) {
  if (!watch) return scale == 1 ? Count(v) : Printf("%.1f", v / scale);
  if (node.interval_s <= 0) return "-";
  const double rate = v / scale / node.interval_s;
  return scale == 1 ? HumanCount(rate) : Printf("%.2f", rate);
}

std::string UtcTime(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm;
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// What the partitions and members tables say about a member that did not answer its own status.
std::string AbsentText(const ClusterReport& report, const std::string& id) {
  for (const NodeReport& node : report.nodes) {
    if (node.member_id == id && node.state != NodeState::kOk) {
      return std::string(NodeStateName(node.state));
    }
  }
  return "not scraped";
}

std::string NodeError(const NodeReport& node) {
  if (node.state != NodeState::kNotClustered) return node.error;
  return "GET " + std::string(kStatusPath) + " answered 404: ingotd runs without [cluster]";
}

std::string NodeProblem(const NodeReport& node) {
  switch (node.state) {
    case NodeState::kOk:
      break;
    case NodeState::kUnreachable:
      return "unreachable: " + NodeError(node);
    case NodeState::kNotClustered:
      return "not in cluster mode: " + NodeError(node);
    case NodeState::kError:
      return "error: " + NodeError(node);
  }
  return "";
}

std::string FormatMembers(const ClusterReport& report, const NodeReport& view) {
  Table table({"id", "http", "live", "owner", "lease age", "partitions consumed"}, "llllrr");
  for (const MemberStatus& m : view.status.members) {
    const NodeReport* node = report.Node(m.id);
    table.Row({m.id, m.http, YesNo(m.live), YesNo(m.owns_partitions),
               Printf("%.1f s", static_cast<double>(m.lease_age_ms) / 1000.0),
               node != nullptr ? std::to_string(node->status.partitions_consumed())
                               : AbsentText(report, m.id)});
  }
  return "members (as " + view.status.node + " sees them)\n" + table.Render("  ");
}

std::string FormatPartitions(const ClusterReport& report, const NodeReport& view) {
  Table table({"partition", "log first", "log last", "owner", "consuming", "applied", "lag"},
              "rrrllrr");
  std::vector<std::string> log_errors;
  auto note_log_error = [&](const std::string& id, const std::string& error) {
    const std::string text = id + ": cannot read the log's bounds: " + error;
    if (std::find(log_errors.begin(), log_errors.end(), text) == log_errors.end()) {
      log_errors.push_back(text);
    }
  };
  for (const PartitionStatus& p : view.status.partitions) {
    std::vector<std::string> lead = {std::to_string(p.partition),
                                     p.has_bounds ? std::to_string(p.log_first) : "-",
                                     p.has_bounds ? std::to_string(p.log_last) : "-"};
    if (!p.has_bounds) note_log_error(view.status.node, p.log_error);
    if (p.owners.empty()) table.Note({lead[0], lead[1], lead[2], "no owner"});
    bool first = true;
    for (const std::string& owner : p.owners) {
      std::vector<std::string> cells = first ? lead : std::vector<std::string>{"", "", ""};
      first = false;
      cells.push_back(owner);
      const NodeReport* node = report.Node(owner);
      const PartitionStatus* own = node != nullptr ? node->status.Partition(p.partition) : nullptr;
      if (own == nullptr) {
        cells.push_back(node != nullptr ? "not in its status" : AbsentText(report, owner));
        table.Note(std::move(cells));
        continue;
      }
      cells.push_back(YesNo(own->consuming));
      cells.push_back(std::to_string(own->applied));
      cells.push_back(own->has_bounds ? std::to_string(own->lag) : "-");
      if (!own->has_bounds) note_log_error(owner, own->log_error);
      table.Row(std::move(cells));
    }
  }
  std::string out =
      "partitions (applied and lag in messages, as each owner reports them)\n" + table.Render("  ");
  for (const std::string& error : log_errors) out += "  " + error + "\n";
  return out;
}

std::string FormatNodes(const ClusterReport& report) {
  const bool watch = report.interval_s > 0;
  Table table(
      {"node", "publish p50", "p99", watch ? "req/s" : "requests", watch ? "msg/s" : "messages",
       watch ? "MB/s" : "MB", "failures", "fan-out p50", "p99", watch ? "sel/s" : "selectors",
       "remote errors", watch ? "applied/s" : "applied", "lag"},
      "lrrrrrrrrrrrr");
  std::vector<std::string> notes;
  const NodeReport* view = report.View();
  for (const NodeReport& node : report.nodes) {
    if (node.state != NodeState::kOk) {
      const std::string name = node.member_id.empty() ? node.url : node.member_id;
      std::string problem = NodeProblem(node);
      if (!node.member_id.empty()) problem += " (" + node.url + ")";
      table.Note({name, problem});
      continue;
    }
    if (!node.has_metrics) {
      table.Note({node.name(), "no metrics: " + node.metrics_error});
      continue;
    }
    if (watch && node.interval_s <= 0) {
      table.Note({node.name(), "first scrape: numbers from the next interval on"});
      continue;
    }
    const ClusterMetrics& m = node.metrics;
    table.Row({node.name(), QuantileText(0.5, m.publish_seconds),
               QuantileText(0.99, m.publish_seconds), Amount(m.publish_seconds.count, node, watch),
               Amount(m.published_messages, node, watch),
               Amount(m.published_bytes, node, watch, 1e6), Count(m.publish_failures),
               QuantileText(0.5, m.fanout_seconds), QuantileText(0.99, m.fanout_seconds),
               Amount(m.fanout_seconds.count, node, watch), Count(m.total_remote_errors()),
               Amount(m.applied_messages, node, watch), Count(m.total_lag())});
    if (m.total_remote_errors() > 0) {
      std::string reasons;
      for (const auto& [reason, count] : m.remote_errors) {
        if (count <= 0) continue;
        reasons += (reasons.empty() ? "" : ", ") + reason + " " + Count(count);
      }
      notes.push_back(node.name() + " remote errors: " + reasons);
    }
    if (view != nullptr && node.status.cluster != view->status.cluster) {
      notes.push_back(node.name() + " is in cluster " + node.status.cluster + ", not " +
                      view->status.cluster);
    }
  }
  std::string out =
      "nodes (publish: a write's wait for the log; fan-out: one selector's query; lag: messages "
      "not applied)\n" +
      table.Render("  ");
  for (const std::string& note : notes) out += "  " + note + "\n";
  return out;
}

// --- JSON ---

Json Number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json CountJson(double v) { return static_cast<uint64_t>(std::llround(std::max(v, 0.0))); }

Json HistogramJson(const PromHistogram& h, std::string_view count_key) {
  Json out;
  out[std::string(count_key)] = CountJson(h.count);
  out["p50_s"] = Number(HistogramQuantile(0.5, h));
  out["p99_s"] = Number(HistogramQuantile(0.99, h));
  out["sum_s"] = Number(h.sum);
  return out;
}

Json NodeJson(const NodeReport& node) {
  Json out;
  out["url"] = node.url;
  out["id"] = node.state == NodeState::kOk ? Json(node.status.node)
              : node.member_id.empty()     ? Json(nullptr)
                                           : Json(node.member_id);
  out["state"] = std::string(NodeStateName(node.state));
  out["error"] = node.state == NodeState::kOk ? Json(nullptr) : Json(NodeError(node));
  if (node.state != NodeState::kOk) return out;
  out["cluster"] = node.status.cluster;
  out["partitions_consuming"] = node.status.partitions_consumed();
  if (!node.has_metrics) {
    out["metrics_error"] = node.metrics_error;
    return out;
  }
  const ClusterMetrics& m = node.metrics;
  out["interval_s"] = node.interval_s > 0 ? Json(node.interval_s) : Json(nullptr);
  Json publish = HistogramJson(m.publish_seconds, "requests");
  publish["messages"] = CountJson(m.published_messages);
  publish["bytes"] = CountJson(m.published_bytes);
  publish["failures"] = CountJson(m.publish_failures);
  out["publish"] = std::move(publish);
  Json fanout = HistogramJson(m.fanout_seconds, "selectors");
  Json errors = Json::object();
  for (const auto& [reason, count] : m.remote_errors) errors[reason] = CountJson(count);
  fanout["remote_errors"] = std::move(errors);
  out["fanout"] = std::move(fanout);
  out["applied_messages"] = CountJson(m.applied_messages);
  out["partitions_consumed"] = CountJson(m.partitions_consumed);
  out["nodes_live"] = CountJson(m.nodes_live);
  out["consumer_lag_messages"] = CountJson(m.total_lag());
  Json lag = Json::object();
  for (const auto& [partition, messages] : m.consumer_lag) {
    lag[std::to_string(partition)] = CountJson(messages);
  }
  out["consumer_lag_by_partition"] = std::move(lag);
  return out;
}

// --- scraping ---

using Clock = std::chrono::steady_clock;

double SteadySeconds() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

std::string TrimSlashes(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

asio::awaitable<void> ScrapeNode(asio::io_context& ioc, Target target, int64_t timeout_ns,
                                 NodeReport* node) {
  HttpConnection connection(ioc, target.host, target.port, timeout_ns);
  const std::string base = TrimSlashes(target.path.substr(0, target.path.find('?')));
  HttpConnection::Response response;
  IoFailure failure = co_await connection.RoundTrip(
      http::verb::get, base + std::string(kStatusPath), {}, {}, &response);
  if (!failure.ok()) {
    node->state = NodeState::kUnreachable;
    node->error = failure.kind + ": " + failure.detail;
    co_return;
  }
  if (response.status == 404) {
    node->state = NodeState::kNotClustered;
    co_return;
  }
  if (response.status != 200) {
    node->state = NodeState::kError;
    node->error = "GET " + std::string(kStatusPath) + ": http_" + std::to_string(response.status) +
                  ": " + response.body.substr(0, kQuotedBodyBytes);
    co_return;
  }
  const Status parsed = ParseClusterStatus(response.body, &node->status);
  if (!parsed.ok()) {
    node->state = NodeState::kError;
    node->error = parsed.ToString();
    co_return;
  }
  node->state = NodeState::kOk;
  failure = co_await connection.RoundTrip(http::verb::get, base + std::string(kMetricsPath), {}, {},
                                          &response);
  node->scraped_at_s = SteadySeconds();
  connection.Close();
  if (!failure.ok()) {
    node->metrics_error = failure.kind + ": " + failure.detail;
  } else if (response.status != 200) {
    node->metrics_error = "GET " + std::string(kMetricsPath) + ": http_" +
                          std::to_string(response.status) + ": " +
                          response.body.substr(0, kQuotedBodyBytes);
  } else {
    const Status metrics = ParseClusterMetrics(response.body, &node->metrics);
    node->has_metrics = metrics.ok();
    if (!metrics.ok()) node->metrics_error = metrics.ToString();
  }
}

// Scrapes every (target, node) pair concurrently and returns when all have ended.
void ScrapeAll(const std::vector<std::pair<Target, NodeReport*>>& work, int64_t timeout_ns) {
  asio::io_context ioc;
  for (const auto& [target, node] : work) {
    asio::co_spawn(ioc, ScrapeNode(ioc, target, timeout_ns, node),
                   [node = node](std::exception_ptr error) {
                     if (!error) return;
                     node->state = NodeState::kError;
                     try {
                       std::rethrow_exception(error);
                     } catch (const std::exception& e) {
                       node->error = e.what();
                     }
                   });
  }
  ioc.run();
}

}  // namespace

const std::string* PromSample::Label(std::string_view key) const {
  for (const auto& [name, value] : labels) {
    if (name == key) return &value;
  }
  return nullptr;
}

Status ParsePrometheusText(std::string_view text, std::vector<PromSample>* samples) {
  samples->clear();
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    size_t first = 0;
    SkipBlanks(line, &first);
    if (first == line.size() || line[first] == '#') continue;
    PromSample sample;
    if (!ParseSampleLine(line, &sample)) {
      return Status::Corruption("metrics line " + std::to_string(line_number) + " '" +
                                std::string(line.substr(0, 120)) + "' is not a sample");
    }
    samples->push_back(std::move(sample));
  }
  return Status::OK();
}

PromHistogram HistogramOf(const std::vector<PromSample>& samples, std::string_view name) {
  const std::string bucket_name = std::string(name) + "_bucket";
  const std::string sum_name = std::string(name) + "_sum";
  const std::string count_name = std::string(name) + "_count";
  std::map<double, double> buckets;
  PromHistogram h;
  for (const PromSample& s : samples) {
    if (s.name == bucket_name) {
      const std::string* le = s.Label("le");
      double bound;
      if (le != nullptr && ParseNumber(*le, &bound) && !std::isnan(bound)) {
        buckets[bound] += s.value;
      }
    } else if (s.name == sum_name) {
      h.sum += s.value;
    } else if (s.name == count_name) {
      h.count += s.value;
    }
  }
  h.buckets.assign(buckets.begin(), buckets.end());
  return h;
}

double HistogramQuantile(double q, const PromHistogram& h) {
  if (std::isnan(q)) return kNaN;
  if (q < 0) return -kInf;
  if (q > 1) return kInf;
  const size_t n = h.buckets.size();
  if (n < 2 || h.buckets.back().first != kInf) return kNaN;
  // Counts read at different instants can dip; histogram_quantile evens them out the same way.
  std::vector<double> counts(n);
  for (size_t i = 0; i < n; ++i) {
    counts[i] = i == 0 ? h.buckets[i].second : std::max(counts[i - 1], h.buckets[i].second);
  }
  const double observations = counts.back();
  if (!(observations > 0)) return kNaN;
  double rank = q * observations;
  const size_t b =
      static_cast<size_t>(std::lower_bound(counts.begin(), counts.end(), rank) - counts.begin());
  if (b >= n - 1) return h.buckets[n - 2].first;
  if (b == 0 && h.buckets[0].first <= 0) return h.buckets[0].first;
  double start = 0;
  const double end = h.buckets[b].first;
  double count = counts[b];
  if (b > 0) {
    start = h.buckets[b - 1].first;
    count -= counts[b - 1];
    rank -= counts[b - 1];
  }
  if (!(count > 0)) return start;
  return start + (end - start) * (rank / count);
}

bool QuantileAboveLastBound(double q, const PromHistogram& h) {
  const size_t n = h.buckets.size();
  if (n < 2 || h.buckets.back().first != kInf || !(q >= 0 && q <= 1)) return false;
  double below_inf = 0;
  for (size_t i = 0; i + 1 < n; ++i) below_inf = std::max(below_inf, h.buckets[i].second);
  const double observations = std::max(below_inf, h.buckets.back().second);
  return observations > 0 && q * observations > below_inf;
}

PromHistogram HistogramDelta(const PromHistogram& now, const PromHistogram& before) {
  if (!before.present() || now.buckets.size() != before.buckets.size() ||
      now.count < before.count) {
    return now;
  }
  PromHistogram out = now;
  for (size_t i = 0; i < now.buckets.size(); ++i) {
    const double delta = now.buckets[i].second - before.buckets[i].second;
    if (now.buckets[i].first != before.buckets[i].first || delta < 0) return now;
    out.buckets[i].second = delta;
  }
  out.count = now.count - before.count;
  out.sum = now.sum - before.sum;
  return out;
}

double ClusterMetrics::total_lag() const {
  double total = 0;
  for (const auto& [partition, messages] : consumer_lag) total += messages;
  return total;
}

double ClusterMetrics::total_remote_errors() const {
  double total = 0;
  for (const auto& [reason, count] : remote_errors) total += count;
  return total;
}

Status ParseClusterMetrics(std::string_view text, ClusterMetrics* metrics) {
  *metrics = ClusterMetrics();
  std::vector<PromSample> samples;
  INGOT_RETURN_IF_ERROR(ParsePrometheusText(text, &samples));
  for (const PromSample& s : samples) {
    if (!s.name.starts_with("ingot_cluster_")) continue;
    metrics->found = true;
    if (s.name == "ingot_cluster_published_messages_total") {
      metrics->published_messages += s.value;
    } else if (s.name == "ingot_cluster_published_bytes_total") {
      metrics->published_bytes += s.value;
    } else if (s.name == "ingot_cluster_publish_failures_total") {
      metrics->publish_failures += s.value;
    } else if (s.name == "ingot_cluster_applied_messages_total") {
      metrics->applied_messages += s.value;
    } else if (s.name == "ingot_cluster_partitions_consumed") {
      metrics->partitions_consumed = s.value;
    } else if (s.name == "ingot_cluster_nodes_live") {
      metrics->nodes_live = s.value;
    } else if (s.name == "ingot_cluster_query_remote_errors_total") {
      const std::string* reason = s.Label("reason");
      metrics->remote_errors[reason != nullptr ? *reason : ""] += s.value;
    } else if (s.name == "ingot_cluster_consumer_lag_messages") {
      const std::string* label = s.Label("partition");
      uint32_t partition = 0;
      if (label == nullptr) continue;
      const auto [end, ec] =
          std::from_chars(label->data(), label->data() + label->size(), partition);
      if (ec == std::errc() && end == label->data() + label->size()) {
        metrics->consumer_lag[partition] = s.value;
      }
    }
  }
  metrics->publish_seconds = HistogramOf(samples, "ingot_cluster_publish_seconds");
  metrics->fanout_seconds = HistogramOf(samples, "ingot_cluster_query_fanout_seconds");
  return Status::OK();
}

ClusterMetrics MetricsDelta(const ClusterMetrics& now, const ClusterMetrics& before) {
  ClusterMetrics out = now;
  out.publish_seconds = HistogramDelta(now.publish_seconds, before.publish_seconds);
  out.published_messages = CounterDelta(now.published_messages, before.published_messages);
  out.published_bytes = CounterDelta(now.published_bytes, before.published_bytes);
  out.publish_failures = CounterDelta(now.publish_failures, before.publish_failures);
  out.fanout_seconds = HistogramDelta(now.fanout_seconds, before.fanout_seconds);
  for (auto& [reason, count] : out.remote_errors) {
    const auto it = before.remote_errors.find(reason);
    if (it != before.remote_errors.end()) count = CounterDelta(count, it->second);
  }
  out.applied_messages = CounterDelta(now.applied_messages, before.applied_messages);
  return out;
}

size_t ClusterStatus::partitions_consumed() const {
  return static_cast<size_t>(std::count_if(partitions.begin(), partitions.end(),
                                           [](const PartitionStatus& p) { return p.consuming; }));
}

const PartitionStatus* ClusterStatus::Partition(uint32_t partition) const {
  for (const PartitionStatus& p : partitions) {
    if (p.partition == partition) return &p;
  }
  return nullptr;
}

Status ParseClusterStatus(std::string_view text, ClusterStatus* status) {
  *status = ClusterStatus();
  const nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return Status::Corruption(std::string("cluster status is not ") +
                              (json.is_discarded() ? "valid JSON: " : "a JSON object: ") +
                              std::string(text.substr(0, kQuotedBodyBytes)));
  }
  try {
    status->node = json.at("node").get<std::string>();
    status->cluster = json.value("cluster", "");
    for (const nlohmann::json& m : json.at("members")) {
      MemberStatus member;
      member.id = m.at("id").get<std::string>();
      member.http = m.value("http", "");
      member.live = m.value("live", false);
      member.owns_partitions = m.value("owns_partitions", false);
      member.lease_age_ms = m.value("lease_age_ms", int64_t{0});
      status->members.push_back(std::move(member));
    }
    for (const nlohmann::json& p : json.at("partitions")) {
      PartitionStatus partition;
      partition.partition = p.at("partition").get<uint32_t>();
      for (const nlohmann::json& owner : p.value("owners", nlohmann::json::array())) {
        partition.owners.push_back(owner.get<std::string>());
      }
      partition.consuming = p.value("consuming", false);
      partition.applied = p.value("applied", uint64_t{0});
      partition.has_bounds = p.contains("log_last");
      if (partition.has_bounds) {
        partition.log_first = p.value("log_first", uint64_t{0});
        partition.log_last = p.at("log_last").get<uint64_t>();
        partition.lag = p.value("lag", partition.log_last > partition.applied
                                           ? partition.log_last - partition.applied
                                           : uint64_t{0});
      } else {
        partition.log_error = p.value("log_error", "");
      }
      status->partitions.push_back(std::move(partition));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(std::string("cluster status: ") + e.what());
  }
  return Status::OK();
}

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kOk:
      return "ok";
    case NodeState::kUnreachable:
      return "unreachable";
    case NodeState::kNotClustered:
      return "not_clustered";
    case NodeState::kError:
      return "error";
  }
  return "error";
}

std::string NodeReport::name() const {
  if (state == NodeState::kOk && !status.node.empty()) return status.node;
  return member_id.empty() ? url : member_id;
}

const NodeReport* ClusterReport::View() const {
  const NodeReport* view = nullptr;
  for (const NodeReport& node : nodes) {
    if (node.state != NodeState::kOk) continue;
    if (node.asked) return &node;
    if (view == nullptr) view = &node;
  }
  return view;
}

const NodeReport* ClusterReport::Node(std::string_view id) const {
  for (const NodeReport& node : nodes) {
    if (node.state == NodeState::kOk && node.status.node == id) return &node;
  }
  return nullptr;
}

bool ClusterReport::AllOk() const {
  return !nodes.empty() && std::all_of(nodes.begin(), nodes.end(), [](const NodeReport& node) {
    return node.state == NodeState::kOk;
  });
}

void ApplyDeltas(const ClusterReport& before, ClusterReport* now) {
  now->interval_s = now->unix_time_s - before.unix_time_s;
  for (NodeReport& node : now->nodes) {
    if (!node.has_metrics) continue;
    for (const NodeReport& earlier : before.nodes) {
      if (earlier.url != node.url || !earlier.has_metrics) continue;
      node.metrics = MetricsDelta(node.metrics, earlier.metrics);
      node.interval_s = node.scraped_at_s - earlier.scraped_at_s;
      now->interval_s = std::max(now->interval_s, node.interval_s);
      break;
    }
  }
}

std::string FormatClusterReport(const ClusterReport& report) {
  const bool watch = report.interval_s > 0;
  std::string out;
  const NodeReport* view = report.View();
  if (view == nullptr) {
    out += "no node answered in cluster mode";
  } else {
    out += Printf("cluster %s: %zu members, %zu partitions; seen by %s (%s)",
                  view->status.cluster.c_str(), view->status.members.size(),
                  view->status.partitions.size(), view->status.node.c_str(), view->url.c_str());
  }
  if (watch) {
    out += Printf("\n%s, the last %.1f s", UtcTime(report.unix_time_s).c_str(), report.interval_s);
  } else {
    out += "\nnumbers since each node started";
  }
  out += "\n\n";
  if (view != nullptr) {
    out += FormatMembers(report, *view) + "\n";
    out += FormatPartitions(report, *view) + "\n";
  }
  out += FormatNodes(report);
  return out;
}

std::string ClusterReportJson(const ClusterReport& report) {
  const NodeReport* view = report.View();
  Json out;
  out["unix_time_s"] = Number(report.unix_time_s);
  out["interval_s"] = report.interval_s > 0 ? Json(report.interval_s) : Json(nullptr);
  out["cluster"] = view != nullptr ? Json(view->status.cluster) : Json(nullptr);
  out["seen_by"] = view != nullptr ? Json(view->status.node) : Json(nullptr);
  Json members = Json::array();
  Json partitions = Json::array();
  if (view != nullptr) {
    for (const MemberStatus& m : view->status.members) {
      const NodeReport* node = report.Node(m.id);
      members.push_back(
          Json{{"id", m.id},
               {"http", m.http},
               {"live", m.live},
               {"owns_partitions", m.owns_partitions},
               {"lease_age_ms", m.lease_age_ms},
               {"partitions_consumed",
                node != nullptr ? Json(node->status.partitions_consumed()) : Json(nullptr)}});
    }
    for (const PartitionStatus& p : view->status.partitions) {
      Json owners = Json::array();
      for (const std::string& owner : p.owners) {
        const NodeReport* node = report.Node(owner);
        const PartitionStatus* own =
            node != nullptr ? node->status.Partition(p.partition) : nullptr;
        Json entry{{"id", owner}, {"reported", own != nullptr}};
        if (own != nullptr) {
          entry["consuming"] = own->consuming;
          entry["applied"] = own->applied;
          entry["lag"] = own->has_bounds ? Json(own->lag) : Json(nullptr);
        }
        owners.push_back(std::move(entry));
      }
      partitions.push_back(Json{{"partition", p.partition},
                                {"log_first", p.has_bounds ? Json(p.log_first) : Json(nullptr)},
                                {"log_last", p.has_bounds ? Json(p.log_last) : Json(nullptr)},
                                {"owners", std::move(owners)}});
    }
  }
  out["members"] = std::move(members);
  out["partitions"] = std::move(partitions);
  Json nodes = Json::array();
  for (const NodeReport& node : report.nodes) nodes.push_back(NodeJson(node));
  out["nodes"] = std::move(nodes);
  // Answers quoted in errors may hold anything: invalid UTF-8 is replaced, never thrown on.
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status ScrapeCluster(const std::vector<std::string>& urls, int64_t timeout_ns,
                     ClusterReport* report) {
  *report = ClusterReport();
  if (urls.empty()) return Status::InvalidArgument("no node URL");
  std::vector<Target> targets(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) {
    const Status status = ParseTarget(urls[i], &targets[i]);
    if (!status.ok() || targets[i].kind != Target::Kind::kHttp) {
      return Status::InvalidArgument("--url '" + urls[i] + "': expected http://host:port");
    }
  }
  report->unix_time_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<NodeReport> nodes(urls.size());
  std::vector<std::pair<Target, NodeReport*>> work;
  for (size_t i = 0; i < urls.size(); ++i) {
    nodes[i].url = TrimSlashes(urls[i]);
    nodes[i].asked = true;
    work.emplace_back(targets[i], &nodes[i]);
  }
  ScrapeAll(work, timeout_ns);
  if (urls.size() == 1 && nodes[0].state == NodeState::kOk) {
    NodeReport seed = std::move(nodes[0]);
    seed.member_id = seed.status.node;
    nodes.clear();
    const std::vector<MemberStatus>& members = seed.status.members;
    const bool listed = std::any_of(members.begin(), members.end(), [&](const MemberStatus& m) {
      return m.id == seed.status.node;
    });
    // Reserved so that the pointers handed to the scrapes stay valid.
    nodes.reserve(members.size() + 1);
    if (!listed) nodes.push_back(seed);
    std::vector<std::pair<Target, NodeReport*>> member_work;
    for (const MemberStatus& m : members) {
      if (m.id == seed.status.node) {
        nodes.push_back(seed);
        continue;
      }
      NodeReport& node = nodes.emplace_back();
      node.url = "http://" + m.http;
      node.member_id = m.id;
      Target target;
      if (m.http.empty() || !ParseTarget(node.url, &target).ok()) {
        node.state = NodeState::kError;
        node.error = "its advertised HTTP address '" + m.http + "' is not host:port";
        continue;
      }
      member_work.emplace_back(target, &node);
    }
    ScrapeAll(member_work, timeout_ns);
  }
  report->nodes = std::move(nodes);
  return Status::OK();
}

}  // namespace ingot::bench
