#include "chunk/data_check.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <span>
#include <unordered_map>

#include <rocksdb/iterator.h>

#include "chunk/chunk_format.h"
#include "chunk/chunk_store.h"
#include "chunk/data_dir_lock.h"
#include "chunk/series_index.h"
#include "chunk/series_key.h"
#include "chunk/shard_engine.h"
#include "chunk/storage.h"
#include "chunk/wal.h"
#include "codec/workspace.h"

namespace ingot {
namespace {

std::span<const std::uint8_t> AsBytes(rocksdb::Slice s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

class Checker {
 public:
  Checker(ChunkStore& store, DataCheckReport* report) : store_(store), report_(report) {}

  Status Run(const std::string& wal_root) {
    INGOT_RETURN_IF_ERROR(CheckDefinitions());
    // The WAL first: it may hold definitions not yet written to the series family, of series whose
    // chunks are already stored.
    INGOT_RETURN_IF_ERROR(CheckWal(wal_root));
    CheckChunkFamily(store_.chunks_cf(), kChunkKeyBytes, "chunk", &report_->chunks,
                     &report_->bad_chunks);
    CheckChunkFamily(store_.late_cf(), kLateKeyBytes, "late chunk", &report_->late_chunks,
                     &report_->bad_late_chunks);
    CheckHeads();
    return Status::OK();
  }

 private:
  void Problem(std::string line) {
    if (report_->problems.size() < DataCheckReport::kMaxProblems) {
      report_->problems.push_back(std::move(line));
    }
  }

  std::string SeriesName(SeriesId sid) const {
    auto it = keys_.find(sid);
    return it == keys_.end() ? "series id " + std::to_string(sid) + " (no definition)"
                             : "series " + it->second;
  }

  Status CheckDefinitions() {
    std::unique_ptr<rocksdb::Iterator> it(
        store_.db()->NewIterator(rocksdb::ReadOptions(), store_.series_by_id_cf()));
    SeriesKeyParts parts;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const rocksdb::Slice k = it->key();
      const rocksdb::Slice v = it->value();
      if (k.size() != 8 || v.size() < 1 || static_cast<std::uint8_t>(v[0]) >= kValueTypeCount) {
        ++report_->bad_definitions;
        Problem("series definition: malformed entry (key " + std::to_string(k.size()) +
                " bytes, value " + std::to_string(v.size()) + " bytes)");
        continue;
      }
      const SeriesId sid = GetBigEndian64(reinterpret_cast<const std::uint8_t*>(k.data()));
      const std::string_view key(v.data() + 1, v.size() - 1);
      const Status st = ParseSeriesKey(key, &parts);
      if (!st.ok() || sid == kInvalidSeriesId) {
        ++report_->bad_definitions;
        Problem("series definition of id " + std::to_string(sid) + ": " +
                (st.ok() ? std::string("invalid id") : st.ToString()));
        continue;
      }
      ++report_->series;
      keys_.emplace(sid, std::string(key));
    }
    if (!it->status().ok()) {
      // Without the definitions every later line would be an orphan: this is fatal to the check.
      ++report_->unreadable_blocks;
      return FromRocks(it->status(), "read series definitions");
    }
    return Status::OK();
  }

  // Walks a family keyed by big-endian sid first. A block that cannot be read is counted and the
  // walk resumes at the next series, then at growing distances if the same block is hit again.
  void CheckChunkFamily(rocksdb::ColumnFamilyHandle* cf, std::size_t key_bytes, const char* what,
                        std::uint64_t* count, std::uint64_t* bad) {
    std::uint8_t start[kLateKeyBytes] = {};
    std::size_t start_len = 0;
    SeriesId skip = 1;
    for (;;) {
      std::unique_ptr<rocksdb::Iterator> it(store_.db()->NewIterator(rocksdb::ReadOptions(), cf));
      if (start_len == 0) {
        it->SeekToFirst();
      } else {
        it->Seek(rocksdb::Slice(reinterpret_cast<const char*>(start), start_len));
      }
      SeriesId last_sid = start_len == 0 ? 0 : GetBigEndian64(start);
      bool progressed = false;
      for (; it->Valid(); it->Next()) {
        progressed = true;
        const rocksdb::Slice k = it->key();
        if (k.size() != key_bytes) {
          ++*bad;
          Problem(std::string(what) + ": malformed key of " + std::to_string(k.size()) + " bytes");
          continue;
        }
        const SeriesId sid = GetBigEndian64(reinterpret_cast<const std::uint8_t*>(k.data()));
        last_sid = sid;
        ++*count;
        CheckChunk(sid, AsBytes(it->value()), what, bad);
      }
      if (it->status().ok()) return;
      ++report_->unreadable_blocks;
      Problem(std::string("unreadable ") + what + " block after " + SeriesName(last_sid) + ": " +
              it->status().ToString());
      skip = progressed ? 1 : std::min<SeriesId>(skip * 2, SeriesId{1} << 40);
      const SeriesId next = last_sid + skip;
      if (next <= last_sid) return;  // wrapped: nothing after
      PutBigEndian64(next, start);
      start_len = 8;
    }
  }

  void CheckChunk(SeriesId sid, std::span<const std::uint8_t> bytes, const char* what,
                  std::uint64_t* bad) {
    if (!keys_.contains(sid)) {
      ++report_->orphan_chunks;
      Problem(std::string(what) + " of series id " + std::to_string(sid) +
              ": no series definition");
      return;
    }
    ChunkHeader h;
    Status st = ParseChunkHeader(bytes, &h);
    if (st.ok()) {
      st = DecodeChunkRaw(bytes, std::span(ts_).first(h.count), std::span(raw_).first(h.count),
                          *ws_);
    }
    if (!st.ok()) {
      ++*bad;
      Problem(std::string(what) + " of " + SeriesName(sid) + ": " + st.ToString());
      return;
    }
    report_->points += h.count;
  }

  void CheckHeads() {
    std::unique_ptr<rocksdb::Iterator> it = store_.NewHeadIterator();
    for (; it->Valid(); it->Next()) {
      SeriesId sid;
      if (!DecodeHeadKey(it->key(), &sid)) {
        ++report_->bad_heads;
        Problem("checkpointed head: malformed key");
        continue;
      }
      ++report_->heads;
      codec::SeriesHint hint;
      CheckChunk(sid, SplitHeadValue(AsBytes(it->value()), &hint), "checkpointed head",
                 &report_->bad_heads);
    }
    if (!it->status().ok()) {
      ++report_->unreadable_blocks;
      Problem("unreadable checkpointed heads: " + it->status().ToString());
    }
  }

  Status CheckWal(const std::string& wal_root) {
    std::error_code ec;
    if (!std::filesystem::exists(wal_root, ec)) return Status::OK();
    std::vector<std::string> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(wal_root, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("shard-", 0) == 0 && entry.is_directory()) dirs.push_back(entry.path());
    }
    if (ec) return Status::IOError("list '" + wal_root + "': " + ec.message());
    std::sort(dirs.begin(), dirs.end());
    std::vector<PointRecord> records;
    std::vector<WalSegment> segments;
    for (const std::string& dir : dirs) {
      INGOT_RETURN_IF_ERROR(ListWalSegments(dir, &segments));
      for (const WalSegment& seg : segments) {
        ++report_->wal_segments;
        WalReadStats stats;
        std::uint64_t bad_points = 0;
        const Status read = ReadWalSegment(
            seg.path,
            [&](std::span<const std::uint8_t> payload) -> Status {
              std::span<const std::uint8_t> definitions;
              if (!ParseWalPointsPayload(payload, &records, &definitions, &bad_points)) {
                ++report_->wal_bad_payloads;
                Problem("WAL segment '" + seg.path + "': a record of " +
                        std::to_string(payload.size()) + " bytes is not a points record");
                return Status::OK();
              }
              report_->points += records.size();
              const Status defs = SeriesIndex::ForEachDefinition(
                  definitions, [&](SeriesId sid, ValueType, std::string_view key) {
                    SeriesKeyParts parts;
                    const Status st = ParseSeriesKey(key, &parts);
                    if (!st.ok()) {
                      ++report_->wal_bad_definitions;
                      Problem("WAL segment '" + seg.path + "': definition of series id " +
                              std::to_string(sid) + ": " + st.ToString());
                    } else {
                      keys_.emplace(sid, std::string(key));
                    }
                    return Status::OK();
                  });
              if (!defs.ok()) {
                ++report_->wal_bad_definitions;
                Problem("WAL segment '" + seg.path + "': " + defs.ToString());
              }
              return Status::OK();
            },
            &stats);
        if (!read.ok()) {
          ++report_->wal_corrupt_records;
          Problem("WAL segment '" + seg.path + "': " + read.ToString());
          continue;
        }
        report_->wal_records += stats.records;
        report_->wal_torn_tail_bytes += stats.torn_tail_bytes;
        if (stats.corrupt_records > 0) {
          report_->wal_corrupt_records += stats.corrupt_records;
          Problem("WAL segment '" + seg.path + "': " + std::to_string(stats.corrupt_records) +
                  " corrupt region(s), " + std::to_string(stats.skipped_bytes) +
                  " bytes skipped by recovery");
        }
        if (bad_points > 0) {
          report_->wal_bad_payloads += bad_points;
          Problem("WAL segment '" + seg.path + "': " + std::to_string(bad_points) +
                  " points with an invalid series id or type");
        }
      }
    }
    return Status::OK();
  }

  ChunkStore& store_;
  DataCheckReport* report_;
  std::unordered_map<SeriesId, std::string> keys_;
  std::vector<std::int64_t> ts_ = std::vector<std::int64_t>(kMaxChunkPoints);
  std::vector<std::int64_t> raw_ = std::vector<std::int64_t>(kMaxChunkPoints);
  std::unique_ptr<codec::Workspace> ws_ = std::make_unique<codec::Workspace>();
};

}  // namespace

std::string DataCheckReport::ToText() const {
  std::string out;
  auto line = [&out](const char* name, std::uint64_t v) {
    out += name;
    out += ": ";
    out += std::to_string(v);
    out += '\n';
  };
  line("series", series);
  line("series definitions damaged", bad_definitions);
  line("chunks", chunks);
  line("chunks damaged", bad_chunks);
  line("late chunks", late_chunks);
  line("late chunks damaged", bad_late_chunks);
  line("checkpointed heads", heads);
  line("checkpointed heads damaged", bad_heads);
  line("unreadable blocks", unreadable_blocks);
  line("chunks without a series", orphan_chunks);
  line("points readable", points);
  line("WAL segments", wal_segments);
  line("WAL records", wal_records);
  line("WAL corrupt records", wal_corrupt_records);
  line("WAL records not parseable", wal_bad_payloads);
  line("WAL definitions damaged", wal_bad_definitions);
  line("WAL torn tail bytes (an interrupted write, not damage)", wal_torn_tail_bytes);
  out += clean() ? "result: clean\n" : "result: DAMAGED\n";
  for (const std::string& p : problems) {
    out += "damaged: ";
    out += p;
    out += '\n';
  }
  const std::uint64_t total = bad_definitions + bad_chunks + bad_late_chunks + bad_heads +
                              unreadable_blocks + orphan_chunks + wal_corrupt_records +
                              wal_bad_payloads + wal_bad_definitions;
  if (total > problems.size() && problems.size() == kMaxProblems) {
    out += "(only the first " + std::to_string(kMaxProblems) + " problems are listed)\n";
  }
  return out;
}

Status CheckDataDir(const StorageOptions& options, DataCheckReport* report) {
  const std::string db_dir = options.data_dir + "/db";
  std::error_code ec;
  if (!std::filesystem::is_directory(options.data_dir, ec)) {
    return Status::NotFound("no data directory '" + options.data_dir + "'");
  }
  if (!std::filesystem::exists(db_dir + "/CURRENT", ec)) {
    return Status::NotFound("'" + options.data_dir + "' holds no database (" + db_dir + ")");
  }
  std::unique_ptr<DataDirLock> lock;
  INGOT_RETURN_IF_ERROR(DataDirLock::Acquire(options.data_dir, &lock));
  std::unique_ptr<ChunkStore> store;
  INGOT_RETURN_IF_ERROR(ChunkStore::OpenReadOnly(db_dir, options, &store));
  Checker checker(*store, report);
  const Status st = checker.Run(options.data_dir + "/wal");
  const Status closed = store->Close();
  return st.ok() ? closed : st;
}

}  // namespace ingot
