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
// The query's deadline (SelectContext::deadline) goes with each request as the time left: a
// peer's request ends by it (or by the timeout, when sooner), the peer's selection stops there
// too, and a selection that runs past it, here or on a peer, fails with Busy as the engine's own
// deadline does. With SelectContext::damage set, every node leaves damaged chunks out and they
// are reported there, each peer's message starting with "node <address>: ".
//
// Peers are called with this node's own credentials ([auth]; the nodes of a cluster share it)
// and, when this node serves HTTPS (query.tls_*, which then holds on every node), over TLS. The
// peer's certificate is not verified: no setting names a CA to verify it against (query.tls_*
// are this node's own certificate and key), so the connection is encrypted but a host that
// answers at a peer's address is trusted, and given the credentials, as the peer. Verify
// against a CA once one can be configured.
//
// Each Select opens one connection per peer and runs their I/O on a thread of its own while the
// calling thread reads local storage; Selects share nothing but the TLS client context, which
// is read-only once made.
//
// Thread safety: Select may run concurrently; `peers` is then called concurrently too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chunk/storage.h"
#include "config/options.h"
#include "config/status.h"
#include "query/series_fanout.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace ingot::cluster {

class ClusterFanout : public promql::SeriesFanout {
 public:
  // `storage` (this node's part of the data) must outlive the fanout. `peers` returns, at each
  // Select, the HTTP addresses ("127.0.0.1:8087", "[::1]:8087") of the live peers, this node
  // excluded. `timeout_ms` bounds each peer's request from connecting to the last byte. `auth`
  // (as FinishOptions completed it) is sent on every request: its token as a bearer token when
  // set, else its user and password as basic credentials; nothing when neither is set. `tls`:
  // the peers listen on HTTPS.
  ClusterFanout(Storage& storage, std::function<std::vector<std::string>()> peers,
                std::uint32_t timeout_ms, const AuthOptions& auth = {}, bool tls = false);
  ~ClusterFanout() override;

  Status Select(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                std::size_t max_series, const promql::SelectContext& context,
                std::vector<promql::FetchedSeries>* out,
                std::vector<std::string>* warnings) override;
  // The same with labels-only requests: peers send no points.
  Status SelectSeries(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                      std::size_t max_series, const promql::SelectContext& context,
                      std::vector<promql::FetchedSeries>* out,
                      std::vector<std::string>* warnings) override;

 private:
  Status Run(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
             std::size_t max_series, bool with_points, const promql::SelectContext& context,
             std::vector<promql::FetchedSeries>* out, std::vector<std::string>* warnings);

  Storage& storage_;
  const std::function<std::vector<std::string>()> peers_;
  const std::chrono::milliseconds timeout_;
  const std::string authorization_;                 // the header's value; empty: none
  std::unique_ptr<boost::asio::ssl::context> tls_;  // null: plaintext
};

}  // namespace ingot::cluster
