// The accept step both listeners share (HTTP and line-protocol TCP), as a coroutine.
//
// Header-only and kept out of config/listener.h: Asio's coroutines need GCC here, and the rest of
// config/ also builds with clang (the fuzz targets), which never includes this.
#pragma once

#include <atomic>

#include "config/asio.h"
#include "config/listener.h"
#include "config/metrics.h"

namespace ingot {

// Waits for the next connection on `acceptor` and moves it to `*out` (on its own strand of
// `io`). A failed accept (out of descriptors) is counted in `errors` and followed by the pause
// `backoff` gives, then retried. False once the listener stops.
inline asio::awaitable<bool> AcceptOne(asio::ip::tcp::acceptor& acceptor, asio::io_context& io,
                                       AcceptBackoff& backoff, Counter& errors,
                                       const std::atomic<bool>& stopping,
                                       asio::ip::tcp::socket* out) {
  while (!stopping) {
    boost::system::error_code ec;
    asio::ip::tcp::socket socket = co_await acceptor.async_accept(
        asio::make_strand(io), asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
      backoff.Succeeded();
      *out = std::move(socket);
      co_return true;
    }
    if (stopping || ec == asio::error::operation_aborted) co_return false;
    errors.Add();
    asio::steady_timer pause(co_await asio::this_coro::executor, backoff.Failed(ec));
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return false;
}

}  // namespace ingot
