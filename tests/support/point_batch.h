// Test points as the storage layer takes them: (timestamp, value) pairs of one series turned into
// PointRecords, the value's bits as the series' type stores them. Header-only; the test binary
// links ingot_chunk.
#pragma once

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "chunk/shard_engine.h"

namespace ingot::testing {

inline std::vector<PointRecord> PointBatch(SeriesId sid,
                                           const std::vector<std::pair<std::int64_t, double>>& points,
                                           ValueType type) {
  std::vector<PointRecord> batch;
  batch.reserve(points.size());
  for (const auto& [ts, v] : points) {
    const std::uint64_t bits = type == ValueType::kFloat
                                   ? std::bit_cast<std::uint64_t>(v)
                                   : static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
    batch.push_back({sid, ts, bits, type});
  }
  return batch;
}

}  // namespace ingot::testing
