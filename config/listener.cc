#include "config/listener.h"

#include <algorithm>

#include "config/config_loader.h"
#include "config/logging.h"

namespace ingot {

Status OpenAcceptor(asio::io_context& io, const std::string& listen, std::string_view setting,
                    std::string_view what, std::unique_ptr<asio::ip::tcp::acceptor>* acceptor) {
  std::string host;
  unsigned short port = 0;
  INGOT_RETURN_IF_ERROR(ParseListenAddress(listen, &host, &port).WithContext(setting));
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) {
    return Status::InvalidArgument(std::string(setting) + ": '" + host + "' is not an IP address");
  }
  auto a = std::make_unique<asio::ip::tcp::acceptor>(asio::make_strand(io));
  const asio::ip::tcp::endpoint endpoint(address, port);
  a->open(endpoint.protocol(), ec);
  if (!ec) a->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a->bind(endpoint, ec);
  if (!ec) a->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IOError(std::string(what) + ": cannot bind " + listen + " (port " +
                           std::to_string(port) + ", " + std::string(setting) +
                           "): " + ec.message());
  }
  *acceptor = std::move(a);
  return Status::OK();
}

std::chrono::milliseconds AcceptBackoff::Failed(const boost::system::error_code& ec) {
  ++unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (last_log_ == std::chrono::steady_clock::time_point{} ||
      now - last_log_ >= std::chrono::seconds(10)) {
    Logger("net")->warn("{}: accept failed: {} ({} failures since the last message; retrying "
                        "with a back-off)",
                        what_, ec.message(), unlogged_);
    last_log_ = now;
    unlogged_ = 0;
  }
  delay_ = std::clamp(delay_ * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  return delay_;
}

void RunOnThreads(asio::io_context& io, unsigned count, std::vector<std::thread>* threads) {
  for (unsigned i = 0; i < std::max(1u, count); ++i) {
    threads->emplace_back([&io] { io.run(); });
  }
}

void StopListener(asio::io_context& io, asio::ip::tcp::acceptor* acceptor,
                  std::chrono::milliseconds grace, const std::function<bool()>& busy,
                  std::vector<std::thread>* threads) {
  if (acceptor != nullptr) {
    asio::post(acceptor->get_executor(), [acceptor] {
      boost::system::error_code ec;
      acceptor->close(ec);
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (busy() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  io.stop();
  for (auto& t : *threads) t.join();
  threads->clear();
}

}  // namespace ingot
