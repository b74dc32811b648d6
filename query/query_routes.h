// The query side of the node's HTTP API (docs/query-api.md):
//
//   GET  /api/v1/export                 raw points: json lines, csv or binary (streamed)
//   GET|POST /api/v1/query              Prometheus instant query
//   GET|POST /api/v1/query_range        Prometheus range query
//   GET|POST /api/v1/series             series matching match[] selectors
//   GET|POST /api/v1/labels             label names
//   GET  /api/v1/label/<name>/values    values of one label
//   GET  /api/v1/status/buildinfo       version information (Grafana's data source reads it)
//   GET  /api/v1/status/tsdb            cardinality statistics
//   POST /api/v1/read                   Prometheus remote read (query/remote_read.h; its errors
//                                       are plain text, as Prometheus' own)
//
// (The node's operations endpoints, /metrics, /health, /debug/..., are node/ops_routes.h.)
//
// Handlers are plain functions of the request (testable with HttpRouter::Handle, no sockets).
// Errors use Prometheus' envelope {"status":"error","errorType":...,"error":...}: a bad parameter
// is 400 bad_data naming the parameter, a limit (query.max_points, query.max_series) is 422
// execution, more than query.max_concurrent queries in flight is 503 unavailable.
//
// With a `fanout` (cluster mode, query/series_fanout.h), query, query_range, series, labels and
// label values answer over the whole cluster: PromQL selectors and match[] selectors take their
// series from it, and its warnings (a node that did not answer) join the answer's "warnings".
// The query's deadline and query.damaged_chunks hold on every node: damaged chunks a peer
// skipped are listed in the warnings as this node's are, naming the node.
// Labels and label values then come from the matching series' label sets, also without match[]
// (every series: each node answers up to its query.max_series). Export, remote read and the
// TSDB status stay local.
//
// Thread safety: the registered handlers may run concurrently. `storage` and `fanout` must
// outlive the router.
#pragma once

#include "chunk/storage.h"
#include "config/options.h"
#include "config/http.h"

namespace ingot {

namespace promql {
class SeriesFanout;
}  // namespace promql

void RegisterQueryRoutes(HttpRouter& router, Storage& storage, const QueryOptions& options,
                         promql::SeriesFanout* fanout = nullptr);

}  // namespace ingot
