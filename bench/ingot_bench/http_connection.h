// HttpConnection: one keep-alive HTTP/1.1 client connection with timeouts, and the line-protocol
// sinks (null, TCP, HTTP /write) that the ingest connections send batches through.
//
// Transport failures come back as an IoFailure whose `kind` is short and stable ("resolve",
// "connect", "write", "read", "timeout", "http_<status>") because the report groups errors by it.
// A connection reconnects on the next request after any failure or a server-side close.
//
// Thread safety: none; each object belongs to one io_context run by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "bench/ingot_bench/asio.h"
#include "bench/ingot_bench/cli_values.h"

namespace ingot::bench {

struct IoFailure {
  std::string kind;  // empty: no failure
  std::string detail;
  bool ok() const { return kind.empty(); }
};

class HttpConnection {
 public:
  HttpConnection(asio::io_context& ioc, std::string host, uint16_t port, int64_t timeout_ns);

  struct Response {
    unsigned status = 0;
    std::string body;
  };

  // Sends one request and reads the whole response (any status) into *response, reusing the
  // capacity of response->body.
  asio::awaitable<IoFailure> RoundTrip(http::verb verb, std::string_view target,
                                       std::string_view body, std::string_view content_type,
                                       Response* response, bool remote_write = false);
  void Close();

 private:
  asio::awaitable<IoFailure> EnsureConnected();

  std::string host_;
  uint16_t port_;
  std::string host_header_;
  std::chrono::nanoseconds timeout_;
  beast::tcp_stream stream_;
  beast::flat_buffer read_buffer_;
  bool connected_ = false;
};

// Opens `stream` to host:port within `timeout`, with TCP_NODELAY set.
asio::awaitable<IoFailure> Connect(beast::tcp_stream& stream, const std::string& host,
                                   uint16_t port, std::chrono::nanoseconds timeout);

struct SendResult {
  IoFailure failure;
  int64_t latency_us = -1;  // request to response, for sinks that see an answer
};

// Delivers batches of complete lines to one target.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual asio::awaitable<SendResult> Send(std::string_view lines) = 0;
  virtual asio::awaitable<void> Close() = 0;
};

struct SinkOptions {
  std::string db = "bench";  // InfluxDB 1.x database name for HTTP /write
  int64_t timeout_ns = 30'000'000'000;
  // HTTP targets: batches are Prometheus remote-write bodies (snappy protobuf), POSTed to the
  // target URL as is with remote write's headers.
  bool remote_write = false;
};

// REQUIRES: `target` parsed by ParseTarget; `ioc` outlives the sink.
std::unique_ptr<Sink> MakeSink(const Target& target, const SinkOptions& options,
                               asio::io_context& ioc);

// The request target for an HTTP write URL: its path with "?db=<db>&precision=ns" appended when
// the URL has no query of its own.
std::string WriteRequestTarget(const Target& target, std::string_view db);

}  // namespace ingot::bench
