// NodeProcess: runs the real `ingotd` binary for end-to-end tests, on ephemeral loopback ports
// with a temporary data directory, and small blocking TCP/HTTP clients to talk to it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace ingot::testing {

class NodeProcess {
 public:
  // Starts ingotd with `--data-dir data_dir`, both listeners on 127.0.0.1:0 and `extra_args`;
  // waits until it reports ready (or exits). Check ok() / error().
  NodeProcess(const std::string& data_dir, const std::vector<std::string>& extra_args = {});
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
  std::string error;
};

HttpResult HttpGet(unsigned short port, const std::string& target);
HttpResult HttpPost(unsigned short port, const std::string& target, const std::string& body,
                    const std::string& content_type = "text/plain",
                    const std::vector<std::pair<std::string, std::string>>& headers = {});

// Connects to 127.0.0.1:port, writes `data`, and closes. Returns false on a socket error.
bool TcpSend(unsigned short port, const std::string& data);

}  // namespace ingot::testing
