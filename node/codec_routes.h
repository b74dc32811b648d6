// The codec inspector's endpoints (docs/query-api.md, "Codec inspector"):
//
//   GET /api/v1/ingot/chunks?match[]=<selector>&start=&end=&limit=
//       every sealed chunk of the matched series over [start, end]: its time range, point count,
//       sizes, value and timestamp encodings, bits per value, ALP exponent/factor, bit width and
//       exception count, plus the series' points still in the open head (not yet in a chunk)
//   GET /api/v1/ingot/codec_stats?max_chunks=
//       the node-wide mix: chunks, values and bytes by value encoding over the sealed chunks
//
// Headers are read through chunk/chunk_inspect.h; nothing is decoded. A bad parameter is 400
// bad_data naming it, as for the query API.
//
// Thread safety: the handlers may run concurrently. `storage` must outlive the router.
#pragma once

#include "chunk/storage.h"
#include "config/http.h"
#include "config/options.h"

namespace ingot {

void RegisterCodecRoutes(HttpRouter& router, Storage& storage, const QueryOptions& options);

}  // namespace ingot
