#include "chunk/storage_metrics.h"

#include <string>

namespace ingot {

namespace {

StorageMetrics Register() {
  MetricsRegistry& r = MetricsRegistry::Default();
  StorageMetrics m;
  const char* accepted_help = "Points accepted into head buffers (durable in the WAL).";
  m.points_accepted = &r.AddCounter("ingot_points_accepted_total", accepted_help);
  const char* rejected_help = "Points rejected by storage, by reason.";
  m.points_rejected_too_old =
      &r.AddCounter("ingot_points_rejected_total", rejected_help, "reason=\"too_old\"");
  m.points_rejected_expired =
      &r.AddCounter("ingot_points_rejected_total", rejected_help, "reason=\"expired\"");
  m.points_rejected_type =
      &r.AddCounter("ingot_points_rejected_total", rejected_help, "reason=\"type_mismatch\"");
  m.points_dropped_retention = &r.AddCounter(
      "ingot_points_dropped_retention_total", "Head points past retention when sealed.");
  m.points_late = &r.AddCounter(
      "ingot_points_late_total",
      "Points accepted although older than their series' sealed data (stored as late chunks).");
  m.late_chunks_written =
      &r.AddCounter("ingot_late_chunks_written_total", "Late chunks written from late buffers.");
  m.late_chunk_bytes_written =
      &r.AddCounter("ingot_late_chunk_bytes_written_total", "Bytes of late chunks written.");
  m.late_compactions = &r.AddCounter(
      "ingot_late_compactions_total",
      "Merges of a series' late chunks with the chunks they overlap into non-overlapping chunks.");
  m.late_compaction_chunks_read = &r.AddCounter("ingot_late_compaction_chunks_read_total",
                                                "Chunks (late and sealed) read by merges.");
  m.late_compaction_bytes_read =
      &r.AddCounter("ingot_late_compaction_bytes_read_total", "Chunk bytes read by merges.");
  m.late_compaction_bytes_written =
      &r.AddCounter("ingot_late_compaction_bytes_written_total", "Chunk bytes written by merges.");
  m.late_compaction_points =
      &r.AddCounter("ingot_late_compaction_points_total", "Points written by merges.");
  m.late_compaction_errors = &r.AddCounter("ingot_late_compaction_errors_total",
                                           "Merges that failed (corrupt chunk, write error).");
  m.late_compaction_seconds =
      &r.AddHistogram("ingot_late_compaction_seconds", "Duration of one series' merge.",
                      ExponentialBuckets(0.0001, 2, 16));
  const char* sealed_help = "Chunks sealed, by value encoding.";
  for (int e = 0; e < codec::kFloatEncodingCount; ++e) {
    const std::string labels = std::string("encoding=\"") +
                               codec::FloatEncodingName(static_cast<codec::FloatEncoding>(e)) +
                               "\"";
    m.chunks_sealed_float[static_cast<std::size_t>(e)] =
        &r.AddCounter("ingot_chunks_sealed_total", sealed_help, labels);
  }
  m.chunks_sealed_int = &r.AddCounter("ingot_chunks_sealed_total", sealed_help, "encoding=\"int\"");
  m.values_sealed = &r.AddCounter("ingot_values_sealed_total", "Values written in sealed chunks.");
  m.chunk_bytes_written =
      &r.AddCounter("ingot_chunk_bytes_written_total", "Bytes of sealed chunks written.");
  m.chunks_corrupt = &r.AddCounter("ingot_chunks_corrupt_total",
                                   "Chunks that failed validation or decoding when read.");
  m.chunks_recoded = &r.AddCounter(
      "ingot_chunks_recoded_total",
      "Float chunks rewritten with the compact (entropy-coded) encoding by compactions.");
  m.chunk_bytes_saved_by_recoding = &r.AddCounter(
      "ingot_chunk_bytes_saved_by_recoding_total", "Bytes the compact rewrites saved.");
  m.chunk_groups_written = &r.AddCounter(
      "ingot_chunk_groups_written_total",
      "Group chunks written: one key and header for up to 8 consecutive chunks of a series.");
  m.chunks_grouped =
      &r.AddCounter("ingot_chunks_grouped_total", "Chunks replaced by the groups written.");
  m.chunk_bytes_saved_by_grouping = &r.AddCounter(
      "ingot_chunk_bytes_saved_by_grouping_total", "Chunk bytes (headers) the groups saved.");
  m.chunk_grouping_errors = &r.AddCounter(
      "ingot_chunk_grouping_errors_total",
      "Runs of chunks left ungrouped because one failed validation or the write failed.");
  m.wal_bytes_written = &r.AddCounter("ingot_wal_bytes_written_total", "Bytes appended to WALs.");
  m.wal_records_corrupt = &r.AddCounter("ingot_wal_records_corrupt_total",
                                        "Corrupt WAL regions skipped during recovery.");
  m.wal_torn_tails =
      &r.AddCounter("ingot_wal_torn_tails_total", "WAL segments that ended in a torn record.");
  m.wal_points_replayed =
      &r.AddCounter("ingot_wal_points_replayed_total", "Points replayed from WALs at start-up.");
  m.checkpoints = &r.AddCounter("ingot_checkpoints_total", "Head checkpoints completed.");
  m.write_errors = &r.AddCounter("ingot_storage_write_errors_total",
                                 "WAL or RocksDB write failures returned to writers.");
  m.wal_fsync_seconds = &r.AddHistogram("ingot_wal_fsync_seconds", "WAL fdatasync latency.",
                                        ExponentialBuckets(0.0001, 2, 16));
  m.checkpoint_seconds = &r.AddHistogram("ingot_checkpoint_seconds", "Checkpoint duration.",
                                         ExponentialBuckets(0.001, 2, 14));
  return m;
}

}  // namespace

StorageMetrics& Metrics() {
  static StorageMetrics metrics = Register();
  return metrics;
}

}  // namespace ingot
