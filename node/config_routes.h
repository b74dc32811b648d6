// GET /api/v1/ingot/config: the node's effective configuration as JSON, after the file, the
// --set overrides and ingotd's own adjustments (the descriptor budget) were applied.
//
//   {"status":"success","data":{"log":{...},"ingest":{...},"storage":{...},"query":{...},
//                               "auth":{...}}}
//
// Keys are the configuration file's (docs/configuration.md); secrets (the auth token and
// password) are never shown, only whether they are set.
//
// Thread safety: the handler only reads a copy of the options made at registration.
#pragma once

#include <string>

#include "config/http.h"
#include "config/options.h"

namespace ingot {

// The `data` object of the answer.
std::string EffectiveConfigJson(const Options& options);

void RegisterConfigRoutes(HttpRouter& router, const Options& options);

}  // namespace ingot
