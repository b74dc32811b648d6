// storage-bench: the storage layer end to end, in process: append N series x M points through the
// head buffers and the WAL, seal, write chunks to RocksDB, then read every series back and check
// it bit for bit. One row per WAL sync policy.
//
//   storage-bench [--series 100] [--points 100000] [--batch 50] [--sync none,interval,always]
//                 [--dir /tmp]
//
// Data: a random walk with 2 decimals per series (steps of -1.00..+1.00), regular 10 s intervals.
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "chunk/storage.h"
#include "config/logging.h"

using namespace ingot;

namespace {

struct Args {
  int series = 100;
  int points = 100'000;
  int batch = 50;  // points per series per Append batch
  std::vector<std::string> sync = {"none", "interval", "always"};
  std::string dir = "/tmp";
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = s.find(',', pos);
    out.push_back(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--series") a.series = std::atoi(v.c_str());
    else if (k == "--points") a.points = std::atoi(v.c_str());
    else if (k == "--batch") a.batch = std::atoi(v.c_str());
    else if (k == "--sync") a.sync = Split(v);
    else if (k == "--dir") a.dir = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

// The random walk of one series: deterministic per series so the read-back can regenerate it.
class Walk {
 public:
  explicit Walk(int series) : rng_(static_cast<std::uint64_t>(series) * 7919 + 1) {}
  double Next() {
    cents_ += static_cast<std::int64_t>(rng_() % 201) - 100;
    return static_cast<double>(cents_) / 100.0;
  }

 private:
  std::mt19937_64 rng_;
  std::int64_t cents_ = 10'000;
};

constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;
constexpr std::int64_t kStepNs = 10'000'000'000;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::uint64_t DirBytes(const std::string& dir) {
  std::uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  }
  return n;
}

void Fail(const Status& st) {
  std::fprintf(stderr, "storage-bench: %s\n", st.ToString().c_str());
  std::exit(1);
}

void RunCase(const Args& a, const std::string& sync) {
  std::string tmpl = a.dir + "/storage-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) Fail(Status::IOError("mkdtemp " + tmpl));
  StorageOptions options;
  options.data_dir = tmpl;
  options.wal_sync = sync;
  options.block_cache_bytes = 64 << 20;
  std::unique_ptr<Storage> storage;
  Status st = Storage::Open(options, 1, SystemClock::Instance(), &storage);
  if (!st.ok()) Fail(st);

  std::vector<SeriesId> sids(static_cast<std::size_t>(a.series));
  for (int s = 0; s < a.series; ++s) {
    std::string key;
    const std::string host = "host" + std::to_string(s);
    const TagView tags[] = {{"host", host}};
    BuildSeriesKey("bench", tags, "value", &key);
    ValueType stored;
    st = storage->index().Resolve(key, ValueType::kFloat, &sids[static_cast<std::size_t>(s)],
                                  &stored);
    if (!st.ok()) Fail(st);
  }

  // Batches are generated outside the timed region.
  std::vector<Walk> walks;
  for (int s = 0; s < a.series; ++s) walks.emplace_back(s);
  const int batches = (a.points + a.batch - 1) / a.batch;
  std::vector<std::vector<PointRecord>> all(static_cast<std::size_t>(batches));
  for (int b = 0; b < batches; ++b) {
    auto& batch = all[static_cast<std::size_t>(b)];
    const int first = b * a.batch;
    const int last = std::min(a.points, first + a.batch);
    batch.reserve(static_cast<std::size_t>((last - first) * a.series));
    for (int s = 0; s < a.series; ++s) {
      for (int i = first; i < last; ++i) {
        batch.push_back({sids[static_cast<std::size_t>(s)], kStartNs + i * kStepNs,
                         std::bit_cast<std::uint64_t>(walks[static_cast<std::size_t>(s)].Next()),
                         ValueType::kFloat});
      }
    }
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t accepted = 0, chunks = 0;
  for (const auto& batch : all) {
    AppendResult r;
    st = storage->shard(0).Append(batch, &r);
    if (!st.ok()) Fail(st);
    accepted += r.accepted;
    chunks += r.chunks_sealed;
  }
  const double append_s = Seconds(std::chrono::steady_clock::now() - t0);
  all.clear();
  all.shrink_to_fit();

  // Settle RocksDB so the on-disk size is the steady state (memtables flushed, L0 compacted).
  st = storage->chunks().CompactChunks();
  if (!st.ok()) Fail(st);
  std::uint64_t chunk_sst = 0;
  storage->chunks().db()->GetIntProperty(storage->chunks().chunks_cf(),
                                         rocksdb::DB::Properties::kTotalSstFilesSize, &chunk_sst);
  const std::uint64_t sealed_values = chunks * kChunkCapacity;

  auto ws = std::make_unique<codec::Workspace>();
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  std::uint64_t read_points = 0;
  const auto t1 = std::chrono::steady_clock::now();
  for (SeriesId sid : sids) {
    st = storage->ReadSeries(sid, kStartNs, INT64_MAX, &ts, &values, nullptr, *ws);
    if (!st.ok()) Fail(st);
    read_points += ts.size();
  }
  const double read_s = Seconds(std::chrono::steady_clock::now() - t1);

  // Verify outside the timed region: every point, bit for bit.
  bool ok = read_points == accepted;
  for (int s = 0; s < a.series && ok; ++s) {
    st = storage->ReadSeries(sids[static_cast<std::size_t>(s)], kStartNs, INT64_MAX, &ts, &values,
                             nullptr, *ws);
    Walk w(s);
    ok = st.ok() && ts.size() == static_cast<std::size_t>(a.points);
    for (int i = 0; ok && i < a.points; ++i) {
      ok = ts[static_cast<std::size_t>(i)] == kStartNs + i * kStepNs &&
           std::bit_cast<std::uint64_t>(values[static_cast<std::size_t>(i)]) ==
               std::bit_cast<std::uint64_t>(w.Next());
    }
  }
  st = storage->Close();
  if (!st.ok()) Fail(st);
  const std::uint64_t dir_bytes = DirBytes(tmpl);
  std::filesystem::remove_all(tmpl);

  std::printf("%-9s %7d %9d %9llu %10.2f %8.1f %12.2f %12.2f %10.2f %s\n", sync.c_str(), a.series,
              a.points, static_cast<unsigned long long>(chunks), accepted / append_s / 1e6,
              append_s * 1e9 / static_cast<double>(accepted),
              sealed_values ? static_cast<double>(chunk_sst) / static_cast<double>(sealed_values)
                            : 0.0,
              static_cast<double>(dir_bytes) / static_cast<double>(accepted),
              read_points / read_s / 1e6, ok ? "ok" : "MISMATCH");
  if (!ok) std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = Parse(argc, argv);
  Logger("storage")->set_level(spdlog::level::warn);
  std::printf("# storage-bench: %d series x %d points, random walk 2 decimals, %d points/series/batch,"
              " 1 shard\n",
              a.series, a.points, a.batch);
  std::printf("%-9s %7s %9s %9s %10s %8s %12s %12s %10s %s\n", "wal_sync", "series", "points",
              "chunks", "append_M/s", "ns/pt", "B/val_chunks", "B/val_datadir", "read_M/s",
              "verify");
  for (const std::string& sync : a.sync) RunCase(a, sync);
  return 0;
}
