// Which partition of the cluster's log a series goes to. A line's partition depends on its
// measurement and tags (unescaped, tags sorted), not on how the line spells them, so all fields
// of a series' lines share a partition whatever the writer's tag order. Persisted through the
// log and the owners' data: changing the seed or the hashed bytes is a format change.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chunk/series_key.h"
#include "ingest/line_parser.h"

namespace ingot::cluster {

inline constexpr std::uint64_t kPartitionSeed = 0x1D9A7C0B5E3F2A61ull;  // persisted

// XXH64 of `identity` with kPartitionSeed, modulo `partitions`.
std::uint32_t PartitionOfIdentity(std::string_view identity, std::uint32_t partitions);

// The identity hashed for a parsed line: the unescaped measurement, then each tag key and value
// in key order, each followed by a 0 byte. `*scratch` is reused.
void LineIdentity(const ingest::ParsedLine& line,
                  std::vector<std::pair<std::string, std::string>>* scratch, std::string* out);

// The identity hashed for a remote-write series, in the same shape: its metric name, then each
// label name and value (sorted by name), each followed by a 0 byte.
void LabelSetIdentity(std::string_view metric_name, std::span<const TagView> labels,
                      std::string* out);

// Rendezvous (highest random weight) choice of a partition's owners: the `replication` node ids
// with the highest hash of (partition, node id). A node joining or leaving moves only the
// partitions it wins or held. `nodes` need not be sorted; the result is in weight order.
std::vector<std::string> OwnersOf(std::uint32_t partition, const std::vector<std::string>& nodes,
                                  std::uint32_t replication);

}  // namespace ingot::cluster
