#include "node/ops_routes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <thread>

#include "chunk/storage_metrics.h"
#include "config/metrics.h"
#include "query/text_format.h"

#ifdef INGOT_HAVE_PROFILER
#include <gperftools/profiler.h>
#endif

namespace ingot {
namespace {

void Health(HttpReply& reply) {
  SetReply(reply, http::status::ok, "application/json", "{\"status\":\"ok\"}\n");
}

void MetricsPage(Storage& storage, HttpReply& reply) {
  std::string body;
  MetricsRegistry::Default().RenderPrometheus(&body);
  std::size_t head_series = 0, head_points = 0;
  for (int i = 0; i < storage.shard_count(); ++i) {
    head_series += storage.shard(i).head_series();
    head_points += storage.shard(i).head_points();
  }
  auto gauge = [&body](std::string_view name, std::string_view help, double value) {
    body += "# HELP ";
    body += name;
    body += ' ';
    body += help;
    body += "\n# TYPE ";
    body += name;
    body += " gauge\n";
    body += name;
    body += ' ';
    AppendDouble(value, &body);
    body += '\n';
  };
  gauge("ingot_head_series", "Series with points in open head buffers.",
        static_cast<double>(head_series));
  gauge("ingot_head_points", "Points in open head buffers (not yet sealed).",
        static_cast<double>(head_points));
  gauge("ingot_late_series", "Series that may have late data (a late buffer or late chunks).",
        static_cast<double>(storage.late_series()));
  gauge("ingot_late_buffered_points", "Late points in late buffers, not yet in late chunks.",
        static_cast<double>(storage.late_buffered_points()));
  gauge("ingot_series_index_bytes",
        "Heap bytes of the series index (keys, label postings, hash tables).",
        static_cast<double>(storage.index().memory_bytes()));
  gauge("ingot_series_definitions_pending",
        "New series whose definitions are in the WAL only, not yet in the index family.",
        static_cast<double>(storage.index().pending_definitions()));
  const StorageMetrics& sm = ::ingot::Metrics();
  const double sealed_bytes = static_cast<double>(sm.chunk_bytes_written->Value());
  const double sealed_values = static_cast<double>(sm.values_sealed->Value());
  gauge("ingot_compression_ratio",
        "Raw size (16 bytes per point: timestamp and value) over sealed chunk bytes, since start.",
        sealed_bytes > 0 ? sealed_values * 16 / sealed_bytes : 0.0);
  gauge("ingot_chunk_bytes_on_disk", "Bytes of the chunks column family (SST files and memtables).",
        static_cast<double>(storage.chunks().ChunkBytesOnDisk()));
  rocksdb::DB* db = storage.chunks().db();
  auto property = [&](std::string_view name, std::string_view help, const std::string& prop,
                      rocksdb::ColumnFamilyHandle* cf) {
    std::uint64_t v = 0;
    if (db != nullptr && db->GetIntProperty(cf, prop, &v)) {
      gauge(name, help, static_cast<double>(v));
    }
  };
  rocksdb::ColumnFamilyHandle* chunks_cf = storage.chunks().chunks_cf();
  property("ingot_rocksdb_chunks_estimate", "Estimated number of stored chunks.",
           "rocksdb.estimate-num-keys", chunks_cf);
  property("ingot_rocksdb_memtable_bytes", "Bytes in the chunks family's memtables.",
           "rocksdb.cur-size-all-mem-tables", chunks_cf);
  property("ingot_rocksdb_pending_compaction_bytes", "Estimated bytes compaction must rewrite.",
           "rocksdb.estimate-pending-compaction-bytes", chunks_cf);
  property("ingot_rocksdb_running_compactions", "Compactions running now.",
           "rocksdb.num-running-compactions", chunks_cf);
  property("ingot_rocksdb_block_cache_bytes", "Bytes held by the block cache.",
           "rocksdb.block-cache-usage", chunks_cf);
  property("ingot_rocksdb_sst_files", "Live SST files of the chunks family (level 0).",
           "rocksdb.num-files-at-level0", chunks_cf);
  SetReply(reply, http::status::ok, "text/plain; version=0.0.4; charset=utf-8", std::move(body));
}
void ForceMerge(Storage& storage, HttpReply& reply) {
  LateCompactionStats stats;
  ChunkGroupStats groups;
  Status st = storage.CompactLate(&stats);
  // Groups first, so that the compactions that follow rewrite each group's blocks compactly.
  if (st.ok()) st = storage.GroupChunks(&groups);
  if (st.ok()) st = storage.chunks().CompactChunks();
  std::size_t heads = 0;
  if (st.ok()) st = storage.CompactHeads(&heads);
  if (!st.ok()) {
    ErrorReply(reply, http::status::internal_server_error, "internal", st.ToString());
    return;
  }
  SetReply(reply, http::status::ok, "application/json",
           "{\"status\":\"success\",\"data\":{\"late_points_merged\":" +
               std::to_string(stats.points_written) +
               ",\"chunks_read\":" + std::to_string(stats.chunks_read) +
               ",\"chunks_written\":" + std::to_string(stats.chunks_written) +
               ",\"chunks_grouped\":" + std::to_string(groups.chunks_grouped) +
               ",\"groups_written\":" + std::to_string(groups.groups_written) +
               ",\"heads_compacted\":" + std::to_string(heads) + "}}\n");
}
constexpr int kMaxProfileSeconds = 300;

class Profiler {
 public:
  Profiler(std::string data_dir, const std::atomic<bool>* stopping)
      : dir_(std::move(data_dir) + "/profiles"), stopping_(stopping) {}

  void Handle(const HttpRequest& request, HttpReply& reply) {
    int seconds = 30;
    for (const auto& [key, value] : ParseQueryParams(request)) {
      if (key != "seconds" || value.empty()) continue;
      std::int64_t ns = 0;
      Status st = ParseDurationNs(value, &ns);
      if (!st.ok() || ns % 1'000'000'000 != 0 || ns / 1'000'000'000 > kMaxProfileSeconds) {
        ErrorReply(reply, http::status::bad_request, "bad_data",
                   "invalid parameter \"seconds\": \"" + value +
                       "\" is not a whole number of seconds in 1.." +
                       std::to_string(kMaxProfileSeconds));
        return;
      }
      seconds = static_cast<int>(ns / 1'000'000'000);
    }
#ifdef INGOT_HAVE_PROFILER
    if (busy_.exchange(true)) {
      ErrorReply(reply, http::status::conflict, "unavailable", "a CPU profile is already running");
      return;
    }
    Run(seconds, reply);
    busy_ = false;
#else
    (void)seconds;
    (void)stopping_;
    ErrorReply(reply, http::status::not_implemented, "unavailable",
               "CPU profiling needs a build with -DINGOT_PROFILER=ON");
#endif
  }

 private:
#ifdef INGOT_HAVE_PROFILER
  // Creates a fresh file no one else can have prepared: a private directory, a random name,
  // O_EXCL (never an existing file) and O_NOFOLLOW (never through a symlink).
  bool CreateFile(std::string* path, std::string* error) {
    if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = "cannot create " + dir_ + ": " + std::strerror(errno);
      return false;
    }
    struct stat st {};
    if (::lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      *error = dir_ + " is not a directory owned by this user";
      return false;
    }
    std::random_device random;
    const std::uint64_t token = (std::uint64_t{random()} << 32) ^ random();
    *path = dir_ + "/cpu-" + std::to_string(::getpid()) + "-" + std::to_string(token) + ".prof";
    const int fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      *error = "cannot create " + *path + ": " + std::strerror(errno);
      return false;
    }
    ::close(fd);
    return true;
  }

  void Run(int seconds, HttpReply& reply) {
    std::string path, error;
    if (!CreateFile(&path, &error)) {
      ErrorReply(reply, http::status::internal_server_error, "internal", error);
      return;
    }
    if (!ProfilerStart(path.c_str())) {
      ::unlink(path.c_str());
      ErrorReply(reply, http::status::conflict, "unavailable",
                 "cannot start the CPU profiler (is --cpuprofile profiling the whole run?)");
      return;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end && !stopping_->load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ProfilerStop();
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ::unlink(path.c_str());
    SetReply(reply, http::status::ok, "application/octet-stream", std::move(data));
    reply.response.set(http::field::content_disposition, "attachment; filename=\"cpu.prof\"");
  }

  std::atomic<bool> busy_{false};
#endif
  const std::string dir_;
  const std::atomic<bool>* stopping_;
};

}  // namespace

void RegisterOperationsRoutes(HttpRouter& router, Storage& storage, std::string data_dir,
                              const std::atomic<bool>* stopping) {
  router.Add(http::verb::get, "/metrics",
             [&storage](const HttpRequest&, HttpReply& reply) { MetricsPage(storage, reply); },
             HttpWork::kInline);
  router.Add(http::verb::get, "/health",
             [](const HttpRequest&, HttpReply& reply) { Health(reply); }, HttpWork::kInline);
  router.Add(http::verb::post, "/internal/force_merge",
             [&storage](const HttpRequest&, HttpReply& reply) { ForceMerge(storage, reply); },
             HttpWork::kQuery);
  auto profiler = std::make_shared<Profiler>(std::move(data_dir), stopping);
  router.Add(http::verb::get, "/debug/pprof/profile",
             [profiler](const HttpRequest& request, HttpReply& reply) {
               profiler->Handle(request, reply);
             },
             HttpWork::kQuery);
}

}  // namespace ingot
