#include "ingest/tcp_server.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "config/accept.h"
#include "config/listener.h"
#include "config/logging.h"
#include "config/metrics.h"
#include "config/tls.h"

namespace ingot {
using asio::ip::tcp;

TcpServer::TcpServer(const IngestOptions& options, LineConsumerFactory factory)
    : options_(options), factory_(std::move(factory)) {}

TcpServer::~TcpServer() { Stop(); }

Status TcpServer::Start(const std::string& listen, unsigned threads) {
  if (options_.tls.enabled()) {
    INGOT_RETURN_IF_ERROR(MakeServerTlsContext(options_.tls, "ingest.tls", &tls_));
  }
  INGOT_RETURN_IF_ERROR(
      OpenAcceptor(io_, listen, "ingest.tcp_listen", "line-protocol TCP listener", &acceptor_));
  port_ = acceptor_->local_endpoint().port();
  asio::co_spawn(acceptor_->get_executor(), AcceptLoop(), asio::detached);
  RunOnThreads(io_, threads, &threads_);
  return Status::OK();
}

void TcpServer::Stop() {
  if (threads_.empty()) return;
  stopping_ = true;
  // Sessions notice `stopping_` at their next wake-up (data, EOF or the idle watchdog tick) and
  // finish their consumers; wait for them, then stop the loop.
  StopListener(
      io_, acceptor_.get(), std::chrono::seconds(5), [this] { return connections_.load() > 0; },
      &threads_);
}

namespace {

std::int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A connection silent this long may be closed for a new client when the limit is reached.
constexpr std::int64_t kEvictableIdleNs = 1'000'000'000;
// A TLS client must finish its handshake within this, whatever the idle timeout.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

struct TcpMetrics {
  Counter& evicted = MetricsRegistry::Default().AddCounter(
      "ingot_tcp_connections_evicted_total",
      "Idle line-protocol connections closed to make room for a new one at "
      "ingest.max_connections.");
  Counter& refused = MetricsRegistry::Default().AddCounter(
      "ingot_tcp_connections_refused_total",
      "Line-protocol connections refused at ingest.max_connections (every open one active).");
  Counter& accept_errors = MetricsRegistry::Default().AddCounter(
      "ingot_accept_errors_total", "Failed accepts (e.g. out of file descriptors).",
      "listener=\"tcp\"");
};
TcpMetrics& Metrics() {
  static TcpMetrics metrics;
  return metrics;
}

}  // namespace

// What a session, its idle watchdog and the accept loop (eviction) share.
struct TcpServer::Connection {
  explicit Connection(tcp::socket s, std::uint64_t connection_id)
      : socket(std::move(s)), id(connection_id) {}
  tcp::socket socket;
  const std::uint64_t id;
  std::atomic<std::int64_t> last_activity_ns{SteadyNowNs()};
  std::atomic<bool> evicted{false};
  bool done = false;  // on the connection's strand only
};

bool TcpServer::EvictIdlest() {
  std::shared_ptr<Connection> victim;
  std::int64_t oldest = SteadyNowNs() - kEvictableIdleNs;
  {
    MutexLock lock(live_mu_);
    for (const auto& [id, weak] : live_) {
      std::shared_ptr<Connection> conn = weak.lock();
      if (!conn || conn->evicted.load()) continue;
      const std::int64_t last = conn->last_activity_ns.load();
      if (last <= oldest) {
        oldest = last;
        victim = std::move(conn);
      }
    }
  }
  if (!victim) return false;
  victim->evicted = true;
  Metrics().evicted.Add();
  // The socket belongs to the connection's strand: close its reads there, as the watchdog does.
  asio::post(victim->socket.get_executor(), [victim] {
    boost::system::error_code ec;
    victim->socket.shutdown(tcp::socket::shutdown_receive, ec);
    victim->socket.cancel(ec);
  });
  return true;
}

asio::awaitable<void> TcpServer::AcceptLoop() {
  auto log = Logger("ingest");
  RateLimiter limit_log(1);
  tcp::socket socket(io_);
  while (
      co_await AcceptOne(*acceptor_, io_, backoff_, Metrics().accept_errors, stopping_, &socket)) {
    boost::system::error_code ec;
    if (connections_.load() >= static_cast<int>(options_.max_connections)) {
      const bool evicted = EvictIdlest();
      std::uint64_t suppressed = 0;
      if (limit_log.Allow(&suppressed)) {
        log->warn("{} connections open (ingest.max_connections): {}{}", connections_.load(),
                  evicted ? "closed the connection idle longest for a new one"
                          : "refused a new connection, every open one is active",
                  suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
      }
      if (!evicted) {
        Metrics().refused.Add();
        socket.close(ec);
        continue;
      }
    }
    // Counted here, not when the session first runs: a burst of accepts must not pass the limit,
    // and Stop() must wait for sessions that have not started yet. (An evicted connection still
    // counts until its session has finished its consumer.)
    connections_.fetch_add(1);
    const std::uint64_t id = next_id_.fetch_add(1);
    auto executor = socket.get_executor();
    asio::co_spawn(executor, Session(std::move(socket), id), asio::detached);
  }
}

namespace {

// Ends the connection's reads when it has been idle too long or the server stops.
template <typename Conn>
asio::awaitable<void> Watchdog(std::shared_ptr<Conn> conn, const std::atomic<bool>& stopping,
                               std::chrono::milliseconds idle_limit) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const std::int64_t idle_limit_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(idle_limit).count();
  while (!conn->done) {
    timer.expires_after(std::chrono::milliseconds(100));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (conn->done) break;
    if (stopping || SteadyNowNs() - conn->last_activity_ns.load() > idle_limit_ns) {
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

  auto conn = std::make_shared<Connection>(std::move(socket), id);
  {
    MutexLock lock(live_mu_);
    live_.emplace(id, conn);
  }
  asio::co_spawn(conn->socket.get_executor(),
                 Watchdog(conn, stopping_, std::chrono::milliseconds(options_.idle_timeout_ms)),
                 asio::detached);

  if (!tls_) {
    std::unique_ptr<LineConsumer> consumer = factory_(info);
    co_await ReadLines(conn->socket, *conn, *consumer);
    consumer->Finish();
  } else {
    // The TLS stream reads through the connection's socket, which the watchdog and eviction
    // close as for a plain connection.
    asio::ssl::stream<tcp::socket&> stream(conn->socket, *tls_);
    asio::steady_timer deadline(conn->socket.get_executor(), kHandshakeTimeout);
    deadline.async_wait([&socket = conn->socket](const boost::system::error_code& timer_ec) {
      boost::system::error_code ignored;
      if (!timer_ec) socket.cancel(ignored);
    });
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    deadline.cancel();
    if (ec) {
      HandshakeFailed("tcp", info.peer, ec);
    } else {
      // The consumer is made only now: a failed handshake costs no series cache.
      std::unique_ptr<LineConsumer> consumer = factory_(info);
      co_await ReadLines(stream, *conn, *consumer);
      consumer->Finish();
    }
  }
  conn->done = true;
  conn->socket.shutdown(tcp::socket::shutdown_both, ec);
  conn->socket.close(ec);
  {
    MutexLock lock(live_mu_);
    live_.erase(id);
  }
  connections_.fetch_sub(1);
}

template <typename Stream>
asio::awaitable<void> TcpServer::ReadLines(Stream& stream, Connection& conn,
                                           LineConsumer& consumer) {
  // The buffer holds at least one maximal line plus a read's worth.
  const std::size_t capacity =
      std::max<std::size_t>(256 * 1024, static_cast<std::size_t>(options_.max_line_bytes) * 2);
  std::unique_ptr<char[]> buffer(new char[capacity]);
  std::size_t begin = 0, end = 0;
  bool skipping = false;  // inside an over-long line, discarding up to its newline
  std::size_t skipped_bytes = 0;
  std::uint64_t lines_before = 0;  // lines handed over so far, for line numbers
  boost::system::error_code ec;

  for (;;) {
    if (end == capacity) {
      if (begin > 0) {
        std::memmove(buffer.get(), buffer.get() + begin, end - begin);
        end -= begin;
        begin = 0;
      }
    }
    const std::size_t n =
        co_await stream.async_read_some(asio::buffer(buffer.get() + end, capacity - end),
                                        asio::redirect_error(asio::use_awaitable, ec));
    if (n > 0) conn.last_activity_ns.store(SteadyNowNs());
    const std::size_t scan_from = end;
    end += n;
    if (skipping) {
      const char* nl =
          static_cast<const char*>(std::memchr(buffer.get() + scan_from, '\n', end - scan_from));
      if (nl == nullptr) {
        skipped_bytes += end - begin;
        begin = end = 0;
      } else {
        skipped_bytes += static_cast<std::size_t>(nl - (buffer.get() + begin)) + 1;
        consumer.OverlongLine(++lines_before, skipped_bytes);
        begin = static_cast<std::size_t>(nl - buffer.get()) + 1;
        skipping = false;
      }
    }
    if (!skipping && end > begin) {
      // Hand over every whole line; keep the partial tail for the next read.
      const char* base = buffer.get();
      const void* last_nl = memrchr(base + begin, '\n', end - begin);
      if (last_nl != nullptr) {
        const std::size_t stop =
            static_cast<std::size_t>(static_cast<const char*>(last_nl) - base) + 1;
        std::string_view lines(base + begin, stop - begin);
        consumer.Consume(lines);
        // Time blocked on backpressure inside Consume() is not idleness of the client.
        conn.last_activity_ns.store(SteadyNowNs());
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
    consumer.Consume(std::string_view(buffer.get() + begin, end - begin));
  } else if (skipping) {
    consumer.OverlongLine(lines_before + 1, skipped_bytes);
  }
}

}  // namespace ingot
