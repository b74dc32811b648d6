#include "config/http.h"

#include <exception>

#include "config/json_string.h"
#include "config/url_encoding.h"

namespace ingot {

void HttpRouter::Add(http::verb method, std::string path, HttpHandler handler, HttpWork work) {
  routes_.push_back({method, std::move(path), false, std::move(handler), work});
}

void HttpRouter::AddPrefix(http::verb method, std::string prefix, HttpHandler handler,
                           HttpWork work) {
  routes_.push_back({method, std::move(prefix), true, std::move(handler), work});
}

void SetReply(HttpReply& reply, http::status status, std::string_view content_type,
              std::string body) {
  reply.response.result(status);
  reply.response.set(http::field::content_type, content_type);
  reply.response.body() = std::move(body);
}

void ErrorReply(HttpReply& reply, http::status status, std::string_view type,
                std::string_view message) {
  std::string body = "{\"status\":\"error\",\"errorType\":";
  AppendJsonString(type, &body);
  body += ",\"error\":";
  AppendJsonString(message, &body);
  body += "}\n";
  reply.stream = nullptr;
  SetReply(reply, status, "application/json", std::move(body));
}

const HttpRouter::Route* HttpRouter::Find(const HttpRequest& request, bool* path_matched) const {
  const std::string_view path = TargetPath(request.target());
  *path_matched = false;
  for (const Route& route : routes_) {
    const bool match = route.prefix ? path.starts_with(route.path) : path == route.path;
    if (!match) continue;
    *path_matched = true;
    if (route.method == request.method()) return &route;
  }
  return nullptr;
}

HttpWork HttpRouter::WorkOf(const HttpRequest& request) const {
  bool path_matched = false;
  const Route* route = Find(request, &path_matched);
  return route == nullptr ? HttpWork::kInline : route->work;
}

void HttpRouter::Handle(const HttpRequest& request, HttpReply& reply) const {
  bool path_matched = false;
  const Route* route = Find(request, &path_matched);
  if (route != nullptr) {
    try {
      route->handler(request, reply);
    } catch (const std::exception& e) {
      reply.stream = nullptr;
      SetReply(reply, http::status::internal_server_error, "text/plain",
               std::string("internal error: ") + e.what() + "\n");
    }
    return;
  }
  const std::string_view path = TargetPath(request.target());
  if (path_matched) {
    SetReply(reply, http::status::method_not_allowed, "text/plain",
             "method " + std::string(request.method_string()) + " not allowed on " +
                 std::string(path) + "\n");
  } else {
    SetReply(reply, http::status::not_found, "text/plain",
             "no such endpoint: " + std::string(path) + "\n");
  }
}

std::string_view TargetPath(std::string_view target) {
  return target.substr(0, target.find('?'));
}

namespace {
void AppendParams(std::string_view query, std::vector<std::pair<std::string, std::string>>* out) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      if (eq == std::string_view::npos) {
        out->emplace_back(UrlDecode(pair), "");
      } else {
        out->emplace_back(UrlDecode(pair.substr(0, eq)), UrlDecode(pair.substr(eq + 1)));
      }
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
}
}  // namespace

std::vector<std::pair<std::string, std::string>> ParseQueryParams(const HttpRequest& request) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string_view target = request.target();
  const auto q = target.find('?');
  if (q != std::string_view::npos) AppendParams(target.substr(q + 1), &out);
  if (request.method() == http::verb::post) {
    auto it = request.find(http::field::content_type);
    if (it != request.end() &&
        it->value().starts_with("application/x-www-form-urlencoded")) {
      AppendParams(request.body(), &out);
    }
  }
  return out;
}

}  // namespace ingot
