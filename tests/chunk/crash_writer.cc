// Test helper process: writes the crash workload through Storage and prints "ack <batch>" after
// every batch whose Append calls all returned OK. The test kills it with SIGKILL at random moments.
//
//   chunk_crash_writer <data_dir> <shards> <wal_sync> <seed> <first_batch> <batches> <end>
//     [wal_max_bytes]
// <end>: "close" (clean shutdown), "abandon" (_exit without shutdown), "hang" (sleep until killed).
// Series are created as ingest creates them (definitions logged with their points), including one
// new series per batch. Every 64 batches the late chunks are merged (Storage::CompactLate).
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chunk/storage.h"
#include "tests/chunk/crash_workload.h"

using namespace ingot;

namespace {
[[noreturn]] void Die(const Status& st) {
  std::fprintf(stderr, "crash_writer: %s\n", st.ToString().c_str());
  std::_Exit(2);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s dir shards sync seed first batches end [wal_max]\n", argv[0]);
    return 2;
  }
  StorageOptions options;
  options.data_dir = argv[1];
  const int shards = std::atoi(argv[2]);
  options.wal_sync = argv[3];
  const std::uint64_t seed = std::strtoull(argv[4], nullptr, 10);
  const std::int64_t first = std::atoll(argv[5]);
  const std::int64_t batches = std::atoll(argv[6]);
  const std::string end = argv[7];
  if (argc > 8) options.wal_max_bytes = std::strtoull(argv[8], nullptr, 10);
  options.block_cache_bytes = 8 << 20;

  std::unique_ptr<Storage> storage;
  Status st = Storage::Open(options, shards, SystemClock::Instance(), &storage);
  if (!st.ok()) Die(st);

  // As ingest does: a pending series' definition goes into the WAL record with its points.
  SeriesIndex& index = storage->index();
  std::vector<std::vector<std::uint8_t>> defs(static_cast<std::size_t>(shards));
  auto resolve = [&](const std::string& key, ValueType type) {
    ResolvedSeries r;
    Status rs = index.Resolve(key, type, &r);
    if (!rs.ok()) Die(rs);
    if (r.definition_pending) {
      index.AppendDefinition(r.sid, &defs[static_cast<std::size_t>(storage->ShardOf(r.sid))]);
    }
    return r.sid;
  };
  SeriesId sids[testing::kCrashSeries + 1];
  for (int s = 0; s <= testing::kCrashSeries; ++s) {
    const ValueType type = s == testing::kCrashSeries ? ValueType::kInteger : ValueType::kFloat;
    sids[s] = resolve(testing::WorkloadKey(s), type);
  }
  std::vector<testing::WorkloadPoint> points;
  std::vector<std::vector<PointRecord>> per_shard(static_cast<std::size_t>(shards));
  for (std::int64_t b = first; b < first + batches; ++b) {
    testing::WorkloadBatch(seed, b, &points);
    for (auto& v : per_shard) v.clear();
    const SeriesId churn = resolve(testing::ChurnKey(b), ValueType::kFloat);
    per_shard[static_cast<std::size_t>(storage->ShardOf(churn))].push_back(
        PointRecord{churn, testing::ChurnTs(b), std::bit_cast<std::uint64_t>(testing::ChurnValue(b)),
                    ValueType::kFloat});
    for (const auto& p : points) {
      PointRecord r;
      r.sid = sids[p.series];
      r.ts_ns = p.ts_ns;
      if (p.series == testing::kCrashSeries) {
        r.type = ValueType::kInteger;
        r.bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(p.value));
      } else {
        r.type = ValueType::kFloat;
        r.bits = std::bit_cast<std::uint64_t>(p.value);
      }
      per_shard[static_cast<std::size_t>(storage->ShardOf(r.sid))].push_back(r);
    }
    for (int i = 0; i < shards; ++i) {
      AppendResult result;
      st = storage->shard(i).Append(per_shard[static_cast<std::size_t>(i)],
                                    defs[static_cast<std::size_t>(i)], &result);
      if (!st.ok()) Die(st);
      defs[static_cast<std::size_t>(i)].clear();
    }
    // Late chunks are merged back while the writer runs, so kills land inside merges too.
    if (b % 64 == 63) {
      st = storage->CompactLate();
      if (!st.ok()) Die(st);
    }
    char line[48];
    const int n = std::snprintf(line, sizeof line, "ack %lld\n", static_cast<long long>(b));
    if (::write(1, line, static_cast<std::size_t>(n)) != n) std::_Exit(3);
  }
  if (end == "abandon") std::_Exit(0);
  if (end == "hang") {
    for (;;) ::pause();
  }
  st = storage->Close();
  if (!st.ok()) Die(st);
  return 0;
}
