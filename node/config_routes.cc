#include "node/config_routes.h"

#include <memory>

#include <nlohmann/json.hpp>

namespace ingot {
namespace {

using Json = nlohmann::ordered_json;

void AddTls(const TlsOptions& tls, Json* section) {
  (*section)["tls_cert_file"] = tls.cert_file;
  (*section)["tls_key_file"] = tls.key_file;
  (*section)["tls_min_version"] = tls.min_version;
}

}  // namespace

std::string EffectiveConfigJson(const Options& o) {
  Json log = Json::object();
  log["level"] = o.log.level;
  log["format"] = o.log.format;

  const IngestOptions& in = o.ingest;
  Json ingest = Json::object();
  ingest["tcp_listen"] = in.tcp_listen;
  ingest["precision"] = in.precision;
  ingest["max_line_bytes"] = in.max_line_bytes;
  ingest["max_connections"] = in.max_connections;
  ingest["idle_timeout_ms"] = in.idle_timeout_ms;
  ingest["io_threads"] = in.io_threads;
  ingest["shards"] = in.shards;
  ingest["shard_queue_batches"] = in.shard_queue_batches;
  ingest["max_body_bytes"] = in.max_body_bytes;
  ingest["string_fields"] = in.string_fields;
  AddTls(in.tls, &ingest);

  const StorageOptions& st = o.storage;
  Json storage = Json::object();
  storage["data_dir"] = st.data_dir;
  storage["wal_sync"] = st.wal_sync;
  storage["wal_sync_interval_ms"] = st.wal_sync_interval_ms;
  storage["wal_max_bytes"] = st.wal_max_bytes;
  storage["checkpoint_interval_ms"] = st.checkpoint_interval_ms;
  storage["retention_s"] = st.retention_s;
  storage["block_cache_bytes"] = st.block_cache_bytes;
  storage["compact_chunks"] = st.compact_chunks;
  storage["max_open_files"] = st.max_open_files;
  storage["late_max_age_s"] = st.late_max_age_s;
  storage["late_buffer_points"] = st.late_buffer_points;
  storage["late_compaction_points_per_s"] = st.late_compaction_points_per_s;

  const LimitsOptions& li = st.limits;
  Json limits = Json::object();
  limits["max_series"] = li.max_series;
  limits["max_new_series_per_minute"] = li.max_new_series_per_minute;
  limits["max_labels_per_series"] = li.max_labels_per_series;
  limits["max_label_bytes"] = li.max_label_bytes;
  limits["max_series_key_bytes"] = li.max_series_key_bytes;

  const QueryOptions& q = o.query;
  Json query = Json::object();
  query["http_listen"] = q.http_listen;
  query["http_threads"] = q.http_threads;
  query["workers"] = q.workers;
  query["write_workers"] = q.write_workers;
  query["parallelism"] = q.parallelism;
  query["max_connections"] = q.max_connections;
  query["max_request_bytes"] = q.max_request_bytes;
  query["max_inflight_request_bytes"] = q.max_inflight_request_bytes;
  query["idle_timeout_ms"] = q.idle_timeout_ms;
  query["timeout_ms"] = q.timeout_ms;
  query["max_concurrent"] = q.max_concurrent;
  query["max_points"] = q.max_points;
  query["max_series"] = q.max_series;
  query["lookback_ms"] = q.lookback_ms;
  query["damaged_chunks"] = q.damaged_chunks;
  AddTls(q.tls, &query);

  Json auth = Json::object();
  auth["token_set"] = !o.auth.token.empty();
  auth["token_file"] = o.auth.token_file;
  auth["username"] = o.auth.username;
  auth["password_set"] = !o.auth.password.empty();
  auth["password_file"] = o.auth.password_file;

  Json data = Json::object();
  data["log"] = std::move(log);
  data["ingest"] = std::move(ingest);
  data["storage"] = std::move(storage);
  data["limits"] = std::move(limits);
  data["query"] = std::move(query);
  data["auth"] = std::move(auth);
  return data.dump();
}

void RegisterConfigRoutes(HttpRouter& router, const Options& options) {
  auto body = std::make_shared<const std::string>(
      "{\"status\":\"success\",\"data\":" + EffectiveConfigJson(options) + "}\n");
  router.Add(
      http::verb::get, "/api/v1/ingot/config",
      [body](const HttpRequest&, HttpReply& reply) {
        SetReply(reply, http::status::ok, "application/json", std::string(*body));
      },
      HttpWork::kInline);
}

}  // namespace ingot
