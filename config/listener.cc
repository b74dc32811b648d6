#include "config/listener.h"

#include "config/config_loader.h"

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
  auto a = std::make_unique<asio::ip::tcp::acceptor>(io);
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

}  // namespace ingot
