#include "node/http_server.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "config/accept.h"
#include "config/logging.h"
#include "config/metrics.h"
#include "config/tls.h"

namespace ingot {
namespace beast = boost::beast;
using asio::ip::tcp;

namespace {

// Long PromQL queries travel in the URL (Beast's default allows 8 KiB of request head).
constexpr std::uint32_t kMaxHeaderBytes = 256 * 1024;
// Connections answered 503 at the same time; past it an over-limit connection is just closed.
constexpr int kMaxRefusing = 64;
// A request refused for want of credentials has its body read and dropped when it declares at
// most this much, so that the connection stays usable and the client reads the 401 (closing with
// unread bytes would reset the connection, and the answer could be lost). Larger bodies are not
// read: the answer says Connection: close.
constexpr std::uint64_t kMaxDiscardedBodyBytes = 64 * 1024;
// How long a TLS connection's close_notify exchange may take at the end.
constexpr auto kTlsShutdownTimeout = std::chrono::seconds(1);

struct ServerMetrics {
  Counter& refused = MetricsRegistry::Default().AddCounter(
      "ingot_http_connections_refused_total",
      "HTTP connections answered 503 and closed because query.max_connections were open.");
  Counter& shed = MetricsRegistry::Default().AddCounter(
      "ingot_http_requests_shed_total",
      "HTTP requests answered 503 before their body was read because the bodies in flight "
      "would pass query.max_inflight_request_bytes.");
  Counter& accept_errors = MetricsRegistry::Default().AddCounter(
      "ingot_accept_errors_total", "Failed accepts (e.g. out of file descriptors).",
      "listener=\"http\"");
  Counter& unauthorized = MetricsRegistry::Default().AddCounter(
      "ingot_http_requests_unauthorized_total",
      "HTTP requests answered 401: credentials missing or wrong ([auth]).");
  RateLimiter unauthorized_log{1};
};
ServerMetrics& Metrics() {
  static ServerMetrics metrics;
  return metrics;
}

HttpResponse PlainResponse(http::status status, std::string body) {
  HttpResponse response;
  response.version(11);
  response.result(status);
  response.keep_alive(false);
  response.set(http::field::server, "ingot");
  response.set(http::field::content_type, "text/plain");
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

std::string PeerOf(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return remote.address().to_string() + ":" + std::to_string(remote.port());
}

// The end of a connection: a plain one stops sending; a TLS one says close_notify first (briefly:
// the peer may be gone).
asio::awaitable<void> EndConnection(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  co_return;
}

asio::awaitable<void> EndConnection(beast::ssl_stream<beast::tcp_stream>& stream) {
  boost::system::error_code ec;
  if (beast::get_lowest_layer(stream).socket().is_open()) {
    beast::get_lowest_layer(stream).expires_after(kTlsShutdownTimeout);
    co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
}

}  // namespace

HttpServer::HttpServer(const HttpServerOptions& options, const HttpRouter& router)
    : options_(options), router_(router), auth_(options.auth) {
  Metrics();
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& listen) {
  if (options_.tls.enabled()) {
    INGOT_RETURN_IF_ERROR(MakeServerTlsContext(options_.tls, "query.tls", &tls_));
  }
  INGOT_RETURN_IF_ERROR(
      OpenAcceptor(io_, listen, "query.http_listen", "HTTP listener", &acceptor_));
  port_ = acceptor_->local_endpoint().port();
  write_pool_ = std::make_unique<asio::thread_pool>(std::max(1u, options_.write_workers));
  query_pool_ = std::make_unique<asio::thread_pool>(std::max(1u, options_.query_workers));
  asio::co_spawn(acceptor_->get_executor(), AcceptLoop(), asio::detached);
  RunOnThreads(io_, options_.io_threads, &threads_);
  return Status::OK();
}

void HttpServer::Stop() {
  if (threads_.empty()) return;
  stopping_ = true;
  // Requests in flight get a short grace period; idle keep-alive connections are simply dropped.
  StopListener(
      io_, acceptor_.get(), std::chrono::seconds(2), [this] { return in_flight_.load() > 0; },
      &threads_);
  // Handlers still running reference their (suspended) sessions, which live until io_ goes
  // away: let them finish first.
  write_pool_->join();
  query_pool_->join();
}

bool HttpServer::ReserveBody(std::uint64_t bytes) {
  std::uint64_t current = inflight_body_bytes_.load();
  for (;;) {
    // A body larger than the whole budget still passes when nothing else is in flight.
    if (current != 0 && current + bytes > options_.max_inflight_body_bytes) return false;
    if (inflight_body_bytes_.compare_exchange_weak(current, current + bytes)) return true;
  }
}

void HttpServer::ReleaseBody(std::uint64_t bytes) { inflight_body_bytes_.fetch_sub(bytes); }

asio::awaitable<void> HttpServer::AcceptLoop() {
  tcp::socket socket(io_);
  while (
      co_await AcceptOne(*acceptor_, io_, backoff_, Metrics().accept_errors, stopping_, &socket)) {
    boost::system::error_code ec;
    auto executor = socket.get_executor();
    if (connections_.load() >= static_cast<int>(options_.max_connections)) {
      Metrics().refused.Add();
      asio::co_spawn(executor, Refuse(std::move(socket)), asio::detached);
      continue;
    }
    // Responses end with small writes (a chunked body's last chunk); Nagle would hold them until
    // the client's delayed ACK, adding ~40 ms to a request.
    socket.set_option(tcp::no_delay(true), ec);
    connections_.fetch_add(1);
    asio::co_spawn(executor, Session(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Refuse(tcp::socket socket) {
  boost::system::error_code ec;
  if (refusing_.fetch_add(1) < kMaxRefusing && !tls_) {
    beast::tcp_stream stream(std::move(socket));
    HttpResponse response =
        PlainResponse(http::status::service_unavailable,
                      std::to_string(options_.max_connections) +
                          " HTTP connections are open (query.max_connections); retry later\n");
    response.set(http::field::retry_after, "1");
    stream.expires_after(std::chrono::seconds(1));
    co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  } else {
    socket.close(ec);
  }
  refusing_.fetch_sub(1);
}

asio::awaitable<void> HttpServer::RunAs(HttpWork work, const std::function<void()>& fn) {
  if (work == HttpWork::kInline || work == HttpWork::kWriteFirstInline) {
    fn();
    co_return;
  }
  asio::thread_pool& pool = work == HttpWork::kWrite ? *write_pool_ : *query_pool_;
  // The session waits on a timer of its own strand; the worker cancels it when done. The cancel
  // is posted to the strand, which this coroutine holds until it is suspended in async_wait, so
  // the wake-up cannot come before the wait.
  auto strand = co_await asio::this_coro::executor;
  asio::steady_timer done(strand, asio::steady_timer::time_point::max());
  asio::post(pool, [&fn, &done, strand] {
    fn();
    asio::post(strand, [&done] { done.cancel(); });
  });
  boost::system::error_code ec;
  co_await done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> HttpServer::Session(tcp::socket socket) {
  if (!tls_) {
    beast::tcp_stream stream(std::move(socket));
    co_await Serve(stream);
  } else {
    const std::string peer = PeerOf(socket);
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), *tls_);
    beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(options_.timeout_ms));
    boost::system::error_code ec;
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      HandshakeFailed("http", peer, ec);
    } else {
      co_await Serve(stream);
    }
  }
  connections_.fetch_sub(1);
}

template <typename Stream>
asio::awaitable<void> HttpServer::Serve(Stream& stream) {
  auto& lowest = beast::get_lowest_layer(stream);
  // Beast reads at most what the buffer can hold beyond its contents (never less than 512
  // bytes, never more than 64 KiB). A flat buffer left to grow on demand stays at 512 bytes, so a
  // 2 MB body took ~4,000 reads, each a reactor round trip and a timer reset: reserve the most
  // one read can use.
  beast::flat_buffer buffer;
  buffer.reserve(64 * 1024);
  std::string chunk;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options_.max_request_bytes);
    parser.header_limit(kMaxHeaderBytes);
    lowest.expires_after(std::chrono::milliseconds(options_.idle_timeout_ms));
    boost::system::error_code ec;
    co_await http::async_read_header(stream, buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (!ec && auth_.enabled() && !HttpAuth::IsOpen(TargetPath(parser.get().target()))) {
      const HttpAuth::Verdict verdict = auth_.Check(parser.get());
      if (verdict != HttpAuth::Verdict::kAllowed) {
        Metrics().unauthorized.Add();
        std::uint64_t suppressed = 0;
        if (Metrics().unauthorized_log.Allow(&suppressed)) {
          Logger("http")->warn(
              "{} {} from {} refused (401): {}{}", std::string(parser.get().method_string()),
              std::string(TargetPath(parser.get().target())), PeerOf(lowest.socket()),
              verdict == HttpAuth::Verdict::kMissing ? "no credentials" : "wrong credentials",
              suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
        }
        // A small body is read and dropped so that the connection can go on (see
        // kMaxDiscardedBodyBytes); a large one is not read at all.
        bool body_read = parser.is_done();
        const auto length = parser.content_length();
        if (!body_read && length && *length <= kMaxDiscardedBodyBytes &&
            !beast::iequals(parser.get()[http::field::expect], "100-continue")) {
          lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
          co_await http::async_read(stream, buffer, parser,
                                    asio::redirect_error(asio::use_awaitable, ec));
          body_read = !ec;
        }
        HttpReply reply;
        auth_.Challenge(verdict, reply);
        reply.response.version(parser.get().version());
        reply.response.set(http::field::server, "ingot");
        const bool keep_alive = body_read && parser.get().keep_alive() && !stopping_;
        reply.response.keep_alive(keep_alive);
        reply.response.prepare_payload();
        lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
        co_await http::async_write(stream, reply.response,
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !keep_alive) break;
        continue;
      }
    }
    // The body's share of the in-flight budget, taken before the body is read.
    std::uint64_t reserved = 0;
    if (!ec && !parser.is_done()) {
      const auto length = parser.content_length();
      if (length && *length > options_.max_request_bytes) {
        ec = http::error::body_limit;
      } else {
        const std::uint64_t want = length ? *length : options_.max_request_bytes;
        if (!ReserveBody(want)) {
          Metrics().shed.Add();
          HttpResponse response =
              PlainResponse(http::status::service_unavailable,
                            "request bodies in flight would exceed " +
                                std::to_string(options_.max_inflight_body_bytes) +
                                " bytes (query.max_inflight_request_bytes); retry\n");
          response.set(http::field::retry_after, "1");
          lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
          co_await http::async_write(stream, response,
                                     asio::redirect_error(asio::use_awaitable, ec));
          break;
        }
        reserved = want;
        // curl and others wait (a second, for curl) for this before sending a large body.
        const auto expect = parser.get()[http::field::expect];
        if (beast::iequals(expect, "100-continue")) {
          static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
          lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
          co_await asio::async_write(stream, asio::buffer(kContinue.data(), kContinue.size()),
                                     asio::redirect_error(asio::use_awaitable, ec));
        }
        if (!ec) {
          lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
          co_await http::async_read(stream, buffer, parser,
                                    asio::redirect_error(asio::use_awaitable, ec));
        }
      }
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      ReleaseBody(reserved);
      break;
    }
    if (ec) {
      ReleaseBody(reserved);
      HttpResponse response;
      if (ec == http::error::header_limit) {
        response = PlainResponse(http::status::request_header_fields_too_large,
                                 "request line and headers exceed the limit of " +
                                     std::to_string(kMaxHeaderBytes) +
                                     " bytes; send long queries as a POST form body\n");
      } else if (ec == http::error::body_limit) {
        response = PlainResponse(http::status::payload_too_large,
                                 "request body exceeds the limit of " +
                                     std::to_string(options_.max_request_bytes) +
                                     " bytes (query.max_request_bytes)\n");
      } else {
        response = PlainResponse(http::status::bad_request,
                                 "malformed HTTP request: " + ec.message() + "\n");
      }
      lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
      co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    in_flight_.fetch_add(1);
    HttpRequest request = parser.release();
    HttpReply reply;
    reply.response.version(request.version());
    reply.response.keep_alive(request.keep_alive() && !stopping_);
    reply.response.set(http::field::server, "ingot");
    const HttpWork work = router_.WorkOf(request);
    co_await RunAs(work, [&] { router_.Handle(request, reply); });
    if (reply.then) {
      co_await RunAs(HttpWork::kWrite, [&] {
        auto then = std::move(reply.then);
        reply.then = nullptr;
        then(reply);
      });
    }
    // Answers never refer to their request: its body's memory and budget go back before the
    // answer is written.
    request = HttpRequest{};
    ReleaseBody(reserved);
    reserved = 0;
    const bool keep_alive = reply.response.keep_alive() && !stopping_;
    lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
    if (!reply.stream) {
      reply.response.keep_alive(keep_alive);
      reply.response.prepare_payload();
      co_await http::async_write(stream, reply.response,
                                 asio::redirect_error(asio::use_awaitable, ec));
    } else {
      http::response<http::empty_body> header;
      header.result(reply.response.result());
      header.version(reply.response.version());
      for (const auto& field : reply.response) header.set(field.name_string(), field.value());
      header.keep_alive(keep_alive);
      header.chunked(true);
      http::response_serializer<http::empty_body> serializer(header);
      co_await http::async_write_header(stream, serializer,
                                        asio::redirect_error(asio::use_awaitable, ec));
      bool more = true;
      while (!ec && more) {
        chunk.clear();
        co_await RunAs(work, [&] { more = reply.stream(&chunk); });
        if (!chunk.empty()) {
          lowest.expires_after(std::chrono::milliseconds(options_.timeout_ms));
          co_await asio::async_write(stream, http::make_chunk(asio::buffer(chunk)),
                                     asio::redirect_error(asio::use_awaitable, ec));
        }
      }
      if (!ec) {
        co_await asio::async_write(stream, http::make_chunk_last(),
                                   asio::redirect_error(asio::use_awaitable, ec));
      }
    }
    in_flight_.fetch_sub(1);
    if (ec || !keep_alive) break;
  }
  co_await EndConnection(stream);
}

}  // namespace ingot
