// The node's operations endpoints (docs/operations.md):
//
//   GET  /metrics                       Prometheus text exposition of the node's metrics
//   GET  /health                        liveness
//   POST /internal/force_merge          merge late chunks, compact the chunk families and the
//                                       checkpointed heads now
//   GET  /debug/pprof/profile?seconds=N gperftools CPU profile of the next N seconds
//
// Profiles are written to `<data_dir>/profiles/` (created 0700) under an unpredictable name
// created with O_EXCL | O_NOFOLLOW, read back into the answer and removed. A running profile
// ends early when `*stopping` becomes true, so it never holds up a shutdown.
//
// Thread safety: the handlers may run concurrently. `storage` and `stopping` must outlive the
// router.
#pragma once

#include <atomic>
#include <string>

#include "chunk/storage.h"
#include "config/http.h"

namespace ingot {

void RegisterOperationsRoutes(HttpRouter& router, Storage& storage, std::string data_dir,
                              const std::atomic<bool>* stopping);

}  // namespace ingot
