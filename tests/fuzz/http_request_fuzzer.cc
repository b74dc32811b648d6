// libFuzzer target for the HTTP request path: raw bytes go through the request parser with the
// server's limits, and every request that parses is routed to the query API over a small real
// store (streamed answers drained). Any request must get an answer, never a crash.
#include <stdlib.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <boost/beast/core.hpp>

#include "chunk/series_key.h"
#include "chunk/storage.h"
#include "config/clock.h"
#include "config/http.h"
#include "config/logging.h"
#include "query/query_routes.h"

namespace {
using namespace ingot;

struct Node {
  std::unique_ptr<Storage> storage;
  HttpRouter router;
};

Node& TheNode() {
  static Node* node = [] {
    auto* n = new Node;
    spdlog::set_level(spdlog::level::off);
    char dir[] = "/tmp/ingot-fuzz-http-XXXXXX";
    if (::mkdtemp(dir) == nullptr) std::abort();
    StorageOptions options;
    options.data_dir = dir;
    options.wal_sync = "none";
    options.block_cache_bytes = 1 << 20;
    static ManualClock clock(1'700'000'100'000'000'000);
    if (!Storage::Open(options, 1, clock, &n->storage).ok()) std::abort();
    // A few series with points, so that selectors match and functions run.
    for (int s = 0; s < 3; ++s) {
      std::string key;
      const std::string host = "h" + std::to_string(s);
      const TagView tags[] = {TagView("host", host)};
      BuildSeriesKey("cpu", tags, "usage", &key);
      ResolvedSeries resolved;
      if (!n->storage->index().Resolve(key, ValueType::kFloat, &resolved).ok()) std::abort();
      std::vector<PointRecord> points;
      for (int i = 0; i < 50; ++i) {
        points.push_back(PointRecord{resolved.sid, 1'700'000'000'000'000'000 + i * 10'000'000'000LL,
                                     std::bit_cast<std::uint64_t>(double(i * s)),
                                     ValueType::kFloat});
      }
      std::vector<std::uint8_t> definitions;
      if (resolved.definition_pending) n->storage->index().AppendDefinition(resolved.sid, &definitions);
      if (!n->storage->shard(n->storage->ShardOf(resolved.sid)).Append(points, definitions, nullptr).ok()) {
        std::abort();
      }
    }
    QueryOptions query;
    query.max_points = 100'000;
    query.max_series = 1'000;
    RegisterQueryRoutes(n->router, *n->storage, query);
    return n;
  }();
  return *node;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace beast = boost::beast;
  Node& node = TheNode();
  http::request_parser<http::string_body> parser;
  parser.header_limit(256 * 1024);
  parser.body_limit(1 << 20);
  parser.eager(true);
  beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_done()) return 0;
  HttpRequest request = parser.release();
  HttpReply reply;
  node.router.Handle(request, reply);
  if (reply.stream) {
    std::string chunk;
    for (int pieces = 0; pieces < 10'000; ++pieces) {
      chunk.clear();
      if (!reply.stream(&chunk)) break;
    }
  }
  if (reply.response.result_int() < 200 || reply.response.result_int() > 599) std::abort();
  return 0;
}
