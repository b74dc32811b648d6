// SeriesReader: the one way to read a series' points over a time range — sealed chunks, the late
// buffer and late chunks, and the unsealed head — used by Storage::ReadSeries, the query engine
// and the export. It reads one series at a time into buffers reused across series, so that a
// query allocates only while its buffers grow.
//
// Read-your-writes: the head of the series is snapshotted first, then only chunk points older
// than the head's first point are taken, so a concurrent seal neither loses nor duplicates a
// point. Late points are read before the chunks (a merge moving late chunks into the chunks
// family between the two reads leaves each point in one of them) and replace chunk points at the
// same time. Chunks decode straight into the reader's arrays.
//
// A caller that can use a chunk's header instead of its points (count_over_time counts from the
// header; the window aggregations need only the values of a chunk that lies inside one window)
// passes a ChunkFilter: chunks it claims are handed to it and left out of ts()/values().
//
// Thread safety: not thread-safe; one reader per request.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "chunk/storage.h"
#include "codec/workspace.h"
#include "config/status.h"

namespace ingot {

struct ChunkFilter {
  // Asked for every readable chunk lying wholly inside the read range and older than the head;
  // true claims it (its points are then not decoded into the reader).
  std::function<bool(const ChunkHeader& header)> claim;
  // Receives each claimed chunk (valid during the call only).
  std::function<Status(const ChunkView& view)> take;
};

class SeriesReader {
 public:
  explicit SeriesReader(Storage& storage);
  // Decodes with the caller's workspace (which must outlive the reader) instead of its own.
  SeriesReader(Storage& storage, codec::Workspace& ws);

  // Points of `sid` with start_ns <= ts <= end_ns, sorted by time, in ts()/values() (valid until
  // the next Read). A corrupt chunk or an unreadable block fails the read with Corruption naming
  // the series (its key) and time range, unless damage is being skipped (below).
  Status Read(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns,
              const ChunkFilter* filter = nullptr);

  // Prepares reads of `sids` over [start_ns, end_ns], in that order (a query's block of series):
  // snapshots their heads, then opens one chunk iterator for all of them (opened after the
  // snapshots, it sees every chunk sealed before each one, so read-your-writes holds as in Read).
  // Each following Read of the next of these series with the same range uses its snapshot and
  // the shared iterator, which moves from one series to the next without a seek when they are
  // stored in that order. Any other Read ends the block and reads alone.
  Status PrepareBlock(std::span<const SeriesId> sids, std::int64_t start_ns, std::int64_t end_ns);

  // From now on, damaged chunks (and the rest of a range behind an unreadable block) are left out
  // of reads and reported in `*sink` instead (nullptr: fail again). The caller owns the sink and
  // turns it into warnings.
  void SkipDamage(std::vector<CorruptChunk>* sink) { damage_ = sink; }
  std::vector<CorruptChunk>* damage_sink() const { return damage_; }

  std::span<const std::int64_t> ts() const { return ts_; }
  std::span<const double> values() const { return values_; }
  codec::Workspace& workspace() { return *ws_; }
  Storage& storage() { return storage_; }

  // Decodes only the values of a chunk (after checking its checksum); `out.size()` must be the
  // chunk's count. Integer and boolean series come back as doubles.
  Status DecodeValues(const ChunkView& view, std::span<double> out);

 private:
  // Adds the series key to a damage report.
  Status Damaged(SeriesId sid, const Status& st) const;

  Storage& storage_;
  std::unique_ptr<codec::Workspace> own_ws_;  // null when the workspace is borrowed
  codec::Workspace* ws_;
  std::vector<CorruptChunk>* damage_ = nullptr;
  // Chunks decode into these right after they grow: leave new elements uninitialized instead of
  // zero-filling 16 bytes per point first.
  template <typename T>
  struct UninitializedAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
      using other = UninitializedAllocator<U>;
    };
    UninitializedAllocator() = default;
    template <typename U>
    UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  };
  std::vector<std::int64_t, UninitializedAllocator<std::int64_t>> ts_;
  std::vector<double, UninitializedAllocator<double>> values_;
  std::vector<std::int64_t> head_ts_;
  std::vector<double> head_values_;
  // The prepared block: its series, range, each head's first timestamp and its points (series
  // i's at [head_offset_[i], head_offset_[i + 1])), and the next series to read.
  std::vector<SeriesId> block_sids_;
  std::int64_t block_start_ = 0;
  std::int64_t block_end_ = 0;
  std::vector<std::int64_t> block_head_first_;
  std::vector<std::uint8_t> block_alone_;  // read alone (may have late data): no snapshot
  std::vector<std::size_t> block_head_offset_;
  std::vector<std::int64_t> block_head_ts_;
  std::vector<double> block_head_values_;
  std::size_t block_next_ = 0;
  ChunkCursor cursor_;
  std::vector<std::int64_t> int_scratch_;
  LateReadBuffers late_;  // late points of the series being read, and the merge's buffers
  std::vector<std::int64_t> late_ts_;
  std::vector<double> late_values_;
};

}  // namespace ingot
