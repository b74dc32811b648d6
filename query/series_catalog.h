// SeriesCatalog: the reader's view of the series index. A stored series (measurement, tags,
// field) is exposed as metric `<measurement>_<field>` with its tags as labels, and selectors are
// resolved to series here.
//
// The catalog mirrors the index: series ids are dense and only ever added, so Refresh() looks up
// the ids created since the last call and appends their parsed description. Metric names are
// grouped (name -> ids) so that a `__name__` matcher is evaluated once per distinct name, not once
// per series; an equality matcher on a tag narrows the candidates through the index's inverted
// lists before the remaining matchers filter them.
//
// Thread safety: thread-safe. Descriptions are never removed or moved: a `const SeriesInfo*`
// stays valid as long as the catalog.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk/series_index.h"
#include "config/status.h"
#include "query/selector.h"

namespace ingot {

struct SeriesInfo {
  SeriesId sid = kInvalidSeriesId;
  std::string name;                                         // <measurement>_<field>
  std::vector<std::pair<std::string, std::string>> labels;  // the tags, sorted by key
  // Pre-rendered forms used by the response writers.
  std::string metric_json;  // {"__name__":"cpu_usage","host":"a"}
  std::string prom_text;    // cpu_usage{host="a"}

  // The value of label `key` ("" when absent); `__name__` is the metric name.
  std::string_view Label(std::string_view key) const;
};

class SeriesCatalog {
 public:
  // `index` must outlive the catalog.
  explicit SeriesCatalog(const SeriesIndex& index) : index_(index) {}

  SeriesCatalog(const SeriesCatalog&) = delete;
  SeriesCatalog& operator=(const SeriesCatalog&) = delete;

  // Picks up series created since the last call.
  Status Refresh();

  // The series matching every matcher of `selector`, sorted by id. Refreshes first. Stops with Busy
  // naming `max_series` when more than that many match.
  Status Match(const Selector& selector, std::size_t max_series,
               std::vector<const SeriesInfo*>* out);

  // Every label name in use, `__name__` included, sorted.
  std::vector<std::string> LabelNames();
  // Every value of label `name` (metric names for `__name__`), sorted.
  std::vector<std::string> LabelValues(std::string_view name);

  std::size_t size() const;

 private:
  const SeriesIndex& index_;
  mutable std::shared_mutex mu_;
  std::deque<SeriesInfo> series_;                // series_[sid - 1]
  std::map<std::string, std::vector<SeriesId>, std::less<>> by_name_;
  std::mutex refresh_mu_;                        // one refresher at a time
};

// Renders `{"__name__":..., labels...}` / `name{k="v",...}` for an arbitrary label set (the
// `__name__` entry, when present, is in `labels` like any other). `labels` sorted by key.
void AppendMetricJson(std::span<const std::pair<std::string, std::string>> labels,
                      std::string* out);
std::string PromText(std::string_view name,
                     std::span<const std::pair<std::string, std::string>> labels);

}  // namespace ingot
