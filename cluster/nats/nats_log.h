// NatsClient: the cluster's log (cluster/log.h) and coordination bucket on NATS JetStream.
//
// Layout: partition p of cluster C is the stream INGOT_C_Pppp (p zero-padded to 3 digits) with
// the single subject ingot.C.p.ppp: file storage, limits retention discarding the oldest
// messages, the layout's replicas, age and size limits and duplicate window, 1 MiB messages.
// A message's Nats-Msg-Id header is its dedup id, so a republished message is stored once within
// the duplicate window. Coordination is a JetStream key-value bucket with history 1.
//
// Failures: a lost connection is reconnected forever in the background (every URL, then the
// servers the cluster announces). A writer republishes failed messages with their ids until its
// Flush timeout; within one Flush a retried message may land after messages of the same Flush
// that were stored at their first attempt, while a successful Flush has stored all its messages
// before any published after it. A reader recreates its consumer after the last message it
// returned whenever the consumer fails or falls silent while the stream holds more; while it
// recovers, Next returns no messages (and logs, rate-limited) and may overrun wait_ms by one
// JetStream request (2 s). Errors that cluster/log.h calls "unavailable" are Status::IOError
// here (config/status.h has no such code); a message over 1 MiB, or for a partition outside the
// layout, fails its Flush with InvalidArgument.
//
// Retention: Bounds is (0, 0) for a partition retention emptied, as for one never written;
// OpenReader and Next still answer NotFound for the positions it removed.
//
// Lifetimes: every writer, reader, Coordination and watch handle obtained from a client must be
// destroyed before the client. Thread safety: NatsClient, its Log and Coordination objects are
// thread-safe; a writer or reader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/log.h"
#include "config/status.h"

namespace ingot::cluster {

struct NatsOptions {
  std::string urls;             // "nats://127.0.0.1:4222,nats://127.0.0.1:4223"
  std::string name = "ingotd";  // connection name shown by the server
  int connect_timeout_ms = 2000;
  int publish_attempt_ms = 2000;  // one publish attempt's wait for its ack
};

class NatsClient {
 public:
  // Connects (retrying the URLs until connect_timeout_ms), with endless reconnection afterwards.
  // IOError naming the URLs when no server answered in time.
  static Status Connect(const NatsOptions& options, std::unique_ptr<NatsClient>* out);
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  // The partitioned log. EnsureLayout must succeed before writers, readers and Bounds are used
  // (they name the streams after its cluster); until then they fail with InvalidArgument.
  // EnsureLayout retries for up to ~20 s while JetStream is not ready (a fresh cluster elects
  // its meta leader first), and compares every setting of existing streams.
  Log& log();

  // The key-value bucket `bucket` ([A-Za-z0-9_-]), created when missing with `replicas` copies
  // and history 1; InvalidArgument when it exists with other replicas.
  Status OpenBucket(std::string_view bucket, int replicas, std::unique_ptr<Coordination>* out);

  // The server name leading partition `p`'s stream (its writes go through that server); empty
  // while there is none. For operations views and failover tests.
  Status PartitionLeader(PartitionId p, std::string* server);

  bool connected() const;
  std::uint64_t reconnects() const;

 private:
  struct Impl;
  explicit NatsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ingot::cluster
