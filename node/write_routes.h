// The write side of the node's HTTP API: InfluxDB 1.x `POST /write` (also at `/api/v2/write`)
// adapted to ingest's WriteHandler, Prometheus remote write 1.0 `POST /api/v1/write` adapted to
// ingest's RemoteWriteHandler (neither knows HTTP types), and `/ping`, which InfluxDB clients
// probe before writing. Writes run on the write worker pool.
//
// Thread safety: the handlers may run concurrently; `handler` and `remote_write` must outlive the
// router.
#pragma once

#include "config/http.h"
#include "ingest/remote_write_handler.h"
#include "ingest/write_handler.h"

namespace ingot {

void RegisterWriteRoutes(HttpRouter& router, const ingest::WriteHandler& handler,
                         const ingest::RemoteWriteHandler& remote_write);

}  // namespace ingot
