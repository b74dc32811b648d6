// CheckDataDir: the offline verification behind `ingotd --check`.
//
// Reads a stopped node's data directory without changing it and verifies every piece of it: each
// series definition parses, every sealed chunk, late chunk and checkpointed head decodes with its
// checksum (and belongs to a known series), every RocksDB block can be read, and every WAL
// segment's records frame, checksum and parse. Damage is listed with the series key it belongs to;
// the walk goes on past it (an unreadable block costs the rest of that series' range, then the walk
// seeks to the next series).
//
// Thread safety: not thread-safe; one check at a time per directory (it holds the directory's lock,
// so it also refuses a directory a running node holds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/options.h"
#include "config/status.h"

namespace ingot {

struct DataCheckReport {
  std::uint64_t series = 0;
  std::uint64_t bad_definitions = 0;
  std::uint64_t chunks = 0;
  std::uint64_t bad_chunks = 0;
  std::uint64_t late_chunks = 0;
  std::uint64_t bad_late_chunks = 0;
  std::uint64_t heads = 0;
  std::uint64_t bad_heads = 0;
  std::uint64_t unreadable_blocks = 0;
  std::uint64_t orphan_chunks = 0;  // chunks of an id with no definition
  std::uint64_t points = 0;         // in readable chunks, late chunks and heads
  std::uint64_t wal_segments = 0;
  std::uint64_t wal_records = 0;
  std::uint64_t wal_corrupt_records = 0;  // bad framing or checksum, skipped by recovery
  std::uint64_t wal_bad_payloads = 0;     // framed and checksummed, but not a points record
  std::uint64_t wal_bad_definitions = 0;
  std::uint64_t wal_torn_tail_bytes = 0;  // a write cut short by a crash: not damage
  // One line per damaged item, with the series key where there is one (at most kMaxProblems; the
  // counters above have them all).
  std::vector<std::string> problems;
  static constexpr std::size_t kMaxProblems = 1000;

  bool clean() const {
    return bad_definitions == 0 && bad_chunks == 0 && bad_late_chunks == 0 && bad_heads == 0 &&
           unreadable_blocks == 0 && orphan_chunks == 0 && wal_corrupt_records == 0 &&
           wal_bad_payloads == 0 && wal_bad_definitions == 0;
  }
  // A human-readable summary: counts, then the problems.
  std::string ToText() const;
};

// Checks `options.data_dir`. A non-OK status means the check could not run (no data directory, a
// running node holds it, RocksDB cannot open it); damage found is in `*report`.
Status CheckDataDir(const StorageOptions& options, DataCheckReport* report);

}  // namespace ingot
