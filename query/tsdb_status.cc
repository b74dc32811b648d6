#include "query/tsdb_status.h"

#include <charconv>

#include "config/json_string.h"

namespace ingot {

namespace {

void AppendEntries(std::string_view field, const std::vector<IndexStats::Entry>& entries,
                   std::string* out) {
  out->push_back(',');
  AppendJsonString(field, out);
  out->append(":[");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i != 0) out->push_back(',');
    out->append("{\"name\":");
    AppendJsonString(entries[i].name, out);
    out->append(",\"value\":");
    out->append(std::to_string(entries[i].value));
    out->push_back('}');
  }
  out->push_back(']');
}

}  // namespace

Status ParseTsdbStatusTopN(std::string_view text, std::size_t* top_n) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > kTsdbStatusMaxTopN) {
    std::string message(1, '\'');
    message.append(text).append("' is not an integer in [1, ");
    message.append(std::to_string(kTsdbStatusMaxTopN)).append("]");
    return Status::InvalidArgument(message);
  }
  *top_n = n;
  return Status::OK();
}

std::string TsdbStatusJson(const IndexStats& stats) {
  std::string out = "{\"status\":\"success\",\"data\":{\"headStats\":{\"numSeries\":";
  out += std::to_string(stats.series);
  out += ",\"numLabelPairs\":";
  out += std::to_string(stats.label_pairs);
  out += "},\"totalSeries\":";
  out += std::to_string(stats.series);
  out += ",\"totalLabelValuePairs\":";
  out += std::to_string(stats.label_pairs);
  AppendEntries("seriesCountByMetricName", stats.series_by_metric, &out);
  AppendEntries("seriesCountByLabelName", stats.series_by_label, &out);
  AppendEntries("labelValueCountByLabelName", stats.values_by_label, &out);
  AppendEntries("memoryInBytesByLabelName", stats.memory_bytes_by_label, &out);
  AppendEntries("seriesCountByLabelValuePair", stats.series_by_pair, &out);
  out += "}}\n";
  return out;
}

}  // namespace ingot
