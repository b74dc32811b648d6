// SeriesCatalog: the reader's view of the series index. A stored series (measurement, tags,
// field) is exposed as metric `<measurement>_<field>` with its tags as labels.
//
// The catalog holds no copy of the index: selectors are answered from the index's postings
// (Prometheus' way: intersect the series of the matchers that need a label value, subtract those
// of the matchers that exclude values), and only the matched series are described, from their
// keys, into descriptions the query owns. Memory per series is the index's alone, and a query
// costs memory proportional to what it matches (bounded by query.max_series).
//
// Thread safety: thread-safe (the index is).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk/series_index.h"
#include "chunk/series_key.h"
#include "config/status.h"
#include "query/selector.h"

namespace ingot {

struct SeriesInfo {
  SeriesId sid = kInvalidSeriesId;
  std::string name;                                         // <measurement>_<field>
  std::vector<std::pair<std::string, std::string>> labels;  // the tags, sorted by key
  // The forms the response writers use, rendered when asked (a million matched series should not
  // carry two more copies of their keys each):
  //   {"__name__":"cpu_usage","host":"a"}
  void AppendMetricJson(std::string* out) const;
  //   cpu_usage{host="a"}
  std::string PromText() const;

  // The value of label `key` ("" when absent); `__name__` is the metric name.
  std::string_view Label(std::string_view key) const;
};

// A matched series' description, shared by the parts of one query that use it.
using SeriesRef = std::shared_ptr<const SeriesInfo>;

class SeriesCatalog {
 public:
  // `index` must outlive the catalog.
  explicit SeriesCatalog(const SeriesIndex& index) : index_(index) {}

  SeriesCatalog(const SeriesCatalog&) = delete;
  SeriesCatalog& operator=(const SeriesCatalog&) = delete;

  // The series matching every matcher of `selector`, sorted by id. Busy naming `max_series` when
  // more than that many match (before any is described).
  Status Match(const Selector& selector, std::size_t max_series, std::vector<SeriesRef>* out);
  // As Match, the ids only (sorted): callers that describe the series a block at a time.
  Status MatchIds(const Selector& selector, std::size_t max_series, std::vector<SeriesId>* out);

  // Describes one series; NotFound for an unknown id.
  Status Describe(SeriesId sid, SeriesRef* out) const;
  // The label set of one series, `__name__` included, sorted by name, into `*out` (its storage
  // reused): the query engine's form, without a shared description. `*scratch` is reused too.
  Status LabelsOf(SeriesId sid, SeriesKeyParts* scratch,
                  std::vector<std::pair<std::string, std::string>>* out) const;

  // Every label name in use, `__name__` included, sorted.
  std::vector<std::string> LabelNames();
  // Every value of label `name` (metric names for `__name__`), sorted.
  // Views into the index, valid as long as the index.
  std::vector<std::string_view> LabelValues(std::string_view name);

  std::size_t size() const { return index_.size(); }

 private:
  // Ids of series whose label `m.name` matches `m`, when `m` does not match the empty string;
  // otherwise the ids whose value does NOT match (to subtract). Sorted ascending.
  std::vector<SeriesId> Postings(const LabelMatcher& m, bool* subtract) const;

  const SeriesIndex& index_;
};

// Renders `{"__name__":..., labels...}` / `name{k="v",...}` for an arbitrary label set (the
// `__name__` entry, when present, is in `labels` like any other). `labels` sorted by key.
void AppendMetricJson(std::span<const std::pair<std::string, std::string>> labels,
                      std::string* out);
std::string PromText(std::string_view name,
                     std::span<const std::pair<std::string, std::string>> labels);

}  // namespace ingot
