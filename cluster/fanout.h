// ClusterFanout: the coordinator's side of a query over the cluster. For one selector it selects
// from this node's storage (SelectLocal) while asking every live peer the same over HTTP
// (`POST /internal/cluster/select`, bodies in cluster/select_wire.h, answered by
// node/cluster_routes.h), all peers at once, then merges the answers by label set: a series
// stored on two replicas becomes one, its points united by timestamp. At a timestamp two answers
// share, the first answer's value stays (this node's, then the peers' in the order `peers`
// listed them); differing values there are counted in
// ingot_cluster_query_replica_conflicts_total.
//
// A peer that refuses the connection, runs past the timeout, or answers with an error or bytes
// that do not decode is left out, and a warning says so ("cluster: partial result: node
// 127.0.0.1:8087 did not answer (connection refused)"): the query answers with the rest. A peer
// over query.max_series (HTTP 422) fails the selection with Busy, as a local selector would.
//
// Each Select opens one connection per peer and runs their I/O on a thread of its own while the
// calling thread reads local storage; nothing is shared between Selects.
//
// Thread safety: Select may run concurrently; `peers` is then called concurrently too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chunk/storage.h"
#include "config/status.h"
#include "query/series_fanout.h"

namespace ingot::cluster {

class ClusterFanout : public promql::SeriesFanout {
 public:
  // `storage` (this node's part of the data) must outlive the fanout. `peers` returns, at each
  // Select, the HTTP addresses ("127.0.0.1:8087", "[::1]:8087") of the live peers, this node
  // excluded. `timeout_ms` bounds each peer's request from connecting to the last byte.
  ClusterFanout(Storage& storage, std::function<std::vector<std::string>()> peers,
                std::uint32_t timeout_ms);

  Status Select(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                std::size_t max_series, std::vector<promql::FetchedSeries>* out,
                std::vector<std::string>* warnings) override;
  // The same with labels-only requests: peers send no points.
  Status SelectSeries(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                      std::size_t max_series, std::vector<promql::FetchedSeries>* out,
                      std::vector<std::string>* warnings) override;

 private:
  Status Run(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
             std::size_t max_series, bool with_points, std::vector<promql::FetchedSeries>* out,
             std::vector<std::string>* warnings);

  Storage& storage_;
  const std::function<std::vector<std::string>()> peers_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace ingot::cluster
