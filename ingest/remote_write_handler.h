// RemoteWriteHandler: Prometheus remote write 1.0 (`POST /api/v1/write`), independent of the HTTP
// server; node/write_routes.cc adapts HTTP requests to it, as it does for WriteHandler (/write).
//
// A series is its label set: `__name__` is the metric name, the other labels are its tags, so
// `http_requests_total{job="api"}` is stored and queried exactly like that, in the same index as
// line-protocol series (`cpu,host=a usage=1` is `cpu_usage{host="a"}`); samples are milliseconds,
// stored as nanoseconds, values bit for bit (staleness markers included). The answers, in order:
//
// - Content-Encoding must be `snappy` (missing: assumed, as Prometheus' own receiver does); any
//   other is 415. Content-Type may be missing or `application/x-protobuf` with any parameters
//   but a `proto=` other than `prometheus.WriteRequest` (remote write 2.0 is 415), else 415.
// - The whole body is decoded and validated first (ingest/remote_write_decoder.h): a bad body is
//   400 naming the problem, a body or decoded size past ingest.max_body_bytes is 413; nothing of
//   such a request is stored.
// - Every series is resolved before any sample is appended. A new series refused by
//   limits.max_new_series_per_minute makes the answer 429 with Retry-After and nothing is
//   appended (series created meanwhile stay, so the client's retry makes progress). A series
//   refused for good (limits.max_series, the label limits) has its samples dropped: the others
//   are stored and the answer is a 400 partial write naming it, which Prometheus does not retry.
// - Samples go to the shards as /write's do: a full shard queue blocks the request
//   (back-pressure; the HTTP server answers further bodies 503 past its in-flight budget). A
//   request's last batch per shard is applied by the request's own thread when the shard is
//   idle, and the HTTP server first runs the request on its I/O thread as far as it gets without
//   waiting (Handle's `may_block`): a small request then costs no thread hand-off at all. The
//   answer is 204 once every sample is durable under storage.wal_sync; 500 when storage failed
//   (the client retries; a duplicate timestamp replaces, so a retry is harmless); a 400 partial
//   write when storage refused samples (older than storage.late_max_age, past the retention, or
//   a series of another value type whose type they do not convert to exactly).
//
// Per-request memory (the decoded body, series caches, scratch) is pooled between requests, so
// that a steady stream of requests allocates nothing per sample or per known series.
//
// Thread safety: Handle() may run concurrently from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/series_index.h"
#include "config/options.h"
#include "config/thread_annotations.h"
#include "ingest/shard_set.h"

namespace ingot::ingest {

struct RemoteWriteRequest {
  std::string_view body;
  std::string_view content_encoding;  // "" = snappy
  std::string_view content_type;      // "" = application/x-protobuf
  // The body is the protobuf WriteRequest itself, not a snappy block (a cluster node applying
  // its log, which holds requests the accepting node decoded): no header applies.
  bool decoded = false;
};

struct RemoteWriteResponse {
  int status = 204;
  std::string body;       // a plain-text message, empty for 204
  int retry_after_s = 0;  // a Retry-After header when > 0
  // Set only by Handle(request, /*may_block=*/false) when the request must wait for its shards:
  // the rest of the request, to be called once, while the request's body lives, on a thread
  // that may block; its answer is the answer (the fields above are then unset).
  std::function<RemoteWriteResponse()> rest;
};

// Why a request was not answered 204: the `reason` label of
// ingot_remote_write_requests_rejected_total.
enum class RemoteWriteRejection : std::uint8_t {
  kContentEncoding = 0,  // 415
  kContentType,          // 415
  kTooLarge,             // 413
  kSnappy,               // 400
  kProtobuf,             // 400
  kLabels,               // 400
  kTimestamp,            // 400
  kNewSeriesRate,        // 429
  kStorage,              // 500 (503: a cluster's log did not store the request)
  kPartial,              // 400 after storing the rest
};
inline constexpr int kRemoteWriteRejectionCount = 10;
const char* RemoteWriteRejectionName(RemoteWriteRejection r) noexcept;

// Where a decoded request's series go instead of the shards: a cluster node publishes them to
// the partitions of its log (cluster/line_router.h). Used by one request at a time.
class SeriesRouter {
 public:
  virtual ~SeriesRouter() = default;
  // One valid series with samples: its encoded TimeSeries message (labels as sent), its metric
  // name and its other labels sorted.
  virtual void RouteSeries(std::string_view message, std::string_view metric_name,
                           std::span<const TagView> labels) = 0;
  // Waits until everything routed is stored; an error fails the request (503).
  virtual Status Finish() = 0;
};
using SeriesRouterFactory = std::function<std::unique_ptr<SeriesRouter>()>;

class RemoteWriteHandler {
 public:
  // `shards` and `index` must outlive the handler.
  RemoteWriteHandler(ShardSet& shards, SeriesIndex& index, const IngestOptions& options);
  ~RemoteWriteHandler();

  // With `may_block` false (the caller is an HTTP I/O thread), the request runs here only as far
  // as it can without waiting: bodies up to kInlineBodyBytes are decoded and their batches
  // applied where their shards are idle; batches queued behind another thread's apply are
  // waited for a moment (200 µs); anything else that would wait (a full queue, a longer wait, a
  // larger body) is left in the answer's `rest`.
  RemoteWriteResponse Handle(const RemoteWriteRequest& request, bool may_block = true) const;
  // Bodies (snappy) decoded on the caller's thread when it may not block: larger ones, whose
  // decoding takes a while, go to `rest` whole.
  static constexpr std::size_t kInlineBodyBytes = 256 << 10;

  // Requests' series go to routers made by `factory` instead of the shards (set before
  // serving); the request then runs where it may block, and what storage refuses is decided
  // where the series are applied.
  void set_router_factory(SeriesRouterFactory factory) { router_factory_ = std::move(factory); }

 private:
  struct State;
  struct PendingState;
  // Hands the decoded samples to the shards, from where the last call stopped. Without
  // `may_block` it stops (false) at the first batch whose queue is full and parks the rest.
  bool SubmitSamples(State& s, bool may_block) const;
  // Waits for the shards and answers.
  RemoteWriteResponse Finish(std::unique_ptr<State> state) const;
  std::unique_ptr<State> AcquireState() const;
  // Back to the pool, or freed (a cache that vouches for definitions not logged is dropped).
  void ReleaseState(std::unique_ptr<State> state, bool keep_cache) const;

  ShardSet& shards_;
  SeriesIndex& index_;
  const IngestOptions options_;
  SeriesRouterFactory router_factory_;
  mutable Mutex states_mu_;
  mutable std::vector<std::unique_ptr<State>> states_ GUARDED_BY(states_mu_);
};

}  // namespace ingot::ingest
