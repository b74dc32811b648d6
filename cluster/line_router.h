// LineRouting: a cluster node's write path. Every good line a connection or request parses (and
// every series of a remote-write request) goes to its series' partition of the log instead of
// the local shards: lines are appended to one message per partition (with the accepting node's time added to lines without one), a message
// is published when it reaches cluster.batch_max_bytes or at the end of each read, and a request
// is answered once the log stored all its messages (LineRouter::Finish).
//
// Each message carries a dedup id `<node>.<incarnation>.<n>`, unique for every message this
// process publishes; the log's writer retries a failed publish with the same id, so a message is
// stored once even when an acknowledgement was lost.
//
// Thread safety: LineRouting is thread-safe; a router is used by one connection or request.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/log.h"
#include "config/clock.h"
#include "config/options.h"
#include "config/thread_annotations.h"
#include "ingest/line_ingester.h"
#include "ingest/remote_write_handler.h"

namespace ingot::cluster {

class LineRouting {
 public:
  // `log` must outlive the routing and every router it made.
  LineRouting(Log& log, const ClusterOptions& options, const Clock& clock);
  ~LineRouting();

  // A router for lines of `precision`, publishing through a writer of the pool.
  std::unique_ptr<ingest::LineRouter> NewRouter(ingest::Precision precision);
  // A router for a remote-write request's series: each goes, encoded as its writer sent it, to
  // the partition of its label set.
  std::unique_ptr<ingest::SeriesRouter> NewSeriesRouter();

 private:
  friend class PartitionRouter;
  struct RouterState;
  std::unique_ptr<RouterState> TakeState();
  void GiveBack(std::unique_ptr<RouterState> state);
  // The next message's dedup id into `*out`.
  void NextDedupId(std::string* out);

  Log& log_;
  const ClusterOptions options_;
  const Clock& clock_;
  const std::string id_prefix_;  // "<node>.<incarnation>."
  const bool compress_;
  std::atomic<std::uint64_t> next_message_{1};
  Mutex mu_;
  std::vector<std::unique_ptr<RouterState>> states_ GUARDED_BY(mu_);
};

}  // namespace ingot::cluster
