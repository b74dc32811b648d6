// HTTP request handling shared by every module that answers HTTP: the request and reply types
// (Boost.Beast), the route table, and query-parameter parsing. The server that reads requests
// off sockets and runs the routes is node/http_server.h; modules only see these types, so their
// handlers are plain functions from request to reply, testable without sockets.
//
// A reply either carries its whole body or a `stream` callback that produces the body piece by
// piece (sent with chunked transfer encoding) so that large results never sit in one string.
//
// Thread safety: a router is filled before the server starts and read-only afterwards; handlers
// run concurrently.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http.hpp>

namespace ingot {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

struct HttpReply {
  HttpResponse response;
  // When set, the body is produced by repeated calls: each appends the next piece to `*chunk`
  // (cleared by the server before each call) and returns false after the last piece.
  std::function<bool(std::string* chunk)> stream;
  // Set by a handler of HttpWork::kWriteFirstInline that must wait for something: the rest of
  // its work, which the server runs on the write pool (the request still alive) before it
  // answers.
  std::function<void(HttpReply&)> then;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpReply&)>;

// Where a route's handler runs (node/http_server.h): cheap handlers on the connection's I/O
// thread, writes and queries on their own bounded worker pools so that neither blocks the
// other or the I/O threads. kWriteFirstInline: a write that starts on the I/O thread and goes as
// far as it can without waiting, leaving the rest (HttpReply::then) to the write pool; a small
// write then costs no hand-off between threads.
enum class HttpWork { kInline, kWrite, kQuery, kWriteFirstInline };

// Maps (method, path) to handlers. Filled before the server starts; read-only afterwards.
class HttpRouter {
 public:
  void Add(http::verb method, std::string path, HttpHandler handler,
           HttpWork work = HttpWork::kQuery);
  // Matches every path starting with `prefix` (e.g. "/api/v1/label/").
  void AddPrefix(http::verb method, std::string prefix, HttpHandler handler,
                 HttpWork work = HttpWork::kQuery);

  // Where the handler of `request` runs (kInline for 404/405 answers).
  HttpWork WorkOf(const HttpRequest& request) const;
  // Runs the matching handler, or fills 404/405. Handler exceptions become a 500.
  void Handle(const HttpRequest& request, HttpReply& reply) const;

 private:
  struct Route {
    http::verb method;
    std::string path;
    bool prefix;
    HttpHandler handler;
    HttpWork work;
  };
  // The route of `request`; null with `*path_matched` telling 404 from 405.
  const Route* Find(const HttpRequest& request, bool* path_matched) const;
  std::vector<Route> routes_;
};

// Sets status, content type and body of a reply in one call.
void SetReply(HttpReply& reply, http::status status, std::string_view content_type,
              std::string body);
// The error envelope of Prometheus' HTTP API, which the node's JSON endpoints answer with:
// {"status":"error","errorType":<type>,"error":<message>}. Drops a stream set earlier.
void ErrorReply(HttpReply& reply, http::status status, std::string_view type,
                std::string_view message);

// Splits the target's query string and decodes `%xx` and `+`; repeated keys keep every value.
// Also merges an `application/x-www-form-urlencoded` body for POST requests.
std::vector<std::pair<std::string, std::string>> ParseQueryParams(const HttpRequest& request);
// The path part of the target (before '?').
std::string_view TargetPath(std::string_view target);

}  // namespace ingot
