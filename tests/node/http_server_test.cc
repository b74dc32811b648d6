// HttpServer over real loopback sockets: handlers off the I/O threads, the connection limit, the
// in-flight body budget, the request-head limit and `Expect: 100-continue`.
#include "node/http_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/logging.h"
#include "tests/e2e/node_process.h"

namespace ingot {
namespace {

// A gate handlers wait at until the test opens it.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
  }
  // Blocks until `n` handlers wait at the gate.
  void AwaitWaiting(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

using testing::HttpConnection;
using Answer = testing::HttpResult;
using Client = HttpConnection;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.Add(http::verb::get, "/health",
                [](const HttpRequest&, HttpReply& reply) {
                  SetReply(reply, http::status::ok, "text/plain", "ok");
                },
                HttpWork::kInline);
    for (HttpWork work : {HttpWork::kWrite, HttpWork::kQuery}) {
      router_.Add(http::verb::post, work == HttpWork::kWrite ? "/slow_write" : "/slow_query",
                  [this](const HttpRequest& request, HttpReply& reply) {
                    gate_.Wait();
                    SetReply(reply, http::status::ok, "text/plain",
                             std::to_string(request.body().size()));
                  },
                  work);
    }
    router_.Add(http::verb::get, "/stream",
                [](const HttpRequest&, HttpReply& reply) {
                  reply.response.result(http::status::ok);
                  auto left = std::make_shared<int>(3);
                  reply.stream = [left](std::string* chunk) {
                    chunk->append("piece");
                    return --*left > 0;
                  };
                });
  }
  void TearDown() override {
    gate_.Open();
    if (server_) server_->Stop();
  }
  void Start(const HttpServerOptions& options) {
    server_ = std::make_unique<HttpServer>(options, router_);
    ASSERT_TRUE(server_->Start("127.0.0.1:0").ok());
  }

  HttpRouter router_;
  Gate gate_;
  std::unique_ptr<HttpServer> server_;
};

// One I/O thread: if a handler ran on it, /health would wait for the blocked writes and query.
TEST_F(HttpServerTest, BlockedHandlersDoNotStallOtherRequests) {
  HttpServerOptions options;
  options.io_threads = 1;
  options.write_workers = 1;
  options.query_workers = 2;  // one is held by /slow_query, the other produces /stream
  Start(options);
  Client writer(server_->port()), querier(server_->port());
  writer.Send("POST /slow_write HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  querier.Send("POST /slow_query HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab");
  gate_.AwaitWaiting(2);
  Client probe(server_->port());
  const Answer health = probe.Get("/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  const Answer streamed = probe.Get("/stream");  // pieces produced on the query pool
  EXPECT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.body, "piecepiecepiece");
  gate_.Open();
  EXPECT_EQ(writer.Read().body, "3");
  EXPECT_EQ(querier.Read().body, "2");
}

TEST_F(HttpServerTest, ConnectionsPastTheLimitGet503AndTheLimitFreesUp) {
  HttpServerOptions options;
  options.max_connections = 3;
  Start(options);
  std::vector<std::unique_ptr<Client>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<Client>(server_->port()));
    EXPECT_EQ(open.back()->Get("/health").status, 200);  // accepted and counted
  }
  Client extra(server_->port());
  const Answer refused = extra.Read();  // answered without sending anything
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.body.find("query.max_connections"), std::string::npos) << refused.body;
  EXPECT_EQ(refused.retry_after, "1");
  open.clear();  // closed by the client; the server notices and frees the slots
  for (int attempt = 0; attempt < 200 && server_->connections() > 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Client again(server_->port());
  EXPECT_EQ(again.Get("/health").status, 200);
}

TEST_F(HttpServerTest, BodiesPastTheInFlightBudgetGet503BeforeBeingRead) {
  HttpServerOptions options;
  options.max_inflight_body_bytes = 1000;
  Start(options);
  Client first(server_->port());
  first.Send("POST /slow_write HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\n\r\n" +
             std::string(800, 'x'));
  gate_.AwaitWaiting(1);  // 800 bytes held by a running handler
  Client second(server_->port());
  // Only the head is sent: the answer must not wait for the body.
  second.Send("POST /slow_write HTTP/1.1\r\nHost: x\r\nContent-Length: 800\r\n\r\n");
  const Answer shed = second.Read();
  EXPECT_EQ(shed.status, 503);
  EXPECT_NE(shed.body.find("query.max_inflight_request_bytes"), std::string::npos) << shed.body;
  EXPECT_EQ(shed.retry_after, "1");
  Client small(server_->port());
  gate_.Open();
  EXPECT_EQ(first.Read().body, "800");
  // The budget is returned once the request is answered.
  EXPECT_EQ(small.Post("/slow_write", std::string(900, 'y')).body, "900");
}

TEST_F(HttpServerTest, OverlongHeadIs431AndOversizedBodyIs413) {
  HttpServerOptions options;
  options.max_request_bytes = 1024;
  Start(options);
  Client head(server_->port());
  const Answer long_head = head.Get("/health?q=" + std::string(300 * 1024, 'a'));
  EXPECT_EQ(long_head.status, 431);
  EXPECT_NE(long_head.body.find("POST form"), std::string::npos) << long_head.body;
  Client body(server_->port());
  body.Send("POST /slow_write HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
  const Answer big = body.Read();
  EXPECT_EQ(big.status, 413);
  EXPECT_NE(big.body.find("query.max_request_bytes"), std::string::npos) << big.body;
}

TEST_F(HttpServerTest, ExpectContinueIsAnsweredBeforeTheBody) {
  Start(HttpServerOptions{});
  Client client(server_->port());
  client.Send(
      "POST /slow_write HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_NE(client.ReadUntil("\r\n\r\n").find("HTTP/1.1 100 Continue"), std::string::npos);
  gate_.Open();
  client.Send("data");
  const Answer answer = client.Read();
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, "4");
}

}  // namespace
}  // namespace ingot
