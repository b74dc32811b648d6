#include "cluster/applier.h"

#include <chrono>

#include <zstd.h>

#include "cluster/batch_format.h"
#include "config/logging.h"
#include "config/metrics.h"
#include "ingest/line_ingester.h"

namespace ingot::cluster {
namespace {

// Messages read and applied together: one durability wait per batch.
constexpr std::size_t kMessagesPerBatch = 64;
constexpr int kReadWaitMs = 200;
// The accepting node checked ingest.max_line_bytes before it added " <time>" to lines written
// without a timestamp; owners allow for that much more (a space and up to 20 digits).
constexpr std::size_t kAddedTimestampBytes = 21;
// After a failed read or a storage error, before trying again.
constexpr auto kRetryPause = std::chrono::milliseconds(500);

struct ApplierMetrics {
  Counter* messages;
  Counter* corrupt;
  Counter* gaps;
  Counter* errors;
};

ApplierMetrics& Metrics() {
  static ApplierMetrics m = [] {
    auto& r = MetricsRegistry::Default();
    ApplierMetrics out{};
    out.messages = &r.AddCounter("ingot_cluster_applied_messages_total",
                                 "Log messages this node applied into its storage.");
    out.corrupt = &r.AddCounter("ingot_cluster_corrupt_messages_total",
                                "Log messages skipped because their header failed validation.");
    out.gaps = &r.AddCounter(
        "ingot_cluster_log_gaps_total",
        "Times a partition's next message was no longer in the log (past its retention): the "
        "messages in between are missing from this node.");
    out.errors = &r.AddCounter("ingot_cluster_apply_errors_total",
                               "Reads of the log or storage writes that failed and were retried.");
    return out;
  }();
  return m;
}

// The lines of a message whose body is a zstd frame, into `*out`. Corruption when the frame does
// not declare its size, declares more than kMaxBatchBodyBytes, or does not decode to it.
Status Decompress(ZSTD_DCtx* dctx, std::string_view frame, std::string* out) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
      size > kMaxBatchBodyBytes) {
    return Status::Corruption("log message body is not a zstd frame of at most " +
                              std::to_string(kMaxBatchBodyBytes) + " bytes");
  }
  out->resize(static_cast<std::size_t>(size));
  const std::size_t n = ZSTD_decompressDCtx(dctx, out->data(), out->size(), frame.data(),
                                            frame.size());
  if (ZSTD_isError(n) || n != size) {
    return Status::Corruption(std::string("log message body does not decompress: ") +
                              (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  }
  return Status::OK();
}

}  // namespace

Applier::Applier(Log& log, Positions& positions, ingest::ShardSet& shards, SeriesIndex& index,
                 const Clock& clock, const IngestOptions& options,
                 const ingest::RemoteWriteHandler& remote_write)
    : log_(log),
      positions_(positions),
      shards_(shards),
      index_(index),
      clock_(clock),
      options_(options),
      remote_write_(remote_write) {}

Applier::~Applier() { Stop(); }

void Applier::SetOwned(const std::vector<PartitionId>& owned) {
  std::vector<std::thread> ended;
  {
    MutexLock lock(mu_);
    for (auto& [id, partition] : partitions_) {
      const bool keep = std::find(owned.begin(), owned.end(), id) != owned.end();
      if (!keep && partition->thread.joinable()) {
        partition->run = false;
        ended.push_back(std::move(partition->thread));
      }
    }
    for (PartitionId id : owned) {
      auto& slot = partitions_[id];
      if (slot != nullptr && slot->thread.joinable()) continue;
      if (slot == nullptr) {
        slot = std::make_unique<Partition>();
        slot->id = id;
      }
      slot->run = true;
      Partition* p = slot.get();
      p->thread = std::thread([this, p] { Consume(p); });
    }
  }
  // Joined outside the lock: a thread finishing its batch reads nothing guarded by it.
  for (auto& t : ended) t.join();
}

void Applier::Stop() {
  std::vector<std::thread> ended;
  {
    MutexLock lock(mu_);
    for (auto& [id, partition] : partitions_) {
      partition->run = false;
      if (partition->thread.joinable()) ended.push_back(std::move(partition->thread));
    }
  }
  for (auto& t : ended) t.join();
}

std::vector<PartitionProgress> Applier::Progress() const {
  std::vector<PartitionProgress> out;
  MutexLock lock(mu_);
  for (const auto& [id, p] : partitions_) {
    out.push_back(PartitionProgress{id, p->applied.load(), p->pending.load(), p->consuming.load()});
  }
  return out;
}

PartitionProgress Applier::ProgressOf(PartitionId p) const {
  MutexLock lock(mu_);
  auto it = partitions_.find(p);
  if (it == partitions_.end()) return PartitionProgress{p, 0, 0, false};
  const Partition& one = *it->second;
  return PartitionProgress{p, one.applied.load(), one.pending.load(), one.consuming.load()};
}

void Applier::Consume(Partition* partition) {
  auto log = Logger("cluster");
  const PartitionId id = partition->id;
  const std::string context = "log partition " + std::to_string(id);
  LogSeq applied = positions_.Get(id);
  partition->applied = applied;
  partition->consuming = true;
  std::unique_ptr<ingest::SeriesCache> cache = ingest::LineIngester::NewCache();
  std::unique_ptr<LogReader> reader;
  std::vector<LogMessage> messages;
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> zstd(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::string lines;
  auto pause = [&] {
    const auto until = std::chrono::steady_clock::now() + kRetryPause;
    while (partition->run && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  while (partition->run) {
    if (reader == nullptr) {
      LogSeq first = 0, last = 0;
      Status st = log_.Bounds(id, &first, &last);
      if (st.ok() && first > applied + 1) {
        // Retention passed messages this node never applied: they are missing here (the
        // partition's other owners may have them; queries ask every node).
        Metrics().gaps->Add();
        log->warn("{}: messages {} to {} are no longer in the log; this node lacks them", context,
                  applied + 1, first - 1);
        applied = first - 1;
      }
      if (st.ok() && first == 0 && last == 0 && applied > 0) {
        // Retention emptied the partition: nothing to read until a message arrives (its
        // sequence then shows whether messages were missed).
        pause();
        continue;
      }
      if (st.ok()) st = log_.OpenReader(id, applied + 1, &reader);
      if (!st.ok()) {
        Metrics().errors->Add();
        log->warn("{}: cannot read the log from {}: {}", context, applied + 1, st.ToString());
        reader.reset();
        pause();
        continue;
      }
    }
    Status st = reader->Next(kMessagesPerBatch, kReadWaitMs, &messages);
    if (!st.ok()) {
      Metrics().errors->Add();
      log->warn("{}: reading the log after {}: {}", context, applied, st.ToString());
      reader.reset();
      pause();
      continue;
    }
    if (messages.empty()) {
      partition->pending = 0;
      continue;
    }
    Status remote_write_error;  // a storage failure of a remote-write message
    ingest::LineIngester ingester(shards_, index_, clock_, ingest::Precision::kNanoseconds,
                                  options_.max_line_bytes + kAddedTimestampBytes,
                                  ingest::WriteProtocol::kClusterLog,
                                  context, std::move(cache));
    ingester.set_log_string_fields(false);
    for (const LogMessage& m : messages) {
      BatchHeader header;
      std::string_view body;
      st = ReadBatch(m.payload, &header, &body);
      if (st.ok() && (header.flags & kBatchFlagZstd) != 0) {
        st = Decompress(zstd.get(), body, &lines);
        body = lines;
      }
      if (!st.ok()) {
        // Every owner skips it alike.
        Metrics().corrupt->Add();
        log->error("{} message {}: skipped: {}", context, m.seq, st.ToString());
        continue;
      }
      if (header.kind == kBatchKindRemoteWrite) {
        ingest::RemoteWriteRequest request;
        request.body = body;
        request.decoded = true;
        const ingest::RemoteWriteResponse r = remote_write_.Handle(request, /*may_block=*/true);
        if (r.status != 204) {
          // Decided alike on every owner: the same message, the same state.
          log->warn("{} message {}: remote-write samples refused ({}): {}", context, m.seq,
                    r.status, r.body);
          if (r.status >= 500) remote_write_error = Status::IOError(r.body);
        }
        continue;
      }
      ingester.set_precision(static_cast<ingest::Precision>(header.precision));
      ingester.Consume(body);
    }
    ingester.Finish();
    if (ingester.storage_status().ok() && !remote_write_error.ok()) {
      // Read the batch again, as below.
      Metrics().errors->Add();
      log->error("{}: storage failed applying messages {} to {}: {}", context,
                 messages.front().seq, messages.back().seq, remote_write_error.ToString());
      reader.reset();
      pause();
      continue;
    }
    if (!ingester.storage_status().ok()) {
      // Not applied durably: read the batch again once storage recovers.
      Metrics().errors->Add();
      log->error("{}: storage failed applying messages {} to {}: {}", context,
                 messages.front().seq, messages.back().seq, ingester.storage_status().ToString());
      cache = ingest::LineIngester::NewCache();
      reader.reset();
      pause();
      continue;
    }
    cache = ingester.ReleaseCache();
    if (cache == nullptr) cache = ingest::LineIngester::NewCache();
    applied = messages.back().seq;
    Metrics().messages->Add(messages.size());
    positions_.Set(id, applied);
    partition->applied = applied;
    partition->pending = messages.back().pending;
  }
  partition->consuming = false;
}

}  // namespace ingot::cluster
