#include "bench/ingot_bench/ingest_runner.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "bench/ingot_bench/asio.h"
#include "bench/ingot_bench/batch_source.h"
#include "bench/ingot_bench/http_connection.h"
#include "bench/ingot_bench/progress.h"
#include "bench/ingot_bench/remote_write_source.h"

namespace ingot::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Under --rate, a batch carries at most this share of a second's values, so pacing stays smooth.
constexpr double kPacedBatchSeconds = 0.02;

std::atomic<bool> g_interrupted{false};
extern "C" void OnInterrupt(int) { g_interrupted.store(true, std::memory_order_relaxed); }

struct ConnectionState {
  ConnectionCounters counters;
  // Written only by the connection's thread; read after it is joined.
  std::map<std::string, uint64_t> errors;
  std::string first_error;
  LogLinearHistogram latency_us;
  uint64_t attempted_lines = 0;
};

struct ConnectionPlan {
  Clock::time_point start;
  bool has_deadline = false;
  Clock::time_point deadline;
  double values_per_s = 0;  // this connection's share; 0: unlimited
  // A connection that fails without a success for this long stops trying.
  Clock::duration give_up_after;
};

asio::awaitable<void> RunConnection(ConnectionState& state, BatchSource& source, Sink& sink,
                                    const ConnectionPlan& plan) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  boost::system::error_code ignored;
  uint64_t paced_values = 0;
  int consecutive_failures = 0;
  Clock::time_point first_failure;
  Batch batch;
  bool have_batch = false;  // a batch that could not even be connected for is sent again
  while (!g_interrupted.load(std::memory_order_relaxed)) {
    if (!have_batch) {
      if (!source.Next(&batch)) break;
      have_batch = true;
      if (plan.values_per_s > 0) {
        Clock::time_point due =
            plan.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                             static_cast<double>(paced_values) / plan.values_per_s));
        if (plan.has_deadline) due = std::min(due, plan.deadline);
        if (due > Clock::now()) {
          timer.expires_at(due);
          co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
        }
      }
      paced_values += batch.values;
      state.attempted_lines += batch.lines;
    }
    if (plan.has_deadline && Clock::now() >= plan.deadline) break;
    const SendResult result = co_await sink.Send(batch.bytes);
    if (result.latency_us >= 0) state.latency_us.Record(static_cast<uint64_t>(result.latency_us));
    if (result.failure.ok()) {
      have_batch = false;
      consecutive_failures = 0;
      state.counters.bytes.fetch_add(batch.bytes.size(), std::memory_order_relaxed);
      state.counters.lines.fetch_add(batch.lines, std::memory_order_relaxed);
      state.counters.values.fetch_add(batch.values, std::memory_order_relaxed);
      state.counters.new_series.fetch_add(batch.new_series, std::memory_order_relaxed);
      state.counters.batches.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    state.counters.errors.fetch_add(1, std::memory_order_relaxed);
    ++state.errors[result.failure.kind];
    if (state.first_error.empty()) {
      state.first_error = result.failure.kind + ": " + result.failure.detail;
    }
    // Nothing reached the server when the connection could not be made, so the batch is retried;
    // after a failed write or an error answer it is counted as lost, since resending could
    // duplicate lines the server already took.
    const bool nothing_sent = result.failure.kind == "connect" ||
                              result.failure.kind == "resolve";
    if (!nothing_sent) have_batch = false;
    const Clock::time_point now = Clock::now();
    if (consecutive_failures++ == 0) first_failure = now;
    if (now - first_failure >= plan.give_up_after) {
      ++state.errors["gave_up"];
      break;
    }
    // Back off so that a restarting server is not hammered; longer the longer it stays away.
    timer.expires_after(std::chrono::milliseconds(20 * std::min(consecutive_failures, 10)));
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  co_await sink.Close();
}

}  // namespace

Status ValidateIngestOptions(const IngestOptions& o) {
  Target target;
  INGOT_RETURN_IF_ERROR(ParseTarget(o.target, &target));
  if (o.connections == 0) return Status::InvalidArgument("--connections must be at least 1");
  if (o.rate_values_per_s < 0) return Status::InvalidArgument("--rate must be >= 0");
  if (o.batch_lines == 0) return Status::InvalidArgument("--batch-lines must be at least 1");
  if (o.format != kFormatLineProtocol && o.format != kFormatRemoteWrite) {
    return Status::InvalidArgument("--format must be " + std::string(kFormatLineProtocol) + " or " +
                                   std::string(kFormatRemoteWrite));
  }
  if (o.format == kFormatRemoteWrite) {
    if (target.kind != Target::Kind::kHttp) {
      return Status::InvalidArgument(
          "--format prometheus-remote-write needs an http:// target (e.g. "
          "http://127.0.0.1:8086/api/v1/write)");
    }
    if (!o.file.empty() || o.values == 0 || o.round_robin || o.workload.new_series_ratio != 0 ||
        o.rate_values_per_s > 0) {
      return Status::InvalidArgument(
          "--format prometheus-remote-write encodes the generated workload ahead: it needs "
          "--points, and takes no --file, --round-robin, --new-series-ratio or --rate");
    }
    if (o.workload.interval_ns % 1'000'000 != 0) {
      return Status::InvalidArgument("--interval must be whole milliseconds for remote write");
    }
    if (o.rw_series_per_request == 0 || o.rw_samples_per_series == 0) {
      return Status::InvalidArgument("--rw-series and --rw-samples must be at least 1");
    }
  }
  if (o.file.empty()) {
    if (o.values == 0 && o.duration_ns == 0) {
      return Status::InvalidArgument("the run needs a bound: --points and/or --duration");
    }
    if (o.workload.tags > kCpuExtraTags) {
      return Status::InvalidArgument("--tags must be 0.." + std::to_string(kCpuExtraTags) +
                                     ", got " + std::to_string(o.workload.tags));
    }
    if (o.workload.fields == 0 || o.workload.fields > kCpuFieldsPerLine) {
      return Status::InvalidArgument("--fields must be in 1.." + std::to_string(kCpuFieldsPerLine));
    }
    // Written so that NaN fails too.
    if (!(o.workload.new_series_ratio >= 0 && o.workload.new_series_ratio <= 1)) {
      return Status::InvalidArgument("--new-series-ratio must be in 0..1");
    }
    if (o.values != 0 && o.values < o.workload.fields) {
      return Status::InvalidArgument("--points must be 0 or at least --fields (" +
                                     std::to_string(o.workload.fields) + ", one line)");
    }
    if (o.workload.hosts == 0) return Status::InvalidArgument("--hosts must be at least 1");
    if (o.connections > o.workload.hosts) {
      return Status::InvalidArgument("--connections " + std::to_string(o.connections) +
                                     " exceeds --hosts " + std::to_string(o.workload.hosts) +
                                     ": each connection sends its own hosts");
    }
    if (o.workload.interval_ns <= 0) return Status::InvalidArgument("--interval must be > 0");
    if (o.workload.decimals < 0 || o.workload.decimals > kCpuMaxDecimals) {
      return Status::InvalidArgument("--decimals must be in 0.." + std::to_string(kCpuMaxDecimals));
    }
  }
  if (!o.verify_url.empty()) {
    Target verify;
    INGOT_RETURN_IF_ERROR(ParseTarget(o.verify_url, &verify).WithContext("--verify"));
    if (verify.kind != Target::Kind::kHttp) {
      return Status::InvalidArgument("--verify needs an http:// URL");
    }
  }
  return Status::OK();
}

void GeneratedTimeRange(const IngestOptions& options, int64_t* first_ts_ns, int64_t* last_ts_ns) {
  *first_ts_ns = options.workload.start_ns;
  *last_ts_ns =
      CpuWorkload::LastTimestampNs(options.workload, options.values / options.workload.fields);
}

Status RunIngest(const IngestOptions& options, IngestReport* report) {
  INGOT_RETURN_IF_ERROR(ValidateIngestOptions(options));
  Target target;
  INGOT_RETURN_IF_ERROR(ParseTarget(options.target, &target));
  *report = IngestReport();
  report->target = options.target;
  report->connections = options.connections;
  const uint32_t n = options.connections;

  // Sources.
  LineProtocolFile file;
  std::unique_ptr<RoundRobinDealer> dealer;  // declared before the sources that use it
  std::vector<std::unique_ptr<BatchSource>> sources;
  CpuWorkloadOptions workload = options.workload;
  uint64_t total_values = 0;
  std::vector<std::pair<uint32_t, uint32_t>> host_ranges;
  if (!options.file.empty()) {
    INGOT_RETURN_IF_ERROR(LoadLineProtocolFile(options.file, options.batch_lines, &file));
    if (options.rate_values_per_s > 0) {
      const double values_per_line = static_cast<double>(file.values) / file.lines;
      const double paced_lines =
          options.rate_values_per_s / n / values_per_line * kPacedBatchSeconds;
      const auto lines = std::clamp<size_t>(static_cast<size_t>(paced_lines), 1,
                                            options.batch_lines);
      if (lines < options.batch_lines) SplitLineProtocol(std::move(file.bytes), lines, &file);
    }
    if (!options.verify_url.empty() && !file.has_timestamps) {
      return Status::InvalidArgument(options.file +
                                     ": --verify needs lines with explicit ns timestamps");
    }
    total_values = file.values;
    for (uint32_t c = 0; c < n; ++c) sources.push_back(std::make_unique<ReplaySource>(file, c, n));
  } else {
    workload.total_lines =
        options.values == 0 ? kUnboundedLines : options.values / workload.fields;
    total_values = options.values == 0 ? 0 : workload.total_lines * workload.fields;
    size_t batch_lines = options.batch_lines;
    if (options.rate_values_per_s > 0) {
      const double paced_lines =
          options.rate_values_per_s / n / workload.fields * kPacedBatchSeconds;
      batch_lines = std::clamp<size_t>(static_cast<size_t>(paced_lines), 1, batch_lines);
    }
    if (options.format == kFormatRemoteWrite) {
      // Encoded here, before the clock starts.
      for (uint32_t c = 0; c < n; ++c) {
        const auto begin = static_cast<uint32_t>(uint64_t{workload.hosts} * c / n);
        const auto end = static_cast<uint32_t>(uint64_t{workload.hosts} * (c + 1) / n);
        host_ranges.emplace_back(begin, end);
        sources.push_back(std::make_unique<RemoteWriteSource>(
            workload, begin, end, options.rw_series_per_request, options.rw_samples_per_series));
      }
    } else if (options.round_robin && n > 1) {
      // One generator over every host; its batches dealt to the connections in turn.
      dealer = std::make_unique<RoundRobinDealer>(
          std::make_unique<GeneratedSource>(workload, 0, workload.hosts, batch_lines), n);
      for (uint32_t c = 0; c < n; ++c) {
        host_ranges.emplace_back(0, workload.hosts);
        sources.push_back(dealer->Connection(c));
      }
    } else {
      for (uint32_t c = 0; c < n; ++c) {
        const auto begin = static_cast<uint32_t>(uint64_t{workload.hosts} * c / n);
        const auto end = static_cast<uint32_t>(uint64_t{workload.hosts} * (c + 1) / n);
        host_ranges.emplace_back(begin, end);
        sources.push_back(std::make_unique<GeneratedSource>(workload, begin, end, batch_lines));
      }
    }
  }

  std::vector<std::unique_ptr<ConnectionState>> states;
  for (uint32_t c = 0; c < n; ++c) states.push_back(std::make_unique<ConnectionState>());
  ProgressMeter meter(
      [&states] {
        CounterTotals totals;
        for (const auto& state : states) {
          totals.bytes += state->counters.bytes.load(std::memory_order_relaxed);
          totals.values += state->counters.values.load(std::memory_order_relaxed);
          totals.errors += state->counters.errors.load(std::memory_order_relaxed);
        }
        return totals;
      },
      total_values, static_cast<double>(options.duration_ns) / 1e9,
      ProgressMeter::ModeFor(stderr, options.quiet), stderr);

  g_interrupted.store(false);
  const auto previous_handler = std::signal(SIGINT, OnInterrupt);
  ConnectionPlan plan;
  plan.start = Clock::now();
  plan.has_deadline = options.duration_ns > 0;
  plan.deadline = plan.start + std::chrono::nanoseconds(options.duration_ns);
  plan.values_per_s = options.rate_values_per_s / n;
  plan.give_up_after = std::chrono::nanoseconds(options.timeout_ns);
  SinkOptions sink_options;
  sink_options.db = options.db;
  sink_options.timeout_ns = options.timeout_ns;
  sink_options.remote_write = options.format == kFormatRemoteWrite;
  meter.Start();
  std::vector<std::thread> threads;
  for (uint32_t c = 0; c < n; ++c) {
    threads.emplace_back([&, c] {
      ConnectionState& state = *states[c];
      asio::io_context ioc;
      const std::unique_ptr<Sink> sink = MakeSink(target, sink_options, ioc);
      asio::co_spawn(ioc, RunConnection(state, *sources[c], *sink, plan),
                     [&state](std::exception_ptr error) {
                       if (!error) return;
                       ++state.errors["internal"];
                       try {
                         std::rethrow_exception(error);
                       } catch (const std::exception& e) {
                         if (state.first_error.empty()) state.first_error = e.what();
                       }
                     });
      ioc.run();
      sources[c]->Stop();
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Clock::time_point send_end = Clock::now();
  report->per_second_values = meter.Stop();
  std::signal(SIGINT, previous_handler);

  report->send_seconds = std::chrono::duration<double>(send_end - plan.start).count();
  report->has_write_latency = target.kind == Target::Kind::kHttp;
  for (uint32_t c = 0; c < n; ++c) {
    const ConnectionState& state = *states[c];
    report->bytes += state.counters.bytes.load();
    report->lines += state.counters.lines.load();
    report->values += state.counters.values.load();
    report->new_series += state.counters.new_series.load();
    report->batches += state.counters.batches.load();
    for (const auto& [kind, count] : state.errors) report->errors[kind] += count;
    if (report->first_error.empty()) report->first_error = state.first_error;
    report->write_latency_us.Merge(state.latency_us);
  }
  if (g_interrupted.load()) ++report->errors["interrupted"];

  if (!options.verify_url.empty() && !g_interrupted.load()) {
    Target verify_url;
    INGOT_RETURN_IF_ERROR(ParseTarget(options.verify_url, &verify_url));
    VerifyOptions verify;
    verify.selector = options.verify_selector;
    verify.expected_values = report->values;
    verify.timeout_ns = options.verify_timeout_ns;
    verify.request_timeout_ns = options.timeout_ns;
    if (!options.file.empty()) {
      verify.first_ts_ns = file.min_ts_ns;
      verify.last_ts_ns = file.max_ts_ns;
    } else {
      // The newest row any connection reached bounds the range, also when a duration cut it short.
      verify.first_ts_ns = workload.start_ns;
      verify.last_ts_ns = workload.start_ns;
      if (dealer) {
        // Dealt batches: the rows sent are those of all connections together.
        uint64_t lines = 0;
        for (uint32_t c = 0; c < n; ++c) lines += states[c]->attempted_lines;
        const uint64_t rows = (lines + workload.hosts - 1) / workload.hosts;
        if (rows > 0) {
          verify.last_ts_ns =
              workload.start_ns + static_cast<int64_t>(rows - 1) * workload.interval_ns;
        }
      }
      for (uint32_t c = 0; c < n && !dealer; ++c) {
        const uint64_t hosts = host_ranges[c].second - host_ranges[c].first;
        const uint64_t rows = (states[c]->attempted_lines + hosts - 1) / hosts;
        if (rows == 0) continue;
        verify.last_ts_ns = std::max(
            verify.last_ts_ns,
            workload.start_ns + static_cast<int64_t>(rows - 1) * workload.interval_ns);
      }
    }
    WaitUntilQueryable(verify_url, verify, plan.start, &report->verify);
  }
  return Status::OK();
}

}  // namespace ingot::bench
