// ChunkGrouper: joins each series' consecutive sealed chunks into group chunks.
//
// Ingest seals a series' points in chunks of 1024, each with its own RocksDB key and 40-byte
// header; on real data those cost 4-7% of the bytes on disk. A group (chunk_format.h) holds up to
// kMaxChunkBlocks of those blocks behind one key and one header, their value blocks copied as
// they are, and timestamps regular for the whole group when they are at one interval. Readers see
// a chunk of up to kMaxChunkPoints points; nothing else changes.
//
// A run is a series' consecutive single-block chunks; it is written as a group once it is full:
// kMaxChunkBlocks chunks, kMaxChunkPoints points, or the next chunk would not fit. The newest
// chunks of a series (a run not yet full) stay as they are until more are sealed. Each group
// replaces its run in one atomic WriteBatch (the group under the first chunk's key, the others
// deleted), so readers see either the run or the group.
//
// Work is bounded: Run() scans at most `max_chunks` chunks and resumes where it stopped on the
// next call (a cursor over the chunks family). A run with a chunk that fails validation is left
// as it is, and an unreadable table block is stepped over (both counted and logged, rate-limited;
// reads report the damage as for any chunk).
//
// Thread safety: not thread-safe. Storage runs it under the lock that also serializes the late
// merge (LateCompactor), the only other writer that replaces existing chunks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/series_key.h"
#include "codec/workspace.h"
#include "config/logging.h"
#include "config/status.h"

namespace ingot {

struct ChunkGroupStats {
  std::uint64_t chunks_scanned = 0;
  std::uint64_t groups_written = 0;
  std::uint64_t chunks_grouped = 0;  // chunks the groups replaced
  std::uint64_t bytes_saved = 0;     // their bytes minus the groups' bytes
  std::uint64_t errors = 0;          // runs left ungrouped (a chunk failed validation)
};

class ChunkGrouper {
 public:
  // `store` must outlive the grouper.
  explicit ChunkGrouper(ChunkStore& store);
  ~ChunkGrouper();
  ChunkGrouper(const ChunkGrouper&) = delete;
  ChunkGrouper& operator=(const ChunkGrouper&) = delete;

  // Scans at most `max_chunks` chunks from where the last call stopped and writes every run it
  // completes; `*done` when the scan reached the end of the family (the next call starts over).
  // `stats` accumulates. Fails only when a RocksDB write does.
  Status Run(std::uint64_t max_chunks, ChunkGroupStats* stats, bool* done);
  // The next Run() starts from the beginning of the family.
  void Rewind() { cursor_.clear(); }

 private:
  // Writes the run as one group, when it has two chunks or more; then clears it.
  Status FlushRun(ChunkGroupStats* stats);

  ChunkStore& store_;
  std::unique_ptr<codec::Workspace> ws_;
  std::string cursor_;  // the chunk key to resume from; empty = from the start
  SeriesId skip_ = 1;   // series stepped over after an unreadable block (doubles if hit again)
  SeriesId run_sid_ = 0;
  std::size_t run_points_ = 0;
  std::vector<std::string> run_keys_, run_values_;
  std::string group_;
  RateLimiter log_limit_{5};
};

}  // namespace ingot
