#include "cluster/fanout.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <limits>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

#include "config/asio.h"

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "cluster/select_wire.h"
#include "config/metrics.h"

namespace ingot::cluster {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

// A peer's answer is bounded by query.max_series and its points; this only keeps a broken peer
// from filling the coordinator's memory.
constexpr std::uint64_t kMaxAnswerBytes = std::uint64_t{4} << 30;
// How much of a peer's error body a warning quotes.
constexpr std::size_t kQuotedErrorBytes = 200;

// What came of a peer's request. kOverLimit (the peer matched more than max_series) fails the
// selection; the others leave the peer out with a warning.
enum class Failure { kNone, kRefused, kTimeout, kError, kBadAnswer, kOverLimit };
// The reason label of ingot_cluster_query_remote_errors_total.
constexpr const char* kFailureReasons[] = {"refused", "timeout", "error"};
int ReasonIndex(Failure f) {
  switch (f) {
    case Failure::kRefused:
      return 0;
    case Failure::kTimeout:
      return 1;
    default:
      return 2;
  }
}

struct FanoutMetrics {
  Histogram* seconds;
  Counter* remote_errors[3];  // by kFailureReasons
  Counter* conflicts;
};

FanoutMetrics& FanoutCounters() {
  static FanoutMetrics m = [] {
    FanoutMetrics f;
    MetricsRegistry& r = MetricsRegistry::Default();
    f.seconds = &r.AddHistogram("ingot_cluster_query_fanout_seconds",
                                "One selector's fan-out on the coordinator: local selection, "
                                "every peer's answer and the merge.",
                                ExponentialBuckets(0.0005, 2, 16));
    for (int i = 0; i < 3; ++i) {
      f.remote_errors[i] =
          &r.AddCounter("ingot_cluster_query_remote_errors_total",
                        "Peer select requests left out of an answer (refused, timed out, or "
                        "answered with an error).",
                        std::string("reason=\"") + kFailureReasons[i] + "\"");
    }
    f.conflicts = &r.AddCounter("ingot_cluster_query_replica_conflicts_total",
                                "Points at one timestamp of one series for which nodes "
                                "answered different values (the first answer's value is used).");
    return f;
  }();
  return m;
}

// One peer's request and what came of it.
struct PeerCall {
  std::string address;
  Failure failure = Failure::kNone;
  std::string detail;  // why, for the warning or error
  std::vector<promql::FetchedSeries> series;
  std::vector<CorruptChunk> damage;  // what the peer left out (when asked to skip damage)
};

// What every peer's request of one Select shares.
struct Outgoing {
  std::string body;
  const std::string* authorization = nullptr;  // the header's value; empty: none
  asio::ssl::context* tls = nullptr;           // null: plaintext
  // When each request must be done: the peer timeout's end or the query's deadline, the sooner;
  // `bound` is the time from the start to it, for messages.
  Clock::time_point deadline;
  std::chrono::milliseconds bound;
};

// Splits "host:port" or "[v6]:port".
bool SplitAddress(std::string_view address, std::string* host, std::string* port) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == address.size()) return false;
  std::string_view h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) return false;
  host->assign(h);
  port->assign(address.substr(colon + 1));
  return true;
}

void Fail(PeerCall* call, const boost::system::error_code& ec, std::string_view during,
          std::chrono::milliseconds timeout) {
  if (ec == beast::error::timeout) {
    call->failure = Failure::kTimeout;
    call->detail =
        "timed out after " + std::to_string(timeout.count()) + " ms, " + std::string(during);
  } else if (ec == asio::error::connection_refused) {
    call->failure = Failure::kRefused;
    call->detail = "connection refused";
  } else {
    call->failure = Failure::kError;
    call->detail = std::string(during) + ": " + ec.message();
  }
}

// Sends the request over the connected `stream` and reads the peer's answer into `call`.
template <typename Stream>
asio::awaitable<void> Exchange(PeerCall* call, Stream& stream, const Outgoing& out) {
  boost::system::error_code ec;
  // span_body: every peer's request sends the one encoded body without a copy.
  http::request<http::span_body<const char>> request(
      http::verb::post, beast::string_view(kSelectPath.data(), kSelectPath.size()), 11);
  request.set(http::field::host, call->address);
  request.set(http::field::content_type,
              beast::string_view(kSelectContentType.data(), kSelectContentType.size()));
  if (!out.authorization->empty()) request.set(http::field::authorization, *out.authorization);
  request.keep_alive(false);
  request.body() = boost::beast::span<const char>(out.body.data(), out.body.size());
  request.prepare_payload();
  co_await http::async_write(stream, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    Fail(call, ec, "sending", out.bound);
    co_return;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    Fail(call, ec, "reading the answer", out.bound);
    co_return;
  }
  // Closed without TLS's close_notify: the answer was read to the end HTTP framed, and waiting
  // for the peer's close_notify would only hold the query up.
  beast::get_lowest_layer(stream).socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);

  const http::response<http::string_body>& response = parser.get();
  const unsigned status = response.result_int();
  if (status != 200) {
    call->failure = status == 422 ? Failure::kOverLimit : Failure::kBadAnswer;
    call->detail = status == 422 ? "" : "HTTP " + std::to_string(status) + ": ";
    call->detail.append(response.body().substr(0, kQuotedErrorBytes));
    while (!call->detail.empty() && call->detail.back() == '\n') call->detail.pop_back();
    co_return;
  }
  const Status st = DecodeSelectResponse(response.body(), &call->series, &call->damage);
  if (!st.ok()) {
    call->failure = Failure::kBadAnswer;
    call->detail = st.ToString();
  }
}

// Connects `stream` (plain TCP, or TLS over it) to the peer, then runs the exchange, all before
// `out.deadline`.
template <typename Stream>
asio::awaitable<void> Ask(PeerCall* call, Stream& stream, const Outgoing& out) {
  std::string host, port;
  if (!SplitAddress(call->address, &host, &port)) {
    call->failure = Failure::kError;
    call->detail = "not a host:port address";
    co_return;
  }
  boost::system::error_code ec;
  const auto executor = co_await asio::this_coro::executor;
  beast::tcp_stream& tcp = beast::get_lowest_layer(stream);
  tcp.expires_at(out.deadline);
  // Peers are given as IP addresses: no resolver (and its thread) unless a name comes.
  const asio::ip::address ip = asio::ip::make_address(host, ec);
  const bool is_name = static_cast<bool>(ec);
  if (!is_name) {
    unsigned long port_number = 0;
    const auto [end, parse_ec] =
        std::from_chars(port.data(), port.data() + port.size(), port_number);
    if (parse_ec != std::errc() || end != port.data() + port.size() || port_number > 65535) {
      call->failure = Failure::kError;
      call->detail = "bad port in address";
      co_return;
    }
    co_await tcp.async_connect(
        asio::ip::tcp::endpoint(ip, static_cast<unsigned short>(port_number)),
        asio::redirect_error(asio::use_awaitable, ec));
  } else {
    asio::ip::tcp::resolver resolver(executor);
    const auto endpoints =
        co_await resolver.async_resolve(host, port, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      Fail(call, ec, "resolving", out.bound);
      co_return;
    }
    co_await tcp.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
  }
  if (ec) {
    Fail(call, ec, "connecting", out.bound);
    co_return;
  }
  tcp.socket().set_option(asio::ip::tcp::no_delay(true), ec);
  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    // The name for servers that pick their certificate by it (SNI); an IP address is not sent.
    if (is_name && SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
                            TLSEXT_NAMETYPE_host_name, host.data()) != 1) {
      call->failure = Failure::kError;
      call->detail = "TLS: cannot send the host name";
      co_return;
    }
    co_await stream.async_handshake(asio::ssl::stream_base::client,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      Fail(call, ec, "TLS handshake", out.bound);
      co_return;
    }
  }
  co_await Exchange(call, stream, out);
}

// One peer's request over the stream `out` asks for.
asio::awaitable<void> Call(PeerCall* call, const Outgoing* out) {
  const auto executor = co_await asio::this_coro::executor;
  if (out->tls == nullptr) {
    beast::tcp_stream stream(executor);
    co_await Ask(call, stream, *out);
  } else {
    beast::ssl_stream<beast::tcp_stream> stream(executor, *out->tls);
    co_await Ask(call, stream, *out);
  }
}

// The Authorization header's value for `auth`: the bearer token when there is one (what the
// server checks first and cheapest), else basic credentials; empty when neither is set.
std::string AuthorizationOf(const AuthOptions& auth) {
  if (!auth.token.empty()) return "Bearer " + auth.token;
  if (auth.username.empty()) return {};
  const std::string pair = auth.username + ":" + auth.password;
  // EVP_EncodeBlock writes 4 bytes per 3 started, and a terminator.
  std::string encoded(4 * ((pair.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                reinterpret_cast<const unsigned char*>(pair.data()),
                                static_cast<int>(pair.size()));
  encoded.resize(static_cast<std::size_t>(n));
  return "Basic " + encoded;
}

// The engine's message for a query past its deadline, so that it reads the same however the
// deadline is found.
Status TimedOut(std::string_view where) {
  return Status::Busy("query timed out: it ran past its deadline (query.timeout)" +
                      std::string(where));
}

// Merges selections (each sorted and unique by labels) into `*out`, leaving them empty: at a
// timestamp two of them share, the earlier selection's value stays. Returns how many such
// timestamps had differing values.
std::size_t Merge(std::vector<std::vector<promql::FetchedSeries>>* parts,
                  std::vector<promql::FetchedSeries>* out) {
  out->clear();
  std::size_t total = 0, nonempty = 0;
  for (const auto& part : *parts) {
    total += part.size();
    nonempty += !part.empty();
  }
  if (nonempty <= 1) {
    for (auto& part : *parts) {
      if (!part.empty()) *out = std::move(part);
    }
    return 0;
  }
  out->reserve(total);
  for (auto& part : *parts) {
    for (auto& s : part) out->push_back(std::move(s));
  }
  // Stable: equal label sets stay in the order of their selections.
  std::stable_sort(out->begin(), out->end(),
                   [](const promql::FetchedSeries& a, const promql::FetchedSeries& b) {
                     return a.labels < b.labels;
                   });
  std::size_t conflicts = 0;
  std::size_t kept = 0;
  for (std::size_t s = 0; s < out->size(); ++s) {
    if (kept > 0 && (*out)[kept - 1].labels == (*out)[s].labels) {
      conflicts += promql::UnitePoints(&(*out)[kept - 1], (*out)[s]);
      continue;
    }
    if (kept != s) (*out)[kept] = std::move((*out)[s]);
    ++kept;
  }
  out->resize(kept);
  return conflicts;
}

}  // namespace

ClusterFanout::ClusterFanout(Storage& storage, std::function<std::vector<std::string>()> peers,
                             std::uint32_t timeout_ms, const AuthOptions& auth, bool tls)
    : storage_(storage),
      peers_(std::move(peers)),
      timeout_(timeout_ms),
      authorization_(AuthorizationOf(auth)) {
  FanoutCounters();
  if (tls) {
    tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
    SSL_CTX_set_options(tls_->native_handle(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    // Encryption without authentication of the peer: no setting names a CA to verify its
    // certificate against (see fanout.h). With one, this becomes verify_peer against it, with
    // the peer's address checked against the certificate.
    tls_->set_verify_mode(asio::ssl::verify_none);
  }
}

ClusterFanout::~ClusterFanout() = default;

Status ClusterFanout::Select(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                             std::size_t max_series, const promql::SelectContext& context,
                             std::vector<promql::FetchedSeries>* out,
                             std::vector<std::string>* warnings) {
  return Run(selector, lo_ns, hi_ns, max_series, /*with_points=*/true, context, out, warnings);
}

Status ClusterFanout::SelectSeries(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                                   std::size_t max_series, const promql::SelectContext& context,
                                   std::vector<promql::FetchedSeries>* out,
                                   std::vector<std::string>* warnings) {
  return Run(selector, lo_ns, hi_ns, max_series, /*with_points=*/false, context, out, warnings);
}

Status ClusterFanout::Run(const Selector& selector, std::int64_t lo_ns, std::int64_t hi_ns,
                          std::size_t max_series, bool with_points,
                          const promql::SelectContext& context,
                          std::vector<promql::FetchedSeries>* out,
                          std::vector<std::string>* warnings) {
  out->clear();
  const Clock::time_point started = Clock::now();
  if (started > context.deadline) return TimedOut("");
  FanoutMetrics& metrics = FanoutCounters();
  struct ObserveOnExit {
    Clock::time_point started;
    Histogram* seconds;
    ~ObserveOnExit() {
      seconds->Observe(std::chrono::duration<double>(Clock::now() - started).count());
    }
  } observe{started, metrics.seconds};

  std::vector<PeerCall> calls;
  for (std::string& address : peers_()) {
    calls.emplace_back();
    calls.back().address = std::move(address);
  }
  std::vector<std::vector<promql::FetchedSeries>> parts(calls.size() + 1);
  // The query's deadline, when it comes before the peer timeout, is what ends a peer's request.
  const bool deadline_first = context.deadline < started + timeout_;
  Status local;
  if (calls.empty()) {
    local = promql::SelectLocal(storage_, selector, lo_ns, hi_ns, max_series, &parts[0],
                                with_points, context);
  } else {
    Outgoing outgoing;
    SelectParams params;
    params.lo_ns = lo_ns;
    params.hi_ns = hi_ns;
    params.max_series = max_series;
    params.labels_only = !with_points;
    params.skip_damage = context.damage != nullptr;
    if (context.deadline != Clock::time_point::max()) {
      // Rounded up: a peer given 0 ms would take it for no deadline at all.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(context.deadline - started);
      params.timeout_ms = static_cast<std::uint32_t>(std::clamp<std::chrono::milliseconds::rep>(
          left.count(), 1, std::numeric_limits<std::uint32_t>::max()));
    }
    EncodeSelectRequest(selector, params, &outgoing.body);
    outgoing.authorization = &authorization_;
    outgoing.tls = tls_.get();
    outgoing.deadline = deadline_first ? context.deadline : started + timeout_;
    outgoing.bound = std::chrono::ceil<std::chrono::milliseconds>(outgoing.deadline - started);
    asio::io_context io(1);
    for (PeerCall& call : calls) {
      asio::co_spawn(io, Call(&call, &outgoing), [&call](std::exception_ptr e) {
        if (!e) return;
        call.failure = Failure::kError;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          call.detail = ex.what();
        } catch (...) {
          call.detail = "unknown error";
        }
      });
    }
    // The peers' I/O on its own thread while this one reads the local part (joined before the
    // calls are read, or anything they point to goes).
    std::jthread io_thread([&io] { io.run(); });
    local = promql::SelectLocal(storage_, selector, lo_ns, hi_ns, max_series, &parts[0],
                                with_points, context);
    // The selection fails whatever the peers answer: do not wait for them.
    if (!local.ok()) io.stop();
    io_thread.join();
  }
  INGOT_RETURN_IF_ERROR(local);

  for (std::size_t i = 0; i < calls.size(); ++i) {
    PeerCall& call = calls[i];
    switch (call.failure) {
      case Failure::kNone:
        parts[i + 1] = std::move(call.series);
        if (context.damage != nullptr) {
          for (CorruptChunk& d : call.damage) {
            d.status =
                Status::Corruption("node " + call.address + ": " + std::string(d.status.message()));
            context.damage->push_back(std::move(d));
          }
        }
        break;
      case Failure::kOverLimit:
        return Status::Busy("node " + call.address + ": " + call.detail);
      default:
        // Cut off by the query's deadline, the peer did not fail: the query ran out of time.
        if (call.failure == Failure::kTimeout && deadline_first) {
          return TimedOut(" waiting for node " + call.address);
        }
        metrics.remote_errors[ReasonIndex(call.failure)]->Add();
        warnings->push_back(
            "cluster: partial result: node " + call.address +
            (call.failure == Failure::kBadAnswer ? " answered badly (" : " did not answer (") +
            call.detail + ")");
    }
  }
  const std::size_t conflicts = Merge(&parts, out);
  if (conflicts != 0) metrics.conflicts->Add(conflicts);
  if (out->size() > max_series) {
    const std::size_t matched = out->size();
    out->clear();
    return Status::Busy("the selector matches " + std::to_string(matched) +
                        " series across the cluster, more than query.max_series = " +
                        std::to_string(max_series) + "; narrow it down");
  }
  return Status::OK();
}

}  // namespace ingot::cluster
