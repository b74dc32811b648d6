#include "chunk/late_merge.h"

#include <algorithm>
#include <bit>

namespace ingot {

double LateValue(ValueType type, std::uint64_t bits) {
  if (type == ValueType::kFloat) return std::bit_cast<double>(bits);
  return static_cast<double>(static_cast<std::int64_t>(bits));
}

void SortAndDedupeLatePoints(std::vector<LatePoint>* points) {
  std::sort(points->begin(), points->end(), [](const LatePoint& a, const LatePoint& b) {
    return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.rank > b.rank;
  });
  // The first of each run of equal timestamps has the highest rank.
  const auto last = std::unique(points->begin(), points->end(),
                                [](const LatePoint& a, const LatePoint& b) {
                                  return a.ts_ns == b.ts_ns;
                                });
  points->erase(last, points->end());
}

void MergeLateInto(std::span<const LatePoint> late, ValueType type, std::vector<std::int64_t>* ts,
                   std::vector<double>* values, std::vector<std::int64_t>* scratch_ts,
                   std::vector<double>* scratch_values) {
  if (late.empty()) return;
  scratch_ts->clear();
  scratch_values->clear();
  scratch_ts->reserve(ts->size() + late.size());
  scratch_values->reserve(ts->size() + late.size());
  std::size_t i = 0, j = 0;
  const std::size_t n = ts->size();
  while (i < n || j < late.size()) {
    if (j == late.size() || (i < n && (*ts)[i] < late[j].ts_ns)) {
      // Copy the run of series points before the next late point at once.
      const std::int64_t bound = j == late.size() ? 0 : late[j].ts_ns;
      std::size_t k = i;
      if (j == late.size()) {
        k = n;
      } else {
        while (k < n && (*ts)[k] < bound) ++k;
      }
      scratch_ts->insert(scratch_ts->end(), ts->begin() + static_cast<std::ptrdiff_t>(i),
                         ts->begin() + static_cast<std::ptrdiff_t>(k));
      scratch_values->insert(scratch_values->end(),
                             values->begin() + static_cast<std::ptrdiff_t>(i),
                             values->begin() + static_cast<std::ptrdiff_t>(k));
      i = k;
      continue;
    }
    if (i < n && (*ts)[i] == late[j].ts_ns) ++i;  // replaced by the late point
    scratch_ts->push_back(late[j].ts_ns);
    scratch_values->push_back(LateValue(type, late[j].bits));
    ++j;
  }
  ts->swap(*scratch_ts);
  values->swap(*scratch_values);
}

}  // namespace ingot
