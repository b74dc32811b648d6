#include "bench/ingot_bench/query_runner.h"

#include <atomic>
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

const DashboardQuery* FindDashboardQuery(std::string_view name) {
  for (const DashboardQuery& query : kDashboardQueries) {
    if (query.name == name) return &query;
  }
  return nullptr;
}

std::string Describe(const std::string& workload) {
  if (workload == "q1") return "export one series, whole range";
  if (workload == "q2") return "export one field of all hosts, whole range";
  if (workload == "q3") return "hourly avg_over_time per host, whole range";
  const DashboardQuery* query = FindDashboardQuery(workload);
  if (query != nullptr && query->range) return "range query, 1 day before the end, 60 s steps";
  return "instant query at the end of the range";
}

// A client error other than a timeout or throttling: asking again gets the same answer.
bool IsRejection(unsigned status) {
  return status >= 400 && status < 500 && status != 408 && status != 429;
}

struct Worker {
  uint64_t queries = 0;
  uint64_t response_bytes = 0;
  std::map<std::string, uint64_t> errors;
  std::string first_error;
  LogLinearHistogram latency_us;
};

// One connection's queries: the k-th query of the workload for each k taken from `next`, until
// `limit` queries (0 = no limit) or the deadline. With `record` false (the warm-up) nothing is
// counted. A rejected query (see IsRejection) ends the worker: its answer is in the report.
asio::awaitable<void> RunWorker(Worker& worker, HttpConnection& connection,
                                const std::string& workload, const std::string& base_path,
                                const QueryOptions& options, Clock::time_point deadline,
                                std::atomic<uint64_t>& next, uint64_t limit, bool record) {
  HttpConnection::Response response;
  while (Clock::now() < deadline) {
    const uint64_t k = next.fetch_add(1, std::memory_order_relaxed);
    if (limit != 0 && k >= limit) break;
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
      detail = response.body.substr(0, 300);
    }
    if (kind.empty()) {
      if (!record) continue;
      ++worker.queries;
      worker.response_bytes += response.body.size();
      worker.latency_us.Record(static_cast<uint64_t>(latency));
      continue;
    }
    if (record) {
      ++worker.errors[kind];
      if (worker.first_error.empty()) worker.first_error = kind + ": " + detail;
    }
    if (failure.ok() && IsRejection(response.status)) co_return;
    if (!failure.ok()) {
      // Do not spin on a server that is down.
      asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(100));
      boost::system::error_code ignored;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }
}

// A connection with its own event loop, kept over the warm-up and the measured phase.
struct Client {
  Client(const Target& target, int64_t timeout_ns)
      : connection(ioc, target.host, target.port, timeout_ns) {}
  asio::io_context ioc;
  HttpConnection connection;
};

// Runs `make(i)` on client i's loop, one thread per client, and returns after all have ended.
template <typename MakeCoroutine>
void RunOnClients(std::vector<std::unique_ptr<Client>>& clients, std::vector<Worker>& workers,
                  MakeCoroutine make) {
  std::vector<std::thread> threads;
  for (size_t i = 0; i < clients.size(); ++i) {
    threads.emplace_back([&, i] {
      asio::io_context& ioc = clients[i]->ioc;
      ioc.restart();
      asio::co_spawn(ioc, make(i), [&worker = workers[i]](std::exception_ptr error) {
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
}

}  // namespace

Status CheckWorkloadName(const std::string& name) {
  if (name == "q1" || name == "q2" || name == "q3") return Status::OK();
  if (FindDashboardQuery(name) != nullptr) return Status::OK();
  std::string names = "q1, q2, q3";
  for (const DashboardQuery& query : kDashboardQueries) names += ", " + std::string(query.name);
  return Status::InvalidArgument("workload '" + name + "': expected " + names +
                                 ", all or dashboard");
}

Status ExpandWorkloads(std::string_view list, std::vector<std::string>* workloads) {
  workloads->clear();
  for (const std::string& name : SplitList(list)) {
    if (name == "all") {
      workloads->insert(workloads->end(), {"q1", "q2", "q3"});
    } else if (name == "dashboard") {
      for (const DashboardQuery& query : kDashboardQueries) {
        workloads->emplace_back(query.name);
      }
    } else {
      INGOT_RETURN_IF_ERROR(CheckWorkloadName(name));
      workloads->push_back(name);
    }
  }
  if (workloads->empty()) return Status::InvalidArgument("--workload is empty");
  return Status::OK();
}

std::string WorkloadQuery(const std::string& workload, uint64_t k, const QueryOptions& options) {
  if (workload == "q1") {
    return "cpu_usage_user{hostname=\"host_" + std::to_string(k % options.hosts) + "\"}";
  }
  if (workload == "q2") return "cpu_usage_user";
  if (workload == "q3") return "avg_over_time(cpu_usage_user[1h])";
  const DashboardQuery* query = FindDashboardQuery(workload);
  return query == nullptr ? std::string() : std::string(query->expr);
}

std::string QueryRequestTarget(const std::string& workload, uint64_t k,
                               const std::string& base_path, const QueryOptions& options) {
  std::string base = base_path;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string query = UrlEncode(WorkloadQuery(workload, k, options));
  const std::string range =
      "&start=" + FormatSeconds(options.start_ns) + "&end=" + FormatSeconds(options.end_ns);
  if (workload == "q1" || workload == "q2") {
    return base + "/api/v1/export?match%5B%5D=" + query + range;
  }
  if (workload == "q3") {
    return base + "/api/v1/query_range?query=" + query + range + "&step=3600&nocache=1";
  }
  const DashboardQuery* dashboard = FindDashboardQuery(workload);
  if (dashboard != nullptr && dashboard->range) {
    return base + "/api/v1/query_range?query=" + query +
           "&start=" + FormatSeconds(options.end_ns - kDashboardRangeNs) +
           "&end=" + FormatSeconds(options.end_ns) + "&step=" + std::to_string(kDashboardStepS) +
           "&nocache=1";
  }
  return base + "/api/v1/query?query=" + query + "&time=" + FormatSeconds(options.end_ns) +
         "&nocache=1";
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
  if (options.duration_ns < 0) return Status::InvalidArgument("--duration must be >= 0");
  if (options.duration_ns == 0 && options.iterations == 0) {
    return Status::InvalidArgument(
        "--duration and --iterations are both 0: a workload would "
        "never end");
  }
  for (const std::string& workload : options.workloads) {
    INGOT_RETURN_IF_ERROR(CheckWorkloadName(workload));
  }
  reports->clear();
  for (const std::string& workload : options.workloads) {
    if (!options.quiet) {
      std::string limits;
      if (options.iterations != 0) limits = std::to_string(options.iterations) + " queries";
      if (options.duration_ns != 0) {
        char text[32];
        std::snprintf(text, sizeof(text), "%.1f s", options.duration_ns / 1e9);
        limits += (limits.empty() ? "" : " or ") + std::string(text);
      }
      std::fprintf(stderr, "%s: %s, %u concurrent, %s ...\n", workload.c_str(),
                   Describe(workload).c_str(), options.concurrency, limits.c_str());
    }
    std::vector<std::unique_ptr<Client>> clients;
    for (uint32_t i = 0; i < options.concurrency; ++i) {
      clients.push_back(std::make_unique<Client>(target, options.timeout_ns));
    }
    std::vector<Worker> workers(options.concurrency);
    if (options.warmup > 0) {
      // Each connection's own first queries: connecting and cold caches stay out of the report.
      std::vector<std::atomic<uint64_t>> warmup_next(options.concurrency);
      std::vector<Worker> warmup_workers(options.concurrency);
      RunOnClients(clients, warmup_workers, [&](size_t i) {
        return RunWorker(warmup_workers[i], clients[i]->connection, workload, target.path, options,
                         Clock::time_point::max(), warmup_next[i], options.warmup, false);
      });
    }
    std::atomic<uint64_t> next{0};
    const Clock::time_point begin = Clock::now();
    const Clock::time_point deadline = options.duration_ns == 0
                                           ? Clock::time_point::max()
                                           : begin + std::chrono::nanoseconds(options.duration_ns);
    RunOnClients(clients, workers, [&](size_t i) {
      return RunWorker(workers[i], clients[i]->connection, workload, target.path, options, deadline,
                       next, options.iterations, true);
    });
    QueryWorkloadReport report;
    report.name = workload;
    report.description = Describe(workload);
    report.query = WorkloadQuery(workload, 0, options);
    report.request = QueryRequestTarget(workload, 0, target.path, options);
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
