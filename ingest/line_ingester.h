// LineIngester: turns line protocol into points routed to shards, for one connection or one
// HTTP /write request.
//
// Lines are parsed in place from the caller's buffer. Each field of a line is one series; series
// are resolved through a per-ingester SeriesCache keyed by the line's series prefix (measurement
// and tags exactly as written) and field key, so the steady state costs one hash of the prefix
// per line, one probe per field and no allocation.
// A cache miss builds the canonical key (unescaped, tags sorted) and resolves it in the series
// index, which creates the series in memory if needed (subject to the series limits); while a
// series' definition is pending, the definition goes into the shard batch ahead of its points, so
// the WAL makes both durable together. Points are appended to one open batch per
// shard; full batches are submitted at once, the rest at the end of each Consume(), so that data
// never waits for more data. Bad lines are counted, logged (rate-limited) and skipped.
//
// Thread safety: not thread-safe; one ingester per connection or request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/series_index.h"
#include "config/clock.h"
#include "config/logging.h"
#include "ingest/line_parser.h"
#include "ingest/series_cache.h"
#include "ingest/shard_set.h"
#include "ingest/tcp_server.h"

namespace ingot::ingest {

struct IngestStats {
  std::uint64_t lines = 0;
  std::uint64_t lines_malformed = 0;
  std::uint64_t lines_too_long = 0;
  std::uint64_t points = 0;              // values sent to storage
  std::uint64_t points_rejected = 0;     // dropped before storage (type conflict, overflow)
  std::uint64_t points_unsupported = 0;  // string fields: counted, not stored
  std::string first_error;               // description of the first bad line, for HTTP answers
};

// Where good lines go instead of this node's shards: a cluster node publishes them to the
// partitions of its log (cluster/line_router.h). Set once per ingester, so the single-node path
// pays one branch per line.
class LineRouter {
 public:
  virtual ~LineRouter() = default;
  // A line that parsed, `raw` as received (without its newline); `line` points into it.
  virtual void Route(const ParsedLine& line, std::string_view raw) = 0;
  // The end of a Consume(): hands over what is buffered, without waiting for it.
  virtual void Send() = 0;
  // Waits until everything routed is stored; an error fails the request (503).
  virtual Status Finish() = 0;
};

class LineIngester final : public LineConsumer {
 public:
  // `protocol` is what the lines came over (counted per protocol once durable). `context` names
  // the source in log messages ("tcp 127.0.0.1:5555 #3", "http /write").
  // `cache` carries series resolved by an earlier ingester (HTTP requests reuse caches through a
  // pool); null starts an empty one.
  LineIngester(ShardSet& shards, SeriesIndex& index, const Clock& clock, Precision precision,
               std::size_t max_line_bytes, WriteProtocol protocol, std::string context,
               std::unique_ptr<SeriesCache> cache = nullptr);
  ~LineIngester() override;

  void Consume(std::string_view lines) override;
  void OverlongLine(std::uint64_t line_number, std::size_t bytes_seen) override;
  // Submits what is pending and waits until storage has made it durable.
  void Finish() override;

  // The storage error of the last Finish(), if any.
  const Status& storage_status() const { return storage_status_; }
  const IngestStats& stats() const { return stats_; }
  // Points storage refused (too old, expired, type) in what Finish() waited for.
  std::uint64_t storage_rejected() const { return completion_.rejected(); }

  // String field values are never stored; by default each one is logged (rate-limited) as a bad
  // line would be. Off for nodes that drop them on purpose (ingest.string_fields = "drop").
  void set_log_string_fields(bool log) { log_string_fields_ = log; }
  // Lines go to `router` (which must outlive the ingester) instead of the shards; what storage
  // refuses is then decided where they are applied. Finish() waits for the router.
  void set_router(LineRouter* router) { router_ = router; }
  // For the lines of the next Consume(): a cluster node applies messages written with
  // different precisions.
  void set_precision(Precision precision) { parser_.set_precision(precision); }

  // An empty cache sized for one ingester.
  static std::unique_ptr<SeriesCache> NewCache();
  // After Finish(): the cache, for the next ingester of the same source; null after a storage
  // error (a definition the cache vouches for may not have been logged).
  std::unique_ptr<SeriesCache> ReleaseCache();

 private:
  void HandleLine(std::string_view line, std::int64_t now_ns);
  // Resolves a field's series through the index and caches it; false (counted, logged) when the
  // series cannot be made.
  bool ResolveField(std::uint64_t prefix_hash, const ParsedLine& line, const Field& field,
                    ValueType wanted, SeriesCache::Entry* out);
  void AddPoint(const SeriesCache::Entry& series, std::int64_t ts_ns, const Field& field);
  // The open batch of `shard`, taken from the pool when there is none.
  Batch& OpenBatch(int shard);
  // Hands the open batches to their shards; with `apply_when_idle` (for a caller about to wait
  // for them) a batch whose shard is idle is applied by this thread (ShardSet::SubmitOrApply).
  void Flush(bool apply_when_idle = false);
  void LogBadLine(std::string_view what);
  void LogStringField(std::string_view key);

  ShardSet& shards_;
  SeriesIndex& index_;
  const Clock& clock_;
  const std::size_t max_line_bytes_;
  const std::string context_;
  LineParser parser_;
  ParsedLine parsed_;
  std::unique_ptr<SeriesCache> cache_;
  std::vector<std::unique_ptr<Batch>> open_;  // one per shard
  Completion completion_;
  IngestStats stats_;
  Status storage_status_;
  std::string key_scratch_;
  std::string unescape_scratch_;
  std::vector<std::pair<std::string, std::string>> tag_scratch_;
  std::vector<TagView> tag_views_;
  std::string measurement_scratch_;
  std::string field_scratch_;
  std::shared_ptr<spdlog::logger> log_;
  bool log_string_fields_ = true;
  LineRouter* router_ = nullptr;
};

}  // namespace ingot::ingest
