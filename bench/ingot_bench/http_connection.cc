#include "bench/ingot_bench/http_connection.h"

#include <chrono>

namespace ingot::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Beast reads at most max(512, free capacity of the buffer) bytes at a time, and the parser drains
// the buffer as it goes, so a buffer that starts empty stays at 512 bytes: a 200 KB answer took
// about 400 reads, each one a wakeup and a timer re-arm, and the client's own cost doubled the
// latency it reported. With this much room a read takes what the socket holds, up to Beast's cap
// of 64 KiB.
constexpr size_t kReadBufferBytes = 64 * 1024;

IoFailure FailureFrom(std::string_view kind, const boost::system::error_code& ec) {
  if (ec == beast::error::timeout) return {"timeout", std::string(kind) + ": " + ec.message()};
  return {std::string(kind), ec.message()};
}

class NullSink final : public Sink {
 public:
  asio::awaitable<SendResult> Send(std::string_view) override { co_return SendResult(); }
  asio::awaitable<void> Close() override { co_return; }
};

class TcpSink final : public Sink {
 public:
  TcpSink(asio::io_context& ioc, const Target& target, const SinkOptions& options)
      : stream_(ioc), host_(target.host), port_(target.port), timeout_(options.timeout_ns) {}

  asio::awaitable<SendResult> Send(std::string_view lines) override {
    SendResult result;
    if (!connected_) {
      result.failure = co_await Connect(stream_, host_, port_, timeout_);
      if (!result.failure.ok()) co_return result;
      connected_ = true;
    }
    boost::system::error_code ec;
    stream_.expires_after(timeout_);
    co_await asio::async_write(stream_, asio::buffer(lines.data(), lines.size()),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      result.failure = FailureFrom("write", ec);
      Reset();
    }
    co_return result;
  }

  asio::awaitable<void> Close() override {
    Reset();
    co_return;
  }

 private:
  void Reset() {
    if (!connected_) return;
    boost::system::error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
    connected_ = false;
  }

  beast::tcp_stream stream_;
  std::string host_;
  uint16_t port_;
  std::chrono::nanoseconds timeout_;
  bool connected_ = false;
};

class HttpWriteSink final : public Sink {
 public:
  HttpWriteSink(asio::io_context& ioc, const Target& target, const SinkOptions& options)
      : connection_(ioc, target.host, target.port, options.timeout_ns),
        request_target_(options.remote_write ? target.path
                                             : WriteRequestTarget(target, options.db)),
        remote_write_(options.remote_write) {}

  asio::awaitable<SendResult> Send(std::string_view lines) override {
    SendResult result;
    const Clock::time_point begin = Clock::now();
    result.failure = co_await connection_.RoundTrip(
        http::verb::post, request_target_, lines,
        remote_write_ ? "application/x-protobuf" : "text/plain; charset=utf-8", &response_,
        remote_write_);
    if (!result.failure.ok()) co_return result;
    result.latency_us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - begin).count();
    if (response_.status < 200 || response_.status > 299) {
      result.failure.kind = "http_" + std::to_string(response_.status);
      result.failure.detail = response_.body.substr(0, 200);
    }
    co_return result;
  }

  asio::awaitable<void> Close() override {
    connection_.Close();
    co_return;
  }

 private:
  HttpConnection connection_;
  std::string request_target_;
  const bool remote_write_;
  HttpConnection::Response response_;
};

}  // namespace

asio::awaitable<IoFailure> Connect(beast::tcp_stream& stream, const std::string& host,
                                   uint16_t port, std::chrono::nanoseconds timeout) {
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(co_await asio::this_coro::executor);
  const auto endpoints = co_await resolver.async_resolve(
      host, std::to_string(port), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return FailureFrom("resolve", ec);
  stream.expires_after(timeout);
  co_await stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return FailureFrom("connect", ec);
  // Requests and batches are written whole, so Nagle's algorithm has nothing to coalesce; it would
  // only hold back the tail of a write until the server acknowledges the rest.
  stream.socket().set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) co_return FailureFrom("connect", ec);
  co_return IoFailure();
}

HttpConnection::HttpConnection(asio::io_context& ioc, std::string host, uint16_t port,
                               int64_t timeout_ns)
    : host_(std::move(host)),
      port_(port),
      host_header_(host_ + ":" + std::to_string(port_)),
      timeout_(timeout_ns),
      stream_(ioc) {
  read_buffer_.reserve(kReadBufferBytes);
}

void HttpConnection::Close() {
  if (!connected_) return;
  boost::system::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
  read_buffer_.clear();
  connected_ = false;
}

asio::awaitable<IoFailure> HttpConnection::EnsureConnected() {
  if (connected_) co_return IoFailure();
  IoFailure failure = co_await Connect(stream_, host_, port_, timeout_);
  connected_ = failure.ok();
  co_return failure;
}

asio::awaitable<IoFailure> HttpConnection::RoundTrip(http::verb verb, std::string_view target,
                                                     std::string_view body,
                                                     std::string_view content_type,
                                                     Response* response, bool remote_write) {
  IoFailure failure = co_await EnsureConnected();
  if (!failure.ok()) co_return failure;

  // span_body sends the caller's bytes without copying them into the request.
  http::request<http::span_body<const char>> request(
      verb, beast::string_view(target.data(), target.size()), 11);
  request.set(http::field::host, host_header_);
  request.set(http::field::user_agent, "ingot-bench");
  request.keep_alive(true);
  if (verb != http::verb::get) {
    request.set(http::field::content_type,
                beast::string_view(content_type.data(), content_type.size()));
    request.body() = boost::beast::span<const char>(body.data(), body.size());
  }
  if (remote_write) {
    request.set(http::field::content_encoding, "snappy");
    request.set("X-Prometheus-Remote-Write-Version", "0.1.0");
  }
  request.prepare_payload();

  boost::system::error_code ec;
  stream_.expires_after(timeout_);
  co_await http::async_write(stream_, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    Close();
    co_return FailureFrom("write", ec);
  }
  http::response_parser<http::string_body> parser;
  // Query answers (exports of millions of samples) are far above Beast's 8 MB default.
  parser.body_limit(uint64_t{1} << 32);
  // The answer goes into the previous answer's storage: once it has seen the largest answer, a
  // connection stops allocating (and page-faulting) per response.
  parser.get().body() = std::move(response->body);
  parser.get().body().clear();
  stream_.expires_after(timeout_);
  co_await http::async_read(stream_, read_buffer_, parser,
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    Close();
    co_return FailureFrom("read", ec);
  }
  http::response<http::string_body>& message = parser.get();
  response->status = message.result_int();
  response->body = std::move(message.body());
  if (!message.keep_alive()) Close();
  co_return IoFailure();
}

std::unique_ptr<Sink> MakeSink(const Target& target, const SinkOptions& options,
                               asio::io_context& ioc) {
  switch (target.kind) {
    case Target::Kind::kTcp: return std::make_unique<TcpSink>(ioc, target, options);
    case Target::Kind::kHttp: return std::make_unique<HttpWriteSink>(ioc, target, options);
    case Target::Kind::kNull: break;
  }
  return std::make_unique<NullSink>();
}

std::string WriteRequestTarget(const Target& target, std::string_view db) {
  std::string request_target = target.path;
  if (request_target.find('?') == std::string::npos) {
    request_target += "?db=";
    request_target += db;
    request_target += "&precision=ns";
  }
  return request_target;
}

}  // namespace ingot::bench
