// LateCompactor: merges late chunks back into the chunks family.
//
// For one series it takes a window of late chunks (in time order, closed under overlap: every late
// chunk overlapping the window is in it, whatever its sequence) together with every chunk of the
// chunks family overlapping the window, merges their points by the rules of late_merge.h (the
// highest rank wins per timestamp), and replaces them in one atomic WriteBatch with
// non-overlapping chunks of at most 1024 points, split evenly (n points make ceil(n / 1024) chunks
// of equal size, so a merge never leaves a sliver chunk behind). Late chunks written meanwhile are
// not touched: they carry higher sequences and keep winning over the merged chunks.
//
// Readers read late data before the chunks family, so a merge that lands between their two reads
// leaves every point in one of them (see Storage::ReadLate).
//
// Work is bounded: Run() stops after about `max_points` merged points, resuming at the next
// series on the next call (a cursor over the late family); a series' window is cut where its late
// chunks stop overlapping once the budget is spent. Memory is the window's points.
//
// A corrupt chunk in a window stops that series' merge (counted and logged); its late chunks stay
// and reads report the corruption as for any chunk.
//
// Thread safety: not thread-safe; Storage's background thread owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chunk/chunk_store.h"
#include "chunk/late_merge.h"
#include "chunk/late_set.h"
#include "codec/workspace.h"
#include "config/status.h"

namespace ingot {

class ShardEngine;

struct LateCompactionStats {
  std::uint64_t series = 0;          // series merged (one or more windows)
  std::uint64_t chunks_read = 0;     // late and sealed chunks read
  std::uint64_t bytes_read = 0;
  std::uint64_t chunks_written = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t points_written = 0;
  std::uint64_t errors = 0;
};

class LateCompactor {
 public:
  // `store`, `late` and the engines `shard_of` returns must outlive the compactor.
  LateCompactor(ChunkStore& store, LateSet& late,
                std::function<ShardEngine&(SeriesId)> shard_of);
  ~LateCompactor();

  // Merges until about `max_points` points were written or the cursor passed the last late chunk
  // (then `*done` is true and the next call starts over). `stats` accumulates.
  Status Run(std::uint64_t max_points, LateCompactionStats* stats, bool* done);

 private:
  struct Entry {
    std::string key;
    std::int64_t first_ts_ns;
    std::int64_t max_ts_ns;
    std::uint64_t rank;  // the late chunk's sequence; 0 for the chunks family
  };

  // Lists the late chunks of `sid` and merges windows of them, oldest first, until about `budget`
  // points were written; `*more` when late chunks of the series remain.
  Status CompactSeries(SeriesId sid, std::uint64_t budget, LateCompactionStats* stats,
                       bool* more);
  // The window starting at late_entries_[begin]: late entries [begin, *end) and, in
  // main_entries_, the sealed chunks overlapping them.
  Status FindWindow(SeriesId sid, std::size_t begin, std::size_t* end);
  Status MergeWindow(SeriesId sid, std::size_t begin, std::size_t end, LateCompactionStats* stats,
                     std::uint64_t* written);
  Status ReadPoints(rocksdb::ColumnFamilyHandle* cf, const Entry& e, ValueType* type,
                    LateCompactionStats* stats);

  ChunkStore& store_;
  [[maybe_unused]] LateSet& late_;  // unused so far (clang: -Wunused-private-field)
  std::function<ShardEngine&(SeriesId)> shard_of_;
  std::string cursor_;  // the late key to resume from; empty = from the start
  std::unique_ptr<codec::Workspace> ws_;
  std::vector<Entry> late_entries_, main_entries_;
  std::vector<LatePoint> points_;
  std::vector<std::int64_t> ts_, raw_;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint8_t> out_;
};

}  // namespace ingot
