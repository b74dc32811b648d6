#include "cluster/nats/nats_log.h"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "config/logging.h"
#include "config/thread_annotations.h"

namespace ingot::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kMaxMessageBytes = 1 << 20;
// The wait of one JetStream API request (stream info, consumer creation, ...).
constexpr int kApiWaitMs = 2000;
// How long EnsureLayout and OpenBucket wait for JetStream to become ready: a fresh 3-server
// cluster has no meta leader (and so refuses stream creation) for a few seconds.
constexpr auto kSetupPatience = std::chrono::seconds(20);
constexpr auto kSetupBackoffFirst = milliseconds(100);
constexpr auto kSetupBackoffMax = milliseconds(2000);
// Unacknowledged async publishes per writer before Publish blocks (for publish_attempt_ms).
constexpr int kMaxPendingPublishes = 4096;
constexpr auto kRepublishBackoffFirst = milliseconds(50);
constexpr auto kRepublishBackoffMax = milliseconds(1000);
// Publishes buffered while reconnecting; beyond it a publish fails and Flush retries it.
constexpr int kReconnectBufferBytes = 64 << 20;
constexpr int kReconnectWaitMs = 250;
constexpr int kPingIntervalMs = 5000;
// A reader's consumer is recreated when it has delivered nothing for this long although the
// stream holds messages after the reader's position (its server died, or it was deleted).
constexpr auto kReaderStallCheck = milliseconds(2000);
constexpr auto kReaderRetryPause = milliseconds(200);
constexpr int kMaxFetchBatch = 4096;
// The server deletes a reader's consumer after this long without a pull request (a reader
// nobody polls, or one whose process died); the reader recreates it when polled again.
constexpr std::int64_t kConsumerInactiveNs = 30'000'000'000;
constexpr int kWatchPollMs = 5000;
constexpr auto kWatchRetryPause = milliseconds(500);
constexpr auto kCloseWait = std::chrono::seconds(5);

constexpr const char* kMsgIdHeader = "Nats-Msg-Id";

const std::shared_ptr<spdlog::logger>& ClusterLogger() {
  static const std::shared_ptr<spdlog::logger> logger = Logger("cluster");
  return logger;
}

std::string Suppressed(std::uint64_t n) {
  return n > 0 ? fmt::format(" ({} similar messages suppressed)", n) : std::string();
}

// A failed nats.c call: its status, the JetStream error code when the server sent one, and the
// text nats.c kept for it. nats.c keeps the detail of the last failure per thread (a JetStream
// API error's description, say), so it is captured right after the call.
struct NatsFailure {
  natsStatus status = NATS_OK;
  int js_code = 0;
  std::string text;

  // Failures that pass while a cluster forms, elects leaders or loses a server.
  bool transient() const {
    switch (status) {
      case NATS_TIMEOUT:
      case NATS_NO_RESPONDERS:
      case NATS_CONNECTION_DISCONNECTED:
      case NATS_NOT_YET_CONNECTED:
      case NATS_IO_ERROR:
      case NATS_NO_SERVER:
      case NATS_STALE_CONNECTION:
        return true;
      default:
        break;
    }
    switch (js_code) {
      case JSClusterNotAvailErr:
      case JSClusterNotLeaderErr:
      case JSClusterNoPeersErr:
      case JSClusterIncompleteErr:
      case JSNotEnabledErr:
      case JSNotEnabledForAccountErr:
      case JSInsufficientResourcesErr:
      case JSStreamOfflineErr:
        return true;
      default:
        break;
    }
    // The key-value calls do not hand out the JetStream code, only its description.
    if (status == NATS_ERR) {
      std::string lower = text;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      for (const char* needle : {"temporarily unavailable", "not enabled", "no suitable peers",
                                 "insufficient resources", "not leader", "offline"}) {
        if (lower.find(needle) != std::string::npos) return true;
      }
    }
    return false;
  }
};

NatsFailure Capture(natsStatus s, int js_code = 0) {
  NatsFailure f;
  f.status = s;
  f.js_code = js_code;
  f.text = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  const char* last_text = nats_GetLastError(&last);
  std::string_view detail = last_text != nullptr ? last_text : "";
  // Drop the "(sub.c:703): " source location nats.c puts in front of some texts.
  if (!detail.empty() && detail.front() == '(') {
    const std::size_t end = detail.find("): ");
    if (end != std::string_view::npos) detail.remove_prefix(end + 3);
  }
  if (last == s && !detail.empty() && detail != f.text) {
    f.text += ": ";
    f.text += detail;
  }
  if (js_code != 0) f.text += fmt::format(" (JetStream error {})", js_code);
  return f;
}

Status CallFailed(std::string_view what, natsStatus s, int js_code = 0) {
  const NatsFailure f = Capture(s, js_code);
  if (s == NATS_INVALID_ARG) return Status::InvalidArgument(fmt::format("{}: {}", what, f.text));
  return Status::IOError(fmt::format("{}: {}", what, f.text));
}

// nats.c's library state (its timers, the async callback thread) is created once per process
// and never torn down: a client may be destroyed while others still use the library.
Status EnsureNatsOpen() {
  static std::once_flag once;
  static natsStatus opened = NATS_OK;
  std::call_once(once, [] { opened = nats_Open(-1); });
  if (opened != NATS_OK) return CallFailed("nats_Open", opened);
  return Status::OK();
}

std::string StreamName(const std::string& cluster, PartitionId p) {
  return fmt::format("INGOT_{}_P{:03}", cluster, p);
}

std::string SubjectName(const std::string& cluster, PartitionId p) {
  return fmt::format("ingot.{}.p.{:03}", cluster, p);
}

// The partition a published message was for, from its subject's last token.
PartitionId PartitionOf(natsMsg* msg) {
  const char* subject = natsMsg_GetSubject(msg);
  if (subject == nullptr) return 0;
  const std::string_view s(subject);
  const std::size_t dot = s.rfind('.');
  PartitionId p = 0;
  for (char c : s.substr(dot == std::string_view::npos ? 0 : dot + 1)) {
    if (c < '0' || c > '9') return 0;
    p = p * 10 + static_cast<PartitionId>(c - '0');
  }
  return p;
}

bool ValidName(std::string_view name, std::size_t max_size, std::string_view extra) {
  if (name.empty() || name.size() > max_size) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

void SleepUntil(Clock::time_point t) { std::this_thread::sleep_until(t); }

struct StreamState {
  std::uint64_t msgs = 0;
  LogSeq first_seq = 0;
  LogSeq last_seq = 0;
  std::string leader;
};

Status GetStreamState(jsCtx* js, const std::string& stream, StreamState* out) {
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = kApiWaitMs;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetStreamInfo(&si, js, stream.c_str(), &jo, &jerr);
  if (s != NATS_OK) {
    if (s == NATS_NOT_FOUND) {
      return Status::NotFound(fmt::format("stream {} does not exist", stream));
    }
    return CallFailed(fmt::format("stream {}: info", stream), s, jerr);
  }
  out->msgs = si->State.Msgs;
  out->first_seq = si->State.FirstSeq;
  out->last_seq = si->State.LastSeq;
  out->leader =
      (si->Cluster != nullptr && si->Cluster->Leader != nullptr) ? si->Cluster->Leader : "";
  jsStreamInfo_Destroy(si);
  return Status::OK();
}

// Whether retention removed the message at `seq` (JetStream keeps the sequence counter of an
// emptied stream: first = last + 1).
bool Removed(const StreamState& state, LogSeq seq) {
  return state.msgs == 0 ? seq <= state.last_seq : seq < state.first_seq;
}

Status RemovedError(PartitionId p, const std::string& stream, LogSeq seq,
                    const StreamState& state) {
  return Status::NotFound(fmt::format(
      "partition {}: message {} is no longer in the log (stream {} holds {}..{})", p, seq, stream,
      state.msgs == 0 ? state.last_seq + 1 : state.first_seq, state.last_seq));
}

// ---------------------------------------------------------------------------------------------
// Writer

// Publishes through its own JetStream context, so that Flush waits for this writer's messages
// only. Every message is published asynchronously with a per-attempt ack wait; the ack handler
// (on the context's reply thread) files each failed message, and once every attempt of a round
// has been answered Flush republishes the failed ones, in publish order, with the same
// Nats-Msg-Id until JetStream stores them: after a server loss the stream's new leader stores the
// retry, or acknowledges it as a duplicate when the first attempt made it after all.
//
// Order: messages of one partition are stored in publish order unless a retry is needed; a
// retried message lands after those of its Flush that were stored at their first attempt. A
// successful Flush has stored all its messages before any published after it.
class NatsWriter final : public LogWriter {
 public:
  NatsWriter(natsConnection* nc, std::vector<std::string> subjects, int attempt_ms)
      : subjects_(std::move(subjects)), attempt_ms_(std::max(attempt_ms, 1)) {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    jo.PublishAsync.AckHandler = &NatsWriter::OnAck;
    jo.PublishAsync.AckHandlerClosure = this;
    jo.PublishAsync.MaxPending = kMaxPendingPublishes;
    jo.PublishAsync.StallWait = attempt_ms_;
    const natsStatus s = natsConnection_JetStream(&js_, nc, &jo);
    if (s != NATS_OK) {
      js_ = nullptr;
      setup_error_ = Capture(s).text;
    }
  }

  ~NatsWriter() override {
    Abandon();
    // A reply thread may still be inside OnAck for a message it took before Abandon.
    MutexLock lock(mu_);
    cv_.Wait(lock, [this] {
      mu_.AssertHeld();
      return inflight_ == 0;
    });
    jsCtx_Destroy(js_);
  }

  void Publish(PartitionId p, std::string_view dedup_id, std::string_view payload) override {
    std::string refusal;
    if (js_ == nullptr) {
      refusal = "no JetStream context: " + setup_error_;
    } else if (p >= subjects_.size()) {
      refusal =
          fmt::format("not in the layout ({} partitions; EnsureLayout first?)", subjects_.size());
    } else if (payload.size() > static_cast<std::size_t>(kMaxMessageBytes)) {
      refusal = fmt::format("a message of {} bytes exceeds the log's {} bytes", payload.size(),
                            kMaxMessageBytes);
    }
    if (!refusal.empty()) {
      MutexLock lock(mu_);
      rejected_.push_back({nullptr, p, 0, std::move(refusal)});
      return;
    }
    natsMsg* msg = nullptr;
    natsStatus s = natsMsg_Create(&msg, subjects_[p].c_str(), nullptr, payload.data(),
                                  static_cast<int>(payload.size()));
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, kMsgIdHeader, std::string(dedup_id).c_str());
    if (s != NATS_OK) {
      const std::string cause = Capture(s).text;
      natsMsg_Destroy(msg);
      MutexLock lock(mu_);
      rejected_.push_back({nullptr, p, 0, cause});
      return;
    }
    {
      MutexLock lock(mu_);
      order_[msg] = next_order_++;
    }
    Send(msg);
  }

  Status Flush(int timeout_ms) override {
    const auto deadline = Clock::now() + milliseconds(std::max(timeout_ms, 0));
    auto backoff = kRepublishBackoffFirst;
    std::vector<Failure> retry;
    for (;;) {
      std::optional<Failure> timed_out;
      std::size_t unstored = 0;
      {
        MutexLock lock(mu_);
        // A round ends when every attempt is answered, so that its failures go out again
        // together and in order.
        cv_.WaitFor(lock, deadline - Clock::now(), [this] {
          mu_.AssertHeld();
          return inflight_ == 0;
        });
        if (inflight_ == 0 && failed_.empty()) break;
        if (inflight_ > 0 || Clock::now() >= deadline) {
          timed_out = failed_.empty()
                          ? Failure{}
                          : Failure{nullptr, failed_.front().partition, 0, failed_.front().cause};
          unstored = failed_.size() + inflight_;
        } else {
          retry.swap(failed_);
        }
      }
      if (timed_out) {
        // The caller republishes this batch under the same ids, so nothing is kept for later.
        const std::optional<PartitionId> waiting = Abandon();
        if (timed_out->cause.empty()) {
          timed_out->cause = fmt::format("no acknowledgement within {} ms", attempt_ms_);
          timed_out->partition = waiting.value_or(0);
        }
        return Status::IOError(
            fmt::format("partition {}: {} message(s) not stored within {} ms (log unavailable): {}",
                        timed_out->partition, unstored, timeout_ms, timed_out->cause));
      }
      std::sort(retry.begin(), retry.end(),
                [](const Failure& a, const Failure& b) { return a.order < b.order; });
      SleepUntil(std::min(Clock::now() + backoff, deadline));
      backoff = std::min(backoff * 2, kRepublishBackoffMax);
      if (Clock::now() >= deadline) {
        MutexLock lock(mu_);
        for (Failure& f : retry) failed_.push_back(std::move(f));
        retry.clear();
        continue;
      }
      for (Failure& f : retry) Send(f.msg);
      retry.clear();
    }
    std::vector<Failure> rejected;
    {
      MutexLock lock(mu_);
      rejected.swap(rejected_);
      for (const Failure& f : rejected) order_.erase(f.msg);
    }
    if (rejected.empty()) return Status::OK();
    for (Failure& f : rejected) natsMsg_Destroy(f.msg);
    return Status::InvalidArgument(fmt::format("partition {}: {} message(s) refused: {}",
                                               rejected.front().partition, rejected.size(),
                                               rejected.front().cause));
  }

 private:
  struct Failure {
    natsMsg* msg = nullptr;  // owned; null for a message that was never built
    PartitionId partition = 0;
    std::uint64_t order = 0;  // publish order
    std::string cause;
  };

  // Hands `msg` (owned) to nats.c; on a failure to even queue it, files it for a retry.
  void Send(natsMsg* msg) {
    {
      MutexLock lock(mu_);
      ++inflight_;
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = attempt_ms_;
    const natsStatus s = js_PublishMsgAsync(js_, &msg, &po);
    if (s == NATS_OK) return;  // nats.c owns msg now; OnAck gets it back
    const NatsFailure f = Capture(s);
    MutexLock lock(mu_);
    --inflight_;
    File(msg, f.text, /*refused=*/s == NATS_MAX_PAYLOAD || s == NATS_INVALID_ARG);
    cv_.NotifyAll();
  }

  void File(natsMsg* msg, std::string cause, bool refused) REQUIRES(mu_) {
    Failure failure{msg, PartitionOf(msg), order_[msg], std::move(cause)};
    (refused ? rejected_ : failed_).push_back(std::move(failure));
  }

  // nats.c hands the message back to the handler, which owns it from then on (destroying it,
  // or keeping it for the next attempt).
  static void OnAck(jsCtx* /*js*/, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    auto* self = static_cast<NatsWriter*>(closure);
    if (pa != nullptr || pae == nullptr) {
      {
        MutexLock lock(self->mu_);
        self->order_.erase(msg);
        --self->inflight_;
        self->cv_.NotifyAll();
      }
      natsMsg_Destroy(msg);
      return;
    }
    std::string cause = pae->ErrText != nullptr ? pae->ErrText : natsStatus_GetText(pae->Err);
    if (pae->ErrCode != 0) {
      cause += fmt::format(" (JetStream error {})", static_cast<int>(pae->ErrCode));
    }
    MutexLock lock(self->mu_);
    --self->inflight_;
    self->File(msg, std::move(cause),
               /*refused=*/pae->ErrCode == JSStreamMessageExceedsMaximumErr);
    self->cv_.NotifyAll();
  }

  // Drops every message not yet stored: those waiting for an ack (their late acks are then
  // ignored by nats.c) and those waiting for a retry. Returns the partition of one that was
  // waiting for an ack.
  std::optional<PartitionId> Abandon() {
    std::optional<PartitionId> waiting;
    natsMsgList pending{};
    std::vector<Failure> dropped;
    if (js_ != nullptr && js_PublishAsyncGetPendingList(&pending, js_) == NATS_OK) {
      if (pending.Count > 0) waiting = PartitionOf(pending.Msgs[0]);
    }
    {
      MutexLock lock(mu_);
      inflight_ -= std::min(inflight_, static_cast<std::size_t>(pending.Count));
      for (int i = 0; i < pending.Count; ++i) order_.erase(pending.Msgs[i]);
      dropped.swap(failed_);
      for (Failure& f : rejected_) dropped.push_back(std::move(f));
      rejected_.clear();
      for (const Failure& f : dropped) order_.erase(f.msg);
    }
    natsMsgList_Destroy(&pending);
    for (Failure& f : dropped) natsMsg_Destroy(f.msg);
    return waiting;
  }

  const std::vector<std::string> subjects_;  // by partition
  const int attempt_ms_;
  jsCtx* js_ = nullptr;
  std::string setup_error_;

  Mutex mu_;
  CondVar cv_;
  // Messages handed to nats.c whose OnAck has not finished.
  std::size_t inflight_ GUARDED_BY(mu_) = 0;
  std::vector<Failure> failed_ GUARDED_BY(mu_);    // to republish
  std::vector<Failure> rejected_ GUARDED_BY(mu_);  // not worth retrying (too large, bad input)
  // The publish order of every message not yet stored or dropped.
  std::unordered_map<const natsMsg*, std::uint64_t> order_ GUARDED_BY(mu_);
  std::uint64_t next_order_ GUARDED_BY(mu_) = 0;
};

// ---------------------------------------------------------------------------------------------
// Reader

// Reads through an ephemeral pull consumer (no acks) rather than nats.c's ordered push
// consumer: a pull delivers only the batch Next asked for, so a slow reader never has the rest of
// the partition pushed into client memory, and recovery is entirely ours and visible: the reader
// knows the last sequence it returned, drops every delivery at or below it, and recreates the
// consumer at last + 1 whenever the subscription fails, skips a sequence, or stays silent while
// the stream holds more (its server died: an ephemeral consumer has one replica).
class NatsReader final : public LogReader {
 public:
  NatsReader(jsCtx* js, std::string stream, std::string subject, PartitionId p, LogSeq last)
      : js_(js),
        stream_(std::move(stream)),
        subject_(std::move(subject)),
        partition_(p),
        last_(last),
        idle_since_(Clock::now()) {}

  ~NatsReader() override {
    ReleaseBatch();
    DropSubscription(/*delete_consumer=*/true);
  }

  Status Next(std::size_t max_messages, int wait_ms, std::vector<LogMessage>* out) override {
    out->clear();
    ReleaseBatch();
    if (max_messages == 0) return Status::OK();
    const int batch = static_cast<int>(std::min<std::size_t>(max_messages, kMaxFetchBatch));
    const auto deadline = Clock::now() + milliseconds(std::max(wait_ms, 0));
    for (;;) {
      if (sub_ == nullptr && !Subscribe()) {
        if (!Pause(deadline)) return Status::OK();
        continue;
      }
      const auto remaining =
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      natsMsgList list{};
      jsErrCode jerr = static_cast<jsErrCode>(0);
      const natsStatus s =
          natsSubscription_Fetch(&list, sub_, batch, std::max<std::int64_t>(remaining, 1), &jerr);
      if (s == NATS_OK) {
        Status st = Take(&list, out);
        natsMsgList_Destroy(&list);
        if (!st.ok()) return st;
        if (!out->empty()) return Status::OK();
      } else if (s == NATS_TIMEOUT || s == NATS_NOT_FOUND) {
        // Nothing to read, or a consumer that no longer delivers: only the stream can tell.
        if (Clock::now() - idle_since_ >= kReaderStallCheck) INGOT_RETURN_IF_ERROR(CheckStall());
      } else {
        Warn("fetch failed, recreating the consumer", Capture(s, jerr).text);
        DropSubscription(/*delete_consumer=*/false);
        if (!Pause(deadline)) return Status::OK();
        continue;
      }
      if (Clock::now() >= deadline) return Status::OK();
    }
  }

 private:
  // Creates the consumer at last_ + 1; false (logged) when JetStream could not.
  bool Subscribe() {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream_.c_str();
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = last_ + 1;
    so.Config.AckPolicy = js_AckNone;
    so.Config.InactiveThreshold = kConsumerInactiveNs;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_PullSubscribe(&sub_, js_, subject_.c_str(), nullptr, &jo, &so, &jerr);
    idle_since_ = Clock::now();
    if (s != NATS_OK) {
      sub_ = nullptr;
      Warn("cannot create a consumer", Capture(s, jerr).text);
      return false;
    }
    return true;
  }

  // Moves the messages that continue the sequence from `list` into `out`.
  Status Take(natsMsgList* list, std::vector<LogMessage>* out) {
    std::optional<LogSeq> gap;
    for (int i = 0; i < list->Count; ++i) {
      natsMsg* msg = list->Msgs[i];
      jsMsgMetaData* meta = nullptr;
      if (gap || natsMsg_GetMetaData(&meta, msg) != NATS_OK) continue;
      const LogSeq seq = meta->Sequence.Stream;
      const std::uint64_t pending = meta->NumPending;
      jsMsgMetaData_Destroy(meta);
      if (seq <= last_) continue;  // delivered again by a recreated consumer
      if (seq != last_ + 1) {
        gap = seq;
        continue;
      }
      list->Msgs[i] = nullptr;
      batch_.push_back(msg);
      out->push_back(
          LogMessage{seq, pending,
                     std::string_view(natsMsg_GetData(msg),
                                      static_cast<std::size_t>(natsMsg_GetDataLength(msg)))});
      last_ = seq;
    }
    if (!out->empty()) {
      idle_since_ = Clock::now();
      last_gap_.reset();
    }
    if (!gap) return Status::OK();
    // A consumer skips only what the stream no longer holds, or after losing track of its
    // position; a fresh consumer tells the two apart.
    StreamState state;
    if (GetStreamState(js_, stream_, &state).ok() && Removed(state, last_ + 1)) {
      return RemovedError(partition_, stream_, last_ + 1, state);
    }
    if (last_gap_ == gap) {
      return Status::NotFound(
          fmt::format("partition {}: messages {}..{} are missing from stream {}", partition_,
                      last_ + 1, *gap - 1, stream_));
    }
    last_gap_ = gap;
    Warn("consumer skipped messages, recreating it",
         fmt::format("expected seq {}, got {}", last_ + 1, *gap));
    DropSubscription(/*delete_consumer=*/true);
    return Status::OK();
  }

  Status CheckStall() {
    idle_since_ = Clock::now();
    StreamState state;
    if (!GetStreamState(js_, stream_, &state).ok()) return Status::OK();
    if (state.last_seq <= last_) return Status::OK();
    if (Removed(state, last_ + 1)) return RemovedError(partition_, stream_, last_ + 1, state);
    Warn("consumer delivers nothing while the stream holds more, recreating it",
         fmt::format("last read {}, stream last {}", last_, state.last_seq));
    DropSubscription(/*delete_consumer=*/false);
    return Status::OK();
  }

  // Deleting the consumer is a request to the server; when the consumer's server is gone it
  // would only wait, and the server drops the consumer after kConsumerInactiveNs anyway.
  void DropSubscription(bool delete_consumer) {
    if (sub_ == nullptr) return;
    if (delete_consumer) natsSubscription_Unsubscribe(sub_);
    natsSubscription_Destroy(sub_);
    sub_ = nullptr;
  }

  void ReleaseBatch() {
    for (natsMsg* msg : batch_) natsMsg_Destroy(msg);
    batch_.clear();
  }

  // Waits before the next attempt; false when `deadline` has passed.
  static bool Pause(Clock::time_point deadline) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    SleepUntil(std::min(now + kReaderRetryPause, deadline));
    return true;
  }

  void Warn(std::string_view what, const std::string& detail) {
    std::uint64_t suppressed = 0;
    if (warn_limit_.Allow(&suppressed)) {
      ClusterLogger()->warn("log reader of partition {} ({}) after seq {}: {}: {}{}", partition_,
                            stream_, last_, what, detail, Suppressed(suppressed));
    }
  }

  jsCtx* const js_;
  const std::string stream_;
  const std::string subject_;
  const PartitionId partition_;
  natsSubscription* sub_ = nullptr;
  LogSeq last_;  // the last sequence returned
  std::optional<LogSeq> last_gap_;
  Clock::time_point idle_since_;
  std::vector<natsMsg*> batch_;  // backs the payload views of the last Next
  RateLimiter warn_limit_{1};
};

// ---------------------------------------------------------------------------------------------
// Log

class NatsLog final : public Log {
 public:
  NatsLog(natsConnection* nc, jsCtx* js, int publish_attempt_ms)
      : nc_(nc), js_(js), publish_attempt_ms_(publish_attempt_ms) {}

  Status EnsureLayout(const LogLayout& layout) override {
    INGOT_RETURN_IF_ERROR(Validate(layout));
    const auto deadline = Clock::now() + kSetupPatience;
    for (PartitionId p = 0; p < layout.partitions; ++p) {
      auto backoff = kSetupBackoffFirst;
      for (;;) {
        bool transient = false;
        Status st = EnsureStream(layout, p, &transient);
        if (st.ok()) break;
        if (!transient || Clock::now() >= deadline) return st;
        std::uint64_t suppressed = 0;
        if (setup_limit_.Allow(&suppressed)) {
          ClusterLogger()->info("waiting for JetStream: {}{}", st.ToString(),
                                Suppressed(suppressed));
        }
        SleepUntil(std::min(Clock::now() + backoff, deadline));
        backoff = std::min(backoff * 2, kSetupBackoffMax);
      }
    }
    MutexLock lock(mu_);
    layout_ = layout;
    return Status::OK();
  }

  std::unique_ptr<LogWriter> NewWriter() override {
    std::vector<std::string> subjects;
    {
      MutexLock lock(mu_);
      if (layout_) {
        for (PartitionId p = 0; p < layout_->partitions; ++p) {
          subjects.push_back(SubjectName(layout_->cluster, p));
        }
      }
    }
    return std::make_unique<NatsWriter>(nc_, std::move(subjects), publish_attempt_ms_);
  }

  Status OpenReader(PartitionId p, LogSeq start, std::unique_ptr<LogReader>* out) override {
    if (start < 1) return Status::InvalidArgument("log reader: start sequence must be >= 1");
    std::string stream;
    std::string subject;
    INGOT_RETURN_IF_ERROR(Names(p, &stream, &subject));
    StreamState state;
    INGOT_RETURN_IF_ERROR(GetStreamState(js_, stream, &state));
    if (Removed(state, start)) return RemovedError(p, stream, start, state);
    *out = std::make_unique<NatsReader>(js_, std::move(stream), std::move(subject), p, start - 1);
    return Status::OK();
  }

  Status Bounds(PartitionId p, LogSeq* first, LogSeq* last) override {
    std::string stream;
    INGOT_RETURN_IF_ERROR(Names(p, &stream, nullptr));
    StreamState state;
    INGOT_RETURN_IF_ERROR(GetStreamState(js_, stream, &state));
    *first = state.msgs == 0 ? 0 : state.first_seq;
    *last = state.msgs == 0 ? 0 : state.last_seq;
    return Status::OK();
  }

  Status Leader(PartitionId p, std::string* server) {
    std::string stream;
    INGOT_RETURN_IF_ERROR(Names(p, &stream, nullptr));
    StreamState state;
    INGOT_RETURN_IF_ERROR(GetStreamState(js_, stream, &state));
    *server = std::move(state.leader);
    return Status::OK();
  }

 private:
  static Status Validate(const LogLayout& layout) {
    if (!ValidName(layout.cluster, 32, "_-")) {
      return Status::InvalidArgument(
          fmt::format("log layout: cluster name '{}' must be 1-32 characters of [A-Za-z0-9_-]",
                      layout.cluster));
    }
    if (layout.partitions < 1 || layout.partitions > 1000) {
      return Status::InvalidArgument(
          fmt::format("log layout: partitions {} outside 1..1000", layout.partitions));
    }
    if (layout.replicas < 1 || layout.replicas > 5) {
      return Status::InvalidArgument(
          fmt::format("log layout: replicas {} outside 1..5", layout.replicas));
    }
    if (layout.max_age_ns < 0 || layout.max_bytes < 0 || layout.duplicate_window_ns <= 0) {
      return Status::InvalidArgument(fmt::format(
          "log layout: max_age_ns {}, max_bytes {} must be >= 0 and duplicate_window_ns {} > 0",
          layout.max_age_ns, layout.max_bytes, layout.duplicate_window_ns));
    }
    return Status::OK();
  }

  Status Names(PartitionId p, std::string* stream, std::string* subject) {
    MutexLock lock(mu_);
    if (!layout_) {
      return Status::InvalidArgument("log: no layout yet (EnsureLayout must succeed first)");
    }
    if (p >= layout_->partitions) {
      return Status::InvalidArgument(
          fmt::format("log: partition {} outside the layout's {}", p, layout_->partitions));
    }
    *stream = StreamName(layout_->cluster, p);
    if (subject != nullptr) *subject = SubjectName(layout_->cluster, p);
    return Status::OK();
  }

  Status EnsureStream(const LogLayout& layout, PartitionId p, bool* transient) {
    const std::string name = StreamName(layout.cluster, p);
    const std::string subject = SubjectName(layout.cluster, p);
    const char* subjects[] = {subject.c_str()};
    jsStreamConfig want;
    jsStreamConfig_Init(&want);
    want.Name = name.c_str();
    want.Subjects = subjects;
    want.SubjectsLen = 1;
    want.Retention = js_LimitsPolicy;
    want.Discard = js_DiscardOld;
    want.Storage = js_FileStorage;
    want.Replicas = layout.replicas;
    want.MaxAge = layout.max_age_ns;
    want.MaxBytes = layout.max_bytes > 0 ? layout.max_bytes : -1;
    // JetStream refuses a duplicate window longer than the retention age.
    want.Duplicates = layout.max_age_ns > 0
                          ? std::min(layout.duplicate_window_ns, layout.max_age_ns)
                          : layout.duplicate_window_ns;
    want.MaxMsgSize = kMaxMessageBytes;

    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = kApiWaitMs;
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&si, js_, name.c_str(), &jo, &jerr);
    if (s == NATS_OK) {
      Status st = Compare(name, want, *si->Config);
      jsStreamInfo_Destroy(si);
      return st;
    }
    if (s == NATS_NOT_FOUND) {
      jerr = static_cast<jsErrCode>(0);
      s = js_AddStream(nullptr, js_, &want, &jo, &jerr);
      if (s == NATS_OK) {
        ClusterLogger()->info("created stream {} (subject {}, replicas {})", name, subject,
                              layout.replicas);
        return Status::OK();
      }
      // Another node created it first: compare on the next round.
      if (jerr == JSStreamNameExistErr) {
        *transient = true;
        return Status::IOError(fmt::format("stream {}: created concurrently", name));
      }
    }
    const NatsFailure f = Capture(s, jerr);
    *transient = f.transient();
    const std::string what = fmt::format("stream {}: {}", name, f.text);
    return *transient || s != NATS_ERR ? Status::IOError(what) : Status::InvalidArgument(what);
  }

  static Status Compare(const std::string& name, const jsStreamConfig& want,
                        const jsStreamConfig& have) {
    auto mismatch = [&](std::string_view setting, const auto& in_nats, const auto& wanted) {
      return Status::InvalidArgument(fmt::format(
          "stream {}: {} is {} in NATS but the layout wants {}", name, setting, in_nats, wanted));
    };
    std::string have_subjects;
    for (int i = 0; i < have.SubjectsLen; ++i) {
      if (i > 0) have_subjects += ',';
      have_subjects += have.Subjects[i];
    }
    if (have_subjects != want.Subjects[0]) {
      return mismatch("subjects", have_subjects, want.Subjects[0]);
    }
    if (have.Replicas != want.Replicas) return mismatch("replicas", have.Replicas, want.Replicas);
    if (have.Storage != want.Storage) {
      return mismatch("storage", have.Storage == js_FileStorage ? "file" : "memory", "file");
    }
    if (have.Retention != want.Retention) {
      return mismatch("retention", static_cast<int>(have.Retention), "limits (0)");
    }
    if (have.Discard != want.Discard) return mismatch("discard", "new", "old");
    if (have.MaxAge != want.MaxAge) return mismatch("max_age_ns", have.MaxAge, want.MaxAge);
    if (have.MaxBytes != want.MaxBytes) {
      return mismatch("max_bytes", have.MaxBytes, want.MaxBytes);
    }
    if (have.Duplicates != want.Duplicates) {
      return mismatch("duplicate_window_ns", have.Duplicates, want.Duplicates);
    }
    if (have.MaxMsgSize != want.MaxMsgSize) {
      return mismatch("max_msg_size", have.MaxMsgSize, want.MaxMsgSize);
    }
    return Status::OK();
  }

  natsConnection* const nc_;
  jsCtx* const js_;
  const int publish_attempt_ms_;
  RateLimiter setup_limit_{1};
  Mutex mu_;
  std::optional<LogLayout> layout_ GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------------------------
// Coordination

// Runs fn on its own thread for every entry of a kvStore_WatchAll watcher. nats.c's watcher is an
// ordered consumer that repairs itself; should it fail anyway, it is recreated and the entries it
// replays up to the last revision seen are skipped, so fn still sees revisions in order.
class NatsWatch final : public WatchHandle {
 public:
  NatsWatch(kvStore* kv, kvWatcher* watcher, std::function<void(const KvEntry&)> fn)
      : kv_(kv), fn_(std::move(fn)), watcher_(watcher) {
    thread_ = std::thread([this] { Run(); });
  }

  ~NatsWatch() override {
    {
      MutexLock lock(mu_);
      stopping_ = true;
      if (watcher_ != nullptr) kvWatcher_Stop(watcher_);
      cv_.NotifyAll();
    }
    thread_.join();
    kvWatcher_Destroy(watcher_);
  }

 private:
  void Run() {
    std::uint64_t last_revision = 0;
    for (;;) {
      kvWatcher* watcher = nullptr;
      {
        MutexLock lock(mu_);
        if (stopping_) return;
        watcher = watcher_;
      }
      if (watcher == nullptr) {
        Recreate();
        continue;
      }
      kvEntry* e = nullptr;
      const natsStatus s = kvWatcher_Next(&e, watcher, kWatchPollMs);
      if (s == NATS_TIMEOUT) continue;
      if (s != NATS_OK) {
        {
          MutexLock lock(mu_);
          if (stopping_) return;
          watcher_ = nullptr;
        }
        ClusterLogger()->warn("key-value watch failed, recreating it: {}", Capture(s).text);
        kvWatcher_Destroy(watcher);
        continue;
      }
      if (e == nullptr) continue;  // the end of the initial values
      KvEntry entry;
      entry.key = kvEntry_Key(e);
      const int len = kvEntry_ValueLen(e);
      if (len > 0) {
        entry.value.assign(static_cast<const char*>(kvEntry_Value(e)),
                           static_cast<std::size_t>(len));
      }
      entry.revision = kvEntry_Revision(e);
      const kvOperation op = kvEntry_Operation(e);
      entry.deleted = op == kvOp_Delete || op == kvOp_Purge;
      kvEntry_Destroy(e);
      if (entry.revision <= last_revision) continue;
      last_revision = entry.revision;
      fn_(entry);
    }
  }

  void Recreate() {
    {
      MutexLock lock(mu_);
      cv_.WaitFor(lock, kWatchRetryPause, [this] {
        mu_.AssertHeld();
        return stopping_;
      });
      if (stopping_) return;
    }
    kvWatcher* watcher = nullptr;
    const natsStatus s = kvStore_WatchAll(&watcher, kv_, nullptr);
    if (s != NATS_OK) {
      std::uint64_t suppressed = 0;
      if (warn_limit_.Allow(&suppressed)) {
        ClusterLogger()->warn("key-value watch: cannot recreate the watcher: {}{}", Capture(s).text,
                              Suppressed(suppressed));
      }
      return;
    }
    MutexLock lock(mu_);
    if (stopping_) {
      kvWatcher_Destroy(watcher);
      return;
    }
    watcher_ = watcher;
  }

  kvStore* const kv_;
  const std::function<void(const KvEntry&)> fn_;
  RateLimiter warn_limit_{1};
  Mutex mu_;
  CondVar cv_;
  kvWatcher* watcher_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

class NatsCoordination final : public Coordination {
 public:
  NatsCoordination(kvStore* kv, std::string bucket) : kv_(kv), bucket_(std::move(bucket)) {}
  ~NatsCoordination() override { kvStore_Destroy(kv_); }

  Status Put(std::string_view key, std::string_view value, std::uint64_t* revision) override {
    std::uint64_t rev = 0;
    const std::string k(key);
    const natsStatus s =
        kvStore_Put(&rev, kv_, k.c_str(), value.data(), static_cast<int>(value.size()));
    if (s != NATS_OK) return CallFailed(fmt::format("bucket {}: put {}", bucket_, k), s);
    if (revision != nullptr) *revision = rev;
    return Status::OK();
  }

  Status Delete(std::string_view key) override {
    const std::string k(key);
    const natsStatus s = kvStore_Delete(kv_, k.c_str());
    if (s != NATS_OK) return CallFailed(fmt::format("bucket {}: delete {}", bucket_, k), s);
    return Status::OK();
  }

  Status Watch(std::function<void(const KvEntry&)> fn,
               std::unique_ptr<WatchHandle>* handle) override {
    kvWatcher* watcher = nullptr;
    const natsStatus s = kvStore_WatchAll(&watcher, kv_, nullptr);
    if (s != NATS_OK) return CallFailed(fmt::format("bucket {}: watch", bucket_), s);
    *handle = std::make_unique<NatsWatch>(kv_, watcher, std::move(fn));
    return Status::OK();
  }

 private:
  kvStore* const kv_;
  const std::string bucket_;
};

// Connection events arrive on nats.c's callback thread, possibly after the connection object is
// gone; they go to this block, which the client frees only once the closed event has run.
struct ConnEvents {
  std::atomic<std::uint64_t> reconnects{0};
  std::atomic<bool> closing{false};  // the client closes the connection itself
  RateLimiter warn_limit{1};
  Mutex mu;
  CondVar cv;
  bool closed GUARDED_BY(mu) = false;

  static void OnDisconnected(natsConnection* /*nc*/, void* closure) {
    auto* self = static_cast<ConnEvents*>(closure);
    std::uint64_t suppressed = 0;
    if (!self->closing.load() && self->warn_limit.Allow(&suppressed)) {
      ClusterLogger()->warn("NATS connection lost; reconnecting{}", Suppressed(suppressed));
    }
  }

  static void OnReconnected(natsConnection* nc, void* closure) {
    auto* self = static_cast<ConnEvents*>(closure);
    self->reconnects.fetch_add(1, std::memory_order_relaxed);
    char url[256] = {0};
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    ClusterLogger()->info("NATS connection re-established to {}", url);
  }

  static void OnClosed(natsConnection* /*nc*/, void* closure) {
    auto* self = static_cast<ConnEvents*>(closure);
    MutexLock lock(self->mu);
    self->closed = true;
    self->cv.NotifyAll();
  }

  static void OnAsyncError(natsConnection* /*nc*/, natsSubscription* /*sub*/, natsStatus err,
                           void* closure) {
    auto* self = static_cast<ConnEvents*>(closure);
    std::uint64_t suppressed = 0;
    if (self->warn_limit.Allow(&suppressed)) {
      ClusterLogger()->warn("NATS asynchronous error: {}{}", natsStatus_GetText(err),
                            Suppressed(suppressed));
    }
  }
};

std::vector<std::string> SplitUrls(const std::string& urls) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= urls.size()) {
    std::size_t end = urls.find(',', begin);
    if (end == std::string::npos) end = urls.size();
    std::string url = urls.substr(begin, end - begin);
    url.erase(0, url.find_first_not_of(" \t"));
    url.erase(url.find_last_not_of(" \t") + 1);
    if (!url.empty()) out.push_back(std::move(url));
    begin = end + 1;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Client

struct NatsClient::Impl {
  NatsOptions options;
  std::unique_ptr<ConnEvents> events = std::make_unique<ConnEvents>();
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;  // JetStream API calls and readers' consumers; thread-safe
  std::unique_ptr<NatsLog> log;

  ~Impl() {
    log.reset();
    jsCtx_Destroy(js);
    if (nc == nullptr) return;
    events->closing = true;
    natsConnection_Close(nc);
    bool closed = false;
    {
      MutexLock lock(events->mu);
      closed = events->cv.WaitFor(lock, kCloseWait, [this] {
        events->mu.AssertHeld();
        return events->closed;
      });
    }
    natsConnection_Destroy(nc);
    // A callback still queued would find freed memory: keep the block instead.
    if (!closed) (void)events.release();
  }
};

NatsClient::NatsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NatsClient::~NatsClient() = default;

Status NatsClient::Connect(const NatsOptions& options, std::unique_ptr<NatsClient>* out) {
  INGOT_RETURN_IF_ERROR(EnsureNatsOpen());
  const std::vector<std::string> urls = SplitUrls(options.urls);
  if (urls.empty()) return Status::InvalidArgument("NATS: no server URL given");
  std::vector<const char*> servers;
  for (const std::string& url : urls) servers.push_back(url.c_str());

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s != NATS_OK) return CallFailed("NATS options", s);
  std::unique_ptr<natsOptions, void (*)(natsOptions*)> opts_owner(opts, &natsOptions_Destroy);
  ConnEvents* events = impl->events.get();
  const int attempt_timeout_ms = std::clamp(options.connect_timeout_ms, 100, 2000);
  if (s == NATS_OK)
    s = natsOptions_SetServers(opts, servers.data(), static_cast<int>(servers.size()));
  if (s == NATS_OK) s = natsOptions_SetName(opts, options.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, attempt_timeout_ms);
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, true);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, kReconnectWaitMs);
  if (s == NATS_OK) s = natsOptions_SetReconnectJitter(opts, 100, 1000);
  if (s == NATS_OK) s = natsOptions_SetReconnectBufSize(opts, kReconnectBufferBytes);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(opts, kPingIntervalMs);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(opts, 3);
  // A JetStream API request in flight when the connection drops fails at once instead of
  // waiting out its timeout; the callers retry on the new connection.
  if (s == NATS_OK) s = natsOptions_SetFailRequestsOnDisconnect(opts, true);
  if (s == NATS_OK) s = natsOptions_SetDisconnectedCB(opts, &ConnEvents::OnDisconnected, events);
  if (s == NATS_OK) s = natsOptions_SetReconnectedCB(opts, &ConnEvents::OnReconnected, events);
  if (s == NATS_OK) s = natsOptions_SetClosedCB(opts, &ConnEvents::OnClosed, events);
  if (s == NATS_OK) s = natsOptions_SetErrorHandler(opts, &ConnEvents::OnAsyncError, events);
  if (s != NATS_OK) return CallFailed("NATS options", s);

  const auto deadline = Clock::now() + milliseconds(std::max(options.connect_timeout_ms, 0));
  for (;;) {
    s = natsConnection_Connect(&impl->nc, opts);
    if (s == NATS_OK) break;
    impl->nc = nullptr;
    if (Clock::now() >= deadline) {
      return Status::IOError(fmt::format("NATS: cannot connect to {} within {} ms: {}",
                                         options.urls, options.connect_timeout_ms,
                                         Capture(s).text));
    }
    SleepUntil(std::min(Clock::now() + milliseconds(100), deadline));
  }
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = kApiWaitMs;
  s = natsConnection_JetStream(&impl->js, impl->nc, &jo);
  if (s != NATS_OK) {
    impl->js = nullptr;
    return CallFailed("NATS: JetStream context", s);
  }
  impl->log = std::make_unique<NatsLog>(impl->nc, impl->js, options.publish_attempt_ms);
  char url[256] = {0};
  natsConnection_GetConnectedUrl(impl->nc, url, sizeof url);
  ClusterLogger()->info("connected to NATS at {} as {}", url, options.name);
  out->reset(new NatsClient(std::move(impl)));
  return Status::OK();
}

Log& NatsClient::log() { return *impl_->log; }

Status NatsClient::OpenBucket(std::string_view bucket, int replicas,
                              std::unique_ptr<Coordination>* out) {
  if (!ValidName(bucket, 64, "_-")) {
    return Status::InvalidArgument(
        fmt::format("key-value bucket '{}' must be 1-64 characters of [A-Za-z0-9_-]", bucket));
  }
  if (replicas < 1 || replicas > 5) {
    return Status::InvalidArgument(
        fmt::format("key-value bucket {}: replicas {} outside 1..5", bucket, replicas));
  }
  const std::string name(bucket);
  const auto deadline = Clock::now() + kSetupPatience;
  auto backoff = kSetupBackoffFirst;
  for (;;) {
    kvStore* kv = nullptr;
    natsStatus s = js_KeyValue(&kv, impl_->js, name.c_str());
    if (s == NATS_NOT_FOUND) {
      kvConfig config;
      kvConfig_Init(&config);
      config.Bucket = name.c_str();
      config.History = 1;
      config.Replicas = replicas;
      config.StorageType = js_FileStorage;
      s = js_CreateKeyValue(&kv, impl_->js, &config);
    }
    if (s == NATS_OK) {
      kvStatus* status = nullptr;
      s = kvStore_Status(&status, kv);
      if (s == NATS_OK) {
        const std::int64_t have = kvStatus_Replicas(status);
        kvStatus_Destroy(status);
        if (have != replicas) {
          kvStore_Destroy(kv);
          return Status::InvalidArgument(
              fmt::format("key-value bucket {}: replicas is {} in NATS but {} are wanted", name,
                          have, replicas));
        }
        *out = std::make_unique<NatsCoordination>(kv, name);
        return Status::OK();
      }
      kvStore_Destroy(kv);
    }
    const NatsFailure f = Capture(s);
    if (!f.transient() || Clock::now() >= deadline) {
      const std::string what = fmt::format("key-value bucket {}: {}", name, f.text);
      return s == NATS_INVALID_ARG ? Status::InvalidArgument(what) : Status::IOError(what);
    }
    SleepUntil(std::min(Clock::now() + backoff, deadline));
    backoff = std::min(backoff * 2, kSetupBackoffMax);
  }
}

Status NatsClient::PartitionLeader(PartitionId p, std::string* server) {
  return impl_->log->Leader(p, server);
}

bool NatsClient::connected() const {
  return natsConnection_Status(impl_->nc) == NATS_CONN_STATUS_CONNECTED;
}

std::uint64_t NatsClient::reconnects() const {
  return impl_->events->reconnects.load(std::memory_order_relaxed);
}

}  // namespace ingot::cluster
