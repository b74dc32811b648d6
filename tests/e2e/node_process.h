// NodeProcess: runs the real `ingotd` binary for end-to-end tests, on ephemeral loopback ports
// with a temporary data directory, and small blocking TCP/HTTP clients to talk to it.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/support/temp_dir.h"

namespace ingot::testing {

class NodeProcess {
 public:
  // Starts ingotd with `--data-dir data_dir`, both listeners on 127.0.0.1:0 and `extra_args`;
  // waits until it reports ready (or exits). Check ok() / error().
  // `max_open_files` > 0 sets the process' descriptor limit (RLIMIT_NOFILE).
  NodeProcess(const std::string& data_dir, const std::vector<std::string>& extra_args = {},
              unsigned max_open_files = 0);
  // Sends SIGKILL if still running.
  ~NodeProcess();

  bool ok() const { return ready_; }
  // Everything the process wrote to stderr so far (its log).
  std::string log();
  unsigned short tcp_port() const { return tcp_port_; }
  unsigned short http_port() const { return http_port_; }
  pid_t pid() const { return pid_; }

  // Sends `signo` and waits for the exit; returns the exit code (128+signal if killed), or -1
  // on timeout.
  int Stop(int signo, int timeout_ms = 20000);
  // Waits for the process to exit by itself; returns its exit code or -1 on timeout.
  int WaitExit(int timeout_ms = 20000);

 private:
  void ReadAvailable(int timeout_ms);

  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::string log_;
  bool ready_ = false;
  bool exited_ = false;
  int exit_code_ = -1;
  unsigned short tcp_port_ = 0;
  unsigned short http_port_ = 0;
};

// Path of the ingotd binary under test.
std::string IngotdPath();

struct HttpResult {
  int status = 0;  // 0 when the request could not be made
  std::string body;
  std::string content_type;
  std::string retry_after;
  std::string www_authenticate;  // the first challenge
  std::string error;
};

// One keep-alive HTTP/1.1 connection to 127.0.0.1:port, blocking, with a 10 s socket timeout on
// every read and write so that a server that never answers fails a test instead of hanging it.
class HttpConnection {
 public:
  explicit HttpConnection(unsigned short port);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  bool connected() const { return connected_; }
  // Raw bytes (a request head, part of a body).
  bool Send(std::string_view bytes);
  // Reads one response.
  HttpResult Read();
  // Reads raw bytes until `needle` has arrived (or an error); returns what was read.
  std::string ReadUntil(std::string_view needle);
  HttpResult Get(const std::string& target);
  HttpResult Post(const std::string& target, const std::string& body);

 private:
  struct Impl;
  Impl* impl_;
  bool connected_ = false;
};

HttpResult HttpGet(unsigned short port, const std::string& target,
                   const std::vector<std::pair<std::string, std::string>>& headers = {});
HttpResult HttpPost(unsigned short port, const std::string& target, const std::string& body,
                    const std::string& content_type = "text/plain",
                    const std::vector<std::pair<std::string, std::string>>& headers = {});

// Connects to 127.0.0.1:port, writes `data`, and closes. Returns false on a socket error.
bool TcpSend(unsigned short port, const std::string& data);

}  // namespace ingot::testing
