#include "bench/ingot_bench/query_runner.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "bench/ingot_bench/asio.h"
#include "bench/ingot_bench/cli_values.h"
#include "bench/ingot_bench/http_connection.h"
#include "bench/ingot_bench/verify.h"

namespace ingot::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string Describe(const std::string& workload) {
  if (workload == "q1") return "export one series, whole range";
  if (workload == "q2") return "export one field of all hosts, whole range";
  return "hourly avg_over_time per host, whole range";
}

struct Worker {
  uint64_t queries = 0;
  uint64_t response_bytes = 0;
  std::map<std::string, uint64_t> errors;
  std::string first_error;
  LogLinearHistogram latency_us;
};

asio::awaitable<void> RunWorker(Worker& worker, HttpConnection& connection,
                                const std::string& workload, uint32_t index,
                                const std::string& base_path, const QueryOptions& options,
                                Clock::time_point deadline) {
  HttpConnection::Response response;
  for (uint64_t k = index; Clock::now() < deadline; k += options.concurrency) {
    const std::string target = QueryRequestTarget(workload, k, base_path, options);
    const Clock::time_point begin = Clock::now();
    const IoFailure failure =
        co_await connection.RoundTrip(http::verb::get, target, {}, {}, &response);
    const auto latency =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin).count();
    std::string kind;
    std::string detail;
    if (!failure.ok()) {
      kind = failure.kind;
      detail = failure.detail;
    } else if (response.status != 200) {
      kind = "http_" + std::to_string(response.status);
      detail = response.body.substr(0, 200);
    }
    if (kind.empty()) {
      ++worker.queries;
      worker.response_bytes += response.body.size();
      worker.latency_us.Record(static_cast<uint64_t>(latency));
      continue;
    }
    ++worker.errors[kind];
    if (worker.first_error.empty()) worker.first_error = kind + ": " + detail;
    if (!failure.ok()) {
      // Do not spin on a server that is down.
      asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(100));
      boost::system::error_code ignored;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }
}

}  // namespace

Status CheckWorkloadName(const std::string& name) {
  if (name == "q1" || name == "q2" || name == "q3") return Status::OK();
  return Status::InvalidArgument("workload '" + name + "': expected q1, q2, q3 or all");
}

std::string QueryRequestTarget(const std::string& workload, uint64_t k,
                               const std::string& base_path, const QueryOptions& options) {
  std::string base = base_path;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string range =
      "&start=" + FormatSeconds(options.start_ns) + "&end=" + FormatSeconds(options.end_ns);
  if (workload == "q1") {
    const std::string selector =
        "cpu_usage_user{hostname=\"host_" + std::to_string(k % options.hosts) + "\"}";
    return base + "/api/v1/export?match%5B%5D=" + UrlEncode(selector) + range;
  }
  if (workload == "q2") return base + "/api/v1/export?match%5B%5D=cpu_usage_user" + range;
  // nocache=1: measure the computation, not VictoriaMetrics' rollup result cache.
  return base + "/api/v1/query_range?query=" + UrlEncode("avg_over_time(cpu_usage_user[1h])") +
         range + "&step=3600&nocache=1";
}

Status RunQueries(const QueryOptions& options, std::vector<QueryWorkloadReport>* reports) {
  Target target;
  INGOT_RETURN_IF_ERROR(ParseTarget(options.target, &target));
  if (target.kind != Target::Kind::kHttp) {
    return Status::InvalidArgument("query --target needs an http:// URL");
  }
  if (options.concurrency == 0) return Status::InvalidArgument("--concurrency must be >= 1");
  if (options.hosts == 0) return Status::InvalidArgument("--hosts must be >= 1");
  if (options.end_ns < options.start_ns) return Status::InvalidArgument("--end is before --start");
  for (const std::string& workload : options.workloads) {
    INGOT_RETURN_IF_ERROR(CheckWorkloadName(workload));
  }
  reports->clear();
  for (const std::string& workload : options.workloads) {
    if (!options.quiet) {
      std::fprintf(stderr, "%s: %s, %u concurrent, %.1f s ...\n", workload.c_str(),
                   Describe(workload).c_str(), options.concurrency, options.duration_ns / 1e9);
    }
    std::vector<Worker> workers(options.concurrency);
    std::vector<std::thread> threads;
    const Clock::time_point begin = Clock::now();
    const Clock::time_point deadline = begin + std::chrono::nanoseconds(options.duration_ns);
    for (uint32_t i = 0; i < options.concurrency; ++i) {
      threads.emplace_back([&, i] {
        asio::io_context ioc;
        HttpConnection connection(ioc, target.host, target.port, options.timeout_ns);
        asio::co_spawn(ioc,
                       RunWorker(workers[i], connection, workload, i, target.path, options,
                                 deadline),
                       [&worker = workers[i]](std::exception_ptr error) {
                         if (!error) return;
                         ++worker.errors["internal"];
                         try {
                           std::rethrow_exception(error);
                         } catch (const std::exception& e) {
                           if (worker.first_error.empty()) worker.first_error = e.what();
                         }
                       });
        ioc.run();
      });
    }
    for (std::thread& thread : threads) thread.join();
    QueryWorkloadReport report;
    report.name = workload;
    report.description = Describe(workload);
    report.concurrency = options.concurrency;
    report.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    for (const Worker& worker : workers) {
      report.queries += worker.queries;
      report.response_bytes += worker.response_bytes;
      for (const auto& [kind, count] : worker.errors) report.errors[kind] += count;
      if (report.first_error.empty()) report.first_error = worker.first_error;
      report.latency_us.Merge(worker.latency_us);
    }
    reports->push_back(std::move(report));
  }
  return Status::OK();
}

}  // namespace ingot::bench
