#include "ingest/tcp_server.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "config/listener.h"
#include "config/logging.h"

namespace ingot {
using asio::ip::tcp;

TcpServer::TcpServer(const IngestOptions& options, LineConsumerFactory factory)
    : options_(options), factory_(std::move(factory)) {}

TcpServer::~TcpServer() { Stop(); }

Status TcpServer::Start(const std::string& listen, unsigned threads) {
  INGOT_RETURN_IF_ERROR(OpenAcceptor(io_, listen, "ingest.tcp_listen", "line-protocol TCP listener", &acceptor_));
  port_ = acceptor_->local_endpoint().port();
  asio::co_spawn(io_, AcceptLoop(), asio::detached);
  RunOnThreads(io_, threads, &threads_);
  return Status::OK();
}

void TcpServer::Stop() {
  if (threads_.empty()) return;
  stopping_ = true;
  // Sessions notice `stopping_` at their next wake-up (data, EOF or the idle watchdog tick) and
  // finish their consumers; wait for them, then stop the loop.
  StopListener(io_, acceptor_.get(), std::chrono::seconds(5),
               [this] { return connections_.load() > 0; }, &threads_);
}

asio::awaitable<void> TcpServer::AcceptLoop() {
  auto log = Logger("ingest");
  while (!stopping_) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_->async_accept(
        asio::make_strand(io_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping_ || ec == asio::error::operation_aborted) break;
      log->warn("accept failed: {}", ec.message());
      continue;
    }
    if (connections_.load() >= static_cast<int>(options_.max_connections)) {
      log->warn("refusing connection: {} connections open (ingest.max_connections)",
                connections_.load());
      socket.close(ec);
      continue;
    }
    // Counted here, not when the session first runs: a burst of accepts must not pass the limit,
    // and Stop() must wait for sessions that have not started yet.
    connections_.fetch_add(1);
    const std::uint64_t id = next_id_.fetch_add(1);
    auto executor = socket.get_executor();
    asio::co_spawn(executor, Session(std::move(socket), id), asio::detached);
  }
}

namespace {

// What a session and its idle watchdog share; both run on the connection's strand.
struct Connection {
  explicit Connection(tcp::socket s) : socket(std::move(s)) {}
  tcp::socket socket;
  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
  bool done = false;
};

// Ends the connection's reads when it has been idle too long or the server stops.
asio::awaitable<void> Watchdog(std::shared_ptr<Connection> conn, const std::atomic<bool>& stopping,
                               std::chrono::milliseconds idle_limit) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!conn->done) {
    timer.expires_after(std::chrono::milliseconds(100));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (conn->done) break;
    if (stopping || std::chrono::steady_clock::now() - conn->last_activity > idle_limit) {
      conn->socket.shutdown(tcp::socket::shutdown_receive, ec);
      conn->socket.cancel(ec);
      break;
    }
  }
}

}  // namespace

asio::awaitable<void> TcpServer::Session(tcp::socket socket, std::uint64_t id) {
  ConnectionInfo info;
  info.id = id;
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (!ec) info.peer = remote.address().to_string() + ":" + std::to_string(remote.port());
  std::unique_ptr<LineConsumer> consumer = factory_(info);

  // The buffer holds at least one maximal line plus a read's worth.
  const std::size_t capacity =
      std::max<std::size_t>(256 * 1024, static_cast<std::size_t>(options_.max_line_bytes) * 2);
  std::unique_ptr<char[]> buffer(new char[capacity]);
  std::size_t begin = 0, end = 0;
  bool skipping = false;  // inside an over-long line, discarding up to its newline
  std::size_t skipped_bytes = 0;
  std::uint64_t lines_before = 0;  // lines handed over so far, for line numbers

  auto conn = std::make_shared<Connection>(std::move(socket));
  asio::co_spawn(conn->socket.get_executor(),
                 Watchdog(conn, stopping_, std::chrono::milliseconds(options_.idle_timeout_ms)),
                 asio::detached);

  for (;;) {
    if (end == capacity) {
      if (begin > 0) {
        std::memmove(buffer.get(), buffer.get() + begin, end - begin);
        end -= begin;
        begin = 0;
      }
    }
    const std::size_t n = co_await conn->socket.async_read_some(
        asio::buffer(buffer.get() + end, capacity - end),
        asio::redirect_error(asio::use_awaitable, ec));
    if (n > 0) conn->last_activity = std::chrono::steady_clock::now();
    const std::size_t scan_from = end;
    end += n;
    if (skipping) {
      const char* nl = static_cast<const char*>(std::memchr(buffer.get() + scan_from, '\n', end - scan_from));
      if (nl == nullptr) {
        skipped_bytes += end - begin;
        begin = end = 0;
      } else {
        skipped_bytes += static_cast<std::size_t>(nl - (buffer.get() + begin)) + 1;
        consumer->OverlongLine(++lines_before, skipped_bytes);
        begin = static_cast<std::size_t>(nl - buffer.get()) + 1;
        skipping = false;
      }
    }
    if (!skipping && end > begin) {
      // Hand over every whole line; keep the partial tail for the next read.
      const char* base = buffer.get();
      const void* last_nl = memrchr(base + begin, '\n', end - begin);
      if (last_nl != nullptr) {
        const std::size_t stop = static_cast<std::size_t>(static_cast<const char*>(last_nl) - base) + 1;
        std::string_view lines(base + begin, stop - begin);
        consumer->Consume(lines);
        // Time blocked on backpressure inside Consume() is not idleness of the client.
        conn->last_activity = std::chrono::steady_clock::now();
        lines_before += static_cast<std::uint64_t>(std::count(lines.begin(), lines.end(), '\n'));
        begin = stop;
      }
      if (end - begin > options_.max_line_bytes) {
        skipping = true;
        skipped_bytes = end - begin;
        begin = end = 0;
      } else if (begin == end) {
        begin = end = 0;
      }
    }
    if (ec) break;  // EOF, reset, idle close or shutdown: the bytes read above are kept
  }
  if (!skipping && end > begin) {
    consumer->Consume(std::string_view(buffer.get() + begin, end - begin));
  } else if (skipping) {
    consumer->OverlongLine(lines_before + 1, skipped_bytes);
  }
  consumer->Finish();
  conn->done = true;
  conn->socket.shutdown(tcp::socket::shutdown_both, ec);
  conn->socket.close(ec);
  connections_.fetch_sub(1);
}

}  // namespace ingot
