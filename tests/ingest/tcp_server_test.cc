// TcpServer over real loopback sockets with a consumer that records what it is given: lines split
// across reads arrive whole and in order, over-long lines are skipped and reported, and the limits
// (max connections, idle timeout) and Stop() behave as the header promises.
#include "ingest/tcp_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ingot {
namespace {

// Upper bound for waiting on the server in these tests: a hang guard, never a timing expectation.
constexpr auto kWaitLimit = std::chrono::seconds(30);

struct ConnectionRecord {
  ConnectionInfo info;
  std::string data;                 // every Consume() argument, concatenated
  std::vector<std::string> pieces;  // each Consume() argument
  std::vector<std::pair<std::uint64_t, std::size_t>> overlong;  // (line number, bytes seen)
  bool finished = false;
  bool used_after_finish = false;
};

class Recorder {
 public:
  LineConsumerFactory Factory();

  // Waits until `done()` (called under the lock) holds; false after kWaitLimit.
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitLimit, done);
  }
  // The record of the connection whose peer port is `port`, or null.
  std::shared_ptr<ConnectionRecord> ByPeerPort(unsigned short port) {
    std::lock_guard<std::mutex> lock(mu_);
    return ByPeerPortLocked(port);
  }
  // The record of that connection once the server finished it; null when there is none or it
  // did not finish within kWaitLimit.
  std::shared_ptr<ConnectionRecord> Finished(unsigned short port) {
    auto record = ByPeerPort(port);
    if (record == nullptr || !WaitFor([&] { return record->finished; })) return nullptr;
    return record;
  }
  std::shared_ptr<ConnectionRecord> ByPeerPortLocked(unsigned short port) {
    const std::string suffix = ":" + std::to_string(port);
    for (auto& c : connections_) {
      if (c->info.peer.size() > suffix.size() &&
          c->info.peer.compare(c->info.peer.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return c;
      }
    }
    return nullptr;
  }
  std::size_t connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_.size();
  }
  std::mutex& mu() { return mu_; }

 private:
  friend class RecordingConsumer;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ConnectionRecord>> connections_;
};

class RecordingConsumer final : public LineConsumer {
 public:
  RecordingConsumer(Recorder& recorder, std::shared_ptr<ConnectionRecord> record)
      : recorder_(recorder), record_(std::move(record)) {}

  void Consume(std::string_view lines) override {
    std::lock_guard<std::mutex> lock(recorder_.mu_);
    if (record_->finished) record_->used_after_finish = true;
    record_->data.append(lines);
    record_->pieces.emplace_back(lines);
    recorder_.cv_.notify_all();
  }
  void OverlongLine(std::uint64_t line_number, std::size_t bytes_seen) override {
    std::lock_guard<std::mutex> lock(recorder_.mu_);
    if (record_->finished) record_->used_after_finish = true;
    record_->overlong.emplace_back(line_number, bytes_seen);
    recorder_.cv_.notify_all();
  }
  void Finish() override {
    std::lock_guard<std::mutex> lock(recorder_.mu_);
    if (record_->finished) record_->used_after_finish = true;
    record_->finished = true;
    recorder_.cv_.notify_all();
  }

 private:
  Recorder& recorder_;
  std::shared_ptr<ConnectionRecord> record_;
};

LineConsumerFactory Recorder::Factory() {
  return [this](const ConnectionInfo& info) -> std::unique_ptr<LineConsumer> {
    auto record = std::make_shared<ConnectionRecord>();
    record->info = info;
    std::lock_guard<std::mutex> lock(mu_);
    connections_.push_back(record);
    cv_.notify_all();
    return std::make_unique<RecordingConsumer>(*this, record);
  };
}

// A blocking loopback client on plain POSIX sockets (receive timeout as a hang guard).
class Client {
 public:
  explicit Client(unsigned short port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd_, 0);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{};
    tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kWaitLimit).count();
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    EXPECT_TRUE(connected_) << std::strerror(errno);
    sockaddr_in local{};
    socklen_t len = sizeof local;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &len);
    local_port_ = ntohs(local.sin_port);
  }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  unsigned short local_port() const { return local_port_; }

  // True when every byte was handed to the kernel.
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  void ShutdownSend() { ::shutdown(fd_, SHUT_WR); }
  void Close() {
    ::close(fd_);
    fd_ = -1;
  }
  // Reads until the server ends the connection (EOF or reset): true; false on the hang guard.
  bool WaitClosedByServer() {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET || errno == EPIPE;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  unsigned short local_port_ = 0;
};

IngestOptions SmallOptions() {
  IngestOptions o;
  o.max_line_bytes = 1024;
  o.max_connections = 64;
  o.idle_timeout_ms = 600'000;
  return o;
}

// Random lines of printable bytes (including the characters line protocol treats specially).
std::string RandomLines(std::mt19937_64& rng, int count) {
  static constexpr char kAlphabet[] = "abcxyz0123456789 ,=\\\"\t.-_#";
  std::uniform_int_distribution<int> len(0, 300);
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kAlphabet - 2);
  std::string out;
  for (int i = 0; i < count; ++i) {
    out += "line" + std::to_string(i) + ' ';
    for (int n = len(rng); n > 0; --n) out += kAlphabet[pick(rng)];
    out += '\n';
  }
  return out;
}

// Sends `data` in chunks of random size (1..max_chunk bytes).
void SendChunked(Client& client, std::string_view data, std::mt19937_64& rng,
                 std::size_t max_chunk) {
  std::uniform_int_distribution<std::size_t> size(1, max_chunk);
  while (!data.empty()) {
    const std::size_t n = std::min(size(rng), data.size());
    ASSERT_TRUE(client.Send(data.substr(0, n)));
    data.remove_prefix(n);
  }
}

// Every piece handed to the consumer is non-empty and whole lines, except that the last one may
// be an unterminated final line.
void ExpectWholeLinePieces(const ConnectionRecord& record) {
  for (std::size_t i = 0; i < record.pieces.size(); ++i) {
    ASSERT_FALSE(record.pieces[i].empty()) << "piece " << i;
    if (i + 1 < record.pieces.size()) {
      ASSERT_EQ(record.pieces[i].back(), '\n') << "piece " << i << " of " << record.pieces.size();
    }
  }
}

class TcpServerTest : public ::testing::Test {
 protected:
  void StartServer(const IngestOptions& options, unsigned threads = 2) {
    server_ = std::make_unique<TcpServer>(options, recorder_.Factory());
    ASSERT_TRUE(server_->Start("127.0.0.1:0", threads).ok());
    ASSERT_NE(server_->port(), 0);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  Recorder recorder_;
  std::unique_ptr<TcpServer> server_;
};

TEST_F(TcpServerTest, LinesSplitAcrossReadsArriveWholeAndInOrder) {
  StartServer(SmallOptions());
  constexpr int kClients = 4;
  std::vector<std::string> sent(kClients);
  std::vector<unsigned short> ports(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    std::mt19937_64 rng(1000 + static_cast<unsigned>(c));
    sent[static_cast<std::size_t>(c)] = RandomLines(rng, 1500);
    if (c == kClients - 1) sent[static_cast<std::size_t>(c)] += "last line without newline";
  }
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(2000 + static_cast<unsigned>(c));
      Client client(server_->port());
      ports[static_cast<std::size_t>(c)] = client.local_port();
      // One client byte by byte at first, the others in random chunks around a line's length.
      const std::string& data = sent[static_cast<std::size_t>(c)];
      if (c == 0) {
        SendChunked(client, std::string_view(data).substr(0, 4000), rng, 1);
        SendChunked(client, std::string_view(data).substr(4000), rng, 700);
      } else {
        SendChunked(client, data, rng, c == 1 ? 50 : 3000);
      }
      client.ShutdownSend();
      EXPECT_TRUE(client.WaitClosedByServer());
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) {
    SCOPED_TRACE("client " + std::to_string(c));
    auto record = recorder_.Finished(ports[static_cast<std::size_t>(c)]);
    ASSERT_NE(record, nullptr);
    std::lock_guard<std::mutex> lock(recorder_.mu());
    EXPECT_TRUE(record->data == sent[static_cast<std::size_t>(c)])
        << "received " << record->data.size() << " bytes, sent "
        << sent[static_cast<std::size_t>(c)].size();
    EXPECT_TRUE(record->overlong.empty());
    EXPECT_FALSE(record->used_after_finish);
    ExpectWholeLinePieces(*record);
  }
  // Byte-by-byte sending forces more reads than lines: the reassembly was exercised.
  EXPECT_GT(recorder_.ByPeerPort(ports[0])->pieces.size(), 1u);
}

TEST_F(TcpServerTest, FinalLineWithoutNewlineBeforeCloseIsDelivered) {
  StartServer(SmallOptions());
  Client client(server_->port());
  ASSERT_TRUE(client.Send("cpu v=1 1\ncpu v=2 2\ncpu v=3 3"));
  client.ShutdownSend();
  ASSERT_TRUE(client.WaitClosedByServer());
  auto record = recorder_.Finished(client.local_port());
  ASSERT_NE(record, nullptr);
  std::lock_guard<std::mutex> lock(recorder_.mu());
  EXPECT_EQ(record->data, "cpu v=1 1\ncpu v=2 2\ncpu v=3 3");
  ASSERT_FALSE(record->pieces.empty());
  EXPECT_EQ(record->pieces.back(), "cpu v=3 3");
}

TEST_F(TcpServerTest, OverlongLineIsSkippedToNextNewlineAndReported) {
  StartServer(SmallOptions());
  // Longer than the connection's whole buffer, so no read can ever hold it entirely.
  const std::string huge(300'000, 'x');
  const std::string before = "a v=1\nb v=2\n\n";  // the blank line counts as a line
  const std::string after = "c v=3\nd v=4\n";
  Client client(server_->port());
  std::mt19937_64 rng(7);
  SendChunked(client, before + huge + "\n" + after, rng, 9000);
  client.ShutdownSend();
  ASSERT_TRUE(client.WaitClosedByServer());
  auto record = recorder_.Finished(client.local_port());
  ASSERT_NE(record, nullptr);
  std::lock_guard<std::mutex> lock(recorder_.mu());
  EXPECT_EQ(record->data, before + after);
  ASSERT_EQ(record->overlong.size(), 1u);
  EXPECT_EQ(record->overlong[0].first, 4u);                   // line number
  EXPECT_EQ(record->overlong[0].second, huge.size() + 1);     // with its newline
  ExpectWholeLinePieces(*record);
}

TEST_F(TcpServerTest, LineOfExactlyTheLimitIsNotSkipped) {
  StartServer(SmallOptions());
  const std::string at_limit(1024, 'a');  // max_line_bytes, without its newline
  Client client(server_->port());
  // The limit-sized tail comes in the same read as the first line, its newline later: the
  // server holds a partial line of exactly max_line_bytes for a while.
  ASSERT_TRUE(client.Send("first v=1\n" + at_limit));
  std::shared_ptr<ConnectionRecord> record;
  ASSERT_TRUE(recorder_.WaitFor([&] {
    record = recorder_.ByPeerPortLocked(client.local_port());
    return record != nullptr && !record->data.empty();
  }));
  ASSERT_TRUE(client.Send("\nnext v=1\n"));
  client.ShutdownSend();
  ASSERT_TRUE(client.WaitClosedByServer());
  ASSERT_TRUE(recorder_.WaitFor([&] { return record->finished; }));
  std::lock_guard<std::mutex> lock(recorder_.mu());
  EXPECT_EQ(record->data, "first v=1\n" + at_limit + "\nnext v=1\n");
  EXPECT_TRUE(record->overlong.empty());
}

TEST_F(TcpServerTest, OverlongLastLineWithoutNewlineIsReported) {
  StartServer(SmallOptions());
  const std::string huge(300'000, 'y');
  Client client(server_->port());
  std::mt19937_64 rng(8);
  SendChunked(client, "first v=1\n" + huge, rng, 20'000);
  client.ShutdownSend();
  ASSERT_TRUE(client.WaitClosedByServer());
  auto record = recorder_.Finished(client.local_port());
  ASSERT_NE(record, nullptr);
  std::lock_guard<std::mutex> lock(recorder_.mu());
  EXPECT_EQ(record->data, "first v=1\n");
  ASSERT_EQ(record->overlong.size(), 1u);
  EXPECT_EQ(record->overlong[0].first, 2u);
  EXPECT_EQ(record->overlong[0].second, huge.size());
}

TEST_F(TcpServerTest, ConnectionStaysOpenAfterBadData) {
  StartServer(SmallOptions());
  Client client(server_->port());
  const std::string junk = "\x01\x02\xff garbage ,,, === \"unterminated\n";
  ASSERT_TRUE(client.Send(junk + std::string(300'000, 'z') + "\n"));
  std::shared_ptr<ConnectionRecord> record;
  ASSERT_TRUE(recorder_.WaitFor([&] {
    record = recorder_.ByPeerPortLocked(client.local_port());
    return record != nullptr && record->overlong.size() == 1;
  }));
  ASSERT_TRUE(client.Send("good v=1\n"));
  ASSERT_TRUE(recorder_.WaitFor([&] { return record->data == junk + "good v=1\n"; }));
  {
    std::lock_guard<std::mutex> lock(recorder_.mu());
    EXPECT_FALSE(record->finished);
    EXPECT_EQ(record->overlong[0].first, 2u);
  }
  EXPECT_EQ(recorder_.connections(), 1u);
  EXPECT_EQ(server_->connections(), 1);
  client.ShutdownSend();
  ASSERT_TRUE(client.WaitClosedByServer());
  EXPECT_TRUE(recorder_.WaitFor([&] { return record->finished; }));
}

TEST_F(TcpServerTest, ConnectionsPastTheLimitAreRefused) {
  IngestOptions options = SmallOptions();
  options.max_connections = 2;
  StartServer(options);
  Client a(server_->port());
  Client b(server_->port());
  ASSERT_TRUE(a.Send("a v=1\n"));
  ASSERT_TRUE(b.Send("b v=1\n"));
  ASSERT_TRUE(recorder_.WaitFor([&] {
    auto ra = recorder_.ByPeerPortLocked(a.local_port());
    auto rb = recorder_.ByPeerPortLocked(b.local_port());
    return ra != nullptr && rb != nullptr && !ra->data.empty() && !rb->data.empty();
  }));
  ASSERT_EQ(server_->connections(), 2);

  Client refused(server_->port());
  refused.Send("refused v=1\n");  // may fail once the server has closed it
  EXPECT_TRUE(refused.WaitClosedByServer());
  EXPECT_EQ(recorder_.ByPeerPort(refused.local_port()), nullptr);
  EXPECT_EQ(recorder_.connections(), 2u);

  // Once a connection ends, a new one is served.
  a.ShutdownSend();
  ASSERT_TRUE(a.WaitClosedByServer());
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (server_->connections() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(server_->connections(), 1);
  Client c(server_->port());
  ASSERT_TRUE(c.Send("c v=1\n"));
  c.ShutdownSend();
  ASSERT_TRUE(c.WaitClosedByServer());
  auto rc = recorder_.Finished(c.local_port());
  ASSERT_NE(rc, nullptr);
  std::lock_guard<std::mutex> lock(recorder_.mu());
  EXPECT_EQ(rc->data, "c v=1\n");
}

// At the limit, a new client takes the place of the connection idle longest (its data is kept
// and finished), instead of idle clients locking active ones out for the idle timeout.
TEST_F(TcpServerTest, ConnectionIdleLongestIsEvictedForANewOne) {
  IngestOptions options = SmallOptions();
  options.max_connections = 2;
  StartServer(options);
  Client a(server_->port());
  ASSERT_TRUE(a.Send("a v=1\n"));
  ASSERT_TRUE(recorder_.WaitFor([&] {
    auto ra = recorder_.ByPeerPortLocked(a.local_port());
    return ra != nullptr && !ra->data.empty();
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Client b(server_->port());
  ASSERT_TRUE(b.Send("b v=1\n"));
  ASSERT_TRUE(recorder_.WaitFor([&] {
    auto rb = recorder_.ByPeerPortLocked(b.local_port());
    return rb != nullptr && !rb->data.empty();
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // both idle for over a second
  Client c(server_->port());
  ASSERT_TRUE(c.Send("c v=1\n"));
  EXPECT_TRUE(a.WaitClosedByServer());  // idle longest
  auto ra = recorder_.Finished(a.local_port());
  ASSERT_NE(ra, nullptr);
  c.ShutdownSend();
  ASSERT_TRUE(c.WaitClosedByServer());
  auto rc = recorder_.Finished(c.local_port());
  ASSERT_NE(rc, nullptr);
  ASSERT_TRUE(b.Send("b v=2\n"));  // b was not touched
  b.ShutdownSend();
  ASSERT_TRUE(b.WaitClosedByServer());
  auto rb = recorder_.Finished(b.local_port());
  ASSERT_NE(rb, nullptr);
  std::lock_guard<std::mutex> lock(recorder_.mu());
  EXPECT_EQ(ra->data, "a v=1\n");
  EXPECT_EQ(rb->data, "b v=1\nb v=2\n");
  EXPECT_EQ(rc->data, "c v=1\n");
}

TEST_F(TcpServerTest, BurstOfConnectionsNeverExceedsTheLimit) {
  IngestOptions options = SmallOptions();
  options.max_connections = 1;
  StartServer(options, 4);
  // All connect before any is served: the accept loop admits them back to back, so the limit
  // must count a connection as soon as it is accepted, not when its session first runs.
  constexpr std::size_t kClients = 24;
  std::vector<std::unique_ptr<Client>> clients;
  for (std::size_t i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(server_->port()));
  }
  for (auto& c : clients) c->Send("burst v=1\n");
  // Admitted connections stay open; refused ones are closed by the server.
  std::atomic<std::size_t> closed{0};
  std::vector<std::thread> waiters;
  for (auto& c : clients) {
    waiters.emplace_back([&closed, client = c.get()] {
      if (client->WaitClosedByServer()) ++closed;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (closed.load() + recorder_.connections() < kClients &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(recorder_.connections(), 1u);
  EXPECT_EQ(closed.load(), kClients - 1);
  server_->Stop();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(closed.load(), kClients);
}

TEST_F(TcpServerTest, IdleConnectionIsClosedAndFinished) {
  IngestOptions options = SmallOptions();
  options.idle_timeout_ms = 150;
  StartServer(options);
  Client client(server_->port());
  ASSERT_TRUE(client.Send("idle v=1\nidle v=2"));
  // The client neither sends more nor closes: the server must end the connection by itself.
  EXPECT_TRUE(client.WaitClosedByServer());
  auto record = recorder_.Finished(client.local_port());
  ASSERT_NE(record, nullptr);
  std::lock_guard<std::mutex> lock(recorder_.mu());
  // What was read before the idle close is kept, the unterminated tail included.
  EXPECT_EQ(record->data, "idle v=1\nidle v=2");
}

TEST_F(TcpServerTest, StopFinishesEveryOpenConnection) {
  StartServer(SmallOptions());
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(clients.back()->Send("open v=" + std::to_string(i) + "\n"));
  }
  ASSERT_TRUE(recorder_.WaitFor([&] {
    for (auto& c : clients) {
      auto r = recorder_.ByPeerPortLocked(c->local_port());
      if (r == nullptr || r->data.empty()) return false;
    }
    return true;
  }));
  server_->Stop();
  EXPECT_EQ(server_->connections(), 0);
  for (auto& c : clients) {
    auto record = recorder_.ByPeerPort(c->local_port());
    std::lock_guard<std::mutex> lock(recorder_.mu());
    EXPECT_TRUE(record->finished);
    EXPECT_FALSE(record->used_after_finish);
  }
  for (auto& c : clients) EXPECT_TRUE(c->WaitClosedByServer());
  server_->Stop();  // idempotent
  EXPECT_EQ(recorder_.connections(), 3u);
}

TEST(TcpServerStart, RejectsBadListenAddress) {
  Recorder recorder;
  TcpServer server(SmallOptions(), recorder.Factory());
  EXPECT_FALSE(server.Start("not-an-ip:0", 1).ok());
}

}  // namespace
}  // namespace ingot
