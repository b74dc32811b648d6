// ingot-bench: load-tests a line-protocol server (ingest over TCP or HTTP, then optionally waits
// until everything is queryable) and its Prometheus-style query API, and reports an Ingot
// cluster's state and path latencies.
//
// Exit status: 0 on a clean run, 1 when sends failed or the data never became queryable (cluster:
// a node did not answer in cluster mode), 2 on bad flags.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/ingot_bench/cli_values.h"
#include "bench/ingot_bench/cluster_report.h"
#include "bench/ingot_bench/dashboard_data.h"
#include "bench/ingot_bench/ingest_runner.h"
#include "bench/ingot_bench/query_runner.h"
#include "bench/ingot_bench/report.h"

namespace ingot::bench {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Flag values as typed; durations and times become numbers in ResolveWorkload().
struct WorkloadFlags {
  IngestOptions options;
  std::string duration = "0";
  std::string interval = "10s";
  std::string start = "2024-01-01T00:00:00Z";
  std::string timeout = "30s";
  std::string verify_timeout = "300s";
  std::string json;
};

void AddWorkloadFlags(CLI::App* app, WorkloadFlags* f) {
  IngestOptions& o = f->options;
  app->add_option("--connections", o.connections,
                  "Parallel connections; the generated hosts are split among them (see "
                  "--round-robin)");
  app->add_flag("--round-robin", o.round_robin,
                "Deal generated batches to the connections in turn, so that every series' "
                "points arrive interleaved over all connections (as files always are)");
  app->add_option("--rate", o.rate_values_per_s,
                  "Steady send rate in values per second over all connections (0 = unlimited)");
  app->add_option("--duration", f->duration,
                  "Stop sending after this long, e.g. 30s, 5m (0 = until --points are sent)");
  app->add_option("--points", o.values,
                  "Values to send in total; one line carries --fields (0 = until --duration "
                  "ends)");
  app->add_option("--hosts", o.workload.hosts,
                  "Hosts (series sets of --fields fields) to generate; a row of lines has one per "
                  "host");
  app->add_option("--fields", o.workload.fields,
                  "Fields per line, each one series per host: the first N of usage_user ... "
                  "usage_guest_nice (1..10)");
  app->add_option("--tags", o.workload.tags,
                  "Tags after hostname (0..9): the first N of region, datacenter, rack, os, arch, "
                  "team, service, service_version, service_environment");
  app->add_option("--new-series-ratio", o.workload.new_series_ratio,
                  "Share of lines (0..1) sent for a host never sent before (hostname=n<line "
                  "number>) instead of the row's own host: 1 makes every line --fields new "
                  "series");
  app->add_option("--interval", f->interval, "Time between two lines of one host, e.g. 10s");
  app->add_option("--decimals", o.workload.decimals, "Digits after the decimal point (0..6)");
  app->add_option("--seed", o.workload.seed, "Seed of the generator: same seed, same bytes");
  app->add_option("--start", f->start,
                  "Timestamp of the first line: RFC 3339 or integer nanoseconds");
  app->add_option("--file", o.file,
                  "Replay this line-protocol file instead of generating (ns timestamps)");
  app->add_option("--batch-lines", o.batch_lines,
                  "Lines per batch: per HTTP request, per socket write over TCP");
  app->add_option("--db", o.db, "Database name in the HTTP write URL (?db=...&precision=ns)");
  app->add_option("--format", o.format,
                  "lp (line protocol over the target's transport) or prometheus-remote-write "
                  "(snappy protobuf WriteRequests POSTed to an http:// remote-write URL such as "
                  "http://host:port/api/v1/write; encoded before the clock starts)");
  app->add_option("--rw-series", o.rw_series_per_request,
                  "Remote write: series per request (whole hosts of --fields series each)");
  app->add_option("--rw-samples", o.rw_samples_per_series,
                  "Remote write: consecutive samples of each series in one request");
  app->add_option("--timeout", f->timeout,
                  "Timeout of one connect, write or response; a connection that fails this "
                  "long without a success gives up");
  app->add_option("--verify-timeout", f->verify_timeout,
                  "How long --verify keeps polling after sending ends");
  app->add_option("--verify-selector", o.verify_selector,
                  "Series selector whose samples --verify counts");
  app->add_option("--json", f->json, "Also write the report as JSON to this file ('-' = stdout)");
  app->add_flag("--quiet,-q", o.quiet, "No progress output");
}

Status ResolveWorkload(WorkloadFlags* f) {
  IngestOptions& o = f->options;
  INGOT_RETURN_IF_ERROR(ParseDurationNs(f->duration, &o.duration_ns).WithContext("--duration"));
  INGOT_RETURN_IF_ERROR(
      ParseDurationNs(f->interval, &o.workload.interval_ns).WithContext("--interval"));
  INGOT_RETURN_IF_ERROR(ParseTimeNs(f->start, &o.workload.start_ns).WithContext("--start"));
  INGOT_RETURN_IF_ERROR(ParseDurationNs(f->timeout, &o.timeout_ns).WithContext("--timeout"));
  INGOT_RETURN_IF_ERROR(ParseDurationNs(f->verify_timeout, &o.verify_timeout_ns)
                            .WithContext("--verify-timeout"));
  if (o.timeout_ns <= 0) return Status::InvalidArgument("--timeout must be > 0");
  return ValidateIngestOptions(o);
}

bool WriteJson(const std::string& path, const std::string& json) {
  if (path.empty()) return true;
  if (path == "-") {
    std::cout << json << "\n";
    return true;
  }
  std::ofstream out(path, std::ios::trunc);
  out << json << "\n";
  out.close();
  if (!out) {
    std::fprintf(stderr, "ingot-bench: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

bool Clean(const IngestReport& report) {
  return report.error_count() == 0 && (!report.verify.requested || report.verify.complete);
}

int UsageError(const Status& status) {
  std::fprintf(stderr, "ingot-bench: %s\nRun with --help for more information.\n",
               std::string(status.message()).c_str());
  return kExitUsage;
}

struct ClusterFlags {
  std::vector<std::string> urls = {"http://127.0.0.1:8086"};
  std::string watch;
  std::string timeout = "5s";
  std::string json;
};

std::atomic<bool> interrupted{false};

void OnInterrupt(int) {
  interrupted.store(true);
  // A second Ctrl-C ends the process at once, even in the middle of a slow scrape.
  std::signal(SIGINT, SIG_DFL);
}

// Sleeps until `until` or an interrupt, whichever comes first.
void SleepUntil(std::chrono::steady_clock::time_point until) {
  constexpr auto kSlice = std::chrono::milliseconds(50);
  while (!interrupted.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - now, kSlice));
  }
}

int RunCluster(const ClusterFlags& flags) {
  int64_t timeout_ns = 0;
  int64_t watch_ns = 0;
  Status status = ParseDurationNs(flags.timeout, &timeout_ns).WithContext("--timeout");
  if (status.ok() && timeout_ns <= 0) status = Status::InvalidArgument("--timeout must be > 0");
  if (status.ok() && !flags.watch.empty()) {
    status = ParseDurationNs(flags.watch, &watch_ns).WithContext("--watch");
    if (status.ok() && watch_ns <= 0) status = Status::InvalidArgument("--watch must be > 0");
  }
  if (!status.ok()) return UsageError(status);
  // With the JSON on stdout the text goes to stderr, so that stdout stays parseable.
  std::FILE* text_out = flags.json == "-" ? stderr : stdout;

  if (watch_ns == 0) {
    ClusterReport report;
    const Status scraped = ScrapeCluster(flags.urls, timeout_ns, &report);
    if (!scraped.ok()) return UsageError(scraped);
    std::fputs(FormatClusterReport(report).c_str(), text_out);
    if (!WriteJson(flags.json, ClusterReportJson(report))) return kExitFailed;
    return report.AllOk() ? 0 : kExitFailed;
  }

  // Watching: one JSON object per line per report.
  std::FILE* json_out = nullptr;
  if (flags.json == "-") {
    json_out = stdout;
  } else if (!flags.json.empty()) {
    json_out = std::fopen(flags.json.c_str(), "w");
    if (json_out == nullptr) {
      std::fprintf(stderr, "ingot-bench: cannot write %s\n", flags.json.c_str());
      return kExitFailed;
    }
  }
  std::signal(SIGINT, OnInterrupt);
  int exit_code = 0;
  ClusterReport previous;
  bool have_previous = false;
  auto next = std::chrono::steady_clock::now();
  while (!interrupted.load()) {
    ClusterReport report;
    const Status scraped = ScrapeCluster(flags.urls, timeout_ns, &report);
    if (!scraped.ok()) {
      exit_code = UsageError(scraped);
      break;
    }
    // The next interval is measured from this scrape's own counters, not from its deltas.
    ClusterReport since_start = report;
    if (have_previous) ApplyDeltas(previous, &report);
    previous = std::move(since_start);
    have_previous = true;
    std::fputs((FormatClusterReport(report) + "\n").c_str(), text_out);
    std::fflush(text_out);
    if (json_out != nullptr) {
      std::fputs((ClusterReportJson(report) + "\n").c_str(), json_out);
      std::fflush(json_out);
      if (std::ferror(json_out)) {
        std::fprintf(stderr, "ingot-bench: cannot write %s\n", flags.json.c_str());
        exit_code = kExitFailed;
        break;
      }
    }
    // Ticks stay on the schedule of the first scrape, unless a scrape took longer than --watch.
    next = std::max(next + std::chrono::nanoseconds(watch_ns), std::chrono::steady_clock::now());
    SleepUntil(next);
  }
  if (json_out != nullptr && json_out != stdout) std::fclose(json_out);
  return exit_code;
}

int Main(int argc, char** argv) {
  CLI::App app("ingot-bench: load test for line-protocol ingestion and range queries.\n"
               "Works against Ingot and other servers that speak InfluxDB line protocol and the\n"
               "Prometheus query API (e.g. VictoriaMetrics).",
               "ingot-bench");
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.footer(
      "Targets: tcp://host:port (line protocol over TCP), http://host:port/write (InfluxDB 1.x\n"
      "write API, batches of --batch-lines), null (generate and discard: generator speed);\n"
      "with --format prometheus-remote-write, http://host:port/api/v1/write.\n"
      "Run 'ingot-bench <command> --help' for the flags of a command.");

  // ingest
  WorkloadFlags ingest;
  CLI::App* ingest_cmd = app.add_subcommand(
      "ingest", "Send the generated cpu workload (or a file) and report throughput");
  ingest_cmd->add_option("--target", ingest.options.target,
                         "tcp://host:port, http://host:port/write or null");
  ingest_cmd->add_option("--verify", ingest.options.verify_url,
                         "After sending, poll this query API (http://host:port) until every "
                         "value is queryable and report the time until then");
  AddWorkloadFlags(ingest_cmd, &ingest);

  // query
  QueryOptions query;
  WorkloadFlags query_range;  // the ingest flags that define the data's time range
  std::string workload = "all";
  std::string query_duration = "10s";
  std::string query_start;
  std::string query_end;
  std::string query_timeout = "60s";
  std::string query_json;
  CLI::App* query_cmd =
      app.add_subcommand("query", "Run concurrent range queries and report latency");
  query_cmd->add_option("--target", query.target, "Query API base URL, http://host:port");
  query_cmd->add_option(
      "--workload", workload,
      "Over the ingest workload: q1 (one series), q2 (one field, all hosts), q3 (hourly avg per "
      "host), or all (the three). Over the dashboard-data series: rate, sum-rate, hist-quantile, "
      "topk, ratio (instant queries at --end), range-1d (the day before --end, 60 s steps), or "
      "dashboard (the six). A comma list mixes them");
  query_cmd->add_option("--concurrency", query.concurrency, "Queries in flight at once");
  query_cmd->add_option("--duration", query_duration,
                        "How long each workload runs at most (0 = until --iterations)");
  query_cmd->add_option("--iterations", query.iterations,
                        "Queries per workload over all connections, if it ends before "
                        "--duration (0 = until --duration)");
  query_cmd->add_option("--warmup", query.warmup,
                        "Queries per connection before each workload's measurement (unreported)");
  query_cmd->add_option("--start", query_start,
                        "Start of the queried range (RFC 3339 or ns); default: the ingest "
                        "workload's first timestamp");
  query_cmd->add_option("--end", query_end,
                        "End of the queried range; default: the last timestamp of the ingest "
                        "workload given by --points, --hosts, --interval");
  query_cmd->add_option("--points", query_range.options.values,
                        "Values of the ingested workload (to derive --end)");
  query_cmd->add_option("--fields", query_range.options.workload.fields,
                        "Fields per line of the ingested workload (to derive --end)");
  query_cmd->add_option("--hosts", query.hosts, "Hosts of the ingested workload");
  query_cmd->add_option("--interval", query_range.interval, "Interval of the ingested workload");
  query_cmd->add_option("--timeout", query_timeout, "Timeout of one query");
  query_cmd->add_option("--json", query_json, "Also write the report as JSON ('-' = stdout)");
  query_cmd->add_flag("--quiet,-q", query.quiet, "No progress output");

  // compare
  WorkloadFlags compare;
  std::string compare_targets;
  std::string compare_verify_urls;
  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "Run the same ingest workload against several targets in turn; one table");
  compare_cmd->add_option("--targets", compare_targets, "Comma list of ingest targets")
      ->required();
  compare_cmd->add_option("--verify-urls", compare_verify_urls,
                          "Comma list of query URLs, one per target, for --verify");
  AddWorkloadFlags(compare_cmd, &compare);

  // dashboard-data
  DashboardDataOptions data;
  std::string data_format = "lp";
  std::string data_out = "-";
  std::string data_start = "2024-01-01T00:00:00Z";
  std::string data_interval = "30s";
  std::string data_duration = "24h";
  std::string data_json;
  CLI::App* data_cmd = app.add_subcommand(
      "dashboard-data",
      "Write the series of the dashboard query workloads (counters and histogram buckets) as "
      "line protocol, OpenMetrics or Prometheus text: the same samples in each format");
  data_cmd->add_option("--format", data_format,
                       "lp (Ingot /write, ns), openmetrics (promtool tsdb "
                       "create-blocks-from openmetrics, s), prometheus (VictoriaMetrics "
                       "/api/v1/import/prometheus, ms)");
  data_cmd->add_option("--out", data_out, "Output file ('-' = stdout)");
  data_cmd->add_option("--counters", data.counters,
                       "http_requests_total series: 5 codes per instance, 5 jobs");
  data_cmd->add_option("--histograms", data.histogram_sets,
                       "http_request_duration_seconds histograms (11 bucket series each)");
  data_cmd->add_option("--start", data_start, "First timestamp: RFC 3339 or integer ns");
  data_cmd->add_option("--interval", data_interval, "Time between two samples of a series");
  data_cmd->add_option("--duration", data_duration, "Time covered: duration / interval samples");
  data_cmd->add_option("--seed", data.seed, "Seed of the generator: same seed, same samples");
  data_cmd->add_option("--json", data_json,
                       "Also write the counts (series, samples, first and last timestamp) as JSON "
                       "to this file ('-' = stdout)");

  // cluster
  ClusterFlags cluster;
  CLI::App* cluster_cmd = app.add_subcommand(
      "cluster",
      "Report an Ingot cluster: members, partition owners with what each applied and its lag, and "
      "per node the publish (write path) and fan-out (read path) latencies from its metrics");
  cluster_cmd
      ->add_option("--url", cluster.urls,
                   "A node's HTTP base URL, http://host:port; repeat (or a comma list) for "
                   "several nodes. Given once, every member that node lists is reported too")
      ->delimiter(',');
  cluster_cmd->add_option("--watch", cluster.watch,
                          "Report again every interval (e.g. 2s) until Ctrl-C, with latency "
                          "quantiles and rates of that interval alone");
  cluster_cmd->add_option("--timeout", cluster.timeout, "Timeout of one node's answer");
  cluster_cmd->add_option("--json", cluster.json,
                          "Also write the report as JSON to this file ('-' = stdout, the text "
                          "then goes to stderr); with --watch one line per report");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  if (cluster_cmd->parsed()) return RunCluster(cluster);

  if (ingest_cmd->parsed()) {
    const Status status = ResolveWorkload(&ingest);
    if (!status.ok()) return UsageError(status);
    IngestReport report;
    const Status run = RunIngest(ingest.options, &report);
    if (!run.ok()) {
      std::fprintf(stderr, "ingot-bench: %s\n", run.ToString().c_str());
      return kExitFailed;
    }
    std::fputs(FormatIngestReport(report).c_str(), stdout);
    if (!WriteJson(ingest.json, IngestReportJson(report))) return kExitFailed;
    return Clean(report) ? 0 : kExitFailed;
  }

  if (data_cmd->parsed()) {
    DashboardFormat format;
    Status status = ParseDashboardFormat(data_format, &format).WithContext("--format");
    if (status.ok()) status = ParseTimeNs(data_start, &data.start_ns).WithContext("--start");
    if (status.ok()) {
      status = ParseDurationNs(data_interval, &data.interval_ns).WithContext("--interval");
    }
    if (status.ok()) {
      status = ParseDurationNs(data_duration, &data.duration_ns).WithContext("--duration");
    }
    if (status.ok()) status = ValidateDashboardDataOptions(data);
    if (!status.ok()) return UsageError(status);
    DashboardDataSummary summary;
    const Status run = WriteDashboardData(data, format, data_out, &summary);
    if (!run.ok()) {
      std::fprintf(stderr, "ingot-bench: %s\n", run.ToString().c_str());
      return kExitFailed;
    }
    std::fprintf(stderr, "%llu samples of %llu series (%llu rows, %s .. %s), %llu bytes\n",
                 static_cast<unsigned long long>(summary.samples),
                 static_cast<unsigned long long>(summary.series),
                 static_cast<unsigned long long>(summary.rows),
                 FormatSeconds(summary.first_ts_ns).c_str(),
                 FormatSeconds(summary.last_ts_ns).c_str(),
                 static_cast<unsigned long long>(summary.bytes));
    return WriteJson(data_json, DashboardDataSummaryJson(summary)) ? 0 : kExitFailed;
  }

  if (query_cmd->parsed()) {
    {
      const Status status = ExpandWorkloads(workload, &query.workloads);
      if (!status.ok()) return UsageError(status);
    }
    int64_t workload_start = kDefaultStartNs;
    Status status = ParseDurationNs(query_duration, &query.duration_ns).WithContext("--duration");
    if (status.ok()) status = ParseDurationNs(query_timeout, &query.timeout_ns);
    if (status.ok()) {
      status = ParseDurationNs(query_range.interval, &query_range.options.workload.interval_ns)
                   .WithContext("--interval");
    }
    if (status.ok() && !query_start.empty()) status = ParseTimeNs(query_start, &workload_start);
    query.start_ns = workload_start;
    if (status.ok() && !query_end.empty()) {
      status = ParseTimeNs(query_end, &query.end_ns).WithContext("--end");
    } else if (status.ok()) {
      const uint32_t fields = query_range.options.workload.fields;
      if (fields == 0 || fields > kCpuFieldsPerLine ||
          query_range.options.values < fields || query.hosts == 0 ||
          query_range.options.workload.interval_ns <= 0) {
        status = Status::InvalidArgument("--end is needed unless --points >= --fields, --fields, "
                                         "--hosts and --interval describe the ingested workload");
      } else {
        query_range.options.workload.hosts = query.hosts;
        query_range.options.workload.start_ns = workload_start;
        int64_t first_ts_ns;
        GeneratedTimeRange(query_range.options, &first_ts_ns, &query.end_ns);
      }
    }
    if (status.ok() &&
        (query.duration_ns < 0 || (query.duration_ns == 0 && query.iterations == 0))) {
      status = Status::InvalidArgument("--duration must be > 0, or 0 with --iterations > 0");
    }
    if (!status.ok()) return UsageError(status);
    std::vector<QueryWorkloadReport> reports;
    const Status run = RunQueries(query, &reports);
    if (!run.ok()) return UsageError(run);
    std::printf("range %s .. %s (%s)\n", FormatSeconds(query.start_ns).c_str(),
                FormatSeconds(query.end_ns).c_str(), query.target.c_str());
    std::fputs(FormatQueryReport(reports).c_str(), stdout);
    if (!WriteJson(query_json, QueryReportJson(reports))) return kExitFailed;
    for (const QueryWorkloadReport& r : reports) {
      if (!r.errors.empty() || r.queries == 0) return kExitFailed;
    }
    return 0;
  }

  // compare
  const Status status = ResolveWorkload(&compare);
  if (!status.ok()) return UsageError(status);
  const std::vector<std::string> targets = SplitList(compare_targets);
  const std::vector<std::string> verify_urls = SplitList(compare_verify_urls);
  if (targets.empty()) return UsageError(Status::InvalidArgument("--targets is empty"));
  if (!verify_urls.empty() && verify_urls.size() != targets.size()) {
    return UsageError(Status::InvalidArgument(
        "--verify-urls has " + std::to_string(verify_urls.size()) + " URLs for " +
        std::to_string(targets.size()) + " targets"));
  }
  std::vector<IngestReport> reports;
  for (size_t i = 0; i < targets.size(); ++i) {
    IngestOptions options = compare.options;
    options.target = targets[i];
    options.verify_url = verify_urls.empty() ? "" : verify_urls[i];
    const Status valid = ValidateIngestOptions(options);
    if (!valid.ok()) return UsageError(valid);
    if (!options.quiet) std::fprintf(stderr, "== %s\n", options.target.c_str());
    IngestReport report;
    const Status run = RunIngest(options, &report);
    if (!run.ok()) {
      std::fprintf(stderr, "ingot-bench: %s: %s\n", options.target.c_str(),
                   run.ToString().c_str());
      return kExitFailed;
    }
    if (!options.quiet) std::fputs(FormatIngestReport(report).c_str(), stderr);
    reports.push_back(std::move(report));
  }
  std::fputs(FormatCompareTable(reports).c_str(), stdout);
  if (!WriteJson(compare.json, CompareReportJson(reports))) return kExitFailed;
  for (const IngestReport& report : reports) {
    if (!Clean(report)) return kExitFailed;
  }
  return 0;
}

}  // namespace
}  // namespace ingot::bench

int main(int argc, char** argv) { return ingot::bench::Main(argc, argv); }
