// NatsServer / NatsTestCluster: real `nats-server` processes with JetStream for the cluster
// tests, on ephemeral loopback ports with temporary store directories.
//
// Each server is a child of the test process and is SIGKILLed by its destructor (and, should the
// test process die first, by the kernel: the child asks for SIGKILL when its parent thread exits,
// so start servers from the test's main thread). Not thread-safe: one thread drives a server.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace ingot::testing {

// True when the nats-server binary ($INGOT_NATS_SERVER, else /usr/sbin/nats-server or one on
// PATH) exists.
bool NatsServerInstalled();

// A free TCP port on 127.0.0.1 at the time of the call (bound to port 0, then closed).
unsigned short PickFreePort();

struct NatsServerConfig {
  std::string name;                // --server_name; unique within a cluster
  std::string store_dir;           // -sd (JetStream's files); the log goes beside it as <name>.log
  unsigned short client_port = 0;  // 0: picked by the constructor
  // Clustering: empty cluster_name = a standalone server.
  std::string cluster_name;
  unsigned short cluster_port = 0;
  std::vector<unsigned short> route_ports;  // the other members' cluster ports
};

class NatsServer {
 public:
  explicit NatsServer(NatsServerConfig config);
  // Kills the process if it runs.
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // Starts the process (again, after Kill: same ports, same store) and waits up to `timeout_ms`
  // for its client port to accept connections. False when it exited or did not listen in time.
  bool Start(int timeout_ms = 15000);
  // SIGKILL and reap; no-op when not running.
  void Kill();
  bool running() const { return pid_ > 0; }

  const std::string& name() const { return config_.name; }
  unsigned short client_port() const { return config_.client_port; }
  std::string url() const;
  // The server's own log (its stdout and stderr).
  std::string log_path() const;

 private:
  NatsServerConfig config_;
  pid_t pid_ = -1;
};

// `size` servers (1 or 3) named n0, n1, ... in one JetStream cluster ("ingot-test") when size > 1,
// each with its own store directory under one temporary directory.
class NatsTestCluster {
 public:
  explicit NatsTestCluster(int size);
  ~NatsTestCluster();

  // True when every server started.
  bool ok() const { return ok_; }
  // Comma-separated client URLs of all servers.
  std::string urls() const;
  int size() const { return static_cast<int>(servers_.size()); }
  NatsServer& server(int i) { return *servers_[static_cast<std::size_t>(i)]; }
  // The index of the server named `name`, or -1.
  int IndexOf(const std::string& name) const;

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<NatsServer>> servers_;
  bool ok_ = false;
};

}  // namespace ingot::testing
