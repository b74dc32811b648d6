// WriteHandler: the InfluxDB 1.x compatible `POST /write` logic, independent of the HTTP server.
//
// The node's main adapts HTTP requests to WriteRequest and WriteResponse back, so ingest/ needs
// no HTTP types. Semantics follow InfluxDB 1.x: `precision` (n|ns|u|us|ms|s), `db`/`rp` accepted
// (one database per node), gzip bodies, 204 once every point is durable under the WAL policy,
// and on bad lines the good ones are still stored and the answer is 400 with
// `{"error":"partial write: ... dropped=N"}`.
//
// Requests resolve series through series caches kept in a small pool between requests, so a
// client's series are looked up in the index once, not once per request.
//
// Thread safety: Handle() may run concurrently from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/series_index.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/thread_annotations.h"
#include "ingest/series_cache.h"
#include "ingest/shard_set.h"

namespace ingot::ingest {

struct WriteRequest {
  std::string_view body;
  std::string_view precision;         // "" = ns
  std::string_view content_encoding;  // "" or "gzip"
};

struct WriteResponse {
  int status = 204;
  std::string body;       // JSON error object, empty for 204
  int retry_after_s = 0;  // > 0: answer with Retry-After (the points were not stored; retry)
};

class LineRouter;
enum class Precision : unsigned char;
// Makes a request's router (a cluster node: the log's partitions) for lines of `precision`.
using LineRouterFactory = std::function<std::unique_ptr<LineRouter>(Precision precision)>;

class WriteHandler {
 public:
  WriteHandler(ShardSet& shards, SeriesIndex& index, const Clock& clock,
               const IngestOptions& options);
  WriteResponse Handle(const WriteRequest& request) const;
  // Requests' lines go to routers made by `factory` instead of the shards (before serving).
  void set_router_factory(LineRouterFactory factory) { router_factory_ = std::move(factory); }

 private:
  ShardSet& shards_;
  SeriesIndex& index_;
  const Clock& clock_;
  const IngestOptions options_;
  LineRouterFactory router_factory_;
  // Caches of finished requests; a request takes one (or starts empty) and gives it back.
  mutable Mutex caches_mu_;
  mutable std::vector<std::unique_ptr<SeriesCache>> caches_ GUARDED_BY(caches_mu_);
};

// Inflates a gzip (or zlib) stream into `*out`, failing once the output would pass `max_bytes`.
// Returns "" on success, "too_large" past the limit, or a description of the corruption.
std::string Gunzip(std::string_view compressed, std::uint64_t max_bytes, std::string* out);

}  // namespace ingot::ingest
