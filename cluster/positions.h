// Positions: for each partition, the last log sequence this node applied (its points handed to
// the shards and made durable under the WAL policy, as an acknowledged write is), kept in
// `<data_dir>/cluster/positions` so that a restarted node resumes where it stopped.
//
// The file is written with the positions as they were one Persist() earlier: what it says was
// applied has had a whole persist interval (1 s, longer than the WAL's sync interval) to reach
// the WAL on disk. A position behind the data only means messages applied again after a crash,
// which is harmless: a point written twice with the same timestamp is one point.
//
// Thread safety: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "cluster/log.h"
#include "config/status.h"
#include "config/thread_annotations.h"

namespace ingot::cluster {

class Positions {
 public:
  // Loads `<data_dir>/cluster/positions` (absent: every position 0). Corruption for a damaged
  // file, naming the line.
  static Status Open(const std::string& data_dir, std::unique_ptr<Positions>* out);

  LogSeq Get(PartitionId p) const;
  void Set(PartitionId p, LogSeq seq);
  // Writes the positions as of the previous call (atomically: temporary file, fsync, rename).
  Status Persist();
  // Writes the current positions: at a clean stop, after the shards were drained and the WAL
  // synced.
  Status PersistCurrent();

 private:
  explicit Positions(std::string path) : path_(std::move(path)) {}
  // Writes the current or the previous positions; the current ones become the previous.
  Status PersistAs(bool current);
  Status Write(const std::unordered_map<PartitionId, LogSeq>& positions);

  const std::string path_;
  mutable Mutex mu_;
  std::unordered_map<PartitionId, LogSeq> current_ GUARDED_BY(mu_);
  std::unordered_map<PartitionId, LogSeq> previous_ GUARDED_BY(mu_);
};

}  // namespace ingot::cluster
