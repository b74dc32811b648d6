// Options: every setting of the node, with its default and unit in its name.
//
// Filled from conf/ingot.toml and `--set key=value` overrides by LoadOptions (config_loader.h),
// which validates every value; the structs themselves are plain values with documented defaults.
// `conf/ingot.toml` and docs/configuration.md list the same keys.
#pragma once

#include <cstdint>
#include <string>

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace ingot {

struct LogOptions {
  std::string level = "info";   // trace | debug | info | warn | error | off
  std::string format = "text";  // text | json (one JSON object per line)
};

// TLS for one listener; off while `cert_file` is empty. When set, the listener speaks only TLS.
struct TlsOptions {
  std::string cert_file;            // PEM: the certificate, then any intermediates
  std::string key_file;             // PEM: its private key, unencrypted
  std::string min_version = "1.2";  // 1.2 | 1.3
  bool enabled() const { return !cert_file.empty(); }
};

// Credentials the HTTP listener requires (node/http_auth.h); off while none is set. The loader
// reads `token_file` / `password_file` into `token` / `password` after all keys are applied, so
// that consumers only look at those two.
struct AuthOptions {
  std::string token;  // Authorization: Bearer <token> or Token <token>
  std::string token_file;
  std::string username;  // Authorization: Basic, or InfluxDB 1.x u= and p= parameters
  std::string password;
  std::string password_file;
  bool enabled() const { return !token.empty() || !username.empty(); }
};

struct IngestOptions {
  std::string tcp_listen = "127.0.0.1:8089";  // line protocol over TCP; "" disables
  std::string precision = "ns";               // timestamp unit of TCP input: ns | us | ms | s
  std::uint32_t max_line_bytes = 64 * 1024;   // longer lines are skipped and counted
  std::uint32_t max_connections = 1024;
  std::uint32_t idle_timeout_ms = 300'000;  // close TCP connections silent this long
  std::uint32_t io_threads = 0;             // 0 = number of cores
  std::uint32_t shards = 0;                 // 0 = number of cores
  std::uint32_t shard_queue_batches = 64;   // per shard; a full queue pauses readers
  // HTTP /write body limit after gunzip, and /api/v1/write's after snappy.
  std::uint64_t max_body_bytes = 64ull << 20;
  // String field values are not stored. "reject": /write answers 400 partial write naming them
  // (the other fields are stored) and each is logged; "drop": they are only counted, for agents
  // that send strings beside numbers.
  std::string string_fields = "reject";  // reject | drop
  TlsOptions tls;                        // ingest.tls_* keys
};

// Limits on series: each refusal is counted by reason and logged, rate-limited; points of existing
// series keep flowing. 0 means unlimited where noted.
struct LimitsOptions {
  std::uint64_t max_series = 0;                 // series in the node; 0 = unlimited
  std::uint32_t max_new_series_per_minute = 0;  // 0 = unlimited
  std::uint32_t max_labels_per_series = 64;     // tags plus the metric name
  std::uint32_t max_label_bytes = 4096;         // one tag key or value, measurement or field
  std::uint32_t max_series_key_bytes = 16384;   // the whole canonical key
};

struct StorageOptions {
  std::string data_dir = "./data";
  std::string wal_sync = "interval";  // always | interval | none
  std::uint32_t wal_sync_interval_ms = 100;
  std::uint64_t wal_max_bytes = 256ull << 20;      // checkpoint open buffers past this WAL size
  std::uint32_t checkpoint_interval_ms = 300'000;  // ... or this age
  std::int64_t retention_s = 0;                    // 0 = keep forever; set as "30d", "12h", ...
  std::uint64_t block_cache_bytes = 256ull << 20;
  // Compactions rewrite sealed float chunks with the compact, entropy-coded value encoding where
  // it is smaller (storage.compact_chunks; costs background CPU, saves disk).
  bool compact_chunks = true;
  // A background scan joins each series' consecutive sealed chunks into group chunks of up to
  // 8 x 1024 points (one key and header each; storage.group_chunks).
  bool group_chunks = true;
  // RocksDB table files kept open (-1: all). Not a config key: ingotd derives it from the
  // process' descriptor limit (node/main.cc), so that files and connections share it safely.
  int max_open_files = -1;
  // Late points (older than their series' sealed data): how old they may be (0 = anything within
  // retention), how many a shard buffers before writing them as late chunks, and how many points
  // the background merge of late chunks rewrites per second at most (0 pauses it; reads stay
  // exact, POST /internal/force_merge merges on demand).
  std::int64_t late_max_age_s = 0;
  std::uint64_t late_buffer_points = 1u << 18;
  std::uint64_t late_compaction_points_per_s = 4u << 20;
  LimitsOptions limits;  // [limits] in the config file
  // Not a config key: the RocksDB environment (default: the process'), for fault injection in
  // tests. Must outlive the store.
  rocksdb::Env* rocksdb_env = nullptr;
};

struct QueryOptions {
  std::string http_listen = "127.0.0.1:8086";
  std::uint32_t http_threads = 2;   // I/O threads: read and write sockets only
  std::uint32_t workers = 0;        // threads running queries; 0 = number of cores
  std::uint32_t write_workers = 0;  // threads running /write; 0 = 4 per core
  std::uint32_t parallelism = 0;  // threads one query's series may spread over; 0 = number of cores
  std::uint32_t max_connections = 1024;  // HTTP connections; 503 and close past it
  std::uint64_t max_request_bytes = 64ull << 20;
  std::uint64_t max_inflight_request_bytes = 256ull << 20;  // all bodies; 503 past it
  std::uint32_t idle_timeout_ms = 60'000;                   // keep-alive idle limit
  std::uint32_t timeout_ms = 30'000;                        // per request read/write
  std::uint32_t max_concurrent = 16;                        // queries in flight; 503 past it
  std::uint64_t max_points = 50'000'000;                    // per response; 422 past it
  std::uint32_t max_series = 100'000;                       // per selector
  std::uint32_t lookback_ms = 300'000;                      // instant-vector lookback
  // query.damaged_chunks: "skip" answers without a damaged chunk's points and says so in the
  // answer's warnings; "fail" fails a query that reads one.
  std::string damaged_chunks = "skip";
  TlsOptions tls;  // query.tls_* keys: the HTTP listener
};

// [cluster] (docs/scale-out.md): absent (no name) = a single node.
struct ClusterOptions {
  std::string name;            // [A-Za-z0-9_-]{1,32}; prefixes streams, subjects and the bucket
  std::string node_id;         // [a-z0-9_-]{1,32}, stable for the data directory
  std::string nats_urls;       // "nats://h1:4222,nats://h2:4222"
  std::string advertise_http;  // what peers call for queries; default: the HTTP listener's
  std::uint32_t partitions = 16;     // P, fixed when the cluster is created
  std::uint32_t replication = 2;     // R, nodes storing each partition
  std::uint32_t stream_replicas = 3;  // copies of the log on the NATS servers (1 or 3)
  std::int64_t stream_max_age_s = 6 * 3600;
  std::uint64_t batch_max_bytes = 256 << 10;  // a message's lines before it is published
  bool compress_log = true;                   // zstd over each message's body
  std::uint32_t publish_timeout_ms = 10'000;  // retries of a message before the writer gets 503
  std::uint32_t lease_renew_ms = 1000;
  std::uint32_t lease_ttl_ms = 10'000;           // a lease not renewed for this long: down
  std::uint32_t dead_node_grace_ms = 300'000;    // a down node keeps its partitions this long
  std::uint32_t peer_timeout_ms = 10'000;        // one node's answer to a fanned-out query

  bool enabled() const { return !name.empty(); }
};

struct Options {
  LogOptions log;
  IngestOptions ingest;
  StorageOptions storage;
  QueryOptions query;
  AuthOptions auth;  // [auth]: the HTTP listener
  ClusterOptions cluster;
};

}  // namespace ingot
