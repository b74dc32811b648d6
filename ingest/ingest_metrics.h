// IngestMetrics: the ingest path's counters, registered once per process on first use.
//
// Stable names (docs/operations.md): ingot_lines_total, ingot_bytes_received_total,
// ingot_lines_rejected_total{reason}, ingot_points_rejected_total{reason} (the ingest-side
// reasons; storage adds its own), ingot_points_received_total. Points accepted are counted by
// storage when they are durable (ingot_points_accepted_total) and here, split by the protocol
// they came over and counted once per batch (ingot_points_accepted_by_protocol_total{protocol}
// with protocol "tcp", "http" or "remote_write").
//
// Thread safety: thread-safe.
#pragma once

#include <array>

#include "config/metrics.h"

namespace ingot::ingest {

struct IngestMetrics {
  Counter* lines;
  Counter* bytes_received;
  Counter* points_received;
  Counter* lines_malformed;
  Counter* lines_too_long;
  Counter* points_string_field;
  Counter* points_type_conflict;
  Counter* points_reserved_label;
  Counter* points_uint_overflow;
  Counter* points_storage_error;
  Counter* http_writes;
  Counter* http_write_errors;
  std::array<Counter*, 4> points_accepted_by_protocol;  // indexed by WriteProtocol
};

IngestMetrics& Metrics();

}  // namespace ingot::ingest
