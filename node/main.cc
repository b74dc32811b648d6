// ingotd: the node's composition root. Loads the configuration, takes the data-dir lock, opens the
// store, wires ingest and query into the listeners and runs until SIGINT/SIGTERM.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "chunk/data_check.h"
#include "chunk/data_dir_lock.h"
#include "chunk/storage.h"
#include "cluster/cluster_node.h"
#include "cluster/nats/nats_log.h"
#include "config/asio.h"
#include "config/clock.h"
#include "config/config_loader.h"
#include "config/logging.h"
#include "config/malloc_tuning.h"
#include "config/metrics.h"
#include "config/options.h"
#include "config/version.h"
#include "ingest/line_ingester.h"
#include "ingest/remote_write_handler.h"
#include "ingest/shard_set.h"
#include "ingest/tcp_server.h"
#include "ingest/write_handler.h"
#include "node/cluster_routes.h"
#include "node/codec_routes.h"
#include "node/config_routes.h"
#include "node/http_server.h"
#include "node/ops_routes.h"
#include "node/ui_routes.h"
#include "node/write_routes.h"
#include "query/query_routes.h"
#include "query/work_pool.h"

#ifdef INGOT_HAVE_PROFILER
#include <gperftools/profiler.h>
#endif

namespace ingot {
namespace {

// Shares the process' file descriptors between RocksDB's table files, the WAL and other files,
// and the two listeners' connections, so that clients can never take the descriptors storage
// needs: a connection past its listener's share is refused (HTTP: 503) instead of a file open
// failing. The soft limit is raised to the hard one first, as most servers do.
void ApplyDescriptorBudget(Options* options, spdlog::logger& log) {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    struct rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? std::max<rlim_t>(limit.rlim_cur, 1 << 20)
                                                      : limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  const std::uint64_t total = limit.rlim_cur == RLIM_INFINITY ? (1ull << 20) : limit.rlim_cur;
  // Table files: a quarter, within [64, 65536]. Fixed needs: WAL segments, RocksDB's own files,
  // event and timer descriptors, connections being answered 503: 192.
  const std::uint64_t tables = std::clamp<std::uint64_t>(total / 4, 64, 65536);
  constexpr std::uint64_t kFixed = 192;
  options->storage.max_open_files = static_cast<int>(tables);
  const std::uint64_t for_connections = total > tables + kFixed + 16 ? total - tables - kFixed : 16;
  const std::uint64_t http = options->query.max_connections;
  const std::uint64_t tcp =
      options->ingest.tcp_listen.empty() ? 0 : options->ingest.max_connections;
  if (http + tcp <= for_connections) return;
  const std::uint64_t http_share =
      std::max<std::uint64_t>(8, for_connections * http / (http + tcp));
  const std::uint64_t tcp_share = std::max<std::uint64_t>(8, for_connections - http_share);
  log.warn(
      "the descriptor limit is {} (ulimit -n): connections capped at {} HTTP "
      "(query.max_connections = {}) and {} TCP (ingest.max_connections = {}) so that "
      "storage keeps {} descriptors",
      total, http_share, http, tcp_share, options->ingest.max_connections, total - for_connections);
  options->query.max_connections = static_cast<std::uint32_t>(http_share);
  options->ingest.max_connections = static_cast<std::uint32_t>(tcp_share);
}

// A connection's ingester together with the router its lines go to (a cluster node).
class RoutedIngester final : public LineConsumer {
 public:
  RoutedIngester(std::unique_ptr<ingest::LineIngester> ingester,
                 std::unique_ptr<ingest::LineRouter> router)
      : router_(std::move(router)), ingester_(std::move(ingester)) {
    ingester_->set_router(router_.get());
  }
  void Consume(std::string_view lines) override { ingester_->Consume(lines); }
  void OverlongLine(std::uint64_t line_number, std::size_t bytes_seen) override {
    ingester_->OverlongLine(line_number, bytes_seen);
  }
  void Finish() override { ingester_->Finish(); }

 private:
  std::unique_ptr<ingest::LineRouter> router_;  // outlives the ingester
  std::unique_ptr<ingest::LineIngester> ingester_;
};

// `ingotd --check`: the offline verification (chunk/data_check.h); the report goes to stdout.
int RunCheck(const StorageOptions& options, spdlog::logger& log) {
  DataCheckReport report;
  const Status st = CheckDataDir(options, &report);
  if (!st.ok()) {
    log.error("check of '{}' could not run: {}", options.data_dir, st.ToString());
    if (report.problems.empty()) return 2;
  }
  std::fputs(report.ToText().c_str(), stdout);
  return st.ok() && report.clean() ? 0 : 1;
}

int Run(int argc, char** argv) {
  KeepFreedMemoryMapped();
  CLI::App app{
      "ingotd: a streaming time-series ingestion node (InfluxDB line "
      "protocol in, "
      "Prometheus-style queries out)"};
  std::string config_path;
  std::vector<std::string> overrides;
  std::string data_dir;
  std::string cpuprofile;
  app.add_option("-c,--config", config_path, "TOML configuration file (see conf/ingot.toml)")
      ->check(CLI::ExistingFile);
  app.add_option("--set", overrides, "Override a setting: section.key=value (repeatable)");
  app.add_option("--data-dir", data_dir, "Data directory (overrides storage.data_dir)");
  app.add_option("--cpuprofile", cpuprofile,
                 "Write a gperftools CPU profile of the whole run to FILE "
                 "(read it with pprof)");
  bool check = false;
  app.add_flag("--check", check,
               "Verify the data directory offline (every chunk, checkpoint and "
               "WAL record) and "
               "print what is damaged; exit status 0 clean, 1 damaged, 2 the "
               "check could not run");
  app.set_version_flag("-V,--version", std::string("ingotd ") + kVersion);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  Options options;
  Status st = LoadOptions(config_path, overrides, &options);
  if (!data_dir.empty() && st.ok()) st = ApplyOverride("storage.data_dir=" + data_dir, &options);
  if (!st.ok()) {
    std::fprintf(stderr, "ingotd: configuration error: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  st = SetupLogging(options.log);
  if (!st.ok()) {
    std::fprintf(stderr, "ingotd: %s\n", st.ToString().c_str());
    return 2;
  }
  auto log = Logger("main");
  if (check) return RunCheck(options.storage, *log);
  ApplyDescriptorBudget(&options, *log);
  // Installed before anything starts so that a signal arriving during start-up is not lost.
  asio::io_context signals_io;
  asio::signal_set signals(signals_io, SIGINT, SIGTERM);

#ifdef INGOT_HAVE_PROFILER
  if (!cpuprofile.empty()) {
    if (!ProfilerStart(cpuprofile.c_str())) {
      log->error("cannot start the CPU profiler writing to '{}'", cpuprofile);
      return 2;
    }
    log->info("CPU profile is being written to {}", cpuprofile);
  }
#else
  if (!cpuprofile.empty()) {
    log->error("--cpuprofile needs a build with -DINGOT_PROFILER=ON");
    return 2;
  }
#endif

  std::unique_ptr<DataDirLock> lock;
  st = DataDirLock::Acquire(options.storage.data_dir, &lock);
  if (!st.ok()) {
    log->error("{}", st.ToString());
    return 1;
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int shard_count =
      static_cast<int>(options.ingest.shards == 0 ? cores : options.ingest.shards);
  std::unique_ptr<Storage> storage;
  st = Storage::Open(options.storage, shard_count, SystemClock::Instance(), &storage);
  if (!st.ok()) {
    log->error("opening the store in '{}': {}", options.storage.data_dir, st.ToString());
    return 1;
  }
  ingest::ShardSet shards(*storage, options.ingest.shard_queue_batches);
  shards.Start();
  ingest::Precision tcp_precision = ingest::Precision::kNanoseconds;
  ingest::ParsePrecision(options.ingest.precision, &tcp_precision);
  ingest::WriteHandler write_handler(shards, storage->index(), SystemClock::Instance(),
                                     options.ingest);
  ingest::RemoteWriteHandler remote_write_handler(shards, storage->index(), options.ingest);

  // A cluster node (docs/scale-out.md): writes go to the log, owned partitions come back from it,
  // and queries fan out over the live nodes.
  std::unique_ptr<cluster::NatsClient> nats;
  std::unique_ptr<cluster::Coordination> bucket;
  std::unique_ptr<cluster::ClusterNode> cluster_node;
  if (options.cluster.enabled()) {
    cluster::NatsOptions nats_options;
    nats_options.urls = options.cluster.nats_urls;
    nats_options.name = "ingotd " + options.cluster.node_id;
    st = cluster::NatsClient::Connect(nats_options, &nats);
    if (st.ok()) {
      st = nats->OpenBucket("ingot_" + options.cluster.name,
                            static_cast<int>(options.cluster.stream_replicas), &bucket);
    }
    if (st.ok()) {
      st = cluster::ClusterNode::Open(options, nats->log(), *bucket, *storage, shards,
                                      SystemClock::Instance(), &cluster_node);
    }
    if (!st.ok()) {
      log->error("joining cluster {} through {}: {}", options.cluster.name,
                 options.cluster.nats_urls, st.ToString());
      shards.Stop();
      (void)storage->Close();
      return 1;
    }
    write_handler.set_router_factory([&cluster_node](ingest::Precision precision) {
      return cluster_node->routing().NewRouter(precision);
    });
    remote_write_handler.set_router_factory(
        [&cluster_node] { return cluster_node->routing().NewSeriesRouter(); });
    cluster::NatsClient* client = nats.get();
    MetricsRegistry::Default().AddCallbackGauge(
        "ingot_cluster_nats_connected", "1 while the connection to the NATS servers is up.",
        [client] { return client->connected() ? 1.0 : 0.0; });
    MetricsRegistry::Default().AddCallbackGauge(
        "ingot_cluster_nats_reconnects", "Reconnections to the NATS servers since start.",
        [client] { return static_cast<double>(client->reconnects()); });
  }

  // Set when shutdown starts: long-running handlers (a CPU profile) end early.
  std::atomic<bool> stopping{false};
  HttpRouter router;
  RegisterQueryRoutes(router, *storage, options.query,
                      cluster_node != nullptr ? &cluster_node->fanout() : nullptr);
  if (cluster_node != nullptr) {
    RegisterClusterSelectRoute(router, *storage, options.query);
    router.Add(http::verb::get, "/internal/cluster/status",
               [&cluster_node](const HttpRequest&, HttpReply& reply) {
                 reply.response.result(http::status::ok);
                 reply.response.set(http::field::content_type, "application/json");
                 reply.response.body() = cluster_node->StatusJson();
               });
  }
  RegisterWriteRoutes(router, write_handler, remote_write_handler);
  RegisterOperationsRoutes(router, *storage, options.storage.data_dir, &stopping);
  RegisterCodecRoutes(router, *storage, options.query);
  RegisterConfigRoutes(router, options);
  RegisterUiRoutes(router);
  TcpServer tcp(options.ingest, [&](const ConnectionInfo& connection) {
    auto ingester = std::make_unique<ingest::LineIngester>(
        shards, storage->index(), SystemClock::Instance(), tcp_precision,
        options.ingest.max_line_bytes, ingest::WriteProtocol::kTcp,
        "tcp " + connection.peer + " #" + std::to_string(connection.id));
    ingester->set_log_string_fields(options.ingest.string_fields != "drop");
    if (cluster_node != nullptr) {
      // The router lives as long as the connection's ingester, which it is handed with.
      return std::unique_ptr<LineConsumer>(std::make_unique<RoutedIngester>(
          std::move(ingester), cluster_node->routing().NewRouter(tcp_precision)));
    }
    return std::unique_ptr<LineConsumer>(std::move(ingester));
  });
  MetricsRegistry::Default().AddCallbackGauge(
      "ingot_connections", "Open line-protocol TCP connections.",
      [&tcp] { return static_cast<double>(tcp.connections()); });
  WorkPool::Instance().Configure(options.query.parallelism);
  HttpServerOptions http_options;
  http_options.io_threads = options.query.http_threads;
  http_options.query_workers = options.query.workers == 0 ? cores : options.query.workers;
  // A write handler spends most of its time waiting for its samples to be durable (the shards
  // apply them), so a worker per core leaves the cores idle: remote write from 4 connections on
  // 2 cores went from 0.8 M to 1.5 M samples/s with 4 workers instead of 2.
  http_options.write_workers =
      options.query.write_workers == 0 ? 4 * cores : options.query.write_workers;
  http_options.max_connections = options.query.max_connections;
  http_options.max_request_bytes = options.query.max_request_bytes;
  http_options.max_inflight_body_bytes = options.query.max_inflight_request_bytes;
  http_options.idle_timeout_ms = options.query.idle_timeout_ms;
  http_options.timeout_ms = options.query.timeout_ms;
  http_options.tls = options.query.tls;
  http_options.auth = options.auth;
  if (options.auth.enabled() && !options.ingest.tcp_listen.empty()) {
    // Line protocol over TCP has no place for credentials.
    log->warn(
        "[auth] protects HTTP only: line protocol on ingest.tcp_listen = {} is accepted "
        "without credentials (set it to \"\" to turn that listener off)",
        options.ingest.tcp_listen);
  }
  HttpServer http_server(http_options, router);
  MetricsRegistry::Default().AddCallbackGauge(
      "ingot_http_connections", "Open HTTP connections.",
      [&http_server] { return static_cast<double>(http_server.connections()); });

  int exit_code = 0;
  if (!options.ingest.tcp_listen.empty()) {
    st = tcp.Start(options.ingest.tcp_listen,
                   options.ingest.io_threads == 0 ? cores : options.ingest.io_threads);
  }
  if (st.ok() && !options.query.http_listen.empty()) {
    st = http_server.Start(options.query.http_listen);
  }
  if (st.ok() && cluster_node != nullptr) {
    std::string advertise = options.cluster.advertise_http;
    if (advertise.empty()) {
      const std::string& listen = options.query.http_listen;
      std::string host = listen.substr(0, listen.rfind(':'));
      if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
      advertise = host + ":" + std::to_string(http_server.port());
    }
    st = cluster_node->Start(advertise);
    if (!st.ok()) st = Status::IOError("taking this node's cluster lease: " + st.ToString());
  }
  if (!st.ok()) {
    log->error("{}", st.ToString());
    exit_code = 1;
  } else {
    log->info("ingotd {} ready: line protocol on tcp port {}, HTTP on port {}, data in {}",
              kVersion, tcp.port(), http_server.port(), options.storage.data_dir);
    signals.async_wait([&](const boost::system::error_code&, int signo) {
      log->info("received {}, shutting down", signo == SIGINT ? "SIGINT" : "SIGTERM");
    });
    signals_io.run();
  }

  // Order: stop the listeners (their consumers finish and wait for durability), drain the shard
  // queues, then persist open buffers and close RocksDB.
  stopping = true;
  tcp.Stop();
  http_server.Stop();
  if (cluster_node != nullptr) cluster_node->Stop();
  shards.Stop();
  st = storage->Close();
  if (!st.ok()) {
    log->error("closing the store: {}", st.ToString());
    exit_code = 1;
  }
  if (cluster_node != nullptr && st.ok()) {
    // Everything applied is durable now.
    st = cluster_node->PersistPositions();
    if (!st.ok()) log->error("writing the cluster positions: {}", st.ToString());
  }
#ifdef INGOT_HAVE_PROFILER
  if (!cpuprofile.empty()) ProfilerStop();
#endif
  if (exit_code == 0) log->info("stopped cleanly");
  spdlog::shutdown();
  return exit_code;
}

}  // namespace
}  // namespace ingot

int main(int argc, char** argv) { return ingot::Run(argc, argv); }
