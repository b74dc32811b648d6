// The route a node serves its peers in cluster mode (docs/scale-out.md):
//
//   POST /internal/cluster/select   one selector's series and points from this node's storage
//
// The body is a select request (cluster/select_wire.h); the answer, 200 with
// application/octet-stream, is a select response holding what SelectLocal
// (query/series_fanout.h) finds, at most min(the request's max_series, query.max_series) series
// (without their points when the request is labels-only). The selection stops at the query's
// deadline, the request's timeout_ms after it arrived (query.timeout_ms when shorter or when
// none came). When the request asks to skip damaged chunks (the coordinator's
// query.damaged_chunks = "skip") they are left out and listed in the answer.
// A body that does not decode is 400 with a text message; more matched series than that, or a
// selection past its deadline, is 422 (the coordinator fails the query with it, as a local
// selector would); a storage error (a damaged chunk not skipped) is 500.
// The coordinator is cluster/fanout.h.
//
// Thread safety: the handler may run concurrently. `storage` must outlive the router.
#pragma once

#include "chunk/storage.h"
#include "config/http.h"
#include "config/options.h"

namespace ingot {

void RegisterClusterSelectRoute(HttpRouter& router, Storage& storage, const QueryOptions& options);

}  // namespace ingot
