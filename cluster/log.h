// The cluster's log: a partitioned, replicated, ordered log of write batches (NATS JetStream in
// cluster/nats/; a Kafka implementation would sit beside it), and the small replicated key-value
// bucket the nodes keep their leases in. Storage and query never see these types: the node's
// cluster wiring (cluster/) is their only user.
//
// Thread safety: Log and Coordination are thread-safe; a LogWriter or LogReader is used by one
// thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/status.h"

namespace ingot::cluster {

using PartitionId = std::uint32_t;
using LogSeq = std::uint64_t;  // a message's position in its partition, from 1; 0 = before all

// What the log must hold: one ordered sequence per partition.
struct LogLayout {
  std::string cluster;  // [A-Za-z0-9_-]{1,32}: prefixes every stream, subject and bucket
  std::uint32_t partitions = 8;
  int replicas = 1;                  // copies of each message on the log's servers (1 or 3)
  std::int64_t max_age_ns = 0;       // retention by age; 0 = none
  std::int64_t max_bytes = 0;        // retention by size, per partition; 0 = none
  std::int64_t duplicate_window_ns = 120'000'000'000;  // how long a dedup id is remembered
};

// Publishes messages; used by one connection or request at a time.
class LogWriter {
 public:
  virtual ~LogWriter() = default;
  // Queues `payload` (copied) for partition `p` under `dedup_id`, which is unique for every
  // message ever published; a retry of the same message reuses it, and the log stores it once.
  virtual void Publish(PartitionId p, std::string_view dedup_id, std::string_view payload) = 0;
  // Waits until every message published since the last Flush is stored under the log's
  // replication, retrying failed publishes with their ids, for at most `timeout_ms`.
  // Unavailable naming the partition and the cause when one could not be stored in time.
  virtual Status Flush(int timeout_ms) = 0;
};

struct LogMessage {
  LogSeq seq = 0;
  std::uint64_t pending = 0;              // messages of the partition after this one
  std::string_view payload;               // valid until the reader's next call
};

// Reads one partition in log order from a start position.
class LogReader {
 public:
  virtual ~LogReader() = default;
  // Up to `max_messages` messages after the last one returned, in order and without gaps,
  // waiting up to `wait_ms` for the first (an empty `*out` when none came). A lost connection
  // or a lost server-side consumer is recovered inside (the reader resumes after the last
  // message it returned); NotFound when the next message is no longer in the log (retention).
  virtual Status Next(std::size_t max_messages, int wait_ms, std::vector<LogMessage>* out) = 0;
};

class Log {
 public:
  virtual ~Log() = default;
  // Creates what is missing; InvalidArgument naming the setting when what exists differs.
  virtual Status EnsureLayout(const LogLayout& layout) = 0;
  virtual std::unique_ptr<LogWriter> NewWriter() = 0;
  // A reader of partition `p` whose first message is the one at `start` (>= 1).
  virtual Status OpenReader(PartitionId p, LogSeq start, std::unique_ptr<LogReader>* out) = 0;
  // What the log holds of partition `p`: first and last sequence (0, 0 when empty).
  virtual Status Bounds(PartitionId p, LogSeq* first, LogSeq* last) = 0;
};

struct KvEntry {
  std::string key;
  std::string value;
  std::uint64_t revision = 0;
  bool deleted = false;
};

// Stops a watch when destroyed.
class WatchHandle {
 public:
  virtual ~WatchHandle() = default;
};

// A replicated key-value bucket of the cluster (`[A-Za-z0-9_.-]` keys).
class Coordination {
 public:
  virtual ~Coordination() = default;
  virtual Status Put(std::string_view key, std::string_view value, std::uint64_t* revision) = 0;
  virtual Status Delete(std::string_view key) = 0;
  // Calls `fn` with every current entry, then with every change, in revision order, on one
  // thread of the implementation, until the handle is destroyed.
  virtual Status Watch(std::function<void(const KvEntry&)> fn,
                       std::unique_ptr<WatchHandle>* handle) = 0;
};

}  // namespace ingot::cluster
