// Wal: one shard's write-ahead log, a directory of numbered segment files.
//
// Append() frames one record (a whole batch of points: group commit, one write and at most one
// fsync per batch) and makes it durable according to the sync policy:
//   kAlways   fdatasync before Append returns;
//   kInterval SyncIfDirty() is called every wal_sync_interval_ms by the storage's background
//             thread (a crash loses at most that window);
//   kNone     the OS decides.
// The log is bounded by checkpoints: Roll() starts a new segment, the owner persists its state,
// then DeleteSegmentsBefore() removes the segments the checkpoint covers (oldest first, so the
// remaining segments are always a suffix of the history).
//
// Recovery reads segments with ReadWalSegment(): a torn tail is detected and ignored, a corrupt
// record in the middle is reported and skipped and its neighbours are kept.
//
// Thread safety: Append, Roll and Close are called by one writer at a time (the shard's writer,
// or a checkpoint holding the shard's write lock); SyncIfDirty may run concurrently from one other
// thread. A failed background sync is sticky: the next Append returns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/status.h"
#include "config/thread_annotations.h"

namespace ingot {

enum class WalSyncPolicy : std::uint8_t { kAlways, kInterval, kNone };
Status ParseWalSyncPolicy(std::string_view text, WalSyncPolicy* policy);

struct WalSegment {
  std::uint64_t seq;
  std::string path;
};

class Wal {
 public:
  // Creates `dir` if needed and opens a new segment numbered `first_seq` (which must be above
  // every existing segment's number).
  static Status Open(const std::string& dir, WalSyncPolicy policy, std::uint64_t first_seq,
                     std::unique_ptr<Wal>* wal);
  ~Wal();

  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Appends one record. On a write error the segment is truncated back to its previous size
  // (best effort) and IOError is returned: the record is not accepted.
  Status Append(std::span<const std::uint8_t> payload);

  // fdatasync if anything was written since the last sync.
  Status SyncIfDirty();

  // Syncs and closes the current segment and opens the next; `*previous_seq` gets the number of
  // the closed segment.
  Status Roll(std::uint64_t* previous_seq);

  // Deletes this WAL's segments numbered <= `seq`, oldest first.
  Status DeleteSegmentsUpTo(std::uint64_t seq);

  // Syncs and closes. Idempotent.
  Status Close();

  std::uint64_t current_seq() const { return seq_; }
  std::uint64_t bytes_since_roll() const { return bytes_since_roll_; }
  const std::string& dir() const { return dir_; }

 private:
  Wal(std::string dir, WalSyncPolicy policy) : dir_(std::move(dir)), policy_(policy) {}
  Status OpenSegment(std::uint64_t seq);
  // Creates segment `seq` with its header, synced; the log's state is unchanged.
  Status CreateSegmentFile(std::uint64_t seq, int* fd);
  void Install(int fd, std::uint64_t seq);
  Status SyncFd(int fd, std::uint64_t seq);
  Status CloseCurrent();

  const std::string dir_;
  const WalSyncPolicy policy_;
  std::uint64_t seq_ = 0;
  std::uint64_t bytes_since_roll_ = 0;
  std::uint64_t file_bytes_ = 0;

  // The writer (Append, Roll, Close: one thread at a time, the shard's) owns the fields above; the
  // background syncer shares these with it.
  Mutex mu_;
  CondVar sync_done_;
  int fd_ GUARDED_BY(mu_) = -1;
  bool dirty_ GUARDED_BY(mu_) = false;
  bool syncing_ GUARDED_BY(mu_) = false;
  Status sync_error_ GUARDED_BY(mu_);
};

// Segments in `dir` sorted by number; an absent directory is empty.
Status ListWalSegments(const std::string& dir, std::vector<WalSegment>* segments);

struct WalReadStats {
  std::uint64_t records = 0;
  std::uint64_t corrupt_records = 0;   // corrupt regions skipped in the middle of a segment
  std::uint64_t skipped_bytes = 0;     // bytes in those regions
  std::uint64_t torn_tail_bytes = 0;   // bytes after the last valid record that hold none
};

// Calls fn(payload) for every valid record of the segment in order; `fn` returning non-OK stops
// the scan and is returned. Corruption is reported through `stats` (and logged), not as an error;
// an unreadable file is IOError.
Status ReadWalSegment(const std::string& path,
                      const std::function<Status(std::span<const std::uint8_t>)>& fn,
                      WalReadStats* stats);

}  // namespace ingot
