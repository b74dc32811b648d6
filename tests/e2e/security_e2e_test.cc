// End-to-end: authentication and TLS on the real ingotd. Credentials on every route but /ping and
// /health (bearer, basic, InfluxDB's u/p parameters and Token scheme); TLS on the HTTP and the
// line-protocol TCP listeners with a certificate made at test time by the `openssl` tool, written
// to with an Asio TLS client and with real `curl`; plaintext clients on TLS ports are refused,
// counted, and do not disturb the node.
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <boost/asio/ssl.hpp>

#include "config/asio.h"
#include "tests/e2e/node_process.h"

namespace ingot::testing {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr char kToken[] = "e2e-T0ken/with+odd=chars";
constexpr char kUser[] = "writer";
constexpr char kPassword[] = "pass word:1";

// Runs `command` with /bin/sh; returns its exit status and puts stdout (and stderr, merged) in
// `*output`.
int Run(const std::string& command, std::string* output) {
  output->clear();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A self-signed certificate for 127.0.0.1 (in the subject alternative name, where clients look).
::testing::AssertionResult MakeCertificate(const std::string& dir) {
  std::string output;
  const int rc = Run("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 "
                     "-addext subjectAltName=IP:127.0.0.1 -days 1 -keyout " +
                         dir + "/key.pem -out " + dir + "/cert.pem",
                     &output);
  if (rc != 0) {
    return ::testing::AssertionFailure()
           << "openssl req failed (" << rc << "): " << output
           << " (the 'openssl' tool is needed; ./dev deps installs it)";
  }
  return ::testing::AssertionSuccess();
}

struct CurlResult {
  int status = 0;  // 0: no HTTP answer
  std::string body;
  std::string output;  // curl's own messages
};

// Runs curl with `args`; the answer's status and body.
CurlResult Curl(const std::string& body_path, const std::string& args) {
  CurlResult result;
  std::remove(body_path.c_str());
  Run("curl -sS --max-time 20 -o " + body_path + " -w '\\n%{http_code}' " + args, &result.output);
  const auto nl = result.output.rfind('\n');
  if (nl != std::string::npos) result.status = std::atoi(result.output.c_str() + nl + 1);
  std::ifstream in(body_path);
  result.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return result;
}

// The value of the sample `series` (name with labels) in a Prometheus text exposition; -1 if
// absent.
double Sample(const std::string& exposition, const std::string& series) {
  const std::string prefix = series + " ";
  std::size_t pos = 0;
  while ((pos = exposition.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || exposition[pos - 1] == '\n') {
      return std::atof(exposition.c_str() + pos + prefix.size());
    }
    pos += prefix.size();
  }
  return -1;
}

// Sets 10 s receive and send timeouts so that a server that never answers fails the test.
void SetTimeouts(asio::ip::tcp::socket& socket) {
  const timeval timeout{10, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
}

// Writes `lines` over TLS to the line-protocol port, verifying the node's certificate against
// `ca_file`, then waits until the node has closed the connection (it has then made the lines
// durable). Returns "" or what went wrong.
std::string TlsTcpSend(unsigned short port, const std::string& ca_file, const std::string& lines) {
  try {
    asio::io_context io;
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.load_verify_file(ca_file);
    asio::ssl::stream<asio::ip::tcp::socket> stream(io, ctx);
    stream.set_verify_mode(asio::ssl::verify_peer);
    stream.set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
    stream.next_layer().connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    SetTimeouts(stream.next_layer());
    stream.handshake(asio::ssl::stream_base::client);
    asio::write(stream, asio::buffer(lines));
    // close_notify; the node answers by finishing the connection and closing the socket.
    boost::system::error_code ec;
    stream.shutdown(ec);
    char buf[64];
    while (!ec) stream.next_layer().read_some(asio::buffer(buf), ec);
    if (ec == asio::error::would_block || ec == asio::error::timed_out) {
      return "the node did not close the connection";
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Plaintext to a TLS port: the node must end the connection (not leave it hanging). Returns ""
// or what went wrong.
std::string PlaintextIsClosed(unsigned short port, const std::string& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return "connect: " + ec.message();
  SetTimeouts(socket);
  asio::write(socket, asio::buffer(bytes), ec);
  char buf[256];
  std::size_t total = 0;
  while (!ec) total += socket.read_some(asio::buffer(buf), ec);
  if (ec == asio::error::would_block || ec == asio::error::timed_out) {
    return "the connection was left open";
  }
  if (total > 0 && std::string_view(buf, std::min<std::size_t>(total, 5)).starts_with("HTTP")) {
    return "got a plaintext HTTP answer";
  }
  return "";
}

// A line of `measurement` with value `v`, stamped `v` ms after a start point a minute ago, so
// that every line is its own point (lines without a time share the arrival time).
std::string Line(const std::string& measurement, int v) {
  static const std::int64_t start_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count() -
      60'000'000'000;
  std::string line = measurement;
  line.append(" v=").append(std::to_string(v)).append(" ");
  line.append(std::to_string(start_ns + v * 1'000'000ll)).append("\n");
  return line;
}

Headers Bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

TEST(SecurityE2E, WithoutAuthEveryRouteAnswersAsBefore) {
  TempDir dir;
  NodeProcess node(dir.path() + "/data");
  ASSERT_TRUE(node.ok()) << node.log();
  EXPECT_EQ(HttpPost(node.http_port(), "/write", Line("open", 1)).status, 204);
  ASSERT_TRUE(TcpSend(node.tcp_port(), Line("open", 2)));
  const HttpResult query =
      HttpGet(node.http_port(), "/api/v1/query?query=count_over_time(open_v%5B1h%5D)");
  EXPECT_EQ(query.status, 200) << query.body;
  EXPECT_NE(query.body.find("\"2\""), std::string::npos) << query.body;
  EXPECT_EQ(HttpGet(node.http_port(), "/ping").status, 204);
  EXPECT_EQ(HttpGet(node.http_port(), "/health").status, 200);
  const HttpResult metrics = HttpGet(node.http_port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(Sample(metrics.body, "ingot_http_requests_unauthorized_total"), 0) << metrics.body;
  EXPECT_EQ(node.Stop(SIGTERM), 0) << node.log();
}

TEST(SecurityE2E, CredentialsGuardEveryRouteButPingAndHealth) {
  TempDir dir;
  const std::string token_file = dir.path() + "/token";
  std::ofstream(token_file) << kToken << "\n";
  NodeProcess node(dir.path() + "/data",
                   {"--set", "auth.token_file=" + token_file, "--set",
                    std::string("auth.username=") + kUser, "--set",
                    std::string("auth.password=") + kPassword});
  ASSERT_TRUE(node.ok()) << node.log();
  const unsigned short port = node.http_port();

  // Bearer: right, wrong, missing.
  EXPECT_EQ(HttpPost(port, "/write", Line("auth", 1), "text/plain", Bearer(kToken)).status, 204);
  const HttpResult wrong = HttpPost(port, "/write", Line("auth", 100), "text/plain", Bearer("nope"));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.www_authenticate, "Bearer realm=\"ingot\"");
  EXPECT_NE(wrong.body.find("\"errorType\":\"unauthorized\""), std::string::npos) << wrong.body;
  const HttpResult missing = HttpPost(port, "/write", Line("auth", 100));
  EXPECT_EQ(missing.status, 401);
  EXPECT_NE(missing.body.find("authentication required"), std::string::npos) << missing.body;
  // Basic: right and wrong ("writer:pass word:1" and "writer:wrong").
  EXPECT_EQ(HttpPost(port, "/write", Line("auth", 2), "text/plain",
                     {{"Authorization", "Basic d3JpdGVyOnBhc3Mgd29yZDox"}})
                .status,
            204);
  EXPECT_EQ(HttpPost(port, "/write", Line("auth", 100), "text/plain",
                     {{"Authorization", "Basic d3JpdGVyOndyb25n"}})
                .status,
            401);
  // InfluxDB 1.x: u and p in the URL; InfluxDB 2.x: Token on /api/v2/write.
  EXPECT_EQ(HttpPost(port, "/write?db=x&u=writer&p=pass%20word%3A1", Line("auth", 3)).status, 204);
  EXPECT_EQ(HttpPost(port, "/write?db=x&u=writer&p=pass", Line("auth", 100)).status, 401);
  EXPECT_EQ(HttpPost(port, "/api/v2/write?bucket=x", Line("auth", 4), "text/plain",
                     {{"Authorization", std::string("Token ") + kToken}})
                .status,
            204);
  // Open routes.
  EXPECT_EQ(HttpGet(port, "/ping").status, 204);
  EXPECT_EQ(HttpGet(port, "/health").status, 200);
  // Queries, metrics, operations and debug routes need credentials.
  const std::string query = "/api/v1/query?query=count_over_time(auth_v%5B1h%5D)";
  for (const std::string& target : {query, std::string("/metrics"),
                                    std::string("/debug/pprof/profile?seconds=1"),
                                    std::string("/api/v1/labels")}) {
    EXPECT_EQ(HttpGet(port, target).status, 401) << target;
  }
  EXPECT_EQ(HttpPost(port, "/internal/force_merge", "").status, 401);
  const HttpResult answer = HttpGet(port, query, Bearer(kToken));
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_NE(answer.body.find("\"4\""), std::string::npos) << answer.body;  // refused ones absent
  const HttpResult metrics = HttpGet(port, "/metrics", Bearer(kToken));
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(Sample(metrics.body, "ingot_http_requests_unauthorized_total"), 9) << metrics.body;
  const std::string log = node.log();
  EXPECT_NE(log.find("refused (401)"), std::string::npos) << log;
  EXPECT_EQ(log.find(kToken), std::string::npos) << log;
  EXPECT_EQ(node.Stop(SIGTERM), 0) << log;
}

TEST(SecurityE2E, TlsOnHttpAndTcpWithCurlAndAnAsioClient) {
  TempDir dir;
  ASSERT_TRUE(MakeCertificate(dir.path()));
  const std::string cert = dir.path() + "/cert.pem";
  const std::string key = dir.path() + "/key.pem";
  NodeProcess node(dir.path() + "/data",
                   {"--set", "query.tls_cert_file=" + cert, "--set", "query.tls_key_file=" + key,
                    "--set", "ingest.tls_cert_file=" + cert, "--set",
                    "ingest.tls_key_file=" + key, "--set", std::string("auth.token=") + kToken});
  ASSERT_TRUE(node.ok()) << node.log();
  const std::string https = "https://127.0.0.1:" + std::to_string(node.http_port());
  const std::string body = dir.path() + "/body";
  const std::string curl = "--cacert " + cert + " -H 'Authorization: Bearer " + kToken + "' ";

  // Line protocol over TLS, from an Asio client that verifies the certificate.
  EXPECT_EQ(TlsTcpSend(node.tcp_port(), cert, Line("tls", 1) + Line("tls", 2)), "");
  // HTTPS with real curl: a write and a query.
  const CurlResult write = Curl(body, curl + "--data-binary '" + Line("tls", 3) + "' " + https + "/write");
  EXPECT_EQ(write.status, 204) << write.output << write.body;
  const CurlResult query =
      Curl(body, curl + "--get --data-urlencode 'query=count_over_time(tls_v[1h])' " + https +
                     "/api/v1/query");
  EXPECT_EQ(query.status, 200) << query.output;
  EXPECT_NE(query.body.find("\"3\""), std::string::npos) << query.body;
  // TLS and credentials together: no token, no answer.
  EXPECT_EQ(Curl(body, "--cacert " + cert + " " + https + "/api/v1/labels").status, 401);

  // Plaintext clients on the TLS ports are cut off; the node keeps serving.
  EXPECT_EQ(PlaintextIsClosed(node.tcp_port(), Line("plain", 1)), "");
  EXPECT_EQ(PlaintextIsClosed(node.http_port(), "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), "");
  EXPECT_EQ(HttpGet(node.http_port(), "/health").status, 0);  // no plaintext answer
  EXPECT_EQ(TlsTcpSend(node.tcp_port(), cert, Line("tls", 4)), "");
  const CurlResult after =
      Curl(body, curl + "--get --data-urlencode 'query=count_over_time(tls_v[1h])' " + https +
                     "/api/v1/query");
  EXPECT_NE(after.body.find("\"4\""), std::string::npos) << after.body;
  const CurlResult plain =
      Curl(body, curl + "--get --data-urlencode 'query=count_over_time(plain_v[1h])' " + https +
                     "/api/v1/query");
  EXPECT_EQ(plain.body.find("\"value\""), std::string::npos) << plain.body;

  // Every failed handshake counted, per listener.
  const CurlResult metrics = Curl(body, curl + https + "/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.output;
  EXPECT_EQ(Sample(metrics.body, "ingot_tls_handshake_failures_total{listener=\"tcp\"}"), 1)
      << metrics.body;
  EXPECT_EQ(Sample(metrics.body, "ingot_tls_handshake_failures_total{listener=\"http\"}"), 2)
      << metrics.body;
  EXPECT_NE(node.log().find("TLS handshake with"), std::string::npos) << node.log();
  EXPECT_EQ(node.Stop(SIGTERM), 0) << node.log();
}

TEST(SecurityE2E, MinimumTlsVersionIsEnforced) {
  TempDir dir;
  ASSERT_TRUE(MakeCertificate(dir.path()));
  const std::string cert = dir.path() + "/cert.pem";
  NodeProcess node(dir.path() + "/data",
                   {"--set", "query.tls_cert_file=" + cert, "--set",
                    "query.tls_key_file=" + dir.path() + "/key.pem", "--set",
                    "query.tls_min_version=1.3"});
  ASSERT_TRUE(node.ok()) << node.log();
  const std::string url = "https://127.0.0.1:" + std::to_string(node.http_port()) + "/health";
  const std::string body = dir.path() + "/body";
  EXPECT_EQ(Curl(body, "--cacert " + cert + " --tls-max 1.2 " + url).status, 0);
  EXPECT_EQ(Curl(body, "--cacert " + cert + " --tlsv1.3 " + url).status, 200);
  EXPECT_EQ(node.Stop(SIGTERM), 0) << node.log();
}

TEST(SecurityE2E, UnusableTlsFilesOrSecretsStopStartUp) {
  TempDir dir;
  ASSERT_TRUE(MakeCertificate(dir.path()));
  {
    NodeProcess node(dir.path() + "/data",
                     {"--set", "ingest.tls_cert_file=" + dir.path() + "/missing.pem", "--set",
                      "ingest.tls_key_file=" + dir.path() + "/key.pem"});
    EXPECT_FALSE(node.ok());
    EXPECT_EQ(node.WaitExit(), 1);
    EXPECT_NE(node.log().find("ingest.tls_cert_file"), std::string::npos) << node.log();
    EXPECT_NE(node.log().find("missing.pem"), std::string::npos) << node.log();
  }
  {
    // The certificate's file given as the key.
    NodeProcess node(dir.path() + "/data",
                     {"--set", "query.tls_cert_file=" + dir.path() + "/cert.pem", "--set",
                      "query.tls_key_file=" + dir.path() + "/cert.pem"});
    EXPECT_FALSE(node.ok());
    EXPECT_EQ(node.WaitExit(), 1);
    EXPECT_NE(node.log().find("query.tls_key_file"), std::string::npos) << node.log();
  }
  {
    NodeProcess node(dir.path() + "/data",
                     {"--set", "auth.token_file=" + dir.path() + "/no-such-token"});
    EXPECT_FALSE(node.ok());
    EXPECT_EQ(node.WaitExit(), 2);
    EXPECT_NE(node.log().find("no-such-token"), std::string::npos) << node.log();
  }
}

}  // namespace
}  // namespace ingot::testing
