// query-bench: the query path in process, without sockets: a Storage in a temporary directory is
// loaded with `--series` x `--points` (random walk with 2 decimals, 10 s apart, like the TSBS cpu
// data), then each case runs through the HTTP handlers and its body is drained:
//
//   binary-1    /api/v1/export?format=binary, one series (Q1-like)
//   binary-all  /api/v1/export?format=binary, every series (Q2-like): the decode throughput
//   json-1      /api/v1/export (json lines), one series
//   json-all    /api/v1/export (json lines), every series
//   csv-all     /api/v1/export?format=csv, every series
//   avg-1h      /api/v1/query_range avg_over_time(m[1h]) step=3600 over every series (Q3-like)
//   count       sum(count_over_time(m[...])) over the whole range (the load tester's check)
//   sum-rate-1d /api/v1/query_range sum by (job) (rate(http_requests_total[5m])) over one day at
//               60 s steps, over `--counters` counters of 5 jobs sampled every 30 s (the
//               dashboard's range query of `ingot-bench query --workload range-1d`)
//
// One row per case: best and median time of `--repeat` runs, points/s and ns/point. The binary
// export is then decoded and compared with what was written, bit for bit.
//
//   query-bench [--series 100] [--points 10000] [--counters 1000] [--repeat 20] [--dir /tmp]
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "chunk/storage.h"
#include "config/logging.h"
#include "config/malloc_tuning.h"
#include "query/binary_export.h"
#include "query/query_routes.h"

using namespace ingot;

namespace {

struct Args {
  int series = 100;
  int points = 10'000;
  int counters = 1000;
  int repeat = 20;
  std::string dir = "/tmp";
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--series") {
      a.series = std::atoi(v.c_str());
    } else if (k == "--points") {
      a.points = std::atoi(v.c_str());
    } else if (k == "--counters") {
      a.counters = std::atoi(v.c_str());
    } else if (k == "--repeat") {
      a.repeat = std::atoi(v.c_str());
    } else if (k == "--dir") {
      a.dir = v;
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  if (a.series < 1 || a.points < 1 || a.counters < 1 || a.repeat < 1) {
    std::fprintf(stderr, "--series, --points, --counters and --repeat must be >= 1\n");
    std::exit(2);
  }
  return a;
}

constexpr std::int64_t kSec = 1'000'000'000;
constexpr std::int64_t kT0 = 1'700'000'000 * kSec;

// Runs a request and drains its body as the server would (one reused piece buffer). The body is
// kept only when `keep` is given: concatenating it would be measured too.
std::size_t Drain(const HttpRouter& router, const std::string& target, int* status,
                  std::string* keep = nullptr) {
  HttpRequest request(http::verb::get, target, 11);
  HttpReply reply;
  router.Handle(request, reply);
  *status = static_cast<int>(reply.response.result_int());
  std::size_t bytes = reply.response.body().size();
  if (keep != nullptr) *keep = reply.response.body();
  if (reply.stream) {
    std::string chunk;
    for (bool more = true; more;) {
      chunk.clear();
      more = reply.stream(&chunk);
      bytes += chunk.size();
      if (keep != nullptr) *keep += chunk;
    }
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  KeepFreedMemoryMapped();  // as ingotd
  const Args args = Parse(argc, argv);
  Logger("storage")->set_level(spdlog::level::warn);
  std::string tmpl = args.dir + "/ingot-query-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  int exit_code = 0;
  {
    StorageOptions options;
    options.data_dir = tmpl;
    options.wal_sync = "none";
    std::unique_ptr<Storage> storage;
    Status st = Storage::Open(options, 2, SystemClock::Instance(), &storage);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
    // Load: random walks with 2 decimals.
    // Writes `values` as one series, `interval_s` apart from kT0.
    auto append_series = [&](std::string_view measurement, const std::vector<TagView>& tags,
                             std::string_view field, std::int64_t interval_s,
                             const std::vector<double>& values) {
      std::string key;
      BuildSeriesKey(measurement, tags, field, &key);
      SeriesId sid;
      ValueType type;
      if (!storage->index().Resolve(key, ValueType::kFloat, &sid, &type).ok()) return false;
      std::vector<PointRecord> batch;
      for (std::size_t i = 0; i < values.size(); ++i) {
        batch.push_back({sid, kT0 + static_cast<std::int64_t>(i) * interval_s * kSec,
                         std::bit_cast<std::uint64_t>(values[i]), ValueType::kFloat});
      }
      AppendResult result;
      return storage->shard(storage->ShardOf(sid)).Append(batch, &result).ok();
    };
    std::mt19937_64 rng(1);
    std::vector<std::vector<double>> written(static_cast<std::size_t>(args.series));
    for (int s = 0; s < args.series; ++s) {
      const std::string host = "host_" + std::to_string(s);
      std::vector<double>& values = written[static_cast<std::size_t>(s)];
      double v = 50;
      for (int i = 0; i < args.points; ++i) {
        v = std::round((v + (static_cast<double>(rng() % 201) - 100) / 100) * 100) / 100;
        values.push_back(v);
      }
      if (!append_series("cpu", {{"hostname", host}}, "usage_user", 10, values)) return 1;
    }
    // Counters: 5 jobs, increments of 0-20 every 30 s over one day, a restart now and then.
    constexpr int kDayPoints = 24 * 3600 / 30;
    std::vector<double> counter(kDayPoints);
    for (int c = 0; c < args.counters; ++c) {
      const std::string job = "job_" + std::to_string(c % 5);
      const std::string instance = "instance_" + std::to_string(c / 5);
      double v = 0;
      for (double& x : counter) {
        v = rng() % 4000 == 0 ? 0 : v + static_cast<double>(rng() % 21);
        x = v;
      }
      if (!append_series("http_requests", {{"instance", instance}, {"job", job}}, "total", 30,
                         counter)) {
        return 1;
      }
    }
    HttpRouter router;
    QueryOptions query_options;
    RegisterQueryRoutes(router, *storage, query_options);

    const std::int64_t end_s = (kT0 + static_cast<std::int64_t>(args.points) * 10 * kSec) / kSec;
    const std::string range = "&start=" + std::to_string(kT0 / kSec) +
                              "&end=" + std::to_string(end_s);
    const std::string one = "cpu_usage_user%7Bhostname%3D%22host_0%22%7D";
    const std::uint64_t all_points = static_cast<std::uint64_t>(args.series) * args.points;
    struct Case {
      const char* name;
      std::string target;
      std::uint64_t points;
    } cases[] = {
        {"binary-1", "/api/v1/export?format=binary&match[]=" + one + range,
         static_cast<std::uint64_t>(args.points)},
        {"binary-all", "/api/v1/export?format=binary&match[]=cpu_usage_user" + range, all_points},
        {"json-1", "/api/v1/export?match[]=" + one + range,
         static_cast<std::uint64_t>(args.points)},
        {"json-all", "/api/v1/export?match[]=cpu_usage_user" + range, all_points},
        {"csv-all", "/api/v1/export?format=csv&match[]=cpu_usage_user" + range, all_points},
        {"avg-1h",
         "/api/v1/query_range?query=avg_over_time(cpu_usage_user%5B1h%5D)&step=3600" + range,
         all_points},
        {"count",
         "/api/v1/query?query=sum(count_over_time(%7B__name__%3D~%22cpu_.*%22%7D%5B" +
             std::to_string(args.points * 10 + 10) + "s%5D))&time=" + std::to_string(end_s),
         all_points},
        {"sum-rate-1d",
         "/api/v1/query_range?query=sum%20by%20(job)%20(rate(http_requests_total%5B5m%5D))"
         "&step=60&start=" +
             std::to_string(kT0 / kSec) + "&end=" + std::to_string(kT0 / kSec + kDayPoints * 30),
         static_cast<std::uint64_t>(args.counters) * kDayPoints},
    };
    std::printf("%-11s %10s %10s %12s %9s %10s\n", "case", "best_ms", "median_ms", "points/s",
                "ns/point", "body_MB");
    for (const Case& c : cases) {
      std::vector<double> ms;
      std::size_t bytes = 0;
      for (int r = 0; r < args.repeat; ++r) {
        int status = 0;
        const auto t0 = std::chrono::steady_clock::now();
        bytes = Drain(router, c.target, &status);
        const auto t1 = std::chrono::steady_clock::now();
        if (status != 200) {
          std::fprintf(stderr, "%s: HTTP %d\n", c.name, status);
          return 1;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      const double best = ms.front();
      const double median = ms[ms.size() / 2];
      std::printf("%-11s %10.3f %10.3f %12.3e %9.2f %10.2f\n", c.name, best, median,
                  static_cast<double>(c.points) / (best / 1e3), best * 1e6 / c.points,
                  static_cast<double>(bytes) / 1e6);
    }
    // Verify: the binary export holds exactly what was written.
    int status = 0;
    std::vector<ExportedSeries> exported;
    std::string body;
    Drain(router, cases[1].target, &status, &body);
    st = ParseBinaryExport(body, &exported);
    bool ok = st.ok() && exported.size() == static_cast<std::size_t>(args.series);
    for (std::size_t s = 0; ok && s < exported.size(); ++s) {
      const std::string want = "{\"__name__\":\"cpu_usage_user\",\"hostname\":\"host_" +
                               std::to_string(s) + "\"}";
      // Series ids follow creation order, which is host order.
      ok = exported[s].metric_json == want && exported[s].values.size() == written[s].size();
      for (std::size_t i = 0; ok && i < written[s].size(); ++i) {
        ok = std::bit_cast<std::uint64_t>(exported[s].values[i]) ==
                 std::bit_cast<std::uint64_t>(written[s][i]) &&
             exported[s].ts_ns[i] == kT0 + static_cast<std::int64_t>(i) * 10 * kSec;
      }
    }
    std::printf("verify: %s\n", ok ? "binary export bit-exact" : "MISMATCH");
    if (!ok) exit_code = 1;
    storage->Close();
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return exit_code;
}
