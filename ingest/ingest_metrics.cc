#include "ingest/ingest_metrics.h"

namespace ingot::ingest {

IngestMetrics& Metrics() {
  static IngestMetrics metrics = [] {
    MetricsRegistry& r = MetricsRegistry::Default();
    IngestMetrics m;
    m.lines = &r.AddCounter("ingot_lines_total",
                            "Line-protocol lines received over TCP and HTTP, bad ones included.");
    m.bytes_received = &r.AddCounter("ingot_bytes_received_total",
                                     "Bytes of line protocol received (after gunzip).");
    m.points_received = &r.AddCounter("ingot_points_received_total",
                                      "Field values parsed from good lines and sent to storage.");
    const char* lines_help = "Lines dropped whole, by reason.";
    m.lines_malformed =
        &r.AddCounter("ingot_lines_rejected_total", lines_help, "reason=\"malformed\"");
    m.lines_too_long =
        &r.AddCounter("ingot_lines_rejected_total", lines_help, "reason=\"line_too_long\"");
    const char* points_help = "Points rejected, by reason.";
    m.points_string_field =
        &r.AddCounter("ingot_points_rejected_total", points_help, "reason=\"string_unsupported\"");
    m.points_type_conflict =
        &r.AddCounter("ingot_points_rejected_total", points_help, "reason=\"type_conflict\"");
    m.points_reserved_label =
        &r.AddCounter("ingot_points_rejected_total", points_help, "reason=\"reserved_label\"");
    m.points_uint_overflow =
        &r.AddCounter("ingot_points_rejected_total", points_help, "reason=\"uint_overflow\"");
    m.points_storage_error =
        &r.AddCounter("ingot_points_rejected_total", points_help, "reason=\"storage_error\"");
    m.http_writes = &r.AddCounter("ingot_http_write_requests_total", "HTTP /write requests.");
    m.http_write_errors = &r.AddCounter("ingot_http_write_errors_total",
                                        "HTTP /write requests answered with an error status.");
    const char* protocol_help =
        "Points accepted into head buffers (durable in the WAL), by the protocol they came over "
        "(ingot_points_accepted_total also counts points replayed from the WAL).";
    m.points_accepted_by_protocol = {
        &r.AddCounter("ingot_points_accepted_by_protocol_total", protocol_help, "protocol=\"tcp\""),
        &r.AddCounter("ingot_points_accepted_by_protocol_total", protocol_help,
                      "protocol=\"http\""),
        &r.AddCounter("ingot_points_accepted_by_protocol_total", protocol_help,
                      "protocol=\"remote_write\""),
        &r.AddCounter("ingot_points_accepted_by_protocol_total", protocol_help,
                      "protocol=\"cluster_log\""),
    };
    return m;
  }();
  return metrics;
}

}  // namespace ingot::ingest
