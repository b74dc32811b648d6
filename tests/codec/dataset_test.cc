// The real data under ../shared/datasets: exact round trips, and ALP no larger than the reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "codec/codec.h"
#include "codec/format.h"
#include "codec_test_util.h"

namespace ingot::codec {
namespace {

namespace fs = std::filesystem;
using testing::DatasetsDir;

#define SKIP_WITHOUT_DATASETS()                                                        \
  if (!fs::is_directory(DatasetsDir())) {                                              \
    GTEST_SKIP() << "datasets not found at " << DatasetsDir()                          \
                 << " (set INGOT_DATASETS_DIR or clone beside ../shared)";              \
  }

struct Reference {
  std::string file;
  int exponent, factor, exceptions, bit_width;
};

std::vector<Reference> ReadExpected() {
  std::vector<Reference> refs;
  std::ifstream in(DatasetsDir() + "/alp-samples/expected.csv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    Reference r;
    std::string name, field;
    std::getline(ss, r.file, ',');
    std::getline(ss, name, ',');
    std::getline(ss, field, ',');
    r.exponent = std::stoi(field);
    std::getline(ss, field, ',');
    r.factor = std::stoi(field);
    std::getline(ss, field, ',');
    r.exceptions = std::stoi(field);
    std::getline(ss, field, ',');
    r.bit_width = std::stoi(field);
    refs.push_back(r);
  }
  return refs;
}

Status RoundTrip(const std::vector<double>& v, SeriesHint& hint, Workspace& ws,
                 EncodeResult* result) {
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(v.size(), 8));
  *result = EncodeDoubles(v, hint, ws, buf);
  std::vector<double> back(v.size());
  INGOT_RETURN_IF_ERROR(DecodeDoubles({buf.data(), result->bytes}, back, ws));
  if (!testing::BitEqual(v, back)) return Status::Corruption("values differ");
  // The float codec must also be exact on the same data narrowed to float.
  std::vector<float> f(v.begin(), v.end());
  std::vector<std::uint8_t> fbuf(MaxEncodedFloatBytes(v.size(), 4));
  SeriesHint fhint;
  const EncodeResult fr = EncodeFloats(f, fhint, ws, fbuf);
  std::vector<float> fback(v.size());
  INGOT_RETURN_IF_ERROR(DecodeFloats({fbuf.data(), fr.bytes}, fback, ws));
  if (!testing::BitEqual(f, fback)) return Status::Corruption("float values differ");
  return Status::OK();
}

TEST(DatasetTest, AlpSamplesRoundTripAndMatchReferenceSize) {
  SKIP_WITHOUT_DATASETS();
  const auto refs = ReadExpected();
  ASSERT_EQ(refs.size(), 21u);
  auto ws = std::make_unique<Workspace>();
  for (const Reference& ref : refs) {
    std::vector<double> v;
    ASSERT_TRUE(testing::ReadCsv(DatasetsDir() + "/alp-samples/" + ref.file, &v)) << ref.file;
    ASSERT_EQ(v.size(), 1024u) << ref.file;
    SeriesHint hint;
    EncodeResult r;
    const Status st = RoundTrip(v, hint, *ws, &r);
    ASSERT_TRUE(st.ok()) << ref.file << ": " << st.ToString();
    // ALP alone, from a cold hint, against bits = width * 1024 + exceptions * (64 + 16) + header.
    SeriesHint cold;
    std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
    const EncodeResult alp = EncodeDoublesAs(FloatEncoding::kAlp, v, cold, *ws, buf);
    const std::size_t reference_bits =
        static_cast<std::size_t>(ref.bit_width) * 1024 + ref.exceptions * 80 + kAlpHeaderBytes * 8;
    EXPECT_LE(alp.bytes * 8, reference_bits)
        << ref.file << ": exponent " << int(cold.exponent[0]) << " factor " << int(cold.factor[0])
        << " vs reference " << ref.exponent << "/" << ref.factor;
    // The adaptive choice is never larger than ALP alone.
    EXPECT_LE(r.bytes, alp.bytes) << ref.file << " chose " << FloatEncodingName(r.encoding);
  }
}

TEST(DatasetTest, RowGroupsRoundTripAsOneSeries) {
  SKIP_WITHOUT_DATASETS();
  auto ws = std::make_unique<Workspace>();
  for (const char* name : {"city_temperature_f_tw.bin", "food_prices_tw.bin", "nyc29_tw.bin"}) {
    std::vector<double> v;
    ASSERT_TRUE(testing::ReadBin(DatasetsDir() + "/alp-rowgroups/" + name, &v)) << name;
    ASSERT_EQ(v.size(), 131072u);
    SeriesHint hint;
    std::size_t total = 0;
    for (std::size_t b = 0; b < v.size(); b += 1024) {
      std::vector<double> block(v.begin() + b, v.begin() + b + 1024);
      EncodeResult r;
      const Status st = RoundTrip(block, hint, *ws, &r);
      ASSERT_TRUE(st.ok()) << name << " block " << b / 1024 << ": " << st.ToString();
      total += r.bytes;
    }
    EXPECT_LT(total * 8.0 / v.size(), 64.0) << name;
  }
}

// The compact encoding (background rewrites) round-trips every block of the real data bit for
// bit, is never bigger than the ingest-time choice, and is smaller over each row group: the ALP
// integers of real data are unevenly distributed, which only the entropy stage exploits, and
// values recur, which the dictionary exploits.
TEST(DatasetTest, CompactEncodingIsSmallerOnRealDataAndExact) {
  SKIP_WITHOUT_DATASETS();
  auto ws = std::make_unique<Workspace>();
  for (const char* name : {"city_temperature_f_tw.bin", "food_prices_tw.bin", "nyc29_tw.bin"}) {
    std::vector<double> v;
    ASSERT_TRUE(testing::ReadBin(DatasetsDir() + "/alp-rowgroups/" + name, &v)) << name;
    SeriesHint ingest_hint, compact_hint;
    std::size_t ingest_total = 0, compact_total = 0, entropy_blocks = 0, dictionary_blocks = 0;
    std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(1024, 8));
    std::vector<double> back(1024);
    for (std::size_t b = 0; b < v.size(); b += 1024) {
      const std::span<const double> block(v.data() + b, 1024);
      const EncodeResult ingest = EncodeDoubles(block, ingest_hint, *ws, buf);
      ingest_total += ingest.bytes;
      const EncodeResult compact = EncodeDoublesCompact(block, compact_hint, *ws, buf);
      compact_total += compact.bytes;
      entropy_blocks += compact.encoding == FloatEncoding::kAlpZstd ||
                        compact.encoding == FloatEncoding::kAlpRanked ||
                        compact.encoding == FloatEncoding::kAlpRice;
      if (compact.encoding == FloatEncoding::kDictionary) ++dictionary_blocks;
      // Exact-size copy: ASan sees any over-read.
      std::vector<std::uint8_t> exact(buf.begin(), buf.begin() + compact.bytes);
      const Status st = DecodeDoubles(exact, back, *ws);
      ASSERT_TRUE(st.ok()) << name << " block " << b / 1024 << ": " << st.ToString();
      ASSERT_TRUE(testing::BitEqual(back, std::vector<double>(block.begin(), block.end())))
          << name << " block " << b / 1024;
    }
    EXPECT_GT(entropy_blocks, 0u) << name;
    // nyc29's coordinates recur within a block: most of its blocks are dictionaries.
    if (std::string(name) == "nyc29_tw.bin") {
      EXPECT_GT(dictionary_blocks, 64u);
    }
    EXPECT_LT(compact_total, ingest_total) << name;
  }
}

TEST(DatasetTest, EdgeCasesRoundTrip) {
  SKIP_WITHOUT_DATASETS();
  std::vector<double> v;
  ASSERT_TRUE(testing::ReadCsv(DatasetsDir() + "/edge_case.csv", &v));
  ASSERT_FALSE(v.empty());
  auto ws = std::make_unique<Workspace>();
  SeriesHint hint;
  for (std::size_t b = 0; b < v.size(); b += 1024) {
    std::vector<double> block(v.begin() + b, v.begin() + std::min(v.size(), b + 1024));
    EncodeResult r;
    const Status st = RoundTrip(block, hint, *ws, &r);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
}

}  // namespace
}  // namespace ingot::codec
