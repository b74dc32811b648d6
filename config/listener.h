// Opening a listening TCP socket for one of the node's listeners, with the errors users need:
// which setting, which address, which port and why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/asio.h"
#include "config/status.h"

namespace ingot {

// Parses `listen` ("ip:port"; port 0 picks a free one), then opens, binds and listens an acceptor
// on a strand of `io`: an acceptor is not thread-safe, so its accept loop runs on that strand
// (co_spawn on its executor) and StopListener closes it there, never beside an accept being
// started on another of `io`'s threads. `setting` names the config key and `what` the listener in messages
// ("query.http_listen", "HTTP listener").
Status OpenAcceptor(asio::io_context& io, const std::string& listen, std::string_view setting,
                    std::string_view what, std::unique_ptr<asio::ip::tcp::acceptor>* acceptor);

// What an accept loop does after a failed accept. Out of descriptors (EMFILE, ENFILE) or memory
// the pending connection stays queued, so retrying at once spins: the loop waits, 10 ms doubling
// to 1 s (reset by the next success), and logs at most once per 10 s with the number of failures
// since the last message. Used by one accept loop (not thread-safe).
class AcceptBackoff {
 public:
  explicit AcceptBackoff(std::string what) : what_(std::move(what)) {}
  // Counts and (rate-limited) logs the failure; returns how long the loop waits before the next
  // accept. (Not a coroutine itself: config/ also builds where Asio's coroutines are unavailable.)
  std::chrono::milliseconds Failed(const boost::system::error_code& ec);
  void Succeeded() { delay_ = std::chrono::milliseconds(0); }

 private:
  const std::string what_;
  std::chrono::milliseconds delay_{0};
  std::chrono::steady_clock::time_point last_log_{};
  std::uint64_t unlogged_ = 0;
};

// Runs `io` on `count` threads (at least one), appended to `*threads`.
void RunOnThreads(asio::io_context& io, unsigned count, std::vector<std::thread>* threads);

// The shutdown both servers share: closes `acceptor` on its strand, waits up to `grace` while
// `busy()` holds (connections or requests still finishing), then stops `io` and joins `threads`.
void StopListener(asio::io_context& io, asio::ip::tcp::acceptor* acceptor,
                  std::chrono::milliseconds grace, const std::function<bool()>& busy,
                  std::vector<std::thread>* threads);

}  // namespace ingot
