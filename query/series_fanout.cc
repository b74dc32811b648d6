#include "query/series_fanout.h"

#include <algorithm>
#include <bit>
#include <span>

#include "chunk/series_reader.h"
#include "query/series_catalog.h"

namespace ingot::promql {

std::size_t UnitePoints(FetchedSeries* into, const FetchedSeries& from) {
  if (from.ts.empty()) return 0;
  // Common without replicas: the other node's points all come later (or there are none here).
  if (into->ts.empty() || from.ts.front() > into->ts.back()) {
    into->ts.insert(into->ts.end(), from.ts.begin(), from.ts.end());
    into->values.insert(into->values.end(), from.values.begin(), from.values.end());
    return 0;
  }
  std::vector<std::int64_t> ts;
  std::vector<double> values;
  ts.reserve(into->ts.size() + from.ts.size());
  values.reserve(ts.capacity());
  std::size_t conflicts = 0;
  std::size_t i = 0, j = 0;
  while (i < into->ts.size() && j < from.ts.size()) {
    if (into->ts[i] < from.ts[j]) {
      ts.push_back(into->ts[i]);
      values.push_back(into->values[i++]);
    } else if (from.ts[j] < into->ts[i]) {
      ts.push_back(from.ts[j]);
      values.push_back(from.values[j++]);
    } else {
      if (std::bit_cast<std::uint64_t>(into->values[i]) !=
          std::bit_cast<std::uint64_t>(from.values[j])) {
        ++conflicts;
      }
      ts.push_back(into->ts[i]);
      values.push_back(into->values[i++]);
      ++j;
    }
  }
  ts.insert(ts.end(), into->ts.begin() + static_cast<std::ptrdiff_t>(i), into->ts.end());
  values.insert(values.end(), into->values.begin() + static_cast<std::ptrdiff_t>(i),
                into->values.end());
  ts.insert(ts.end(), from.ts.begin() + static_cast<std::ptrdiff_t>(j), from.ts.end());
  values.insert(values.end(), from.values.begin() + static_cast<std::ptrdiff_t>(j),
                from.values.end());
  into->ts = std::move(ts);
  into->values = std::move(values);
  return conflicts;
}

Status SeriesFanout::SelectSeries(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                                  std::size_t max_series, const SelectContext& context,
                                  std::vector<FetchedSeries>* out,
                                  std::vector<std::string>* warnings) {
  INGOT_RETURN_IF_ERROR(Select(selector, lo_ns, hi_ns, max_series, context, out, warnings));
  for (FetchedSeries& s : *out) {
    std::vector<std::int64_t>().swap(s.ts);
    std::vector<double>().swap(s.values);
  }
  return Status::OK();
}

Status SelectLocal(Storage& storage, const Selector& selector, std::int64_t lo_ns,
                   std::int64_t hi_ns, std::size_t max_series, std::vector<FetchedSeries>* out,
                   bool with_points, const SelectContext& context) {
  out->clear();
  // The engine's words for its own deadline, so that a query times out alike on every node.
  const auto past_deadline = [&context] {
    return std::chrono::steady_clock::now() > context.deadline;
  };
  const auto timed_out = [out] {
    out->clear();
    return Status::Busy("query timed out: it ran past its deadline (query.timeout)");
  };
  if (past_deadline()) return timed_out();
  SeriesCatalog catalog(storage.index());
  std::vector<SeriesId> sids;
  // Matched first even for an empty range: the limit holds as in the engine's own selectors.
  INGOT_RETURN_IF_ERROR(catalog.MatchIds(selector, max_series, &sids));
  if (sids.empty() || lo_ns > hi_ns) return Status::OK();
  SeriesReader reader(storage);
  if (context.damage != nullptr) reader.SkipDamage(context.damage);
  SeriesKeyParts parts;
  // Without points, a chunk inside the range proves a point there from its header alone.
  bool claimed = false;
  const ChunkFilter presence{[](const ChunkHeader&) { return true; },
                             [&claimed](const ChunkView&) {
                               claimed = true;
                               return Status::OK();
                             }};
  // Series are read a block at a time through one chunk iterator, as the engine reads them.
  constexpr std::size_t kBlock = 64;
  for (std::size_t s = 0; s < sids.size(); ++s) {
    if (past_deadline()) return timed_out();
    if (s % kBlock == 0) {
      INGOT_RETURN_IF_ERROR(reader.PrepareBlock(
          std::span(sids).subspan(s, std::min(kBlock, sids.size() - s)), lo_ns, hi_ns));
    }
    claimed = false;
    INGOT_RETURN_IF_ERROR(reader.Read(sids[s], lo_ns, hi_ns, with_points ? nullptr : &presence));
    if (reader.ts().empty() && !claimed) continue;
    FetchedSeries series;
    const Status st = catalog.LabelsOf(sids[s], &parts, &series.labels);
    if (st.IsNotFound()) continue;  // gone since it matched (retention)
    INGOT_RETURN_IF_ERROR(st);
    if (with_points) {
      series.ts.assign(reader.ts().begin(), reader.ts().end());
      series.values.assign(reader.values().begin(), reader.values().end());
    }
    out->push_back(std::move(series));
  }
  // Two stored series can show the same labels (measurement "a_b" with field "c", and "a" with
  // field "b_c"): like replicas, they become one series. Stable, so the lower id's value wins a
  // shared timestamp whatever the sort does.
  std::stable_sort(out->begin(), out->end(), [](const FetchedSeries& a, const FetchedSeries& b) {
    return a.labels < b.labels;
  });
  std::size_t kept = 0;
  for (std::size_t s = 0; s < out->size(); ++s) {
    if (kept > 0 && (*out)[kept - 1].labels == (*out)[s].labels) {
      UnitePoints(&(*out)[kept - 1], (*out)[s]);
      continue;
    }
    if (kept != s) (*out)[kept] = std::move((*out)[s]);
    ++kept;
  }
  out->resize(kept);
  return Status::OK();
}

}  // namespace ingot::promql
