// Opening a listening TCP socket for one of the node's listeners, with the errors users need:
// which setting, which address, which port and why.
#pragma once

#include <chrono>
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
// on `io`. `setting` names the config key and `what` the listener in messages
// ("query.http_listen", "HTTP listener").
Status OpenAcceptor(asio::io_context& io, const std::string& listen, std::string_view setting,
                    std::string_view what, std::unique_ptr<asio::ip::tcp::acceptor>* acceptor);

// Runs `io` on `count` threads (at least one), appended to `*threads`.
void RunOnThreads(asio::io_context& io, unsigned count, std::vector<std::thread>* threads);

// The shutdown both servers share: closes `acceptor` on its loop, waits up to `grace` while
// `busy()` holds (connections or requests still finishing), then stops `io` and joins `threads`.
void StopListener(asio::io_context& io, asio::ip::tcp::acceptor* acceptor,
                  std::chrono::milliseconds grace, const std::function<bool()>& busy,
                  std::vector<std::thread>* threads);

}  // namespace ingot
