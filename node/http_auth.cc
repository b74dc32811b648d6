#include "node/http_auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <string>

#include <boost/beast/core/string.hpp>

#include "config/url_encoding.h"

namespace ingot {
namespace {

// Splits "<scheme> <credentials>"; the scheme is matched case-insensitively (RFC 9110 11.1).
bool SchemeIs(std::string_view value, std::string_view scheme, std::string_view* rest) {
  if (value.size() <= scheme.size() || value[scheme.size()] != ' ') return false;
  if (!boost::beast::iequals(value.substr(0, scheme.size()), scheme)) return false;
  std::string_view credentials = value.substr(scheme.size() + 1);
  while (!credentials.empty() && credentials.front() == ' ') credentials.remove_prefix(1);
  while (!credentials.empty() && credentials.back() == ' ') credentials.remove_suffix(1);
  *rest = credentials;
  return true;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

bool DecodeBase64(std::string_view text, std::string* out) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return false;
  out->clear();
  out->reserve(text.size() / 4 * 3 + 2);
  std::uint32_t bits = 0;
  int pending = 0;
  for (char c : text) {
    const int v = Base64Value(c);
    if (v < 0) return false;
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    pending += 6;
    if (pending >= 8) {
      pending -= 8;
      out->push_back(static_cast<char>((bits >> pending) & 0xff));
    }
  }
  return true;
}

HttpAuth::HttpAuth(const AuthOptions& options) {
  if (!options.token.empty()) token_ = Hash(options.token);
  if (!options.username.empty()) {
    username_ = Hash(options.username);
    password_ = Hash(options.password);
  }
}

bool HttpAuth::IsOpen(std::string_view path) { return path == "/ping" || path == "/health"; }

HttpAuth::Digest HttpAuth::Hash(std::string_view secret) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), digest.data());
  return digest;
}

bool HttpAuth::Same(const std::optional<Digest>& expected, std::string_view offered) {
  if (!expected) return false;
  const Digest digest = Hash(offered);
  return CRYPTO_memcmp(digest.data(), expected->data(), digest.size()) == 0;
}

bool HttpAuth::UserAndPassword(std::string_view user, std::string_view password) const {
  // Both compared, always: which of the two was wrong must not show in the time taken.
  const bool user_ok = Same(username_, user);
  const bool password_ok = Same(password_, password);
  return user_ok & password_ok;
}

bool HttpAuth::AuthorizationValid(std::string_view value) const {
  std::string_view credentials;
  if (SchemeIs(value, "Bearer", &credentials)) return Same(token_, credentials);
  if (SchemeIs(value, "Token", &credentials)) {
    if (Same(token_, credentials)) return true;
    const auto colon = credentials.find(':');
    return colon != std::string_view::npos &&
           UserAndPassword(credentials.substr(0, colon), credentials.substr(colon + 1));
  }
  if (SchemeIs(value, "Basic", &credentials)) {
    std::string decoded;
    if (!DecodeBase64(credentials, &decoded)) return false;
    const auto colon = decoded.find(':');
    if (colon == std::string::npos) return false;
    const std::string_view pair = decoded;
    return UserAndPassword(pair.substr(0, colon), pair.substr(colon + 1));
  }
  return false;
}

HttpAuth::Verdict HttpAuth::Check(const HttpRequest& request) const {
  bool offered = false;
  if (auto it = request.find(http::field::authorization); it != request.end()) {
    offered = true;
    if (AuthorizationValid(it->value())) return Verdict::kAllowed;
  }
  // InfluxDB 1.x: ?u=<user>&p=<password>. Only the URL: the body has not been read yet.
  const std::string_view target = request.target();
  const auto q = target.find('?');
  if (q != std::string_view::npos) {
    std::string user, password;
    bool has_user = false, has_password = false;
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
      const auto amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      if (pair.starts_with("u=")) {
        user = UrlDecode(pair.substr(2));
        has_user = true;
      } else if (pair.starts_with("p=")) {
        password = UrlDecode(pair.substr(2));
        has_password = true;
      }
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
    if (has_user || has_password) {
      offered = true;
      if (has_user && has_password && UserAndPassword(user, password)) return Verdict::kAllowed;
    }
  }
  return offered ? Verdict::kInvalid : Verdict::kMissing;
}

void HttpAuth::Challenge(Verdict verdict, HttpReply& reply) const {
  std::string accepted;
  if (token_) accepted += "Authorization: Bearer <token> (or Token <token>)";
  if (username_) {
    if (!accepted.empty()) accepted += ", or ";
    accepted += "Authorization: Basic, or the u and p URL parameters";
  }
  std::string message = verdict == Verdict::kMissing ? "authentication required: send "
                                                     : "invalid credentials; send ";
  message += accepted;
  ErrorReply(reply, http::status::unauthorized, "unauthorized", message);
  if (token_) reply.response.insert(http::field::www_authenticate, "Bearer realm=\"ingot\"");
  if (username_) {
    reply.response.insert(http::field::www_authenticate,
                          "Basic realm=\"ingot\", charset=\"UTF-8\"");
  }
}

}  // namespace ingot
