#include "chunk/wal.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chunk/wal_format.h"
#include "tests/chunk/test_util.h"

namespace ingot {
namespace {

using Payloads = std::vector<std::vector<std::uint8_t>>;

Payloads MakePayloads(int n) {
  Payloads p;
  for (int i = 0; i < n; ++i) {
    std::vector<std::uint8_t> rec(static_cast<std::size_t>(10 + i * 7));
    for (std::size_t j = 0; j < rec.size(); ++j) rec[j] = static_cast<std::uint8_t>(i * 31 + j);
    p.push_back(rec);
  }
  return p;
}

std::string WriteSegment(const std::string& dir, const Payloads& payloads,
                         std::vector<std::size_t>* record_offsets = nullptr) {
  std::unique_ptr<Wal> wal;
  EXPECT_TRUE(Wal::Open(dir, WalSyncPolicy::kAlways, 1, &wal).ok());
  std::size_t offset = kWalFileHeaderBytes;
  for (const auto& p : payloads) {
    if (record_offsets != nullptr) record_offsets->push_back(offset);
    EXPECT_TRUE(wal->Append(p).ok());
    offset += kWalRecordHeaderBytes + p.size();
  }
  EXPECT_TRUE(wal->Close().ok());
  std::vector<WalSegment> segs;
  EXPECT_TRUE(ListWalSegments(dir, &segs).ok());
  EXPECT_EQ(segs.size(), 1u);
  return segs.at(0).path;
}

Payloads ReadAll(const std::string& path, WalReadStats* stats) {
  Payloads out;
  EXPECT_TRUE(ReadWalSegment(
                  path,
                  [&](std::span<const std::uint8_t> p) {
                    out.emplace_back(p.begin(), p.end());
                    return Status::OK();
                  },
                  stats)
                  .ok());
  return out;
}

void FlipByte(const std::string& path, std::size_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

TEST(WalTest, RoundTripsRecordsInOrder) {
  testing::TempDir dir;
  const Payloads payloads = MakePayloads(20);
  const std::string path = WriteSegment(dir.path(), payloads);
  WalReadStats stats;
  EXPECT_EQ(ReadAll(path, &stats), payloads);
  EXPECT_EQ(stats.records, 20u);
  EXPECT_EQ(stats.corrupt_records, 0u);
  EXPECT_EQ(stats.torn_tail_bytes, 0u);
}

TEST(WalTest, TornTailAtEveryOffsetKeepsEarlierRecords) {
  testing::TempDir dir;
  const Payloads payloads = MakePayloads(5);
  std::vector<std::size_t> offsets;
  const std::string path = WriteSegment(dir.path(), payloads, &offsets);
  const auto full = std::filesystem::file_size(path);
  const std::string copy = dir.path() + "/copy.wal";
  for (std::size_t len = offsets.back(); len < full; ++len) {
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    ASSERT_EQ(::truncate(copy.c_str(), static_cast<off_t>(len)), 0);
    WalReadStats stats;
    const Payloads got = ReadAll(copy, &stats);
    EXPECT_EQ(got, Payloads(payloads.begin(), payloads.end() - 1)) << len;
    EXPECT_EQ(stats.corrupt_records, 0u);
    EXPECT_EQ(stats.torn_tail_bytes, len - offsets.back());
  }
}

TEST(WalTest, CorruptMiddleRecordIsSkippedAndNeighboursKept) {
  // Corrupt the payload, the checksum, the length and the magic of record 2 in turn.
  for (std::size_t field_offset : {20u, 9u, 5u, 0u}) {
    testing::TempDir dir;
    const Payloads payloads = MakePayloads(5);
    std::vector<std::size_t> offsets;
    const std::string path = WriteSegment(dir.path(), payloads, &offsets);
    FlipByte(path, offsets[2] + field_offset);
    WalReadStats stats;
    const Payloads got = ReadAll(path, &stats);
    Payloads expected = payloads;
    expected.erase(expected.begin() + 2);
    EXPECT_EQ(got, expected) << field_offset;
    EXPECT_EQ(stats.corrupt_records, 1u);
    EXPECT_EQ(stats.skipped_bytes, offsets[3] - offsets[2]);
  }
}

// A damaged file header (any byte of the 8-byte magic, or the version) costs the header only:
// every record validates on its own and is read.
TEST(WalTest, DamagedSegmentHeaderKeepsEveryRecord) {
  for (std::size_t offset = 0; offset < kWalFileHeaderBytes; ++offset) {
    testing::TempDir dir;
    const Payloads payloads = MakePayloads(6);
    const std::string path = WriteSegment(dir.path(), payloads);
    FlipByte(path, offset);
    WalReadStats stats;
    EXPECT_EQ(ReadAll(path, &stats), payloads) << offset;
    EXPECT_EQ(stats.records, 6u);
    EXPECT_LE(stats.corrupt_records, 1u);
  }
}

TEST(WalTest, RollAndDeleteKeepsNewestSegments) {
  testing::TempDir dir;
  std::unique_ptr<Wal> wal;
  ASSERT_TRUE(Wal::Open(dir.path(), WalSyncPolicy::kInterval, 7, &wal).ok());
  const std::vector<std::uint8_t> rec(100, 1);
  ASSERT_TRUE(wal->Append(rec).ok());
  EXPECT_EQ(wal->bytes_since_roll(), kWalRecordHeaderBytes + 100);
  std::uint64_t prev = 0;
  ASSERT_TRUE(wal->Roll(&prev).ok());
  EXPECT_EQ(prev, 7u);
  EXPECT_EQ(wal->bytes_since_roll(), 0u);
  ASSERT_TRUE(wal->Append(rec).ok());
  ASSERT_TRUE(wal->SyncIfDirty().ok());
  std::vector<WalSegment> segs;
  ASSERT_TRUE(ListWalSegments(dir.path(), &segs).ok());
  ASSERT_EQ(segs.size(), 2u);
  ASSERT_TRUE(wal->DeleteSegmentsUpTo(prev).ok());
  ASSERT_TRUE(ListWalSegments(dir.path(), &segs).ok());
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].seq, 8u);
  EXPECT_TRUE(wal->Close().ok());
}

TEST(WalTest, ParsesSyncPolicies) {
  WalSyncPolicy p;
  EXPECT_TRUE(ParseWalSyncPolicy("always", &p).ok());
  EXPECT_EQ(p, WalSyncPolicy::kAlways);
  EXPECT_TRUE(ParseWalSyncPolicy("none", &p).ok());
  EXPECT_EQ(p, WalSyncPolicy::kNone);
  EXPECT_TRUE(ParseWalSyncPolicy("sometimes", &p).IsInvalidArgument());
}

}  // namespace
}  // namespace ingot
