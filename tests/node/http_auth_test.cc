// Authentication of HTTP requests: HttpAuth's verdicts on request heads (no sockets), and the
// HttpServer enforcing it over real loopback sockets before routing.
#include "node/http_auth.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "config/url_encoding.h"
#include "node/http_server.h"
#include "tests/e2e/node_process.h"

namespace ingot {
namespace {

using Verdict = HttpAuth::Verdict;

HttpRequest Head(std::string target, std::string authorization = "") {
  HttpRequest request(http::verb::post, target, 11);
  if (!authorization.empty()) request.set(http::field::authorization, authorization);
  return request;
}

std::string Basic(const std::string& user_password) {
  // A tiny encoder for the tests; the server side decodes with DecodeBase64.
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "Basic ";
  std::size_t i = 0;
  for (; i + 2 < user_password.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(user_password[i]) << 16) |
                       (static_cast<unsigned char>(user_password[i + 1]) << 8) |
                       static_cast<unsigned char>(user_password[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  const std::size_t left = user_password.size() - i;
  if (left > 0) {
    unsigned v = static_cast<unsigned char>(user_password[i]) << 16;
    if (left == 2) v |= static_cast<unsigned char>(user_password[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(left == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

AuthOptions TokenAndUser() {
  AuthOptions options;
  options.token = "t0ken-value";
  options.username = "writer";
  options.password = "pa:ss word";
  return options;
}

TEST(DecodeBase64, DecodesWithAndWithoutPaddingAndRejectsOtherCharacters) {
  std::string out;
  ASSERT_TRUE(DecodeBase64("d3JpdGVyOnB3", &out));
  EXPECT_EQ(out, "writer:pw");
  ASSERT_TRUE(DecodeBase64("YQ==", &out));
  EXPECT_EQ(out, "a");
  ASSERT_TRUE(DecodeBase64("YWI", &out));
  EXPECT_EQ(out, "ab");
  EXPECT_FALSE(DecodeBase64("YW*i", &out));
  EXPECT_FALSE(DecodeBase64("Y", &out));
}

TEST(HttpAuth, OffWithoutConfiguredCredentials) {
  EXPECT_FALSE(HttpAuth(AuthOptions{}).enabled());
  EXPECT_TRUE(HttpAuth(TokenAndUser()).enabled());
}

TEST(HttpAuth, BearerAndTokenSchemes) {
  const HttpAuth auth(TokenAndUser());
  EXPECT_EQ(auth.Check(Head("/write", "Bearer t0ken-value")), Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Head("/write", "bearer t0ken-value")), Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Head("/api/v2/write", "Token t0ken-value")), Verdict::kAllowed);
  // InfluxDB 1.8's compatibility form of a 2.x token.
  EXPECT_EQ(auth.Check(Head("/api/v2/write", "Token writer:pa:ss word")), Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Head("/write", "Bearer t0ken-valuE")), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write", "Bearer t0ken-value-longer")), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write", "Bearer ")), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write", "Digest t0ken-value")), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write")), Verdict::kMissing);
}

TEST(HttpAuth, BasicAndUrlParameters) {
  const HttpAuth auth(TokenAndUser());
  EXPECT_EQ(auth.Check(Head("/write", Basic("writer:pa:ss word"))), Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Head("/write", Basic("writer:pa:ss wor"))), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write", Basic("writeR:pa:ss word"))), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write", Basic("no colon"))), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write", "Basic !!!")), Verdict::kInvalid);
  // The token is not a password.
  EXPECT_EQ(auth.Check(Head("/write", Basic("writer:t0ken-value"))), Verdict::kInvalid);
  const std::string p = UrlEncode("pa:ss word");
  EXPECT_EQ(auth.Check(Head("/write?db=x&u=writer&p=" + p + "&precision=s")), Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Head("/write?u=writer&p=wrong")), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write?u=writer")), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write?db=x&precision=s")), Verdict::kMissing);
  // A wrong header does not hide valid URL parameters (InfluxDB clients send both).
  EXPECT_EQ(auth.Check(Head("/write?u=writer&p=" + p, "Bearer nope")), Verdict::kAllowed);
}

TEST(HttpAuth, TokenOnlyRefusesUserAndPassword) {
  AuthOptions options;
  options.token = "abc";
  const HttpAuth auth(options);
  EXPECT_EQ(auth.Check(Head("/write", "Bearer abc")), Verdict::kAllowed);
  EXPECT_EQ(auth.Check(Head("/write", Basic(":abc"))), Verdict::kInvalid);
  EXPECT_EQ(auth.Check(Head("/write?u=&p=abc")), Verdict::kInvalid);
}

TEST(HttpAuth, ChallengeNamesTheConfiguredSchemes) {
  AuthOptions options;
  options.token = "abc";
  HttpReply reply;
  HttpAuth(options).Challenge(Verdict::kMissing, reply);
  EXPECT_EQ(reply.response.result(), http::status::unauthorized);
  EXPECT_EQ(reply.response[http::field::www_authenticate], "Bearer realm=\"ingot\"");
  EXPECT_EQ(reply.response.body().rfind(
                "{\"status\":\"error\",\"errorType\":\"unauthorized\",\"error\":", 0),
            0u)
      << reply.response.body();
  EXPECT_EQ(reply.response.body().find("abc"), std::string::npos);
}

TEST(HttpAuth, OnlyPingAndHealthAreOpen) {
  EXPECT_TRUE(HttpAuth::IsOpen("/ping"));
  EXPECT_TRUE(HttpAuth::IsOpen("/health"));
  for (const char* path : {"/metrics", "/write", "/api/v1/query", "/debug/pprof/profile",
                           "/internal/force_merge", "/health/x", "/pingx", "/"}) {
    EXPECT_FALSE(HttpAuth::IsOpen(path)) << path;
  }
}

// The server enforces the check before routing, so every route is covered without its handler
// knowing.
class HttpServerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* path : {"/health", "/ping", "/api/v1/query", "/debug/pprof/profile"}) {
      router_.Add(http::verb::get, path,
                  [this](const HttpRequest&, HttpReply& reply) {
                    handled_.fetch_add(1);
                    SetReply(reply, http::status::ok, "text/plain", "ok");
                  },
                  HttpWork::kInline);
    }
    router_.Add(http::verb::post, "/write",
                [this](const HttpRequest& request, HttpReply& reply) {
                  handled_.fetch_add(1);
                  SetReply(reply, http::status::ok, "text/plain",
                           std::to_string(request.body().size()));
                },
                HttpWork::kWrite);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  void Start(const AuthOptions& auth) {
    HttpServerOptions options;
    options.auth = auth;
    server_ = std::make_unique<HttpServer>(options, router_);
    ASSERT_TRUE(server_->Start("127.0.0.1:0").ok());
  }

  HttpRouter router_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> handled_{0};
};

TEST_F(HttpServerAuthTest, WithoutAuthEveryRouteAnswers) {
  Start(AuthOptions{});
  testing::HttpConnection client(server_->port());
  EXPECT_EQ(client.Get("/api/v1/query").status, 200);
  EXPECT_EQ(client.Post("/write", "cpu v=1").status, 200);
  EXPECT_EQ(handled_.load(), 2);
}

TEST_F(HttpServerAuthTest, RefusedBeforeRoutingAndTheConnectionGoesOn) {
  Start(TokenAndUser());
  testing::HttpConnection client(server_->port());
  EXPECT_EQ(client.Get("/health").status, 200);
  EXPECT_EQ(client.Get("/ping").status, 200);
  const testing::HttpResult refused = client.Get("/api/v1/query");
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.content_type, "application/json");
  EXPECT_NE(refused.body.find("\"errorType\":\"unauthorized\""), std::string::npos);
  EXPECT_EQ(client.Get("/debug/pprof/profile").status, 401);
  // A small body is read and dropped: the same connection serves the next request.
  EXPECT_EQ(client.Post("/write", "cpu v=1").status, 401);
  EXPECT_EQ(client.Get("/health").status, 200);
  EXPECT_EQ(handled_.load(), 3);  // the open routes; the refused requests reached no handler
  ASSERT_TRUE(client.Send("POST /write HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken-value"
                          "\r\nContent-Length: 7\r\n\r\ncpu v=1"));
  const testing::HttpResult allowed = client.Read();
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.body, "7");
}

TEST_F(HttpServerAuthTest, LargeUnauthenticatedBodyIsNotReadAndTheConnectionCloses) {
  Start(TokenAndUser());
  testing::HttpConnection client(server_->port());
  // Only the head: the answer must not wait for 10 MB that are never sent.
  ASSERT_TRUE(client.Send("POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n"));
  const testing::HttpResult refused = client.Read();
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(client.Get("/health").status, 0);  // closed by the server
  EXPECT_EQ(handled_.load(), 0);
}

}  // namespace
}  // namespace ingot
