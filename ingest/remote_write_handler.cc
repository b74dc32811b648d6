#include "ingest/remote_write_handler.h"

#include <bit>
#include <chrono>
#include <cmath>
#include <span>

#include "config/logging.h"
#include "config/metrics.h"
#include "ingest/ingest_metrics.h"
#include "ingest/remote_write_decoder.h"
#include "ingest/series_cache.h"

namespace ingot::ingest {
namespace {

// States kept between requests: as many as requests usually run at once.
constexpr std::size_t kPooledStates = 8;
// A pooled decoder keeps at most this much (its buffer is the decoded body): Prometheus sends
// batches of a few thousand samples, well below it.
constexpr std::size_t kMaxRetainedDecoderBytes = 8 << 20;
// Bounds of a state's series cache (SeriesCache): ~32 bytes per entry plus the key bytes.
constexpr std::size_t kMaxCachedSeries = 1 << 17;
constexpr std::size_t kMaxCachedKeyBytes = 8 << 20;
// Cache keys of the two kinds (SeriesCache's second key part keeps them apart): the label fields
// as encoded, or the labels written out by the handler.
constexpr std::string_view kRawKey = "r";
constexpr std::string_view kBuiltKey = "b";
// A separator that valid UTF-8 never contains.
constexpr char kKeySeparator = '\xff';
constexpr int kRetryAfterS = 1;
// How long a request on an I/O thread waits for batches already handed to their shards before it
// leaves the wait to the write pool: about one small batch's apply by another thread.
constexpr std::chrono::microseconds kInlineWait{200};

struct RemoteWriteMetrics {
  Counter* requests;
  Counter* series;
  Counter* samples;
  Counter* exemplars;
  Counter* histograms;
  Counter* metadata;
  Counter* rejected[kRemoteWriteRejectionCount];
};

RemoteWriteMetrics& RwMetrics() {
  static RemoteWriteMetrics metrics = [] {
    MetricsRegistry& r = MetricsRegistry::Default();
    RemoteWriteMetrics m;
    m.requests = &r.AddCounter("ingot_remote_write_requests_total",
                               "Prometheus remote-write requests (POST /api/v1/write).");
    m.series = &r.AddCounter("ingot_remote_write_series_total",
                             "Time series in remote-write requests that decoded.");
    m.samples = &r.AddCounter("ingot_remote_write_samples_total",
                              "Samples in remote-write requests that decoded.");
    const char* skipped_help = "Remote-write items counted and not stored, by kind.";
    m.exemplars =
        &r.AddCounter("ingot_remote_write_skipped_total", skipped_help, "kind=\"exemplar\"");
    m.histograms =
        &r.AddCounter("ingot_remote_write_skipped_total", skipped_help, "kind=\"histogram\"");
    m.metadata =
        &r.AddCounter("ingot_remote_write_skipped_total", skipped_help, "kind=\"metadata\"");
    for (int i = 0; i < kRemoteWriteRejectionCount; ++i) {
      std::string labels = "reason=\"";
      labels.append(RemoteWriteRejectionName(static_cast<RemoteWriteRejection>(i))).append("\"");
      m.rejected[i] = &r.AddCounter("ingot_remote_write_requests_rejected_total",
                                    "Remote-write requests not answered 204, by reason.", labels);
    }
    return m;
  }();
  return metrics;
}

// The series cache answering the decoder's "seen these label bytes before?": an entry exists only
// for label fields that passed the checks and resolved, so the decoder skips checking them, and
// the entry itself comes back as the token (no second lookup).
class CachedLabelSets final : public KnownLabelSets {
 public:
  explicit CachedLabelSets(const SeriesCache& cache) : cache_(cache) {}
  bool Known(std::string_view raw_labels, std::uint64_t* token) override {
    SeriesCache::Entry entry;
    if (!cache_.Find(SeriesCache::HashPrefix(raw_labels), raw_labels, kRawKey, &entry)) {
      return false;
    }
    *token = Pack(entry);
    return true;
  }
  static std::uint64_t Pack(SeriesCache::Entry entry) {
    return static_cast<std::uint64_t>(entry.sid) << 8 | static_cast<std::uint8_t>(entry.type);
  }
  // Three lookups in flight: the slot of key i is fetched while key i - kAhead's bytes are, and
  // key i - 2 * kAhead is compared (10,000 series' keys and slots do not fit in a core's caches).
  void KnownMany(std::span<const std::string_view> raw_labels, std::span<std::uint8_t> known,
                 std::span<std::uint64_t> tokens) override {
    constexpr std::size_t kAhead = 8;
    std::uint64_t hashes[2 * kAhead];
    const std::size_t n = raw_labels.size();
    // Key k's hash sits in hashes[k % (2 * kAhead)] from its hashing until its comparison, which
    // comes first in the iteration that hashes key k + 2 * kAhead into the same place.
    for (std::size_t i = 0; i < n + 2 * kAhead; ++i) {
      if (i >= 2 * kAhead) {
        const std::size_t k = i - 2 * kAhead;
        SeriesCache::Entry entry;
        known[k] = cache_.FindHashed(hashes[k % (2 * kAhead)], raw_labels[k], kRawKey, &entry);
        if (known[k]) tokens[k] = Pack(entry);
      }
      if (i >= kAhead && i - kAhead < n) cache_.PrefetchKey(hashes[(i - kAhead) % (2 * kAhead)]);
      if (i < n) {
        const std::uint64_t h = SeriesCache::Hash(SeriesCache::HashPrefix(raw_labels[i]), kRawKey);
        hashes[i % (2 * kAhead)] = h;
        cache_.Prefetch(h);
      }
    }
  }
  static SeriesCache::Entry Unpack(std::uint64_t token) {
    return SeriesCache::Entry{static_cast<SeriesId>(token >> 8),
                              static_cast<ValueType>(token & 0xff)};
  }

 private:
  const SeriesCache& cache_;
};

RemoteWriteRejection RejectionOf(RemoteWriteError e) {
  switch (e) {
    case RemoteWriteError::kTooLarge:
      return RemoteWriteRejection::kTooLarge;
    case RemoteWriteError::kSnappy:
      return RemoteWriteRejection::kSnappy;
    case RemoteWriteError::kLabels:
      return RemoteWriteRejection::kLabels;
    case RemoteWriteError::kTimestamp:
      return RemoteWriteRejection::kTimestamp;
    default:
      return RemoteWriteRejection::kProtobuf;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// "" when `content_type` is acceptable for remote write 1.0, else why not.
std::string CheckContentType(std::string_view content_type) {
  content_type = Trim(content_type);
  if (content_type.empty()) return "";
  const std::size_t semi = content_type.find(';');
  const std::string_view media = Trim(content_type.substr(0, semi));
  if (!EqualsIgnoreCase(media, "application/x-protobuf")) {
    std::string why = "unsupported Content-Type \"";
    why.append(content_type).append("\": remote write sends application/x-protobuf");
    return why;
  }
  std::string_view params = semi == std::string_view::npos ? "" : content_type.substr(semi + 1);
  while (!params.empty()) {
    const std::size_t next = params.find(';');
    const std::string_view param = Trim(params.substr(0, next));
    params = next == std::string_view::npos ? "" : params.substr(next + 1);
    const std::size_t eq = param.find('=');
    if (eq == std::string_view::npos || !EqualsIgnoreCase(Trim(param.substr(0, eq)), "proto")) {
      continue;
    }
    std::string_view proto = Trim(param.substr(eq + 1));
    if (proto.size() >= 2 && proto.front() == '"' && proto.back() == '"') {
      proto = proto.substr(1, proto.size() - 2);
    }
    if (proto == "prometheus.WriteRequest") continue;
    std::string why = "unsupported protobuf message \"";
    why.append(proto).append(
        "\": this endpoint speaks remote write 1.0 (prometheus.WriteRequest); configure the client "
        "with protobuf_message: prometheus.WriteRequest");
    return why;
  }
  return "";
}

// `name{k="v", ...}` as Prometheus prints a series, cut after `max_bytes`.
std::string DescribeLabels(std::string_view name, std::span<const TagView> tags,
                           std::size_t max_bytes) {
  std::string out(name);
  out.push_back('{');
  for (std::size_t i = 0; i < tags.size() && out.size() < max_bytes; ++i) {
    if (i > 0) out.append(", ");
    out.append(tags[i].first).append("=\"").append(tags[i].second).append("\"");
  }
  if (out.size() > max_bytes) {
    out.resize(max_bytes);
    out.append("...");
  }
  out.push_back('}');
  return out;
}

// The value of a sample as `type` stores it: a float's bits, or an integer when the double is one
// exactly (a float into an integer series converts only then). False when it does not convert.
bool StoredBits(ValueType type, std::uint64_t float_bits, std::uint64_t* out) {
  if (type == ValueType::kFloat) {
    *out = float_bits;
    return true;
  }
  if (type != ValueType::kInteger) return false;
  const double v = std::bit_cast<double>(float_bits);
  // [-2^63, 2^63): every integral double in it converts exactly.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || std::trunc(v) != v) {
    return false;
  }
  *out = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  return true;
}

}  // namespace

const char* RemoteWriteRejectionName(RemoteWriteRejection r) noexcept {
  switch (r) {
    case RemoteWriteRejection::kContentEncoding:
      return "content_encoding";
    case RemoteWriteRejection::kContentType:
      return "content_type";
    case RemoteWriteRejection::kTooLarge:
      return "too_large";
    case RemoteWriteRejection::kSnappy:
      return "snappy";
    case RemoteWriteRejection::kProtobuf:
      return "protobuf";
    case RemoteWriteRejection::kLabels:
      return "labels";
    case RemoteWriteRejection::kTimestamp:
      return "timestamp";
    case RemoteWriteRejection::kNewSeriesRate:
      return "new_series_rate";
    case RemoteWriteRejection::kStorage:
      return "storage";
    case RemoteWriteRejection::kPartial:
      return "partial";
  }
  return "unknown";
}

// Everything one request needs besides the shards: kept between requests.
struct RemoteWriteHandler::State {
  RemoteWriteDecoder decoder;
  std::unique_ptr<SeriesCache> cache;
  std::vector<SeriesCache::Entry> resolved;  // per decoded series; sid 0: refused
  std::vector<std::uint8_t> definition_pending;
  std::vector<TagView> tags;
  std::string cache_key;
  std::string series_key;
  std::vector<std::unique_ptr<Batch>> open;  // one per shard
  // Full batches not handed over yet (a queue was full where the request may not block), in the
  // order they were filled; once one is parked every later one is, so each shard's order holds.
  std::vector<std::pair<int, std::unique_ptr<Batch>>> parked;
  Completion completion{WriteProtocol::kRemoteWrite};
  // This request's progress and findings.
  std::size_t next_series = 0;
  RemoteWriteCounts counts;
  std::uint64_t refused_series = 0;
  std::uint64_t refused_samples = 0;
  std::uint64_t type_conflicts = 0;
  std::string first_refusal;
};

// A request's state while its `rest` has not run; the state is handed over, never moved.
struct RemoteWriteHandler::PendingState {
  explicit PendingState(std::unique_ptr<State> s) : state(std::move(s)) {}
  // A `rest` dropped without being run still must not leave batches pointing at a freed
  // completion.
  ~PendingState() {
    if (state) (void)state->completion.Wait();
  }
  std::unique_ptr<State> Take(const RemoteWriteHandler& handler) {
    handler.SubmitSamples(*state, /*may_block=*/true);
    return std::move(state);
  }
  std::unique_ptr<State> state;
};

RemoteWriteHandler::RemoteWriteHandler(ShardSet& shards, SeriesIndex& index,
                                       const IngestOptions& options)
    : shards_(shards), index_(index), options_(options) {
  RwMetrics();  // registered up front, so /metrics shows them before the first request
}

RemoteWriteHandler::~RemoteWriteHandler() = default;

std::unique_ptr<RemoteWriteHandler::State> RemoteWriteHandler::AcquireState() const {
  std::unique_ptr<State> state;
  {
    MutexLock lock(states_mu_);
    if (!states_.empty()) {
      state = std::move(states_.back());
      states_.pop_back();
    }
  }
  if (!state) state = std::make_unique<State>();
  if (!state->cache) {
    state->cache = std::make_unique<SeriesCache>(kMaxCachedSeries, kMaxCachedKeyBytes);
  }
  state->open.resize(static_cast<std::size_t>(shards_.shard_count()));
  state->completion.Reset();
  state->parked.clear();
  state->next_series = 0;
  state->counts = {};
  state->refused_series = state->refused_samples = state->type_conflicts = 0;
  state->first_refusal.clear();
  return state;
}

void RemoteWriteHandler::ReleaseState(std::unique_ptr<State> state, bool keep_cache) const {
  if (!keep_cache) state->cache.reset();
  state->decoder.ShrinkTo(kMaxRetainedDecoderBytes);
  MutexLock lock(states_mu_);
  if (states_.size() < kPooledStates) states_.push_back(std::move(state));
}

namespace {

// Counts a refused request and fills `response` with its answer.
RemoteWriteResponse& Refuse(RemoteWriteResponse& response, RemoteWriteRejection why, int status,
                            std::string message) {
  RwMetrics().rejected[static_cast<int>(why)]->Add();
  // Refused requests share one budget so that a misconfigured sender cannot flood the log.
  static RateLimiter limiter(5);
  std::uint64_t suppressed = 0;
  if (limiter.Allow(&suppressed)) {
    Logger("ingest")->warn(
        "http /api/v1/write answered {}: {}{}", status, message,
        suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
  response.status = status;
  response.body = std::move(message);
  response.body.push_back('\n');
  return response;
}

}  // namespace

RemoteWriteResponse RemoteWriteHandler::Handle(const RemoteWriteRequest& request,
                                               bool may_block) const {
  RemoteWriteResponse response;
  if (!may_block && (request.body.size() > kInlineBodyBytes || router_factory_)) {
    response.rest = [this, request] { return Handle(request, /*may_block=*/true); };
    return response;
  }
  RemoteWriteMetrics& metrics = RwMetrics();
  metrics.requests->Add();
  auto fail = [&](RemoteWriteRejection why, int status, std::string message) {
    return Refuse(response, why, status, std::move(message));
  };

  const std::string_view encoding = Trim(request.content_encoding);
  if (!request.decoded && !encoding.empty() && !EqualsIgnoreCase(encoding, "snappy")) {
    std::string message = "unsupported Content-Encoding \"";
    message.append(encoding).append("\": remote write bodies are snappy-compressed (block format)");
    return fail(RemoteWriteRejection::kContentEncoding, 415, std::move(message));
  }
  if (std::string why = CheckContentType(request.content_type);
      !request.decoded && !why.empty()) {
    return fail(RemoteWriteRejection::kContentType, 415, std::move(why));
  }

  std::unique_ptr<State> state = AcquireState();
  State& s = *state;
  CachedLabelSets known(*s.cache);
  const RemoteWriteError error =
      s.decoder.Decode(request.body, options_.max_body_bytes, "ingest.max_body_bytes", &known,
                       request.decoded ? RemoteWriteDecoder::BodyFormat::kProtobuf
                                       : RemoteWriteDecoder::BodyFormat::kSnappy);
  if (error != RemoteWriteError::kNone) {
    std::string message = s.decoder.message();
    ReleaseState(std::move(state), /*keep_cache=*/true);
    return fail(RejectionOf(error), error == RemoteWriteError::kTooLarge ? 413 : 400,
                std::move(message));
  }
  s.counts = s.decoder.counts();
  metrics.series->Add(s.counts.series);
  metrics.samples->Add(s.counts.samples);
  if (s.counts.exemplars) metrics.exemplars->Add(s.counts.exemplars);
  if (s.counts.histograms) metrics.histograms->Add(s.counts.histograms);
  if (s.counts.metadata) metrics.metadata->Add(s.counts.metadata);

  const std::span<const RemoteWriteSeries> series = s.decoder.series();
  if (router_factory_) {
    std::unique_ptr<SeriesRouter> router = router_factory_();
    std::string_view name;
    for (const RemoteWriteSeries& one : series) {
      RemoteWriteDecoder::LabelsOf(one, &name, &s.tags);
      router->RouteSeries(one.message, name, s.tags);
    }
    const Status st = router->Finish();
    ReleaseState(std::move(state), /*keep_cache=*/true);
    if (!st.ok()) {
      // Nothing of the request may be stored; a retry is safe (a sample stored twice is one).
      response.retry_after_s = 1;
      return fail(RemoteWriteRejection::kStorage, 503,
                  "the cluster's log did not store the samples: " + st.ToString());
    }
    return response;
  }
  // Every series first, so that a rate-limited one stops the request before anything is stored.
  s.resolved.resize(series.size());
  s.definition_pending.assign(series.size(), 0);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const RemoteWriteSeries& one = series[i];
    if (one.known) {
      s.resolved[i] = CachedLabelSets::Unpack(one.known_token);
      continue;
    }
    std::string_view key = one.raw_labels;
    std::string_view kind = kRawKey;
    std::string_view name;
    bool labels_read = false;
    if (key.empty()) {
      // Labels interleaved with other fields: the key is written out.
      RemoteWriteDecoder::LabelsOf(one, &name, &s.tags);
      labels_read = true;
      s.cache_key.assign(name);
      for (const auto& [k, v] : s.tags) {
        s.cache_key.push_back(kKeySeparator);
        s.cache_key.append(k);
        s.cache_key.push_back(kKeySeparator);
        s.cache_key.append(v);
      }
      key = s.cache_key;
      kind = kBuiltKey;
    }
    const std::uint64_t hash = SeriesCache::HashPrefix(key);
    if (s.cache->Find(hash, key, kind, &s.resolved[i])) continue;
    // Slow path: the canonical key, then the index (creates the series when new).
    if (!labels_read) RemoteWriteDecoder::LabelsOf(one, &name, &s.tags);
    BuildLabelSetKey(name, s.tags, &s.series_key);
    ResolvedSeries resolved;
    const Status st = index_.Resolve(s.series_key, ValueType::kFloat, &resolved);
    if (!st.ok()) {
      if (resolved.rejection == SeriesRejection::kRate) {
        // Series already created stay: the client's retry finds them and gets further. The
        // cache is not kept: it vouches for definitions that this request never logged.
        ReleaseState(std::move(state), /*keep_cache=*/false);
        std::string message = "new series refused: ";
        message.append(st.message()).append("; retry later");
        response.retry_after_s = kRetryAfterS;
        return fail(RemoteWriteRejection::kNewSeriesRate, 429, std::move(message));
      }
      s.resolved[i] = SeriesCache::Entry{kInvalidSeriesId, ValueType::kFloat};
      ++s.refused_series;
      s.refused_samples += one.samples;
      if (resolved.rejection == SeriesRejection::kNone) {
        Metrics().points_storage_error->Add(one.samples);
      }
      if (s.first_refusal.empty()) {
        s.first_refusal = "series ";
        s.first_refusal.append(DescribeLabels(name, s.tags, 200))
            .append(" refused: ")
            .append(st.message());
      }
      continue;
    }
    s.resolved[i] = SeriesCache::Entry{resolved.sid, resolved.type};
    s.definition_pending[i] = resolved.definition_pending ? 1 : 0;
    s.cache->Insert(hash, key, kind, s.resolved[i]);
  }

  // Where it may not block, a request whose batches are all handed over waits a moment for them:
  // they are usually being applied right then by whoever holds the shard.
  if (SubmitSamples(s, may_block) &&
      (may_block || s.completion.done() || s.completion.WaitFor(kInlineWait))) {
    return Finish(std::move(state));
  }
  // The rest waits for the shards on a thread that may block. The state stays where it is:
  // queued batches point at its completion.
  auto pending = std::make_shared<PendingState>(std::move(state));
  response.rest = [this, pending] { return Finish(pending->Take(*this)); };
  return response;
}

bool RemoteWriteHandler::SubmitSamples(State& s, bool may_block) const {
  // Full batches parked by an earlier call go first, in their order.
  if (!s.parked.empty()) {
    if (!may_block) return false;
    for (auto& [shard, batch] : s.parked) shards_.Submit(shard, std::move(batch));
    s.parked.clear();
  }
  // Samples batched per shard; a full batch goes to its shard at once, the rest at the end,
  // applied by this thread itself where the shard is idle.
  const std::span<const RemoteWriteSeries> series = s.decoder.series();
  auto open_batch = [&](int shard) -> Batch& {
    std::unique_ptr<Batch>& batch = s.open[static_cast<std::size_t>(shard)];
    if (!batch) {
      batch = shards_.Acquire();
      batch->completion = &s.completion;
    }
    return *batch;
  };
  // A full batch: handed over, or parked (with every later one) when that would wait.
  auto hand_over = [&](int shard) {
    std::unique_ptr<Batch>& batch = s.open[static_cast<std::size_t>(shard)];
    if (may_block) {
      shards_.Submit(shard, std::move(batch));
    } else if (!s.parked.empty() || !shards_.TrySubmit(shard, batch, /*apply_when_idle=*/false)) {
      s.parked.emplace_back(shard, std::move(batch));
    }
  };
  for (; s.next_series < series.size(); ++s.next_series) {
    const std::size_t i = s.next_series;
    const SeriesCache::Entry entry = s.resolved[i];
    if (entry.sid == kInvalidSeriesId) continue;
    const int shard = shards_.ShardOf(entry.sid);
    // Logged ahead of the series' first sample, in its shard's WAL.
    if (s.definition_pending[i]) index_.AppendDefinition(entry.sid, &open_batch(shard).definitions);
    Batch* batch = &open_batch(shard);
    RemoteWriteDecoder::ForEachSample(series[i], [&](std::int64_t ts_ms, std::uint64_t bits) {
      std::uint64_t stored = 0;
      if (!StoredBits(entry.type, bits, &stored)) {
        ++s.type_conflicts;
        return;
      }
      batch->points.push_back(
          PointRecord{entry.sid, ts_ms * remote_write::kNanosPerMilli, stored, entry.type});
      if (batch->points.size() >= Batch::kCapacity) {
        hand_over(shard);
        batch = &open_batch(shard);
      }
    });
  }
  if (!s.parked.empty()) return false;  // the open batches wait behind the parked ones
  if (!may_block) {
    // Shards busy with another request's batch are tried again after the others, before this
    // request queues there and waits.
    for (std::size_t shard = 0; shard < s.open.size(); ++shard) {
      if (s.open[shard]) shards_.TryApply(static_cast<int>(shard), s.open[shard]);
    }
  }
  for (std::size_t shard = 0; shard < s.open.size(); ++shard) {
    if (!s.open[shard]) continue;
    if (may_block) {
      shards_.SubmitOrApply(static_cast<int>(shard), std::move(s.open[shard]));
    } else if (!shards_.TrySubmit(static_cast<int>(shard), s.open[shard],
                                  /*apply_when_idle=*/true)) {
      s.parked.emplace_back(static_cast<int>(shard), std::move(s.open[shard]));
    }
  }
  return s.parked.empty();
}

RemoteWriteResponse RemoteWriteHandler::Finish(std::unique_ptr<State> state) const {
  State& s = *state;
  RemoteWriteResponse response;
  const Status stored = s.completion.Wait();
  if (s.type_conflicts) Metrics().points_type_conflict->Add(s.type_conflicts);
  const std::uint64_t storage_rejected = s.completion.rejected();
  const std::uint64_t series_count = s.decoder.series().size();
  const std::uint64_t refused_series = s.refused_series;
  const std::uint64_t refused_samples = s.refused_samples;
  const std::uint64_t type_conflicts = s.type_conflicts;
  const std::uint64_t samples = s.counts.samples;
  std::string first_refusal = std::move(s.first_refusal);
  ReleaseState(std::move(state), /*keep_cache=*/stored.ok());

  if (!stored.ok()) {
    std::string message = "storage failed, samples may not be durable: ";
    message.append(stored.ToString());
    return Refuse(response, RemoteWriteRejection::kStorage, 500, std::move(message));
  }
  if (refused_series || type_conflicts || storage_rejected) {
    std::string message = "partial write: ";
    if (!first_refusal.empty()) {
      message.append(first_refusal).append("; ");
    }
    if (type_conflicts) {
      message.append(std::to_string(type_conflicts))
          .append(
              " samples of integer or boolean series (written by line protocol) that are "
              "not integers; ");
    }
    if (storage_rejected) {
      message.append(std::to_string(storage_rejected))
          .append(
              " samples refused by storage (older than storage.late_max_age behind their "
              "series' sealed data, or past the retention); ");
    }
    message.append("dropped=")
        .append(std::to_string(refused_samples + type_conflicts + storage_rejected))
        .append(" of ")
        .append(std::to_string(samples))
        .append(" samples in ")
        .append(std::to_string(series_count))
        .append(" series");
    return Refuse(response, RemoteWriteRejection::kPartial, 400, std::move(message));
  }
  response.status = 204;
  return response;
}

}  // namespace ingot::ingest
