// HttpServer: the node's HTTP listener (Boost.Beast over Asio, one coroutine per connection).
//
// Requests are dispatched through an HttpRouter (config/http.h) that the node's main fills, so
// that ingest's `/write` and the query API share one port without ingest/ and query/ knowing
// each other. The I/O threads only read and write sockets: a route's handler (and a streamed
// body's pieces) runs where the route says, inline for cheap answers, or on the write or query
// worker pool, so a slow write or query never stalls `/health` or other connections.
//
// Limits, each with a precise answer:
// - connections: past `max_connections` a new connection gets 503 and is closed (accepting and
//   answering, instead of leaving it queued); accept errors (out of descriptors) back off;
// - request head and body size: 431 and 413;
// - bodies in flight: all requests' bodies share `max_inflight_body_bytes`; a request whose body
//   does not fit gets 503 with Retry-After before its body is read (clients retry 503);
// - keep-alive idle timeout and a per-request I/O timeout.
//
// Security, both off by default: with `auth` configured every request but `/ping` and `/health`
// must carry credentials (node/http_auth.h), checked here once after the request head is read,
// before its body is read or a route runs: 401 otherwise. With `tls` configured the listener
// speaks only TLS; a failed handshake (a plaintext client, say) is counted and logged
// (config/tls.h) and closes that connection only. Over the connection limit a TLS connection is
// closed without the 503 (the answer would need a handshake first).
//
// Thread safety: Start/Stop from one thread; handlers run concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/asio.h"
#include "config/http.h"
#include "config/listener.h"
#include "config/options.h"
#include "config/status.h"
#include "node/http_auth.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace ingot {

struct HttpServerOptions {
  unsigned io_threads = 2;
  unsigned write_workers = 2;   // run kWrite routes
  unsigned query_workers = 2;   // run kQuery routes
  std::uint32_t max_connections = 1024;
  std::uint64_t max_request_bytes = 64ull << 20;        // one body
  std::uint64_t max_inflight_body_bytes = 256ull << 20; // all bodies being read or handled
  std::uint32_t idle_timeout_ms = 60'000;
  std::uint32_t timeout_ms = 30'000;
  TlsOptions tls;    // off unless a certificate is set
  AuthOptions auth;  // off unless a token or a user is set (secrets already read)
};

class HttpServer {
 public:
  HttpServer(const HttpServerOptions& options, const HttpRouter& router);
  ~HttpServer();

  // Binds "host:port" (port 0 picks a free one) and starts the I/O threads and worker pools.
  // With TLS configured, loads the certificate and key first: a problem with them is the error.
  Status Start(const std::string& listen);
  // Stops accepting, lets in-flight requests finish for a short grace period, waits for running
  // handlers, joins threads.
  void Stop();
  unsigned short port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  asio::awaitable<void> AcceptLoop();
  // Handshakes when TLS is on, then serves requests with Serve.
  asio::awaitable<void> Session(asio::ip::tcp::socket socket);
  // The request loop over a plain (beast::tcp_stream) or TLS (beast::ssl_stream) stream.
  template <typename Stream>
  asio::awaitable<void> Serve(Stream& stream);
  // Answers 503 to a connection over the limit, then closes it.
  asio::awaitable<void> Refuse(asio::ip::tcp::socket socket);
  // Runs `fn` where `work` says; the calling coroutine waits on its own strand meanwhile.
  asio::awaitable<void> RunAs(HttpWork work, const std::function<void()>& fn);
  bool ReserveBody(std::uint64_t bytes);
  void ReleaseBody(std::uint64_t bytes);

  const HttpServerOptions options_;
  const HttpRouter& router_;
  const HttpAuth auth_;
  std::unique_ptr<asio::ssl::context> tls_;  // null: plaintext
  asio::io_context io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
  std::unique_ptr<asio::thread_pool> write_pool_;
  std::unique_ptr<asio::thread_pool> query_pool_;
  AcceptBackoff backoff_{"HTTP listener"};
  std::atomic<bool> stopping_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int> connections_{0};
  std::atomic<int> refusing_{0};  // over-limit connections being answered 503
  std::atomic<std::uint64_t> inflight_body_bytes_{0};
  unsigned short port_ = 0;
};

}  // namespace ingot
