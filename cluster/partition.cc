#include "cluster/partition.h"

#include <xxhash.h>

#include <algorithm>

#include "ingest/line_protocol_escape.h"

namespace ingot::cluster {

namespace {

void AppendPart(std::string_view part, std::string* out) { out->append(part).push_back('\0'); }

}  // namespace

std::uint32_t PartitionOfIdentity(std::string_view identity, std::uint32_t partitions) {
  return static_cast<std::uint32_t>(XXH64(identity.data(), identity.size(), kPartitionSeed) %
                                    partitions);
}

void LineIdentity(const ingest::ParsedLine& line,
                  std::vector<std::pair<std::string, std::string>>* scratch, std::string* out) {
  using ingest::AppendUnescaped;
  using ingest::EscapeContext;
  scratch->resize(line.tags.size());
  for (std::size_t t = 0; t < line.tags.size(); ++t) {
    auto& [key, value] = (*scratch)[t];
    key.clear();
    value.clear();
    AppendUnescaped(line.tags[t].key, EscapeContext::kTagKey, &key);
    AppendUnescaped(line.tags[t].value, EscapeContext::kTagValue, &value);
  }
  std::sort(scratch->begin(), scratch->end());
  out->clear();
  AppendUnescaped(line.measurement, EscapeContext::kMeasurement, out);
  out->push_back('\0');
  for (const auto& [key, value] : *scratch) {
    AppendPart(key, out);
    AppendPart(value, out);
  }
}

void LabelSetIdentity(std::string_view metric_name, std::span<const TagView> labels,
                      std::string* out) {
  out->clear();
  AppendPart(metric_name, out);
  for (const auto& [name, value] : labels) {
    AppendPart(name, out);
    AppendPart(value, out);
  }
}

std::vector<std::string> OwnersOf(std::uint32_t partition, const std::vector<std::string>& nodes,
                                  std::uint32_t replication) {
  std::vector<std::pair<std::uint64_t, const std::string*>> weights;
  weights.reserve(nodes.size());
  for (const std::string& node : nodes) {
    weights.emplace_back(XXH64(node.data(), node.size(), kPartitionSeed + partition), &node);
  }
  const std::size_t n = std::min<std::size_t>(replication, weights.size());
  std::partial_sort(weights.begin(), weights.begin() + static_cast<std::ptrdiff_t>(n),
                    weights.end(), [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : *a.second < *b.second;
                    });
  std::vector<std::string> owners;
  for (std::size_t i = 0; i < n; ++i) owners.push_back(*weights[i].second);
  return owners;
}

}  // namespace ingot::cluster
