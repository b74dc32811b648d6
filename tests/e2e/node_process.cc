#include "tests/e2e/node_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <thread>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "config/asio.h"

namespace ingot::testing {

std::string IngotdPath() {
  if (const char* p = std::getenv("INGOT_INGOTD")) return p;
  return INGOT_INGOTD_PATH;
}

NodeProcess::NodeProcess(const std::string& data_dir, const std::vector<std::string>& extra_args,
                         unsigned max_open_files) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return;
  std::vector<std::string> args = {IngotdPath(),
                                   "--data-dir",
                                   data_dir,
                                   "--set",
                                   "ingest.tcp_listen=127.0.0.1:0",
                                   "--set",
                                   "query.http_listen=127.0.0.1:0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(pipe_fds[1], 2);
    if (max_open_files > 0) {
      const struct rlimit limit = {max_open_files, max_open_files};
      ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  stderr_fd_ = pipe_fds[0];
  const std::regex ready(R"(ready: line protocol on tcp port (\d+), HTTP on port (\d+))");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    ReadAvailable(50);
    std::smatch m;
    if (std::regex_search(log_, m, ready)) {
      tcp_port_ = static_cast<unsigned short>(std::stoi(m[1]));
      http_port_ = static_cast<unsigned short>(std::stoi(m[2]));
      ready_ = true;
      return;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      ReadAvailable(50);
      return;
    }
  }
}

NodeProcess::~NodeProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

void NodeProcess::ReadAvailable(int timeout_ms) {
  if (stderr_fd_ < 0) return;
  pollfd pfd{stderr_fd_, POLLIN, 0};
  while (::poll(&pfd, 1, timeout_ms) > 0) {
    char buf[4096];
    const ssize_t n = ::read(stderr_fd_, buf, sizeof buf);
    if (n <= 0) break;
    log_.append(buf, static_cast<std::size_t>(n));
    timeout_ms = 0;
  }
}

std::string NodeProcess::log() {
  ReadAvailable(0);
  return log_;
}

int NodeProcess::WaitExit(int timeout_ms) {
  if (exited_) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      ReadAvailable(100);
      return exit_code_;
    }
    ReadAvailable(20);
  }
  return -1;
}

int NodeProcess::Stop(int signo, int timeout_ms) {
  if (exited_) return exit_code_;
  ::kill(pid_, signo);
  return WaitExit(timeout_ms);
}

namespace {
namespace beast = boost::beast;
namespace http = beast::http;

HttpResult Request(unsigned short port, http::verb verb, const std::string& target,
                   const std::string& body, const std::string& content_type,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  HttpResult result;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(60));
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    http::request<http::string_body> req(verb, target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (verb == http::verb::post) {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    for (const auto& [k, v] : headers) req.set(k, v);
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 32);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    result.status = static_cast<int>(res.result_int());
    result.body = std::move(res.body());
    auto it = res.find(http::field::content_type);
    if (it != res.end()) result.content_type = std::string(it->value());
    result.www_authenticate = std::string(res[http::field::www_authenticate]);
    beast::error_code ec;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}
}  // namespace

HttpResult HttpGet(unsigned short port, const std::string& target,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  return Request(port, http::verb::get, target, "", "", headers);
}

HttpResult HttpPost(unsigned short port, const std::string& target, const std::string& body,
                    const std::string& content_type,
                    const std::vector<std::pair<std::string, std::string>>& headers) {
  return Request(port, http::verb::post, target, body, content_type, headers);
}

struct HttpConnection::Impl {
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  beast::flat_buffer buffer;
};

HttpConnection::HttpConnection(unsigned short port) : impl_(new Impl) {
  boost::system::error_code ec;
  impl_->socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return;
  const timeval timeout{10, 0};
  const int fd = impl_->socket.native_handle();
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  connected_ = true;
}

HttpConnection::~HttpConnection() { delete impl_; }

bool HttpConnection::Send(std::string_view bytes) {
  boost::system::error_code ec;
  asio::write(impl_->socket, asio::buffer(bytes.data(), bytes.size()), ec);
  return !ec;
}

HttpResult HttpConnection::Read() {
  HttpResult result;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 32);
  boost::system::error_code ec;
  http::read(impl_->socket, impl_->buffer, parser, ec);
  if (ec) {
    result.error = ec.message();
    return result;
  }
  auto res = parser.release();
  result.status = static_cast<int>(res.result_int());
  result.body = std::move(res.body());
  result.content_type = std::string(res[http::field::content_type]);
  result.retry_after = std::string(res[http::field::retry_after]);
  result.www_authenticate = std::string(res[http::field::www_authenticate]);
  return result;
}

std::string HttpConnection::ReadUntil(std::string_view needle) {
  std::string got;
  char buf[256];
  boost::system::error_code ec;
  while (got.find(needle) == std::string::npos) {
    const std::size_t n = impl_->socket.read_some(asio::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
  }
  return got;
}

HttpResult HttpConnection::Get(const std::string& target) {
  if (!Send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")) return HttpResult{};
  return Read();
}

HttpResult HttpConnection::Post(const std::string& target, const std::string& body) {
  if (!Send("POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body)) {
    return HttpResult{};
  }
  return Read();
}

bool TcpSend(unsigned short port, const std::string& data) {
  try {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    asio::write(socket, asio::buffer(data));
    socket.shutdown(asio::ip::tcp::socket::shutdown_send);
    // Wait for the server to close its side: by then it has consumed everything.
    char buf[64];
    boost::system::error_code ec;
    while (socket.read_some(asio::buffer(buf), ec) > 0) {
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace ingot::testing
