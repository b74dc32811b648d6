#include "node/write_routes.h"

#include <string>

namespace ingot {

void RegisterWriteRoutes(HttpRouter& router, const ingest::WriteHandler& handler,
                         const ingest::RemoteWriteHandler& remote_write) {
  auto write = [&handler](const HttpRequest& request, HttpReply& reply) {
    ingest::WriteRequest w;
    w.body = request.body();
    std::string precision;
    for (const auto& [key, value] : ParseQueryParams(request)) {
      if (key == "precision") precision = value;
    }
    w.precision = precision;
    if (auto it = request.find(http::field::content_encoding); it != request.end()) {
      w.content_encoding = it->value();
    }
    ingest::WriteResponse r = handler.Handle(w);
    reply.response.result(static_cast<unsigned>(r.status));
    reply.response.set("X-Influxdb-Version", "1.8-ingot");
    if (r.retry_after_s > 0) {
      reply.response.set(http::field::retry_after, std::to_string(r.retry_after_s));
    }
    if (!r.body.empty()) {
      reply.response.set(http::field::content_type, "application/json");
      reply.response.body() = std::move(r.body);
    }
  };
  router.Add(http::verb::post, "/write", write, HttpWork::kWrite);
  router.Add(http::verb::post, "/api/v2/write", write, HttpWork::kWrite);
  auto answer = [](ingest::RemoteWriteResponse r, HttpReply& reply) {
    reply.response.result(static_cast<unsigned>(r.status));
    if (r.retry_after_s > 0) {
      reply.response.set(http::field::retry_after, std::to_string(r.retry_after_s));
    }
    if (!r.body.empty()) {
      reply.response.set(http::field::content_type, "text/plain; charset=utf-8");
      reply.response.body() = std::move(r.body);
    }
  };
  // Runs on the I/O thread (HttpWork::kWriteFirstInline): what would wait goes to `then`.
  auto prometheus_write = [&remote_write, answer](const HttpRequest& request, HttpReply& reply) {
    ingest::RemoteWriteRequest w;
    w.body = request.body();
    if (auto it = request.find(http::field::content_encoding); it != request.end()) {
      w.content_encoding = it->value();
    }
    if (auto it = request.find(http::field::content_type); it != request.end()) {
      w.content_type = it->value();
    }
    ingest::RemoteWriteResponse r = remote_write.Handle(w, /*may_block=*/false);
    if (r.rest) {
      reply.then = [rest = std::move(r.rest), answer](HttpReply& later) { answer(rest(), later); };
      return;
    }
    answer(std::move(r), reply);
  };
  router.Add(http::verb::post, "/api/v1/write", prometheus_write, HttpWork::kWriteFirstInline);
  // InfluxDB clients probe /ping before writing.
  auto ping = [](const HttpRequest&, HttpReply& reply) {
    reply.response.result(http::status::no_content);
    reply.response.set("X-Influxdb-Version", "1.8-ingot");
  };
  router.Add(http::verb::get, "/ping", ping, HttpWork::kInline);
  router.Add(http::verb::head, "/ping", ping, HttpWork::kInline);
}

}  // namespace ingot
