// HttpServer: the node's HTTP listener (Boost.Beast over Asio, one coroutine per connection).
//
// Requests are dispatched through an HttpRouter that the node's main fills, so that ingest's
// `/write` and the query API share one port without ingest/ and query/ knowing each other.
// Handlers are plain functions from request to reply, testable without sockets. A reply either
// carries its whole body or a `stream` callback that produces the body piece by piece (sent with
// chunked transfer encoding) so that large results never sit in one string.
//
// Limits: request body size (413 past it), keep-alive idle timeout, per-request I/O timeout.
// Thread safety: Start/Stop from one thread; handlers run concurrently on the server's threads.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/beast/http.hpp>

#include "config/asio.h"
#include "config/options.h"
#include "config/status.h"
#include "config/url_encoding.h"

namespace ingot {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

struct HttpReply {
  HttpResponse response;
  // When set, the body is produced by repeated calls: each appends the next piece to `*chunk`
  // (cleared by the server before each call) and returns false after the last piece.
  std::function<bool(std::string* chunk)> stream;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpReply&)>;

// Maps (method, path) to handlers. Filled before the server starts; read-only afterwards.
class HttpRouter {
 public:
  void Add(http::verb method, std::string path, HttpHandler handler);
  // Matches every path starting with `prefix` (e.g. "/api/v1/label/").
  void AddPrefix(http::verb method, std::string prefix, HttpHandler handler);

  // Runs the matching handler, or fills 404/405. Handler exceptions become a 500.
  void Handle(const HttpRequest& request, HttpReply& reply) const;

 private:
  struct Route {
    http::verb method;
    std::string path;
    bool prefix;
    HttpHandler handler;
  };
  std::vector<Route> routes_;
};

// Sets status, content type and body of a reply in one call.
void SetReply(HttpReply& reply, http::status status, std::string_view content_type,
              std::string body);

// Splits the target's query string and decodes `%xx` and `+`; repeated keys keep every value.
// Also merges an `application/x-www-form-urlencoded` body for POST requests.
std::vector<std::pair<std::string, std::string>> ParseQueryParams(const HttpRequest& request);
// The path part of the target (before '?').
std::string_view TargetPath(std::string_view target);

class HttpServer {
 public:
  HttpServer(const QueryOptions& options, const HttpRouter& router);
  ~HttpServer();

  // Binds "host:port" (port 0 picks a free one) and starts `options.http_threads` threads.
  Status Start(const std::string& listen);
  // Stops accepting, lets in-flight requests finish for a short grace period, joins threads.
  void Stop();
  unsigned short port() const { return port_; }

 private:
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(asio::ip::tcp::socket socket);

  const QueryOptions options_;
  const HttpRouter& router_;
  asio::io_context io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};
  unsigned short port_ = 0;
};

}  // namespace ingot
