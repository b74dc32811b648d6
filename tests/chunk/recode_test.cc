// Compactions rewrite sealed float chunks with the compact value encodings (entropy-coded ALP, a
// dictionary of recurring values): the data reads back bit for bit, the chunks family shrinks,
// and storage.compact_chunks = false leaves chunks as they were sealed.
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "chunk/chunk_format.h"
#include "chunk/storage.h"
#include "chunk/storage_metrics.h"
#include "tests/chunk/test_util.h"
#include "tests/support/point_batch.h"

namespace ingot {
namespace {

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Prices: two decimals, a skewed walk with many repeats and a sentinel now and then, the shape
// on which ALP's fixed-width packing leaves the most for an entropy coder.
std::vector<std::pair<std::int64_t, double>> Prices(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::int64_t, double>> pts;
  std::int64_t cents = 5000;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t r = rng() % 100;
    if (r < 50) {
      // unchanged
    } else if (r < 90) {
      cents += static_cast<std::int64_t>(rng() % 21) - 10;
    } else {
      cents += static_cast<std::int64_t>(rng() % 4001) - 2000;
    }
    cents = std::max<std::int64_t>(cents, 1);
    const double v = r == 99 ? -99.0 : static_cast<double>(cents) / 100.0;
    pts.emplace_back(std::int64_t{1'700'000'000} * 1'000'000'000 + i * 10'000'000'000LL, v);
  }
  return pts;
}

// A TSBS-like walk: two decimals, steps uniform over [-1.00, +1.00] (201 values), which ALP packs
// into 8 bits per delta and radix digits into 7.67.
std::vector<std::pair<std::int64_t, double>> Walk(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::int64_t, double>> pts;
  std::int64_t cents = 5000;
  for (int i = 0; i < n; ++i) {
    cents += static_cast<std::int64_t>(rng() % 201) - 100;
    pts.emplace_back(std::int64_t{1'700'000'000} * 1'000'000'000 + i * 10'000'000'000LL,
                     static_cast<double>(cents) / 100.0);
  }
  return pts;
}

// Coordinates with 13 decimals that recur, each held for a few points (a vehicle at a stop): no
// encoding of single values fits them in fewer than ~30 bits, but a block repeats a few hundred.
std::vector<std::pair<std::int64_t, double>> Places(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> places(300);
  for (double& p : places) p = -73.9 - static_cast<double>(rng() % 10'000'000'000ull) * 1e-13;
  std::vector<std::pair<std::int64_t, double>> pts;
  double v = places[0];
  for (int i = 0; i < n; ++i) {
    if (rng() % 3 == 0) v = places[rng() % places.size()];
    pts.emplace_back(std::int64_t{1'700'000'000} * 1'000'000'000 + i * 10'000'000'000LL, v);
  }
  return pts;
}

struct RecodeRun {
  std::uint64_t recoded = 0;
  std::uint64_t bytes_before = 0;
  std::uint64_t bytes_after = 0;
  std::uint64_t dictionary_chunks = 0;
  std::uint64_t radix_chunks = 0;
};

RecodeRun WriteCompactAndCheck(bool compact_chunks) {
  testing::TempDir dir;
  StorageOptions options = testing::TestStorageOptions(dir.path());
  options.compact_chunks = compact_chunks;
  std::unique_ptr<Storage> storage;
  EXPECT_TRUE(Storage::Open(options, 1, SystemClock::Instance(), &storage).ok());
  std::vector<SeriesId> sids;
  std::vector<std::vector<std::pair<std::int64_t, double>>> data;
  for (int s = 0; s < 5; ++s) {
    std::string field = "f";
    field += std::to_string(s);
    std::string key;
    BuildSeriesKey("price", {}, field, &key);
    SeriesId sid;
    ValueType stored;
    EXPECT_TRUE(storage->index().Resolve(key, ValueType::kFloat, &sid, &stored).ok());
    sids.push_back(sid);
    data.push_back(s == 3   ? Places(8 * 1024, 23)
                   : s == 4 ? Walk(8 * 1024, 29)
                            : Prices(8 * 1024, 17 + static_cast<std::uint64_t>(s)));
    EXPECT_TRUE(storage->shard(0)
                    .Append(testing::PointBatch(sid, data.back(), ValueType::kFloat), nullptr)
                    .ok());
  }
  EXPECT_TRUE(storage->Close().ok());
  storage.reset();
  EXPECT_TRUE(Storage::Open(options, 1, SystemClock::Instance(), &storage).ok());
  RecodeRun run;
  run.bytes_before = storage->chunks().ChunkBytesOnDisk();
  const std::uint64_t recoded_before = Metrics().chunks_recoded->Value();
  EXPECT_TRUE(storage->chunks().CompactChunks().ok());
  run.recoded = Metrics().chunks_recoded->Value() - recoded_before;
  run.bytes_after = storage->chunks().ChunkBytesOnDisk();
  {
    std::unique_ptr<rocksdb::Iterator> it(
        storage->chunks().db()->NewIterator(rocksdb::ReadOptions(), storage->chunks().chunks_cf()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ChunkHeader h;
      const auto* p = reinterpret_cast<const std::uint8_t*>(it->value().data());
      if (!ParseChunkHeader({p, it->value().size()}, &h).ok()) continue;
      if (h.value_encoding == static_cast<std::uint8_t>(codec::FloatEncoding::kDictionary)) {
        ++run.dictionary_chunks;
      }
      if (h.value_encoding == static_cast<std::uint8_t>(codec::FloatEncoding::kAlpRadix)) {
        ++run.radix_chunks;
      }
    }
  }
  for (std::size_t s = 0; s < sids.size(); ++s) {
    std::vector<std::int64_t> ts;
    std::vector<double> values;
    EXPECT_TRUE(storage->ReadSeries(sids[s], kMin, kMax, &ts, &values).ok());
    EXPECT_EQ(ts.size(), data[s].size());
    for (std::size_t i = 0; i < std::min(ts.size(), data[s].size()); ++i) {
      EXPECT_EQ(ts[i], data[s][i].first);
      EXPECT_EQ(std::memcmp(&values[i], &data[s][i].second, sizeof(double)), 0)
          << "series " << s << " point " << i;
    }
  }
  EXPECT_TRUE(storage->Close().ok());
  return run;
}

TEST(RecodeTest, CompactionsRewriteFloatChunksSmallerAndExact) {
  const RecodeRun run = WriteCompactAndCheck(/*compact_chunks=*/true);
  EXPECT_GE(run.recoded, 5u * 7);  // every sealed chunk of the five series
  EXPECT_LT(run.bytes_after, run.bytes_before);
  EXPECT_GE(run.dictionary_chunks, 7u);  // the recurring coordinates' chunks
  EXPECT_GE(run.radix_chunks, 7u);       // the walk's chunks
}

TEST(RecodeTest, SwitchedOffLeavesChunksAsSealed) {
  const RecodeRun run = WriteCompactAndCheck(/*compact_chunks=*/false);
  EXPECT_EQ(run.recoded, 0u);
  EXPECT_EQ(run.dictionary_chunks, 0u);
  EXPECT_EQ(run.radix_chunks, 0u);
}

// Series definitions repeat their measurement, tag keys and most tag values from one series to the
// next; their family is compressed with zstd over large blocks. 3,000 TSBS-like definitions (10
// tags, ~150 bytes of key each) take under 22 bytes each on disk (Snappy over 4 KiB blocks took
// 36).
TEST(RecodeTest, SeriesDefinitionsAreStoredCompressed) {
  testing::TempDir dir;
  const StorageOptions options = testing::TestStorageOptions(dir.path());
  std::unique_ptr<Storage> storage;
  ASSERT_TRUE(Storage::Open(options, 1, SystemClock::Instance(), &storage).ok());
  constexpr int kSeries = 3000;
  static const char* const kFields[] = {"usage_user", "usage_system", "usage_idle",
                                        "usage_nice", "usage_iowait", "usage_irq"};
  for (int s = 0; s < kSeries; ++s) {
    const std::string host = "host_" + std::to_string(s / 6);
    const std::string rack = std::to_string(s % 97);
    const std::string service = std::to_string(s % 19);
    const std::vector<TagView> tags = {
        {"arch", "x86"},        {"datacenter", "eu-central-1b"}, {"hostname", host},
        {"os", "Ubuntu16.04LTS"}, {"rack", rack},                {"region", "eu-central-1"},
        {"service", service},   {"service_environment", "test"}, {"service_version", "0"},
        {"team", "NYC"}};
    std::string key;
    BuildSeriesKey("cpu", tags, kFields[s % 6], &key);
    SeriesId sid;
    ValueType stored;
    ASSERT_TRUE(storage->index().Resolve(key, ValueType::kFloat, &sid, &stored).ok());
  }
  ASSERT_TRUE(storage->Close().ok());
  storage.reset();
  ASSERT_TRUE(Storage::Open(options, 1, SystemClock::Instance(), &storage).ok());
  std::uint64_t sst_bytes = 0;
  ASSERT_TRUE(storage->chunks().db()->GetIntProperty(storage->chunks().series_by_id_cf(),
                                                     "rocksdb.total-sst-files-size", &sst_bytes));
  EXPECT_GT(sst_bytes, 0u);
  EXPECT_LT(sst_bytes, 22u * kSeries) << sst_bytes / kSeries << " bytes per series";
  ASSERT_TRUE(storage->Close().ok());
}

}  // namespace
}  // namespace ingot
