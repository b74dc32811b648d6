// The web UI (ui/, compiled in through node/ui_assets.h):
//
//   GET /            302 to /ui/
//   GET /ui          301 to /ui/
//   GET /ui/         the page (Cache-Control: no-cache, with an ETag: revalidated every time)
//   GET /ui/assets/… scripts and styles under content-hashed names (cached for a year, immutable)
//
// Assets are stored gzip-compressed and sent as they are to clients that accept gzip
// (Content-Encoding: gzip); others get them inflated. An If-None-Match naming the current ETag
// is answered 304.
//
// Thread safety: the handlers only read static data; they may run concurrently.
#pragma once

#include <span>
#include <string>

#include "config/http.h"
#include "node/ui_assets.h"

namespace ingot {

// Registers the routes serving `assets` (the compiled-in UiAssets() by default).
void RegisterUiRoutes(HttpRouter& router, std::span<const UiAsset> assets);
void RegisterUiRoutes(HttpRouter& router);

// Whether an Accept-Encoding header value admits gzip (a "gzip" or "*" coding without q=0).
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace ingot
