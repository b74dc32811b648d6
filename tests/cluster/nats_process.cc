#include "tests/cluster/nats_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace ingot::testing {
namespace {

std::string NatsServerPath() {
  if (const char* p = std::getenv("INGOT_NATS_SERVER"); p != nullptr && *p != '\0') return p;
  if (::access("/usr/sbin/nats-server", X_OK) == 0) return "/usr/sbin/nats-server";
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string dirs = path;
    std::size_t begin = 0;
    while (begin <= dirs.size()) {
      std::size_t end = dirs.find(':', begin);
      if (end == std::string::npos) end = dirs.size();
      std::string candidate = dirs.substr(begin, end - begin);
      candidate += "/nats-server";
      if (end > begin && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      begin = end + 1;
    }
  }
  return "";
}

bool PortAccepts(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

bool NatsServerInstalled() { return !NatsServerPath().empty(); }

unsigned short PickFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  unsigned short port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

NatsServer::NatsServer(NatsServerConfig config) : config_(std::move(config)) {
  if (config_.client_port == 0) config_.client_port = PickFreePort();
}

NatsServer::~NatsServer() { Kill(); }

namespace {
std::string LoopbackUrl(unsigned short port) {
  std::string url = "nats://127.0.0.1:";
  url += std::to_string(port);
  return url;
}
}  // namespace

std::string NatsServer::url() const { return LoopbackUrl(config_.client_port); }

std::string NatsServer::log_path() const {
  std::string file = config_.name;
  file += ".log";
  return (std::filesystem::path(config_.store_dir).parent_path() / file).string();
}

bool NatsServer::Start(int timeout_ms) {
  if (running()) return true;
  const std::string binary = NatsServerPath();
  if (binary.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(config_.store_dir, ec);
  std::vector<std::string> args = {binary,
                                   "-js",
                                   "-a",
                                   "127.0.0.1",
                                   "-p",
                                   std::to_string(config_.client_port),
                                   "-sd",
                                   config_.store_dir,
                                   "--server_name",
                                   config_.name};
  if (!config_.cluster_name.empty()) {
    args.insert(args.end(), {"--cluster_name", config_.cluster_name, "--cluster",
                             LoopbackUrl(config_.cluster_port)});
    std::string routes;
    for (unsigned short port : config_.route_ports) {
      if (!routes.empty()) routes += ',';
      routes += LoopbackUrl(port);
    }
    if (!routes.empty()) args.insert(args.end(), {"--routes", routes});
  }
  const std::string log = log_path();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // A test that dies (abort, timeout kill) must not leave servers behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (PortAccepts(config_.client_port)) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Kill();
  return false;
}

void NatsServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

NatsTestCluster::NatsTestCluster(int size) {
  std::vector<unsigned short> cluster_ports;
  if (size > 1) {
    for (int i = 0; i < size; ++i) cluster_ports.push_back(PickFreePort());
  }
  for (int i = 0; i < size; ++i) {
    NatsServerConfig config;
    config.name = "n";
    config.name += std::to_string(i);
    config.store_dir = (std::filesystem::path(dir_.path()) / config.name).string();
    if (size > 1) {
      config.cluster_name = "ingot-test";
      config.cluster_port = cluster_ports[static_cast<std::size_t>(i)];
      for (int j = 0; j < size; ++j) {
        if (j != i) config.route_ports.push_back(cluster_ports[static_cast<std::size_t>(j)]);
      }
    }
    servers_.push_back(std::make_unique<NatsServer>(std::move(config)));
  }
  ok_ = size > 0;
  for (auto& server : servers_) ok_ = server->Start() && ok_;
}

NatsTestCluster::~NatsTestCluster() {
  // Servers first: their store directories go with dir_.
  servers_.clear();
}

std::string NatsTestCluster::urls() const {
  std::string out;
  for (const auto& server : servers_) {
    if (!out.empty()) out += ',';
    out += server->url();
  }
  return out;
}

int NatsTestCluster::IndexOf(const std::string& name) const {
  for (std::size_t i = 0; i < servers_.size(); ++i) {
    if (servers_[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace ingot::testing
