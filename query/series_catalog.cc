#include "query/series_catalog.h"

#include <algorithm>

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

Status SeriesCatalog::Refresh() {
  const std::size_t indexed = index_.size();
  {
    std::shared_lock lock(mu_);
    if (series_.size() >= indexed) return Status::OK();
  }
  std::lock_guard refresh_lock(refresh_mu_);
  std::size_t known;
  {
    std::shared_lock lock(mu_);
    known = series_.size();
  }
  std::vector<SeriesInfo> added;
  std::string key;
  SeriesKeyParts parts;
  for (SeriesId sid = known + 1; sid <= indexed; ++sid) {
    ValueType type;
    // A series being created is counted before it can be looked up: pick it up next time.
    if (!index_.Lookup(sid, &key, &type).ok()) break;
    INGOT_RETURN_IF_ERROR(ParseSeriesKey(key, &parts).WithContext("series " + std::to_string(sid)));
    SeriesInfo info;
    info.sid = sid;
    info.name = parts.measurement + "_" + parts.field;
    info.labels = std::move(parts.tags);
    std::sort(info.labels.begin(), info.labels.end());
    std::vector<std::pair<std::string, std::string>> all;
    all.reserve(info.labels.size() + 1);
    all.emplace_back(std::string(kMetricNameLabel), info.name);
    for (const auto& label : info.labels) all.push_back(label);
    std::sort(all.begin(), all.end());
    AppendMetricJson(all, &info.metric_json);
    info.prom_text = PromText(info.name, info.labels);
    added.push_back(std::move(info));
  }
  std::unique_lock lock(mu_);
  for (SeriesInfo& info : added) {
    by_name_[info.name].push_back(info.sid);
    series_.push_back(std::move(info));
  }
  return Status::OK();
}

std::size_t SeriesCatalog::size() const {
  std::shared_lock lock(mu_);
  return series_.size();
}

Status SeriesCatalog::Match(const Selector& selector, std::size_t max_series,
                            std::vector<const SeriesInfo*>* out) {
  out->clear();
  INGOT_RETURN_IF_ERROR(Refresh());
  std::vector<const LabelMatcher*> name_matchers;
  std::vector<const LabelMatcher*> label_matchers;
  const LabelMatcher* narrowing = nullptr;
  for (const LabelMatcher& m : selector.matchers) {
    if (m.name == kMetricNameLabel) {
      name_matchers.push_back(&m);
    } else {
      label_matchers.push_back(&m);
      if (m.op == MatchOp::kEqual && !m.value.empty() && narrowing == nullptr) narrowing = &m;
    }
  }
  std::shared_lock lock(mu_);
  const SeriesId known = series_.size();
  std::vector<SeriesId> candidates;
  bool all = false;
  if (!name_matchers.empty()) {
    for (const auto& [name, ids] : by_name_) {
      bool ok = true;
      for (const LabelMatcher* m : name_matchers) ok = ok && m->Matches(name);
      if (ok) candidates.insert(candidates.end(), ids.begin(), ids.end());
    }
    std::sort(candidates.begin(), candidates.end());
  } else if (narrowing != nullptr) {
    candidates = index_.ByTag(narrowing->name, narrowing->value);
  } else {
    all = true;
  }
  auto consider = [&](SeriesId sid) -> Status {
    if (sid == kInvalidSeriesId || sid > known) return Status::OK();
    const SeriesInfo& info = series_[sid - 1];
    for (const LabelMatcher* m : label_matchers) {
      if (!m->Matches(info.Label(m->name))) return Status::OK();
    }
    if (out->size() >= max_series) {
      return Status::Busy("the selector matches more than " +
                                     std::to_string(max_series) +
                                     " series (query.max_series); narrow it down");
    }
    out->push_back(&info);
    return Status::OK();
  };
  if (all) {
    for (SeriesId sid = 1; sid <= known; ++sid) INGOT_RETURN_IF_ERROR(consider(sid));
  } else {
    for (SeriesId sid : candidates) INGOT_RETURN_IF_ERROR(consider(sid));
  }
  return Status::OK();
}

std::vector<std::string> SeriesCatalog::LabelNames() {
  std::vector<std::string> names = index_.TagKeys();
  names.emplace_back(kMetricNameLabel);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<std::string> SeriesCatalog::LabelValues(std::string_view name) {
  if (name != kMetricNameLabel) return index_.TagValues(name);
  Refresh().ok();  // best effort: the names known so far are still an answer
  std::shared_lock lock(mu_);
  std::vector<std::string> names;
  names.reserve(by_name_.size());
  for (const auto& entry : by_name_) names.push_back(entry.first);
  return names;
}

}  // namespace ingot
