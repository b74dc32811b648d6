#include "node/ui_routes.h"

#include <zlib.h>

#include <cctype>
#include <string_view>

namespace ingot {
namespace {

constexpr std::string_view kUiRoot = "/ui/";

// Inflates a gzip member into `*out`; false on damaged data (never for the compiled-in assets).
bool Gunzip(std::span<const unsigned char> gz, std::size_t raw_bytes, std::string* out) {
  out->assign(raw_bytes, '\0');
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return false;
  z.next_in = const_cast<Bytef*>(gz.data());
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int rc = inflate(&z, Z_FINISH);
  const bool ok = rc == Z_STREAM_END && z.total_out == raw_bytes;
  inflateEnd(&z);
  return ok;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Whether `If-None-Match` lists `etag` (or is "*").
bool MatchesEtag(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    const std::size_t comma = if_none_match.find(',');
    std::string_view tag = Trim(if_none_match.substr(0, comma));
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

void Redirect(HttpReply& reply, http::status status, std::string_view location) {
  SetReply(reply, status, "text/plain; charset=utf-8", "see " + std::string(location) + "\n");
  reply.response.set(http::field::location, location);
}

void Serve(const UiAsset& asset, const HttpRequest& request, HttpReply& reply) {
  reply.response.set(http::field::etag, asset.etag);
  reply.response.set(http::field::cache_control,
                     asset.immutable ? "public, max-age=31536000, immutable" : "no-cache");
  reply.response.set(http::field::vary, "Accept-Encoding");
  reply.response.set("X-Content-Type-Options", "nosniff");
  const auto inm = request.find(http::field::if_none_match);
  if (inm != request.end() && MatchesEtag(inm->value(), asset.etag)) {
    reply.response.result(http::status::not_modified);
    reply.response.body().clear();
    return;
  }
  const auto ae = request.find(http::field::accept_encoding);
  if (ae != request.end() && AcceptsGzip(ae->value())) {
    SetReply(reply, http::status::ok, asset.content_type,
             std::string(reinterpret_cast<const char*>(asset.gzip.data()), asset.gzip.size()));
    reply.response.set(http::field::content_encoding, "gzip");
    return;
  }
  std::string body;
  if (!Gunzip(asset.gzip, asset.raw_bytes, &body)) {
    ErrorReply(reply, http::status::internal_server_error, "internal",
               "the embedded asset " + std::string(asset.path) + " does not inflate");
    return;
  }
  SetReply(reply, http::status::ok, asset.content_type, std::move(body));
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  while (!accept_encoding.empty()) {
    const std::size_t comma = accept_encoding.find(',');
    std::string_view item = accept_encoding.substr(0, comma);
    std::string_view coding = item;
    std::string_view params;
    if (const std::size_t semi = item.find(';'); semi != std::string_view::npos) {
      coding = item.substr(0, semi);
      params = item.substr(semi + 1);
    }
    coding = Trim(coding);
    if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip") || coding == "*") {
      // q=0 (or 0.0, 0.00, 0.000) refuses the coding.
      bool refused = false;
      params = Trim(params);
      if (params.size() >= 2 && (params[0] == 'q' || params[0] == 'Q') && params[1] == '=') {
        const std::string_view q = Trim(params.substr(2));
        refused = !q.empty() && q.find_first_not_of("0.") == std::string_view::npos;
      }
      return !refused;
    }
    if (comma == std::string_view::npos) break;
    accept_encoding.remove_prefix(comma + 1);
  }
  return false;
}

void RegisterUiRoutes(HttpRouter& router, std::span<const UiAsset> assets) {
  router.Add(
      http::verb::get, "/",
      [](const HttpRequest&, HttpReply& reply) { Redirect(reply, http::status::found, kUiRoot); },
      HttpWork::kInline);
  router.Add(
      http::verb::get, "/ui",
      [](const HttpRequest&, HttpReply& reply) {
        Redirect(reply, http::status::moved_permanently, kUiRoot);
      },
      HttpWork::kInline);
  router.AddPrefix(
      http::verb::get, std::string(kUiRoot),
      [assets](const HttpRequest& request, HttpReply& reply) {
        const std::string_view path = TargetPath(request.target());
        for (const UiAsset& asset : assets) {
          if (asset.path == path) return Serve(asset, request, reply);
        }
        if (path == "/ui/index.html") return Redirect(reply, http::status::found, kUiRoot);
        ErrorReply(reply, http::status::not_found, "not_found",
                   "no such UI file: " + std::string(path));
      },
      HttpWork::kInline);
}

void RegisterUiRoutes(HttpRouter& router) { RegisterUiRoutes(router, UiAssets()); }

}  // namespace ingot
