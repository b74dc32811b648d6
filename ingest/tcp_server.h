// TcpServer: accepts InfluxDB line protocol over TCP and hands complete lines to a per-connection
// LineConsumer.
//
// Each connection is one coroutine reading into its own buffer; lines split across reads are
// reassembled there, so the consumer always sees whole lines in place (never copied). A line
// that does not end within `max_line_bytes` is skipped up to the next newline and reported.
// Backpressure: Consume() may block while shard queues are full, and the connection is not read
// meanwhile, so TCP flow control slows the sender down instead of points being dropped.
//
// Connections: at most `max_connections`. When a new client arrives at the limit, the connection
// idle longest (silent for at least a second) is closed to make room, so idle clients cannot
// lock active ones out; only when every connection is active is the new one refused. Accept
// errors (out of descriptors) back off instead of spinning.
//
// TLS (`options.tls`, off by default): the listener then speaks only TLS. The read loop is a
// template over the stream, so the plain path reads the socket directly as before (no virtual
// call, no extra copy). A handshake must finish within 10 s; a failed one (a plaintext client,
// say) is counted and logged (config/tls.h) and ends that connection only.
//
// Thread safety: Start/Stop from one thread; consumers run on the server's I/O threads, one
// connection never concurrently with itself.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/asio.h"
#include "config/listener.h"
#include "config/options.h"
#include "config/status.h"
#include "config/thread_annotations.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace ingot {

struct ConnectionInfo {
  std::uint64_t id = 0;
  std::string peer;  // "ip:port"
};

class LineConsumer {
 public:
  virtual ~LineConsumer() = default;
  // `lines` holds one or more whole lines; each ends with '\n' except possibly the last piece
  // of a connection (a final line without newline before EOF).
  virtual void Consume(std::string_view lines) = 0;
  // A line longer than the limit was skipped; `line_number` counts lines of this connection.
  virtual void OverlongLine(std::uint64_t line_number, std::size_t bytes_seen) = 0;
  // The connection ended; everything consumed must be made durable before this returns.
  virtual void Finish() = 0;
};

using LineConsumerFactory =
    std::function<std::unique_ptr<LineConsumer>(const ConnectionInfo& connection)>;

class TcpServer {
 public:
  TcpServer(const IngestOptions& options, LineConsumerFactory factory);
  ~TcpServer();

  // Binds "host:port" (port 0 picks a free one) and starts the I/O threads. With TLS configured,
  // loads the certificate and key first: a problem with them is the error.
  Status Start(const std::string& listen, unsigned threads);
  // Stops accepting and reading; finishes every open connection's consumer; joins threads.
  void Stop();
  unsigned short port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  struct Connection;
  asio::awaitable<void> AcceptLoop();
  asio::awaitable<void> Session(asio::ip::tcp::socket socket, std::uint64_t id);
  // Reads lines from `stream` (the connection's socket, or a TLS stream over it) into `consumer`
  // until EOF, an error, the idle watchdog or Stop().
  template <typename Stream>
  asio::awaitable<void> ReadLines(Stream& stream, Connection& conn, LineConsumer& consumer);
  // Closes the connection idle longest, if one has been idle long enough; true if it did.
  bool EvictIdlest();

  const IngestOptions options_;
  LineConsumerFactory factory_;
  std::unique_ptr<asio::ssl::context> tls_;  // null: plaintext
  asio::io_context io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<std::uint64_t> next_id_{1};
  AcceptBackoff backoff_{"line-protocol TCP listener"};
  Mutex live_mu_;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> live_ GUARDED_BY(live_mu_);
  unsigned short port_ = 0;
};

}  // namespace ingot
