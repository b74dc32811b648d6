// Late points: the merge rules shared by reads and by the late compaction.
//
// A point of a late buffer or a late chunk carries a rank: the late chunk's sequence number, or
// kLateHeadRank for a late buffer (the newest data). Chunks of the `chunks` family rank 0. For one
// timestamp the highest rank wins, which is "the last write wins": late chunks are numbered in
// write order, and a late point is always written after the sealed points it overlaps.
//
// Thread safety: plain functions over the caller's data.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "chunk/chunk_format.h"

namespace ingot {

struct LatePoint {
  std::int64_t ts_ns;
  std::uint64_t rank;
  std::uint64_t bits;  // as stored: double bits for float series, the int64 otherwise
};

inline constexpr std::uint64_t kLateHeadRank = std::numeric_limits<std::uint64_t>::max();

// Sorts by time and keeps, for each timestamp, the point of the highest rank.
void SortAndDedupeLatePoints(std::vector<LatePoint>* points);

// Merges `late` (sorted, one point per timestamp) into the sorted series (ts, values); a late
// point replaces a point at the same timestamp. `scratch_*` are reused buffers.
void MergeLateInto(std::span<const LatePoint> late, ValueType type, std::vector<std::int64_t>* ts,
                   std::vector<double>* values, std::vector<std::int64_t>* scratch_ts,
                   std::vector<double>* scratch_values);

double LateValue(ValueType type, std::uint64_t bits);

}  // namespace ingot
