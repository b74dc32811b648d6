#include "node/codec_routes.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chunk/chunk_inspect.h"
#include "query/selector.h"
#include "query/series_catalog.h"
#include "query/text_format.h"

namespace ingot {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kDefaultSeriesLimit = 100;
constexpr std::uint64_t kMaxSeriesLimit = 10'000;
constexpr std::uint64_t kDefaultMaxChunks = 10'000'000;
constexpr std::uint64_t kMaxMaxChunks = 1'000'000'000;

void BadParam(HttpReply& reply, std::string_view name, std::string_view detail) {
  ErrorReply(reply, http::status::bad_request, "bad_data",
             "invalid parameter \"" + std::string(name) + "\": " + std::string(detail));
}

void JsonReply(HttpReply& reply, const Json& data) {
  Json body = Json::object();
  body["status"] = "success";
  body["data"] = data;
  SetReply(reply, http::status::ok, "application/json", body.dump() + "\n");
}

// The last value of `name` (nullptr when absent).
const std::string* Param(const std::vector<std::pair<std::string, std::string>>& params,
                         std::string_view name) {
  const std::string* found = nullptr;
  for (const auto& [k, v] : params) {
    if (k == name) found = &v;
  }
  return found;
}

// An integer parameter in [1, max]; `fallback` when absent. False after filling a 400.
bool CountParam(const std::vector<std::pair<std::string, std::string>>& params,
                std::string_view name, std::uint64_t fallback, std::uint64_t max,
                std::uint64_t* out, HttpReply& reply) {
  const std::string* text = Param(params, name);
  if (text == nullptr) {
    *out = fallback;
    return true;
  }
  std::uint64_t v = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (text->empty() || ec != std::errc() || ptr != end || v < 1 || v > max) {
    BadParam(reply, name, "\"" + *text + "\" is not an integer in 1.." + std::to_string(max));
    return false;
  }
  *out = v;
  return true;
}

// A time parameter; `fallback` when absent or empty. False after filling a 400.
bool TimeParam(const std::vector<std::pair<std::string, std::string>>& params,
               std::string_view name, std::int64_t fallback, std::int64_t* ns, HttpReply& reply) {
  const std::string* text = Param(params, name);
  if (text == nullptr || text->empty()) {
    *ns = fallback;
    return true;
  }
  const Status st = ParseTimeNs(*text, ns);
  if (!st.ok()) {
    BadParam(reply, name, st.message());
    return false;
  }
  return true;
}

Json DescribeChunkJson(const ChunkView& view) {
  const ChunkDescription d = DescribeChunk(view.bytes);
  Json c = Json::object();
  c["ok"] = d.ok;
  c["bytes"] = d.bytes;
  // Nanoseconds as strings: JSON numbers lose them past 2^53 in JavaScript.
  c["first_ts_ns"] = std::to_string(view.first_ts_ns);
  if (!d.header_ok) {
    c["error"] = d.error;
    return c;
  }
  const double count = d.header.count;
  c["min_ts_ns"] = std::to_string(d.header.min_ts_ns);
  c["max_ts_ns"] = std::to_string(d.header.max_ts_ns);
  c["min_time"] = static_cast<double>(d.header.min_ts_ns) / 1e9;
  c["max_time"] = static_cast<double>(d.header.max_ts_ns) / 1e9;
  c["count"] = d.header.count;
  c["blocks"] = d.header.blocks;
  c["ts_bytes"] = d.header.ts_bytes;
  c["value_bytes"] = d.header.value_bytes;
  c["ts_encoding"] = d.ts_encoding_name;
  c["value_encoding"] = d.value_encoding_name;
  c["bits_per_value"] = d.header.value_bytes * 8.0 / count;
  c["bits_per_timestamp"] = d.header.ts_bytes * 8.0 / count;
  c["bytes_per_point"] = static_cast<double>(d.bytes) / count;
  const codec::FloatBlockInfo& v = d.value;
  c["alp_exponent"] = v.has_alp_params ? Json(v.alp_exponent) : Json(nullptr);
  c["alp_factor"] = v.has_alp_params ? Json(v.alp_factor) : Json(nullptr);
  c["bit_width"] = v.has_bit_width ? Json(v.bit_width) : Json(nullptr);
  c["exception_count"] = v.exception_count;
  if (d.is_float && v.encoding == codec::FloatEncoding::kAlpRd) {
    c["dictionary_size"] = v.dictionary_size;
  }
  if (!d.ok) c["error"] = d.error;
  return c;
}

class CodecRoutes {
 public:
  CodecRoutes(Storage& storage, const QueryOptions& options)
      : storage_(storage), options_(options), catalog_(storage.index()) {}

  void Chunks(const HttpRequest& request, HttpReply& reply) {
    const auto params = ParseQueryParams(request);
    std::vector<SeriesId> ids;
    for (const auto& [key, text] : params) {
      if (key != "match[]") continue;
      Selector selector;
      Status st = ParseSelector(text, &selector);
      if (!st.ok()) return BadParam(reply, "match[]", st.message());
      std::vector<SeriesId> one;
      st = catalog_.MatchIds(selector, options_.max_series, &one);
      if (!st.ok()) {
        return ErrorReply(reply, http::status::unprocessable_entity, "execution", st.message());
      }
      ids.insert(ids.end(), one.begin(), one.end());
    }
    if (Param(params, "match[]") == nullptr) {
      return BadParam(reply, "match[]", "at least one series selector is required");
    }
    std::int64_t start = 0, end = 0;
    std::uint64_t limit = 0;
    if (!TimeParam(params, "start", kMinTs, &start, reply) ||
        !TimeParam(params, "end", kMaxTs, &end, reply) ||
        !CountParam(params, "limit", kDefaultSeriesLimit, kMaxSeriesLimit, &limit, reply)) {
      return;
    }
    if (end < start) return BadParam(reply, "end", "before \"start\"");
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const bool truncated = ids.size() > limit;
    if (truncated) ids.resize(limit);

    Json series = Json::array();
    std::vector<std::int64_t> head_ts;
    std::vector<double> head_values;
    for (const SeriesId sid : ids) {
      SeriesRef info;
      if (!catalog_.Describe(sid, &info).ok()) continue;  // gone since it matched
      Json metric = Json::object();
      metric["__name__"] = info->name;
      for (const auto& [k, v] : info->labels) metric[k] = v;
      ValueType type = ValueType::kFloat;
      storage_.index().KeyOf(sid, &type);
      Json chunks = Json::array();
      Status st = storage_.ForEachChunk(sid, start, end, [&](const ChunkView& view) {
        chunks.push_back(DescribeChunkJson(view));
        return Status::OK();
      });
      if (!st.ok()) {
        return ErrorReply(reply, http::status::internal_server_error, "internal", st.ToString());
      }
      st = storage_.shard(storage_.ShardOf(sid)).ReadHead(sid, start, end, &head_ts, &head_values);
      if (!st.ok()) {
        return ErrorReply(reply, http::status::internal_server_error, "internal", st.ToString());
      }
      Json s = Json::object();
      s["metric"] = std::move(metric);
      s["type"] = ValueTypeName(type);
      s["head_points"] = head_ts.size();
      s["chunks"] = std::move(chunks);
      series.push_back(std::move(s));
    }
    Json data = Json::object();
    data["series"] = std::move(series);
    data["truncated"] = truncated;
    JsonReply(reply, data);
  }

  void Stats(const HttpRequest& request, HttpReply& reply) {
    const auto params = ParseQueryParams(request);
    std::uint64_t max_chunks = 0;
    if (!CountParam(params, "max_chunks", kDefaultMaxChunks, kMaxMaxChunks, &max_chunks, reply)) {
      return;
    }
    CodecStats stats;
    const Status st = CollectCodecStats(storage_.chunks(), max_chunks, &stats);
    if (!st.ok()) {
      return ErrorReply(reply, http::status::internal_server_error, "internal", st.ToString());
    }
    const auto totals = [&stats](std::string_view name, const EncodingTotals& t) {
      Json e = Json::object();
      e["encoding"] = name;
      e["chunks"] = t.chunks;
      e["values"] = t.values;
      e["value_bytes"] = t.value_bytes;
      e["chunk_bytes"] = t.chunk_bytes;
      e["bits_per_value"] = t.values ? t.value_bytes * 8.0 / static_cast<double>(t.values) : 0.0;
      e["bytes_per_point"] =
          t.values ? static_cast<double>(t.chunk_bytes) / static_cast<double>(t.values) : 0.0;
      e["share_of_values"] =
          stats.all.values ? static_cast<double>(t.values) / static_cast<double>(stats.all.values)
                           : 0.0;
      return e;
    };
    Json encodings = Json::array();
    for (int i = 0; i < codec::kFloatEncodingCount; ++i) {
      const EncodingTotals& t = stats.by_float_encoding[static_cast<std::size_t>(i)];
      if (t.chunks == 0) continue;
      encodings.push_back(
          totals(codec::FloatEncodingName(static_cast<codec::FloatEncoding>(i)), t));
    }
    if (stats.integer.chunks > 0) encodings.push_back(totals("int", stats.integer));
    Json data = totals("all", stats.all);
    data.erase("encoding");
    data.erase("share_of_values");
    data["timestamp_bytes"] = stats.timestamp_bytes;
    data["unreadable_chunks"] = stats.unreadable_chunks;
    data["truncated"] = stats.truncated;
    data["encodings"] = std::move(encodings);
    JsonReply(reply, data);
  }

 private:
  Storage& storage_;
  const QueryOptions options_;
  SeriesCatalog catalog_;
};

}  // namespace

void RegisterCodecRoutes(HttpRouter& router, Storage& storage, const QueryOptions& options) {
  auto routes = std::make_shared<CodecRoutes>(storage, options);
  router.Add(
      http::verb::get, "/api/v1/ingot/chunks",
      [routes](const HttpRequest& request, HttpReply& reply) { routes->Chunks(request, reply); });
  router.Add(
      http::verb::get, "/api/v1/ingot/codec_stats",
      [routes](const HttpRequest& request, HttpReply& reply) { routes->Stats(request, reply); });
}

}  // namespace ingot
