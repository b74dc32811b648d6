// HttpAuth: whether an HTTP request carries the credentials the node is configured to require
// ([auth] in the config, docs/configuration.md). The HTTP server asks once per request, after the
// request head and before the body or any route, so no handler needs to know about it.
//
// Accepted, when the matching secret is configured:
//   Authorization: Bearer <token>            (Prometheus, curl, most HTTP clients)
//   Authorization: Token <token>             (InfluxDB 2.x clients, /api/v2/write)
//   Authorization: Token <user>:<password>   (InfluxDB 1.8's 2.x compatibility form)
//   Authorization: Basic base64(<user>:<password>)
//   ?u=<user>&p=<password> in the URL        (InfluxDB 1.x clients)
// Only the head is looked at: `u`/`p` in a form-encoded body are not, so that a request is judged
// before its body is read. `/ping` and `/health` stay open (load balancers and InfluxDB clients
// probe them without credentials; they reveal nothing).
//
// Secrets are kept as SHA-256 digests and compared with CRYPTO_memcmp: the time a comparison
// takes depends neither on where a wrong guess differs nor on its length.
//
// Thread safety: immutable after construction; Check may run on any number of threads.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "config/http.h"
#include "config/options.h"

namespace ingot {

class HttpAuth {
 public:
  enum class Verdict { kAllowed, kMissing, kInvalid };

  // `options` as completed by FinishOptions (secret files already read).
  explicit HttpAuth(const AuthOptions& options);

  // False when no credential is configured: every request is allowed without a look.
  bool enabled() const { return token_.has_value() || username_.has_value(); }
  // Paths answered without credentials.
  static bool IsOpen(std::string_view path);
  // Judges the head of `request` (its target and headers; the body is not read).
  Verdict Check(const HttpRequest& request) const;
  // Fills `reply` with the 401 for `verdict`: a Prometheus-style error envelope naming the
  // accepted ways to authenticate, and a WWW-Authenticate challenge per configured scheme.
  void Challenge(Verdict verdict, HttpReply& reply) const;

 private:
  using Digest = std::array<unsigned char, 32>;
  static Digest Hash(std::string_view secret);
  static bool Same(const std::optional<Digest>& expected, std::string_view offered);
  bool UserAndPassword(std::string_view user, std::string_view password) const;
  // The credential in an Authorization header value.
  bool AuthorizationValid(std::string_view value) const;

  std::optional<Digest> token_;
  std::optional<Digest> username_;
  std::optional<Digest> password_;
};

// Decodes standard base64 (RFC 4648, padding optional); false on any other character.
bool DecodeBase64(std::string_view text, std::string* out);

}  // namespace ingot
