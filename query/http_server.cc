#include "query/http_server.h"

#include <chrono>
#include <exception>

#include <boost/beast/core.hpp>

#include "config/listener.h"
#include "config/logging.h"

namespace ingot {
namespace beast = boost::beast;
using asio::ip::tcp;

void HttpRouter::Add(http::verb method, std::string path, HttpHandler handler) {
  routes_.push_back({method, std::move(path), false, std::move(handler)});
}

void HttpRouter::AddPrefix(http::verb method, std::string prefix, HttpHandler handler) {
  routes_.push_back({method, std::move(prefix), true, std::move(handler)});
}

void SetReply(HttpReply& reply, http::status status, std::string_view content_type,
              std::string body) {
  reply.response.result(status);
  reply.response.set(http::field::content_type, content_type);
  reply.response.body() = std::move(body);
}

void HttpRouter::Handle(const HttpRequest& request, HttpReply& reply) const {
  const std::string_view path = TargetPath(request.target());
  bool path_matched = false;
  for (const Route& route : routes_) {
    const bool match = route.prefix ? path.starts_with(route.path) : path == route.path;
    if (!match) continue;
    path_matched = true;
    if (route.method != request.method()) continue;
    try {
      route.handler(request, reply);
    } catch (const std::exception& e) {
      reply.stream = nullptr;
      SetReply(reply, http::status::internal_server_error, "text/plain",
               std::string("internal error: ") + e.what() + "\n");
    }
    return;
  }
  if (path_matched) {
    SetReply(reply, http::status::method_not_allowed, "text/plain",
             "method " + std::string(request.method_string()) + " not allowed on " +
                 std::string(path) + "\n");
  } else {
    SetReply(reply, http::status::not_found, "text/plain",
             "no such endpoint: " + std::string(path) + "\n");
  }
}

std::string_view TargetPath(std::string_view target) {
  return target.substr(0, target.find('?'));
}

namespace {
constexpr std::uint32_t kMaxHeaderBytes = 256 * 1024;

void AppendParams(std::string_view query, std::vector<std::pair<std::string, std::string>>* out) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      if (eq == std::string_view::npos) {
        out->emplace_back(UrlDecode(pair), "");
      } else {
        out->emplace_back(UrlDecode(pair.substr(0, eq)), UrlDecode(pair.substr(eq + 1)));
      }
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
}
}  // namespace

std::vector<std::pair<std::string, std::string>> ParseQueryParams(const HttpRequest& request) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string_view target = request.target();
  const auto q = target.find('?');
  if (q != std::string_view::npos) AppendParams(target.substr(q + 1), &out);
  if (request.method() == http::verb::post) {
    auto it = request.find(http::field::content_type);
    if (it != request.end() &&
        it->value().starts_with("application/x-www-form-urlencoded")) {
      AppendParams(request.body(), &out);
    }
  }
  return out;
}

HttpServer::HttpServer(const QueryOptions& options, const HttpRouter& router)
    : options_(options), router_(router) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& listen) {
  INGOT_RETURN_IF_ERROR(OpenAcceptor(io_, listen, "query.http_listen", "HTTP listener", &acceptor_));
  port_ = acceptor_->local_endpoint().port();
  asio::co_spawn(io_, AcceptLoop(), asio::detached);
  RunOnThreads(io_, options_.http_threads, &threads_);
  return Status::OK();
}

void HttpServer::Stop() {
  if (threads_.empty()) return;
  stopping_ = true;
  // Requests in flight get a short grace period; idle keep-alive connections are simply dropped.
  StopListener(io_, acceptor_.get(), std::chrono::seconds(2),
               [this] { return in_flight_.load() > 0; }, &threads_);
}

asio::awaitable<void> HttpServer::AcceptLoop() {
  while (!stopping_) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_->async_accept(
        asio::make_strand(io_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping_ || ec == asio::error::operation_aborted) break;
      continue;  // e.g. EMFILE: keep serving the connections we have
    }
    // Responses end with small writes (a chunked body's last chunk); Nagle would hold them until
    // the client's delayed ACK, adding ~40 ms to a request.
    socket.set_option(tcp::no_delay(true), ec);
    auto executor = socket.get_executor();
    asio::co_spawn(executor, Session(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::Session(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
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
    // Long PromQL queries travel in the URL (Beast's default allows 8 KiB of header).
    parser.header_limit(kMaxHeaderBytes);
    stream.expires_after(std::chrono::milliseconds(options_.idle_timeout_ms));
    boost::system::error_code ec;
    co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      break;
    }
    if (ec) {
      HttpResponse response;
      response.version(11);
      response.keep_alive(false);
      if (ec == http::error::header_limit) {
        response.result(http::status::request_header_fields_too_large);
        response.body() = "request line and headers exceed the limit of " +
                          std::to_string(kMaxHeaderBytes) +
                          " bytes; send long queries as a POST form body\n";
      } else if (ec == http::error::body_limit) {
        response.result(http::status::payload_too_large);
        response.body() = "request body exceeds the limit of " +
                          std::to_string(options_.max_request_bytes) +
                          " bytes (query.max_request_bytes)\n";
      } else {
        response.result(http::status::bad_request);
        response.body() = "malformed HTTP request: " + ec.message() + "\n";
      }
      response.set(http::field::content_type, "text/plain");
      response.prepare_payload();
      stream.expires_after(std::chrono::milliseconds(options_.timeout_ms));
      co_await http::async_write(stream, response, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    in_flight_.fetch_add(1);
    HttpRequest request = parser.release();
    HttpReply reply;
    reply.response.version(request.version());
    reply.response.keep_alive(request.keep_alive() && !stopping_);
    reply.response.set(http::field::server, "ingot");
    router_.Handle(request, reply);
    const bool keep_alive = reply.response.keep_alive();
    stream.expires_after(std::chrono::milliseconds(options_.timeout_ms));
    if (!reply.stream) {
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
        more = reply.stream(&chunk);
        if (!chunk.empty()) {
          stream.expires_after(std::chrono::milliseconds(options_.timeout_ms));
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
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace ingot
