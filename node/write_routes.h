// The write side of the node's HTTP API: InfluxDB 1.x `POST /write` (also at `/api/v2/write`)
// adapted to ingest's WriteHandler, which knows no HTTP types, and `/ping`, which InfluxDB
// clients probe before writing. Writes run on the write worker pool.
//
// Thread safety: the handlers may run concurrently; `handler` must outlive the router.
#pragma once

#include "config/http.h"
#include "ingest/write_handler.h"

namespace ingot {

void RegisterWriteRoutes(HttpRouter& router, const ingest::WriteHandler& handler);

}  // namespace ingot
