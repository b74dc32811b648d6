#include "ingest/write_handler.h"

#include <zlib.h>

#include "config/json_string.h"
#include "ingest/ingest_metrics.h"
#include "ingest/line_ingester.h"

namespace ingot::ingest {
namespace {

// Caches kept between requests: as many as requests usually run at once.
constexpr std::size_t kPooledCaches = 8;

std::string JsonError(std::string_view message) {
  std::string out = "{\"error\":";
  AppendJsonString(message, &out);
  out += "}\n";
  return out;
}

}  // namespace

std::string Gunzip(std::string_view compressed, std::uint64_t max_bytes, std::string* out) {
  z_stream zs{};
  // 32 + 15: accept gzip and zlib headers, largest window.
  if (inflateInit2(&zs, 32 + 15) != Z_OK) return "cannot initialise zlib";
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  out->clear();
  char buf[64 * 1024];
  auto fail = [&](std::string message) {
    inflateEnd(&zs);
    return message;
  };
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      return fail(zs.msg ? zs.msg : "truncated or corrupt stream");
    }
    const std::size_t produced = sizeof buf - zs.avail_out;
    if (out->size() + produced > max_bytes) return fail("too_large");
    out->append(buf, produced);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      // A gzip file may hold several members one after the other (RFC 1952 2.2; `cat a.gz b.gz`,
      // Go's reader and InfluxDB read them all). Anything else after a member is an error, not
      // something to ignore.
      const auto* next = zs.next_in;
      if (zs.avail_in < 2 || next[0] != 0x1f || next[1] != 0x8b) {
        return fail(std::to_string(zs.avail_in) + " bytes after the end of the compressed stream");
      }
      if (inflateReset(&zs) != Z_OK) return fail("cannot reset zlib");
      continue;
    }
    if (produced == 0 && zs.avail_in == 0) return fail("truncated gzip stream");
  }
  inflateEnd(&zs);
  return "";
}

WriteHandler::WriteHandler(ShardSet& shards, SeriesIndex& index, const Clock& clock,
                           const IngestOptions& options)
    : shards_(shards), index_(index), clock_(clock), options_(options) {}

WriteResponse WriteHandler::Handle(const WriteRequest& request) const {
  Metrics().http_writes->Add();
  WriteResponse response;
  auto fail = [&](int status, std::string_view message) {
    Metrics().http_write_errors->Add();
    response.status = status;
    response.body = JsonError(message);
    return response;
  };
  Precision precision = Precision::kNanoseconds;
  if (!request.precision.empty() && !ParsePrecision(request.precision, &precision)) {
    return fail(400, "invalid precision \"" + std::string(request.precision) +
                         "\": use n, ns, u, us, ms, s, m or h");
  }
  std::string inflated;
  std::string_view body = request.body;
  if (request.content_encoding == "gzip") {
    const std::string error = Gunzip(request.body, options_.max_body_bytes, &inflated);
    if (error == "too_large") {
      return fail(413, "request body exceeds ingest.max_body_bytes = " +
                           std::to_string(options_.max_body_bytes) + " bytes after gunzip");
    }
    if (!error.empty()) return fail(400, "invalid gzip body: " + error);
    body = inflated;
  } else if (!request.content_encoding.empty() && request.content_encoding != "identity") {
    return fail(415, "unsupported Content-Encoding \"" + std::string(request.content_encoding) +
                         "\": use gzip or none");
  }
  if (body.size() > options_.max_body_bytes) {
    return fail(413, "request body of " + std::to_string(body.size()) +
                         " bytes exceeds ingest.max_body_bytes = " +
                         std::to_string(options_.max_body_bytes));
  }
  const bool drop_string_fields = options_.string_fields == "drop";
  std::unique_ptr<SeriesCache> cache;
  {
    MutexLock lock(caches_mu_);
    if (!caches_.empty()) {
      cache = std::move(caches_.back());
      caches_.pop_back();
    }
  }
  LineIngester ingester(shards_, index_, clock_, precision, options_.max_line_bytes,
                        WriteProtocol::kHttp, "http /write", std::move(cache));
  ingester.set_log_string_fields(!drop_string_fields);
  std::unique_ptr<LineRouter> router;
  if (router_factory_) {
    router = router_factory_(precision);
    ingester.set_router(router.get());
  }
  ingester.Consume(body);
  ingester.Finish();
  if (std::unique_ptr<SeriesCache> done = ingester.ReleaseCache()) {
    MutexLock lock(caches_mu_);
    if (caches_.size() < kPooledCaches) caches_.push_back(std::move(done));
  }
  const IngestStats& stats = ingester.stats();
  if (router != nullptr && !ingester.storage_status().ok()) {
    // Nothing of the request may be stored; a retry is safe (a point stored twice is one point).
    response.retry_after_s = 1;
    return fail(503, "the cluster's log did not store the points: " +
                         ingester.storage_status().ToString());
  }
  if (!ingester.storage_status().ok()) {
    return fail(
        500, "storage failed, points may not be durable: " + ingester.storage_status().ToString());
  }
  // As InfluxDB: dropped counts what was refused, lines that did not parse and points refused.
  const std::uint64_t dropped =
      stats.lines_malformed + stats.lines_too_long + stats.points_rejected +
      (drop_string_fields ? 0 : stats.points_unsupported) + ingester.storage_rejected();
  if (dropped > 0) {
    const std::string reason =
        !stats.first_error.empty()
            ? stats.first_error
            : "points older than storage.late_max_age behind their series' sealed data, past "
              "the retention or of a conflicting type";
    return fail(400, "partial write: " + reason + " dropped=" + std::to_string(dropped));
  }
  response.status = 204;
  return response;
}

}  // namespace ingot::ingest
