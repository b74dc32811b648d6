#include "cluster/line_router.h"

#include <charconv>
#include <chrono>
#include <random>
#include <string_view>
#include <unordered_map>

#include <xxhash.h>
#include <zstd.h>

#include "cluster/batch_format.h"
#include "cluster/partition.h"
#include "config/logging.h"
#include "config/metrics.h"

namespace ingot::cluster {
namespace {

// Router states (a writer, buffers, caches) kept between requests: as many as requests usually
// run at once.
constexpr std::size_t kPooledStates = 16;
// One of zstd's fast levels: line protocol shrinks ~7x (5 bytes per cpu-workload value), which
// the log's servers then store, copy to replicas and send to owners. Measured on a one-node
// cluster (./dev compare-cluster): level 1 (3.6 B/value) spent a fifth of ingotd's CPU in zstd;
// -3 cut ingotd's CPU by ~15% for 40% more log bytes, and -5/-7 gained little more for R1 while
// R3's three servers paid for the extra bytes.
constexpr int kZstdLevel = -3;
// A connection's cache of line prefix -> partition; cleared when it grows past this many.
constexpr std::size_t kMaxCachedPrefixes = 1 << 16;
// A long-lived connection waits for the log every this many messages, so that a failure is
// retried and reported while the connection lives, and memory stays bounded.
constexpr std::uint64_t kMessagesPerFlush = 64;

struct RouterMetrics {
  Counter* messages;
  Counter* bytes;
  Counter* failures;
  Histogram* flush_seconds;
};

RouterMetrics& Metrics() {
  static RouterMetrics m = [] {
    auto& r = MetricsRegistry::Default();
    RouterMetrics out{};
    out.messages = &r.AddCounter("ingot_cluster_published_messages_total",
                                 "Messages this node published to the cluster's log.");
    out.bytes = &r.AddCounter("ingot_cluster_published_bytes_total",
                              "Bytes of the messages this node published to the log.");
    out.failures = &r.AddCounter(
        "ingot_cluster_publish_failures_total",
        "Waits for the log that failed: an HTTP writer was answered 503; over TCP, which has no "
        "answer, the lines of those messages are lost and logged.");
    out.flush_seconds = &r.AddHistogram(
        "ingot_cluster_publish_seconds",
        "Time from a request's last message to the log's acknowledgement of all its messages.",
        ExponentialBuckets(0.0001, 2, 16));
    return out;
  }();
  return m;
}

std::string IncarnationHex() {
  std::random_device rd;
  const std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
                          static_cast<std::uint64_t>(
                              std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[17];
  auto [end, ec] = std::to_chars(buf, buf + 16, v, 16);
  (void)ec;
  return std::string(buf, end);
}

struct PrefixHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }
};

}  // namespace

// What a router owns beyond one request, handed back to LineRouting when it ends so that the
// next request starts with its buffers grown, its series prefixes known and its writer's
// connection state set up.
struct LineRouting::RouterState {
  std::unique_ptr<LogWriter> writer;
  std::vector<std::string> buffers;  // per partition: header space, then lines
  std::unordered_map<std::string, PartitionId, PrefixHash, std::equal_to<>> partitions;
  std::string message;  // a compressed message
  std::unique_ptr<ZSTD_CCtx, std::size_t (*)(ZSTD_CCtx*)> zstd{ZSTD_createCCtx(), ZSTD_freeCCtx};
};

class PartitionRouter final : public ingest::LineRouter, public ingest::SeriesRouter {
 public:
  PartitionRouter(LineRouting& routing, std::uint8_t kind, ingest::Precision precision)
      : routing_(routing),
        kind_(kind),
        precision_(precision),
        unit_ns_(ingest::PrecisionNanos(precision)),
        state_(routing.TakeState()) {}

  ~PartitionRouter() override {
    // A state with messages not waited for keeps its writer's failures to itself.
    if (unflushed_ == 0) routing_.GiveBack(std::move(state_));
  }

  void Route(const ingest::ParsedLine& line, std::string_view raw) override {
    PartitionId p;
    auto it = state_->partitions.find(line.series_prefix);
    if (it != state_->partitions.end()) {
      p = it->second;
    } else {
      LineIdentity(line, &tags_scratch_, &identity_);
      p = PartitionOfIdentity(identity_, routing_.options_.partitions);
      if (state_->partitions.size() >= kMaxCachedPrefixes) state_->partitions.clear();
      state_->partitions.emplace(std::string(line.series_prefix), p);
    }
    std::string& buffer = state_->buffers[p];
    if (buffer.empty()) buffer.resize(kBatchHeaderBytes);
    if (line.has_timestamp) {
      buffer.append(raw);
    } else {
      // Every owner must store the same point: the time is fixed here, in the line's unit.
      while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\r')) {
        raw.remove_suffix(1);
      }
      buffer.append(raw).push_back(' ');
      char digits[24];
      auto [end, ec] = std::to_chars(digits, digits + sizeof digits, line.ts_ns / unit_ns_);
      (void)ec;
      buffer.append(digits, end);
    }
    buffer.push_back('\n');
    if (buffer.size() >= routing_.options_.batch_max_bytes) Publish(p);
  }

  void RouteSeries(std::string_view message, std::string_view metric_name,
                   std::span<const TagView> labels) override {
    LabelSetIdentity(metric_name, labels, &identity_);
    const PartitionId p = PartitionOfIdentity(identity_, routing_.options_.partitions);
    std::string& buffer = state_->buffers[p];
    if (buffer.empty()) buffer.resize(kBatchHeaderBytes);
    // A WriteRequest's `timeseries` field (1, length-delimited) around the series as sent.
    buffer.push_back('\x0a');
    std::uint64_t n = message.size();
    while (n >= 0x80) {
      buffer.push_back(static_cast<char>(0x80 | (n & 0x7f)));
      n >>= 7;
    }
    buffer.push_back(static_cast<char>(n));
    buffer.append(message);
    if (buffer.size() >= routing_.options_.batch_max_bytes) Publish(p);
  }

  void Send() override {
    for (PartitionId p = 0; p < state_->buffers.size(); ++p) {
      if (!state_->buffers[p].empty()) Publish(p);
    }
    if (unflushed_ >= kMessagesPerFlush) {
      const Status st = Flush();
      if (!st.ok()) failed_ = st;
    }
  }

  Status Finish() override {
    Send();
    Status st = Flush();
    if (st.ok() && !failed_.ok()) st = failed_;
    failed_ = Status::OK();
    return st;
  }

 private:
  void Publish(PartitionId p) {
    std::string& buffer = state_->buffers[p];
    BatchHeader header{kind_, static_cast<std::uint8_t>(precision_), 0, routing_.clock_.NowNs()};
    std::string_view message = buffer;
    if (routing_.compress_) {
      std::string& out = state_->message;
      const std::size_t lines = buffer.size() - kBatchHeaderBytes;
      out.resize(kBatchHeaderBytes + ZSTD_compressBound(lines));
      const std::size_t n =
          ZSTD_compressCCtx(state_->zstd.get(), out.data() + kBatchHeaderBytes,
                            out.size() - kBatchHeaderBytes, buffer.data() + kBatchHeaderBytes,
                            lines, kZstdLevel);
      if (!ZSTD_isError(n)) {
        out.resize(kBatchHeaderBytes + n);
        header.flags = kBatchFlagZstd;
        WriteBatchHeader(header, &out);
        message = out;
      }
    }
    if (header.flags == 0) WriteBatchHeader(header, &buffer);
    routing_.NextDedupId(&id_);
    state_->writer->Publish(p, id_, message);
    Metrics().messages->Add();
    Metrics().bytes->Add(message.size());
    buffer.clear();
    ++unflushed_;
  }

  Status Flush() {
    if (unflushed_ == 0) return Status::OK();
    const std::uint64_t published = unflushed_;
    const auto started = std::chrono::steady_clock::now();
    Status st = state_->writer->Flush(static_cast<int>(routing_.options_.publish_timeout_ms));
    Metrics().flush_seconds->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    unflushed_ = 0;
    if (!st.ok()) {
      Metrics().failures->Add();
      static RateLimiter limiter(1);
      std::uint64_t suppressed = 0;
      if (limiter.Allow(&suppressed)) {
        Logger("cluster")->error(
            "the log did not store {} messages in {} ms: {} (HTTP writers are answered 503; "
            "lines of a TCP connection in them are lost){}",
            published, routing_.options_.publish_timeout_ms, st.ToString(),
            suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
      }
    }
    return st;
  }

  LineRouting& routing_;
  const std::uint8_t kind_;
  const ingest::Precision precision_;
  const std::int64_t unit_ns_;
  std::unique_ptr<LineRouting::RouterState> state_;
  std::vector<std::pair<std::string, std::string>> tags_scratch_;
  std::string identity_;
  std::string id_;
  std::uint64_t unflushed_ = 0;  // messages published since the last Flush
  Status failed_;                // a Flush of Send() that failed, reported by Finish
};

LineRouting::LineRouting(Log& log, const ClusterOptions& options, const Clock& clock)
    : log_(log),
      options_(options),
      clock_(clock),
      id_prefix_(options.node_id + "." + IncarnationHex() + "."),
      compress_(options.compress_log) {}

LineRouting::~LineRouting() = default;

std::unique_ptr<ingest::LineRouter> LineRouting::NewRouter(ingest::Precision precision) {
  return std::make_unique<PartitionRouter>(*this, kBatchKindLineProtocol, precision);
}

std::unique_ptr<ingest::SeriesRouter> LineRouting::NewSeriesRouter() {
  return std::make_unique<PartitionRouter>(*this, kBatchKindRemoteWrite,
                                           ingest::Precision::kNanoseconds);
}

std::unique_ptr<LineRouting::RouterState> LineRouting::TakeState() {
  {
    MutexLock lock(mu_);
    if (!states_.empty()) {
      auto state = std::move(states_.back());
      states_.pop_back();
      return state;
    }
  }
  auto state = std::make_unique<RouterState>();
  state->writer = log_.NewWriter();
  state->buffers.resize(options_.partitions);
  return state;
}

void LineRouting::GiveBack(std::unique_ptr<RouterState> state) {
  MutexLock lock(mu_);
  if (states_.size() < kPooledStates) states_.push_back(std::move(state));
}

void LineRouting::NextDedupId(std::string* out) {
  const std::uint64_t n = next_message_.fetch_add(1, std::memory_order_relaxed);
  out->assign(id_prefix_);
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  (void)ec;
  out->append(digits, end);
}

}  // namespace ingot::cluster
