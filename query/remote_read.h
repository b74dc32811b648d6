// RemoteReadHandler: Prometheus remote read (`POST /api/v1/read`), so that a Prometheus server
// configured with `remote_read` to the node sees the node's series in its own queries.
//
// The request is a snappy block holding a protobuf ReadRequest (query/remote_read_format.h): a
// list of queries, each a time range in milliseconds and label matchers (`=`, `!=`, `=~`, `!~`,
// as in a PromQL selector; a series is its label set, `__name__` being the metric name, the same
// series model as the query API's). Each query selects series with the query machinery
// (query/series_catalog.h) and reads them with the range reader (chunk/series_reader.h), so
// unsealed points are seen (read-your-writes). The answer is the first response type of the
// request's accepted_response_types that the node speaks:
//
// - SAMPLES (also when the list is empty): one snappy ReadResponse with every series' raw
//   samples, built whole before it is sent; more than query.max_points samples over the request
//   is a 422.
// - STREAMED_XOR_CHUNKS: CRC-framed ChunkedReadResponse messages, a series at a time, each chunk a
//   Prometheus XOR chunk of at most 120 samples (query/xor_chunk_encoder.h), produced piece by
//   piece as the client reads; a request whose chunks and head hold more than query.max_points
//   points (counted before the first byte) is a 422.
//
// Series come sorted by their label sets, as Prometheus' own storage returns them; series without
// samples in the range are left out. Timestamps go out in milliseconds: a point of a line-protocol
// series that is not on a whole millisecond is sent at the millisecond it falls in, and of several
// points in one millisecond only the last is sent.
//
// Errors are plain text, as Prometheus' own endpoint answers them: 400 for a body that is not
// snappy or not a ReadRequest, for a matcher that is not valid (bad regular expression, unknown
// type), a query without matchers, or when none of the accepted response types is spoken; 413 when
// the decoded request would pass query.max_request_bytes; 415 for a Content-Encoding other than
// snappy; 422 past query.max_series (per query) or query.max_points; 500 when storage fails
// before the answer started (a streamed answer that fails later ends with a broken frame, which
// the client reports as an error).
//
// Thread safety: Handle() may run concurrently; `storage` must outlive the handler and every
// response body it started.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/storage.h"
#include "config/http.h"
#include "config/options.h"
#include "config/status.h"
#include "query/selector.h"

namespace ingot {

struct RemoteReadQuery {
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  Selector selector;
};

struct RemoteReadRequest {
  std::vector<RemoteReadQuery> queries;
  bool streamed = false;  // STREAMED_XOR_CHUNKS was negotiated
};

// Parses a decoded (inflated) ReadRequest. InvalidArgument naming the problem (and the query or
// matcher) for malformed protobuf, unknown matcher types, bad regular expressions, queries
// without matchers, or an accepted_response_types list without a type the node speaks.
Status ParseRemoteReadRequest(std::string_view protobuf, RemoteReadRequest* out);

class RemoteReadHandler {
 public:
  RemoteReadHandler(Storage& storage, const QueryOptions& options);

  void Handle(const HttpRequest& request, HttpReply& reply) const;

 private:
  Storage& storage_;
  const QueryOptions options_;
};

}  // namespace ingot
