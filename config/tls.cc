#include "config/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>

#include "config/logging.h"
#include "config/metrics.h"

namespace ingot {
namespace {

// OpenSSL's reason for the last failure on this thread (and clears its error queue).
std::string OpenSslReason() {
  std::string reason;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    if (!reason.empty()) reason += "; ";
    reason += buf;
  }
  return reason.empty() ? std::string("unknown error") : reason;
}

Status TlsError(std::string_view setting, std::string_view key, const std::string& file,
                std::string_view what) {
  std::string msg = "config key '";
  msg.append(setting).append(key).append("': '").append(file).append("': ").append(what);
  msg.append(" (").append(OpenSslReason()).append(")");
  return Status::InvalidArgument(msg);
}

struct ListenerFailures {
  explicit ListenerFailures(std::string_view listener)
      : counter(MetricsRegistry::Default().AddCounter(
            "ingot_tls_handshake_failures_total",
            "TLS handshakes that failed (plaintext clients, unsupported versions, timeouts).",
            std::string("listener=\"").append(listener).append("\""))) {}
  Counter& counter;
  RateLimiter log_limit{1};
};

ListenerFailures& FailuresOf(std::string_view listener) {
  static ListenerFailures http("http");
  static ListenerFailures tcp("tcp");
  return listener == "http" ? http : tcp;
}

}  // namespace

Status MakeServerTlsContext(const TlsOptions& tls, std::string_view setting,
                            std::unique_ptr<asio::ssl::context>* context) {
  FailuresOf("http");  // both series show in /metrics (at 0) once TLS is on
  FailuresOf("tcp");
  ERR_clear_error();
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  const int min_version = tls.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
  if (SSL_CTX_set_min_proto_version(native, min_version) != 1) {
    return TlsError(setting, "_min_version", tls.min_version, "not supported by this OpenSSL");
  }
  // Compression invites CRIME-style attacks; renegotiation is a denial-of-service lever.
  SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                  SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(native, tls.cert_file.c_str()) != 1) {
    return TlsError(setting, "_cert_file", tls.cert_file,
                    "cannot load a PEM certificate (chain) from it");
  }
  if (SSL_CTX_use_PrivateKey_file(native, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return TlsError(setting, "_key_file", tls.key_file,
                    "cannot load an unencrypted PEM private key from it");
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    std::string what = "the key does not belong to the certificate in ";
    what.append(tls.cert_file);
    return TlsError(setting, "_key_file", tls.key_file, what);
  }
  *context = std::move(ctx);
  return Status::OK();
}

void HandshakeFailed(std::string_view listener, std::string_view peer,
                     const boost::system::error_code& ec) {
  ListenerFailures& failures = FailuresOf(listener);
  failures.counter.Add();
  std::uint64_t suppressed = 0;
  if (failures.log_limit.Allow(&suppressed)) {
    Logger(listener == "http" ? "http" : "ingest")
        ->warn("TLS handshake with {} on the {} listener failed: {}{}", peer, listener,
               ec.message(),
               suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
}

}  // namespace ingot
