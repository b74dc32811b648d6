// The body of `/api/v1/status/tsdb`: where the series are, so that a user can find the label that
// exploded.
//
// Prometheus' shape (headStats, seriesCountByMetricName, labelValueCountByLabelName,
// memoryInBytesByLabelName, seriesCountByLabelValuePair) plus VictoriaMetrics' extra fields
// (totalSeries, totalLabelValuePairs, seriesCountByLabelName), so that both peers' tools read it.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "chunk/series_index.h"
#include "config/status.h"

namespace ingot {

inline constexpr std::size_t kTsdbStatusDefaultTopN = 10;
inline constexpr std::size_t kTsdbStatusMaxTopN = 10'000;

// Parses the `limit` (Prometheus) or `topN` (VictoriaMetrics) parameter: an integer in
// [1, kTsdbStatusMaxTopN]. InvalidArgument naming the bound otherwise.
Status ParseTsdbStatusTopN(std::string_view text, std::size_t* top_n);

// The whole success response for `stats`.
std::string TsdbStatusJson(const IndexStats& stats);

}  // namespace ingot
