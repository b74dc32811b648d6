// The web UI's files, compiled into ingotd: cmake/embed_ui.cmake generates the table from ui/.
//
// Each asset is stored gzip-compressed (gzip -9n). The index is served as /ui/; every other
// asset's path carries its content hash (/ui/assets/app.<hash>.js), so a new build never meets
// an old cached copy.
//
// Thread safety: immutable static data.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace ingot {

struct UiAsset {
  std::string_view path;          // "/ui/", "/ui/assets/app.0123456789ab.js"
  std::string_view content_type;  // with charset for text
  std::span<const unsigned char> gzip;
  std::size_t raw_bytes;  // size before compression
  bool immutable;         // a hashed name: cacheable forever
  std::string_view etag;  // quoted, from the content's hash
};

std::span<const UiAsset> UiAssets();

}  // namespace ingot
