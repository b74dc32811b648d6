#include "tests/ingest/ingest_test_util.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>
#include <zlib.h>

#include "chunk/series_key.h"
#include "query/binary_export.h"

namespace ingot::ingest::testutil {



std::string SeriesKeyOf(std::string_view measurement, TagList tags, std::string_view field) {
  std::sort(tags.begin(), tags.end());
  std::vector<TagView> views;
  for (const auto& [k, v] : tags) views.emplace_back(k, v);
  std::string key;
  BuildSeriesKey(measurement, views, field, &key);
  return key;
}

StoredSeries ReadAll(Storage& storage, const std::string& canonical_key) {
  StoredSeries out;
  ValueType type = ValueType::kFloat;
  const SeriesId sid = storage.index().Find(canonical_key, &type);
  if (sid == kInvalidSeriesId) return out;
  out.found = true;
  out.type = type;
  const Status st = storage.ReadSeries(sid, std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max(), &out.ts,
                                       &out.values);
  EXPECT_TRUE(st.ok()) << canonical_key << ": " << st.ToString();
  return out;
}

std::string FormatDouble(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void ExpectedData::Add(const std::string& key, ValueType type, std::int64_t ts_ns, double value) {
  auto [it, inserted] = series_.try_emplace(key, Series{type, {}});
  it->second.points[ts_ns] = value;
}

void ExpectedData::Merge(const ExpectedData& other) {
  for (const auto& [key, s] : other.series_) {
    for (const auto& [ts, value] : s.points) Add(key, s.type, ts, value);
  }
}

std::size_t ExpectedData::points() const {
  std::size_t n = 0;
  for (const auto& [key, s] : series_) n += s.points.size();
  return n;
}

::testing::AssertionResult ExpectedData::Matches(Storage& storage) const {
  for (const auto& [key, expected] : series_) {
    const StoredSeries stored = ReadAll(storage, key);
    if (!stored.found) return ::testing::AssertionFailure() << "series '" << key << "' is missing";
    if (stored.type != expected.type) {
      return ::testing::AssertionFailure()
             << "series '" << key << "' has type " << ValueTypeName(stored.type) << ", expected "
             << ValueTypeName(expected.type);
    }
    if (stored.ts.size() != expected.points.size()) {
      return ::testing::AssertionFailure() << "series '" << key << "' holds " << stored.ts.size()
                                           << " points, expected " << expected.points.size();
    }
    std::size_t i = 0;
    for (const auto& [ts, value] : expected.points) {
      if (stored.ts[i] != ts ||
          std::bit_cast<std::uint64_t>(stored.values[i]) != std::bit_cast<std::uint64_t>(value)) {
        return ::testing::AssertionFailure()
               << "series '" << key << "' point " << i << ": stored (" << stored.ts[i] << ", "
               << FormatDouble(stored.values[i]) << "), expected (" << ts << ", "
               << FormatDouble(value) << ")";
      }
      ++i;
    }
  }
  if (storage.index().size() != series_.size()) {
    return ::testing::AssertionFailure() << "storage holds " << storage.index().size()
                                         << " series, expected " << series_.size();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ExpectedData::MatchesExport(std::string_view binary_export) const {
  std::vector<ExportedSeries> exported;
  const Status st = ParseBinaryExport(binary_export, &exported);
  if (!st.ok()) return ::testing::AssertionFailure() << "export stream: " << st.ToString();
  // Labels as a map: compared independently of the order the server writes them in.
  std::map<std::map<std::string, std::string>, const ExportedSeries*> by_labels;
  for (const ExportedSeries& e : exported) {
    const nlohmann::json metric = nlohmann::json::parse(e.metric_json, nullptr, false);
    if (!metric.is_object()) return ::testing::AssertionFailure() << "metric: " << e.metric_json;
    by_labels[metric.get<std::map<std::string, std::string>>()] = &e;
  }
  if (exported.size() != series_.size()) {
    return ::testing::AssertionFailure() << "export holds " << exported.size()
                                         << " series, expected " << series_.size();
  }
  for (const auto& [key, expected] : series_) {
    SeriesKeyParts parts;
    if (!ParseSeriesKey(key, &parts).ok()) return ::testing::AssertionFailure() << key;
    std::map<std::string, std::string> labels(parts.tags.begin(), parts.tags.end());
    labels["__name__"] = parts.name;
    const auto it = by_labels.find(labels);
    if (it == by_labels.end()) {
      return ::testing::AssertionFailure() << "series '" << key << "' missing from the export";
    }
    const ExportedSeries& got = *it->second;
    if (got.ts_ns.size() != expected.points.size()) {
      return ::testing::AssertionFailure() << "series '" << key << "' exported "
                                           << got.ts_ns.size() << " points, expected "
                                           << expected.points.size();
    }
    std::size_t i = 0;
    for (const auto& [ts, value] : expected.points) {
      if (got.ts_ns[i] != ts ||
          std::bit_cast<std::uint64_t>(got.values[i]) != std::bit_cast<std::uint64_t>(value)) {
        return ::testing::AssertionFailure()
               << "series '" << key << "' point " << i << ": exported (" << got.ts_ns[i] << ", "
               << FormatDouble(got.values[i]) << "), expected (" << ts << ", "
               << FormatDouble(value) << ")";
      }
      ++i;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult StoredExactly(const std::string& data_dir,
                                         const ExpectedData& expected) {
  std::unique_ptr<Storage> storage;
  const Status st =
      Storage::Open(TestStorageOptions(data_dir), 1, SystemClock::Instance(), &storage);
  if (!st.ok()) return ::testing::AssertionFailure() << "reopening: " << st.ToString();
  ::testing::AssertionResult result = expected.Matches(*storage);
  const Status closed = storage->Close();
  if (result && !closed.ok()) return ::testing::AssertionFailure() << closed.ToString();
  return result;
}

std::string GzipCompress(std::string_view data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

double MetricValue(const std::string& exposition, const std::string& sample) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > sample.size() && line.compare(0, sample.size(), sample) == 0 &&
        line[sample.size()] == ' ') {
      return std::strtod(line.c_str() + sample.size() + 1, nullptr);
    }
  }
  return -1;
}

}  // namespace ingot::ingest::testutil
