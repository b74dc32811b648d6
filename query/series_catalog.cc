#include "query/series_catalog.h"

#include <algorithm>
#include <iterator>

#include "chunk/series_key.h"
#include "query/text_format.h"

namespace ingot {

std::string_view SeriesInfo::Label(std::string_view key) const {
  if (key == kMetricNameLabel) return name;
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return {};
}

void AppendMetricJson(std::span<const std::pair<std::string, std::string>> labels,
                      std::string* out) {
  out->push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(k, out);
    out->push_back(':');
    AppendJsonString(v, out);
  }
  out->push_back('}');
}

std::string PromText(std::string_view name,
                     std::span<const std::pair<std::string, std::string>> labels) {
  std::string out(name);
  out.push_back('{');
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (k == kMetricNameLabel) continue;
    if (!first) out.push_back(',');
    first = false;
    out += k;
    out.push_back('=');
    AppendJsonString(v, &out);
  }
  out.push_back('}');
  return out;
}

void SeriesInfo::AppendMetricJson(std::string* out) const {
  // Labels are sorted by key; `__name__` goes where it sorts among them.
  out->push_back('{');
  bool name_written = false;
  bool first = true;
  const auto append = [&](std::string_view k, std::string_view v) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(k, out);
    out->push_back(':');
    AppendJsonString(v, out);
  };
  for (const auto& [k, v] : labels) {
    if (!name_written && kMetricNameLabel < std::string_view(k)) {
      append(kMetricNameLabel, name);
      name_written = true;
    }
    append(k, v);
  }
  if (!name_written) append(kMetricNameLabel, name);
  out->push_back('}');
}

std::string SeriesInfo::PromText() const { return ingot::PromText(name, labels); }

Status SeriesCatalog::Describe(SeriesId sid, SeriesRef* out) const {
  const std::string_view key = index_.KeyOf(sid);
  if (key.empty()) return Status::NotFound("series id " + std::to_string(sid) + " unknown");
  SeriesKeyParts parts;
  INGOT_RETURN_IF_ERROR(ParseSeriesKey(key, &parts).WithContext("series " + std::to_string(sid)));
  auto info = std::make_shared<SeriesInfo>();
  info->sid = sid;
  info->name = std::move(parts.name);
  info->labels = std::move(parts.tags);  // canonical keys hold tags sorted by key
  *out = std::move(info);
  return Status::OK();
}

Status SeriesCatalog::LabelsOf(SeriesId sid, SeriesKeyParts* parts,
                               std::vector<std::pair<std::string, std::string>>* out) const {
  const std::string_view key = index_.KeyOf(sid);
  if (key.empty()) return Status::NotFound("series id " + std::to_string(sid) + " unknown");
  INGOT_RETURN_IF_ERROR(ParseSeriesKey(key, parts).WithContext("series " + std::to_string(sid)));
  // Canonical keys hold tags sorted by key: the name goes in at its place.
  out->clear();
  out->reserve(parts->tags.size() + 1);
  bool placed = false;
  for (auto& tag : parts->tags) {
    if (!placed && kMetricNameLabel < std::string_view(tag.first)) {
      out->emplace_back(std::string(kMetricNameLabel), std::move(parts->name));
      placed = true;
    }
    out->push_back(std::move(tag));
  }
  if (!placed) out->emplace_back(std::string(kMetricNameLabel), std::move(parts->name));
  return Status::OK();
}

namespace {

void SortUnique(std::vector<SeriesId>* ids) {
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
}

// a ∩ b, both sorted.
std::vector<SeriesId> Intersect(const std::vector<SeriesId>& a, const std::vector<SeriesId>& b) {
  std::vector<SeriesId> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// a \ b, both sorted.
std::vector<SeriesId> Subtract(const std::vector<SeriesId>& a, const std::vector<SeriesId>& b) {
  std::vector<SeriesId> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

std::vector<SeriesId> SeriesCatalog::Postings(const LabelMatcher& m, bool* subtract) const {
  std::vector<SeriesId> ids;
  // An equality matcher is one postings list; no need to walk the label's values.
  if (m.op == MatchOp::kEqual && !m.value.empty()) {
    *subtract = false;
    return index_.ByTag(m.name, m.value);
  }
  // A matcher that accepts "" also accepts series without the label: it is applied by removing
  // the series whose value it rejects.
  *subtract = m.Matches("");
  index_.ForEachTagValue(m.name, [&](std::string_view value, std::span<const std::uint32_t> list) {
    if (m.Matches(value) != *subtract) ids.insert(ids.end(), list.begin(), list.end());
  });
  SortUnique(&ids);
  return ids;
}

Status SeriesCatalog::Match(const Selector& selector, std::size_t max_series,
                            std::vector<SeriesRef>* out) {
  out->clear();
  std::vector<SeriesId> ids;
  INGOT_RETURN_IF_ERROR(MatchIds(selector, max_series, &ids));
  out->reserve(ids.size());
  for (SeriesId sid : ids) {
    SeriesRef info;
    INGOT_RETURN_IF_ERROR(Describe(sid, &info));
    out->push_back(std::move(info));
  }
  return Status::OK();
}

Status SeriesCatalog::MatchIds(const Selector& selector, std::size_t max_series,
                               std::vector<SeriesId>* out) {
  out->clear();
  // Intersections first, smallest lists first would be ideal; the matcher order of a selector
  // puts the metric name first, which is usually the most selective positive matcher.
  std::vector<SeriesId> ids;
  bool have_positive = false;
  std::vector<std::vector<SeriesId>> subtractions;
  for (const LabelMatcher& m : selector.matchers) {
    bool subtract = false;
    std::vector<SeriesId> list = Postings(m, &subtract);
    if (subtract) {
      subtractions.push_back(std::move(list));
    } else if (!have_positive) {
      ids = std::move(list);
      have_positive = true;
    } else {
      ids = Intersect(ids, list);
    }
    if (have_positive && ids.empty()) return Status::OK();
  }
  // The parser refuses selectors whose every matcher accepts "", so this only serves callers
  // that build selectors by hand.
  if (!have_positive) ids = index_.AllSeries();
  for (const std::vector<SeriesId>& s : subtractions) ids = Subtract(ids, s);
  if (ids.size() > max_series) {
    return Status::Busy("the selector matches " + std::to_string(ids.size()) +
                        " series, more than query.max_series = " + std::to_string(max_series) +
                        "; narrow it down");
  }
  *out = std::move(ids);
  return Status::OK();
}

std::vector<std::string> SeriesCatalog::LabelNames() {
  std::vector<std::string> names = index_.TagKeys();
  if (index_.size() > 0) names.emplace_back(kMetricNameLabel);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string_view> SeriesCatalog::LabelValues(std::string_view name) {
  return index_.TagValues(name);
}

}  // namespace ingot
