// Helpers shared by the ingest suites: scratch directories, a model of what a test sent, and a
// bit-exact comparison of that model against what a Storage holds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/storage.h"
#include "config/options.h"
#include "tests/support/temp_dir.h"

namespace ingot::ingest::testutil {

using ScratchDir = ::ingot::testing::TempDir;
using ::ingot::testing::TestStorageOptions;

using TagList = std::vector<std::pair<std::string, std::string>>;


// The canonical key of (measurement, tags in any order, field); components unescaped.
std::string SeriesKeyOf(std::string_view measurement, TagList tags, std::string_view field);

// Every point of one series as storage returns it.
struct StoredSeries {
  bool found = false;
  ValueType type = ValueType::kFloat;
  std::vector<std::int64_t> ts;
  std::vector<double> values;
};
StoredSeries ReadAll(Storage& storage, const std::string& canonical_key);

// The shortest decimal text that parses back to exactly `v` (what a careful client sends).
std::string FormatDouble(double v);

// What a test sent: per canonical key, its type and the value per timestamp (a later write to the
// same timestamp replaces, as in storage). Integer and boolean values are held as doubles, the
// form ReadSeries returns them in.
class ExpectedData {
 public:
  void Add(const std::string& key, ValueType type, std::int64_t ts_ns, double value);
  // Adds every point of `other` (later writes replace, as above).
  void Merge(const ExpectedData& other);
  std::size_t series() const { return series_.size(); }
  std::size_t points() const;
  // Every expected series exists with its type and exactly these points (bit-exact values), and
  // `storage` holds no other series.
  ::testing::AssertionResult Matches(Storage& storage) const;
  // The same comparison against what a node's query API returns: the binary stream of
  // `/api/v1/export` (series named `<measurement>_<field>`, tags as labels), exactly, bit for bit.
  ::testing::AssertionResult MatchesExport(std::string_view binary_export) const;

 private:
  struct Series {
    ValueType type;
    std::map<std::int64_t, double> points;
  };
  std::map<std::string, Series> series_;
};

// A gzip stream of `data`.
std::string GzipCompress(std::string_view data);

// Opens a stopped node's data directory and compares it with `expected` (then closes it).
::testing::AssertionResult StoredExactly(const std::string& data_dir,
                                         const ExpectedData& expected);

// The value of one sample in Prometheus text (`name` or `name{labels}` exactly as rendered);
// -1 when absent.
double MetricValue(const std::string& exposition, const std::string& sample);

}  // namespace ingot::ingest::testutil
