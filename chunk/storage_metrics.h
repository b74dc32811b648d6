// StorageMetrics: the storage layer's counters, registered once per process on first use.
//
// Thread safety: thread-safe (Metrics() is a function-local static; counters are atomic).
#pragma once

#include <array>

#include "codec/codec.h"
#include "config/metrics.h"

namespace ingot {

struct StorageMetrics {
  Counter* points_accepted;
  Counter* points_rejected_too_old;
  Counter* points_rejected_expired;
  Counter* points_rejected_type;
  Counter* points_dropped_retention;  // accepted, then expired before its chunk was sealed
  Counter* points_late;               // accepted into a late buffer (older than sealed data)
  Counter* late_chunks_written;
  Counter* late_chunk_bytes_written;
  Counter* late_compactions;          // series whose late chunks were merged
  Counter* late_compaction_chunks_read;
  Counter* late_compaction_bytes_read;
  Counter* late_compaction_bytes_written;
  Counter* late_compaction_points;    // points written by merges
  Counter* late_compaction_errors;
  Histogram* late_compaction_seconds;  // one series' merge
  std::array<Counter*, codec::kFloatEncodingCount> chunks_sealed_float;
  Counter* chunks_sealed_int;
  Counter* values_sealed;
  Counter* chunk_bytes_written;
  Counter* chunks_corrupt;
  Counter* chunks_recoded;                 // rewritten with the compact encoding by compactions
  Counter* chunk_bytes_saved_by_recoding;
  Counter* chunk_groups_written;           // group chunks written by ChunkGrouper
  Counter* chunks_grouped;                 // single-block chunks they replaced
  Counter* chunk_bytes_saved_by_grouping;
  Counter* chunk_grouping_errors;
  Counter* wal_bytes_written;
  Counter* wal_records_corrupt;
  Counter* wal_torn_tails;
  Counter* wal_points_replayed;
  Counter* checkpoints;
  Counter* write_errors;
  Histogram* wal_fsync_seconds;
  Histogram* checkpoint_seconds;
};

StorageMetrics& Metrics();

}  // namespace ingot
