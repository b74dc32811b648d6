// Opening a listening TCP socket for one of the node's listeners, with the errors users need:
// which setting, which address, which port and why.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "config/asio.h"
#include "config/status.h"

namespace ingot {

// Parses `listen` ("ip:port"; port 0 picks a free one), then opens, binds and listens an acceptor
// on `io`. `setting` names the config key and `what` the listener in messages
// ("query.http_listen", "HTTP listener").
Status OpenAcceptor(asio::io_context& io, const std::string& listen, std::string_view setting,
                    std::string_view what, std::unique_ptr<asio::ip::tcp::acceptor>* acceptor);

}  // namespace ingot
