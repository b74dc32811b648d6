#include "query/remote_read.h"

#include <snappy.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "chunk/series_reader.h"
#include "config/logging.h"
#include "config/metrics.h"
#include "query/crc32c.h"
#include "query/remote_read_format.h"
#include "query/series_catalog.h"
#include "query/xor_chunk_encoder.h"

namespace ingot {

using namespace remote_read;

namespace {

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();

// Why a request was not answered 200: the `reason` label of
// ingot_remote_read_requests_rejected_total.
enum class Rejection : std::uint8_t {
  kContentEncoding = 0,  // 415
  kTooLarge,             // 413
  kSnappy,               // 400
  kRequest,              // 400: protobuf, matchers, response types
  kLimit,                // 422
  kStorage,              // 500
  kCount
};
constexpr const char* kRejectionNames[] = {"content_encoding", "too_large", "snappy",
                                           "request",          "limit",     "storage"};

struct RemoteReadMetrics {
  Counter* requests;
  Counter* queries;
  Counter* series;
  Counter* samples;
  Counter* streamed;
  Counter* rejected[static_cast<int>(Rejection::kCount)];
};

RemoteReadMetrics& RrMetrics() {
  static RemoteReadMetrics metrics = [] {
    MetricsRegistry& r = MetricsRegistry::Default();
    RemoteReadMetrics m;
    m.requests = &r.AddCounter("ingot_remote_read_requests_total",
                               "Prometheus remote-read requests (POST /api/v1/read).");
    m.streamed = &r.AddCounter("ingot_remote_read_streamed_requests_total",
                               "Remote-read requests answered with STREAMED_XOR_CHUNKS.");
    m.queries = &r.AddCounter("ingot_remote_read_queries_total",
                              "Queries in remote-read requests that were answered.");
    m.series =
        &r.AddCounter("ingot_remote_read_series_total", "Series sent in remote-read answers.");
    m.samples =
        &r.AddCounter("ingot_remote_read_samples_total", "Samples sent in remote-read answers.");
    for (int i = 0; i < static_cast<int>(Rejection::kCount); ++i) {
      m.rejected[i] = &r.AddCounter("ingot_remote_read_requests_rejected_total",
                                    "Remote-read requests not answered 200, by reason.",
                                    std::string("reason=\"") + kRejectionNames[i] + "\"");
    }
    return m;
  }();
  return metrics;
}

// ---- protobuf wire format, reading --------------------------------------------------------

using protobuf::WireReader;

Status WireError(std::string_view where, const WireReader& reader) {
  return Status::InvalidArgument("malformed protobuf ReadRequest: " + std::string(where) + ": " +
                                 reader.error());
}

Status ParseMatcher(std::string_view message, std::size_t query, std::size_t index,
                    LabelMatcher* out) {
  const std::string where =
      "queries[" + std::to_string(query) + "].matchers[" + std::to_string(index) + "]";
  WireReader r(message);
  std::uint64_t type = kMatchEqual;
  std::string_view name, value;
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done()) {
    if (!r.ReadTag(&field, &wire_type)) return WireError(where, r);
    bool ok;
    if (field == kMatcherType && wire_type == kVarint) {
      ok = r.ReadVarint(&type);
    } else if (field == kMatcherName && wire_type == kLengthDelimited) {
      ok = r.ReadLengthDelimited(&name);
    } else if (field == kMatcherValue && wire_type == kLengthDelimited) {
      ok = r.ReadLengthDelimited(&value);
    } else {
      ok = r.Skip(field, wire_type);
    }
    if (!ok) return WireError(where, r);
  }
  MatchOp op;
  switch (type) {
    case kMatchEqual:
      op = MatchOp::kEqual;
      break;
    case kMatchNotEqual:
      op = MatchOp::kNotEqual;
      break;
    case kMatchRegex:
      op = MatchOp::kRegexMatch;
      break;
    case kMatchNotRegex:
      op = MatchOp::kRegexNoMatch;
      break;
    default:
      return Status::InvalidArgument(where + ": unknown matcher type " + std::to_string(type) +
                                     " (EQ 0, NEQ 1, RE 2, NRE 3)");
  }
  if (name.empty()) return Status::InvalidArgument(where + ": empty label name");
  const Status st = MakeMatcher(std::string(name), op, std::string(value), out);
  if (!st.ok()) return Status::InvalidArgument(where + ": " + std::string(st.message()));
  return Status::OK();
}

Status ParseQuery(std::string_view message, std::size_t index, RemoteReadQuery* out) {
  const std::string where = "queries[" + std::to_string(index) + "]";
  WireReader r(message);
  std::uint64_t start = 0, end = 0;
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done()) {
    if (!r.ReadTag(&field, &wire_type)) return WireError(where, r);
    bool ok;
    if (field == kQueryStartMs && wire_type == kVarint) {
      ok = r.ReadVarint(&start);
    } else if (field == kQueryEndMs && wire_type == kVarint) {
      ok = r.ReadVarint(&end);
    } else if (field == kQueryMatchers && wire_type == kLengthDelimited) {
      std::string_view matcher;
      ok = r.ReadLengthDelimited(&matcher);
      if (ok) {
        LabelMatcher m;
        INGOT_RETURN_IF_ERROR(ParseMatcher(matcher, index, out->selector.matchers.size(), &m));
        out->selector.matchers.push_back(std::move(m));
      }
    } else {
      ok = r.Skip(field, wire_type);  // hints: what the node answers does not depend on them
    }
    if (!ok) return WireError(where, r);
  }
  if (out->selector.matchers.empty()) {
    return Status::InvalidArgument(where + ": no matchers; a query selects series by at least one");
  }
  out->start_ms = static_cast<std::int64_t>(start);
  out->end_ms = static_cast<std::int64_t>(end);
  return Status::OK();
}

// Appends the accepted response types of one field occurrence (packed or not) to `*types`.
bool ReadResponseTypes(WireReader& r, std::uint32_t wire_type, std::vector<std::uint64_t>* types) {
  std::uint64_t v = 0;
  if (wire_type == kVarint) {
    if (!r.ReadVarint(&v)) return false;
    types->push_back(v);
    return true;
  }
  std::string_view packed;
  if (!r.ReadLengthDelimited(&packed)) return false;
  WireReader p(packed);
  while (!p.done()) {
    if (!p.ReadVarint(&v)) {
      r = p;  // carry the reason
      return false;
    }
    types->push_back(v);
  }
  return true;
}

// ---- protobuf wire format, writing ----------------------------------------------------------

std::size_t VarintSize(std::uint64_t v) {
  // 1 + floor(bit length - 1) / 7, for v >= 1; 1 for 0.
  return static_cast<std::size_t>((64 - std::countl_zero(v | 1)) + 6) / 7;
}
char* PutVarint(std::uint64_t v, char* p) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
void AppendVarint(std::uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
constexpr std::uint64_t Tag(std::uint32_t field, std::uint32_t wire_type) {
  return static_cast<std::uint64_t>(field) << 3 | wire_type;
}
void AppendBytesField(std::uint32_t field, std::string_view bytes, std::string* out) {
  AppendVarint(Tag(field, kLengthDelimited), out);
  AppendVarint(bytes.size(), out);
  out->append(bytes);
}
void AppendVarintField(std::uint32_t field, std::uint64_t v, std::string* out) {
  AppendVarint(Tag(field, kVarint), out);
  AppendVarint(v, out);
}

// A series' Label fields (field 1 in both TimeSeries and ChunkedSeries).
std::string EncodeLabels(const std::vector<std::pair<std::string, std::string>>& labels) {
  std::string out, label;
  for (const auto& [name, value] : labels) {
    label.clear();
    AppendBytesField(kLabelName, name, &label);
    AppendBytesField(kLabelValue, value, &label);
    AppendBytesField(kTimeSeriesLabels, label, &out);
  }
  return out;
}

// ---- reading series -------------------------------------------------------------------------

std::int64_t MillisToNanos(std::int64_t ms, std::int64_t below_ms) {
  if (ms > kMaxTs / kNanosPerMilli) return kMaxTs;
  if (ms < kMinTs / kNanosPerMilli) return kMinTs;
  const std::int64_t ns = ms * kNanosPerMilli;
  return below_ms > 0 && ns > kMaxTs - below_ms ? kMaxTs : ns + below_ms;
}

std::int64_t FloorMillis(std::int64_t ns) {
  std::int64_t ms = ns / kNanosPerMilli;
  if (ns % kNanosPerMilli < 0) --ms;
  return ms;
}

// One series matched by a query: its id and its label set, sorted as Prometheus sorts series.
struct MatchedSeries {
  SeriesId sid = kInvalidSeriesId;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string encoded_labels;
};

struct MatchedQuery {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::vector<MatchedSeries> series;
};

// Matches every query's selector. Busy past query.max_series.
Status MatchQueries(Storage& storage, const RemoteReadRequest& request, std::size_t max_series,
                    std::vector<MatchedQuery>* out) {
  SeriesCatalog catalog(storage.index());
  std::vector<SeriesId> ids;
  SeriesKeyParts parts;
  out->resize(request.queries.size());
  for (std::size_t q = 0; q < request.queries.size(); ++q) {
    const RemoteReadQuery& query = request.queries[q];
    MatchedQuery& matched = (*out)[q];
    matched.start_ns = MillisToNanos(query.start_ms, 0);
    matched.end_ns = MillisToNanos(query.end_ms, kNanosPerMilli - 1);
    const Status st = catalog.MatchIds(query.selector, max_series, &ids);
    if (!st.ok()) {
      return st.IsBusy()
                 ? Status::Busy("queries[" + std::to_string(q) + "]: " + std::string(st.message()))
                 : st;
    }
    if (query.end_ms < query.start_ms) continue;
    matched.series.reserve(ids.size());
    for (SeriesId sid : ids) {
      MatchedSeries s;
      s.sid = sid;
      if (!catalog.LabelsOf(sid, &parts, &s.labels).ok()) continue;  // dropped meanwhile
      s.encoded_labels = EncodeLabels(s.labels);
      matched.series.push_back(std::move(s));
    }
    std::sort(matched.series.begin(), matched.series.end(),
              [](const MatchedSeries& a, const MatchedSeries& b) { return a.labels < b.labels; });
    for (MatchedSeries& s : matched.series) s.labels = {};  // only the encoded form is needed
  }
  return Status::OK();
}

// Reads one series' points in milliseconds: `ms` and `bits` (reused, no allocation once grown).
class MillisReader {
 public:
  explicit MillisReader(Storage& storage, bool skip_damage) : reader_(storage) {
    if (skip_damage) reader_.SkipDamage(&damage_);
  }

  Status Read(SeriesId sid, std::int64_t start_ns, std::int64_t end_ns) {
    INGOT_RETURN_IF_ERROR(reader_.Read(sid, start_ns, end_ns));
    if (!damage_.empty()) {
      static RateLimiter limiter(1);
      std::uint64_t suppressed = 0;
      if (limiter.Allow(&suppressed)) {
        Logger("query")->warn("remote read left out {} damaged chunks of series {}", damage_.size(),
                              sid);
      }
      damage_.clear();
    }
    const auto ts = reader_.ts();
    const auto values = reader_.values();
    ms_.resize(ts.size());
    bits_.resize(ts.size());
    std::size_t n = 0;
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const std::int64_t ms = FloorMillis(ts[i]);
      // Several points in one millisecond: the last one stands for it.
      if (n > 0 && ms_[n - 1] == ms) --n;
      ms_[n] = ms;
      bits_[n] = std::bit_cast<std::uint64_t>(values[i]);
      ++n;
    }
    ms_.resize(n);
    bits_.resize(n);
    return Status::OK();
  }

  std::span<const std::int64_t> ms() const { return ms_; }
  std::span<const std::uint64_t> bits() const { return bits_; }

 private:
  SeriesReader reader_;
  std::vector<CorruptChunk> damage_;
  std::vector<std::int64_t> ms_;
  std::vector<std::uint64_t> bits_;
};

// Upper bound of the points of the matched series, from chunk headers and the head buffers.
Status EstimatePoints(Storage& storage, const std::vector<MatchedQuery>& queries,
                      std::uint64_t* points) {
  *points = 0;
  std::vector<std::int64_t> head_ts;
  std::vector<double> head_values;
  for (const MatchedQuery& q : queries) {
    for (const MatchedSeries& s : q.series) {
      INGOT_RETURN_IF_ERROR(
          storage.ForEachChunk(s.sid, q.start_ns, q.end_ns, [&](const ChunkView& view) {
            *points += view.count();
            return Status::OK();
          }));
      INGOT_RETURN_IF_ERROR(storage.shard(storage.ShardOf(s.sid))
                                .ReadHead(s.sid, q.start_ns, q.end_ns, &head_ts, &head_values));
      *points += head_ts.size();
    }
  }
  return Status::OK();
}

// SAMPLES: the whole ReadResponse (uncompressed). Busy past `max_samples`.
Status BuildSamplesResponse(Storage& storage, const std::vector<MatchedQuery>& queries,
                            std::uint64_t max_samples, bool skip_damage, std::string* out,
                            std::uint64_t* series_sent, std::uint64_t* samples_sent) {
  MillisReader reader(storage, skip_damage);
  std::string result;
  for (const MatchedQuery& q : queries) {
    result.clear();
    for (const MatchedSeries& s : q.series) {
      INGOT_RETURN_IF_ERROR(reader.Read(s.sid, q.start_ns, q.end_ns));
      const auto ms = reader.ms();
      const auto bits = reader.bits();
      if (ms.empty()) continue;
      *samples_sent += ms.size();
      if (*samples_sent > max_samples) {
        return Status::Busy("the remote read would return more than query.max_points = " +
                            std::to_string(max_samples) +
                            " samples; narrow the time range or the matchers");
      }
      ++*series_sent;
      // Sizes first, so that the samples are written once, straight into the result.
      std::size_t size = s.encoded_labels.size();
      for (const std::int64_t t : ms) {
        const std::size_t sample = 1 + 8 + 1 + VarintSize(static_cast<std::uint64_t>(t));
        size += 1 + VarintSize(sample) + sample;
      }
      const std::size_t at = result.size();
      result.resize(at + 1 + VarintSize(size) + size);
      char* p = result.data() + at;
      p = PutVarint(Tag(kQueryResultTimeseries, kLengthDelimited), p);
      p = PutVarint(size, p);
      std::memcpy(p, s.encoded_labels.data(), s.encoded_labels.size());
      p += s.encoded_labels.size();
      for (std::size_t i = 0; i < ms.size(); ++i) {
        const auto t = static_cast<std::uint64_t>(ms[i]);
        *p++ = static_cast<char>(Tag(kTimeSeriesSamples, kLengthDelimited));
        p = PutVarint(1 + 8 + 1 + VarintSize(t), p);
        *p++ = static_cast<char>(Tag(kSampleValue, kFixed64));
        for (int b = 0; b < 8; ++b) *p++ = static_cast<char>(bits[i] >> (8 * b));
        *p++ = static_cast<char>(Tag(kSampleTimestamp, kVarint));
        p = PutVarint(t, p);
      }
    }
    AppendBytesField(kReadResponseResults, result, out);
  }
  return Status::OK();
}

// STREAMED_XOR_CHUNKS: produces the frames a series at a time, as the client reads.
class ChunkedStream {
 public:
  static constexpr std::size_t kPieceBytes = 1 << 20;

  ChunkedStream(Storage& storage, std::vector<MatchedQuery> queries, bool skip_damage)
      : queries_(std::move(queries)), reader_(storage, skip_damage) {}

  // Appends the next piece; false after the last.
  bool Next(std::string* out) {
    while (query_ < queries_.size()) {
      const MatchedQuery& q = queries_[query_];
      if (series_ == q.series.size()) {
        ++query_;
        series_ = 0;
        continue;
      }
      const Status st = WriteSeries(q, q.series[series_], out);
      ++series_;
      if (!st.ok()) {
        // The status line went out long ago: a frame whose checksum cannot match makes the
        // client fail the read instead of taking a short answer for the whole one.
        Logger("query")->warn("remote read stopped: {}", st.ToString());
        RrMetrics().rejected[static_cast<int>(Rejection::kStorage)]->Add();
        const std::string message = st.ToString();
        AppendVarint(message.size(), out);
        const std::uint32_t wrong = ~Crc32c(message);
        for (int b = 3; b >= 0; --b) out->push_back(static_cast<char>(wrong >> (8 * b)));
        out->append(message);
        Finish();
        return false;
      }
      if (out->size() >= kPieceBytes) return true;
    }
    Finish();
    return false;
  }

 private:
  void Finish() {
    if (finished_) return;
    finished_ = true;
    RrMetrics().series->Add(series_sent_);
    RrMetrics().samples->Add(samples_sent_);
  }

  Status WriteSeries(const MatchedQuery& q, const MatchedSeries& s, std::string* out) {
    INGOT_RETURN_IF_ERROR(reader_.Read(s.sid, q.start_ns, q.end_ns));
    const auto ms = reader_.ms();
    const auto bits = reader_.bits();
    if (ms.empty()) return Status::OK();
    ++series_sent_;
    samples_sent_ += ms.size();
    chunks_.clear();
    for (std::size_t i = 0; i < ms.size(); i += XorChunkEncoder::kMaxSamples) {
      const std::size_t n = std::min(XorChunkEncoder::kMaxSamples, ms.size() - i);
      encoder_.Reset();
      for (std::size_t j = i; j < i + n; ++j) encoder_.Append(ms[j], bits[j]);
      const auto data = encoder_.bytes();
      chunk_.clear();
      AppendVarintField(kChunkMinTimeMs, static_cast<std::uint64_t>(encoder_.min_time_ms()),
                        &chunk_);
      AppendVarintField(kChunkMaxTimeMs, static_cast<std::uint64_t>(encoder_.max_time_ms()),
                        &chunk_);
      AppendVarintField(kChunkType, kChunkEncodingXor, &chunk_);
      AppendBytesField(kChunkData,
                       std::string_view(reinterpret_cast<const char*>(data.data()), data.size()),
                       &chunk_);
      AppendBytesField(kChunkedSeriesChunks, chunk_, &chunks_);
      if (chunks_.size() >= kMaxFrameChunkBytes) {
        WriteFrame(s, out);
        chunks_.clear();
      }
    }
    if (!chunks_.empty()) WriteFrame(s, out);
    return Status::OK();
  }

  // One ChunkedReadResponse holding the series' labels and the chunks gathered in chunks_.
  void WriteFrame(const MatchedSeries& s, std::string* out) {
    series_msg_.assign(s.encoded_labels);
    series_msg_.append(chunks_);
    message_.clear();
    AppendBytesField(kChunkedReadResponseSeries, series_msg_, &message_);
    AppendVarintField(kChunkedReadResponseQueryIndex, query_, &message_);
    AppendVarint(message_.size(), out);
    const std::uint32_t crc = Crc32c(message_);
    for (int b = 3; b >= 0; --b) out->push_back(static_cast<char>(crc >> (8 * b)));
    out->append(message_);
  }

  const std::vector<MatchedQuery> queries_;
  MillisReader reader_;
  XorChunkEncoder encoder_;
  std::string chunk_, chunks_, series_msg_, message_;
  std::size_t query_ = 0;
  std::size_t series_ = 0;
  std::uint64_t series_sent_ = 0;
  std::uint64_t samples_sent_ = 0;
  bool finished_ = false;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Status ParseRemoteReadRequest(std::string_view protobuf, RemoteReadRequest* out) {
  *out = RemoteReadRequest{};
  WireReader r(protobuf);
  std::vector<std::uint64_t> types;
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done()) {
    if (!r.ReadTag(&field, &wire_type)) return WireError("ReadRequest", r);
    bool ok;
    if (field == kReadRequestQueries && wire_type == kLengthDelimited) {
      std::string_view query;
      ok = r.ReadLengthDelimited(&query);
      if (ok) {
        RemoteReadQuery q;
        INGOT_RETURN_IF_ERROR(ParseQuery(query, out->queries.size(), &q));
        out->queries.push_back(std::move(q));
      }
    } else if (field == kReadRequestAcceptedResponseTypes &&
               (wire_type == kVarint || wire_type == kLengthDelimited)) {
      ok = ReadResponseTypes(r, wire_type, &types);
    } else {
      ok = r.Skip(field, wire_type);
    }
    if (!ok) return WireError("ReadRequest", r);
  }
  if (types.empty()) return Status::OK();  // SAMPLES
  for (const std::uint64_t t : types) {
    if (t == kResponseSamples || t == kResponseStreamedXorChunks) {
      out->streamed = t == kResponseStreamedXorChunks;
      return Status::OK();
    }
  }
  return Status::InvalidArgument(
      "none of the accepted_response_types is implemented: the node answers SAMPLES (0) and "
      "STREAMED_XOR_CHUNKS (1)");
}

RemoteReadHandler::RemoteReadHandler(Storage& storage, const QueryOptions& options)
    : storage_(storage), options_(options) {
  RrMetrics();  // registered up front, so /metrics shows them before the first request
}

void RemoteReadHandler::Handle(const HttpRequest& request, HttpReply& reply) const {
  RemoteReadMetrics& metrics = RrMetrics();
  metrics.requests->Add();
  auto fail = [&](Rejection why, http::status status, std::string message) {
    metrics.rejected[static_cast<int>(why)]->Add();
    static RateLimiter limiter(5);
    std::uint64_t suppressed = 0;
    if (limiter.Allow(&suppressed)) {
      Logger("query")->warn(
          "http /api/v1/read answered {}: {}{}", static_cast<unsigned>(status), message,
          suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
    }
    message.push_back('\n');
    reply.stream = nullptr;
    SetReply(reply, status, "text/plain; charset=utf-8", std::move(message));
  };

  if (auto it = request.find(http::field::content_encoding); it != request.end()) {
    const std::string_view encoding = Trim(it->value());
    if (!encoding.empty() && encoding != "snappy") {
      fail(Rejection::kContentEncoding, http::status::unsupported_media_type,
           "unsupported Content-Encoding \"" + std::string(encoding) +
               "\": remote-read requests are snappy-compressed (block format)");
      return;
    }
  }
  const std::string_view body = request.body();
  std::size_t decoded_bytes = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &decoded_bytes)) {
    fail(Rejection::kSnappy, http::status::bad_request,
         "body is not a snappy block (remote read sends a snappy-compressed protobuf "
         "ReadRequest)");
    return;
  }
  if (decoded_bytes > options_.max_request_bytes) {
    fail(Rejection::kTooLarge, http::status::payload_too_large,
         "the snappy header claims " + std::to_string(decoded_bytes) +
             " decoded bytes, more than query.max_request_bytes = " +
             std::to_string(options_.max_request_bytes));
    return;
  }
  std::string decoded;
  if (!snappy::Uncompress(body.data(), body.size(), &decoded)) {
    fail(Rejection::kSnappy, http::status::bad_request,
         "body is not a valid snappy block: it does not decompress");
    return;
  }
  RemoteReadRequest parsed;
  if (Status st = ParseRemoteReadRequest(decoded, &parsed); !st.ok()) {
    fail(Rejection::kRequest, http::status::bad_request, std::string(st.message()));
    return;
  }
  std::vector<MatchedQuery> queries;
  if (Status st = MatchQueries(storage_, parsed, options_.max_series, &queries); !st.ok()) {
    fail(st.IsBusy() ? Rejection::kLimit : Rejection::kStorage,
         st.IsBusy() ? http::status::unprocessable_entity : http::status::internal_server_error,
         st.IsBusy() ? std::string(st.message()) : st.ToString());
    return;
  }
  metrics.queries->Add(queries.size());
  const bool skip_damage = options_.damaged_chunks == "skip";

  if (parsed.streamed) {
    std::uint64_t points = 0;
    if (Status st = EstimatePoints(storage_, queries, &points); !st.ok()) {
      fail(Rejection::kStorage, http::status::internal_server_error, st.ToString());
      return;
    }
    if (points > options_.max_points) {
      fail(Rejection::kLimit, http::status::unprocessable_entity,
           "the remote read would return about " + std::to_string(points) +
               " samples, more than query.max_points = " + std::to_string(options_.max_points) +
               "; narrow the time range or the matchers");
      return;
    }
    metrics.streamed->Add();
    auto stream = std::make_shared<ChunkedStream>(storage_, std::move(queries), skip_damage);
    reply.response.result(http::status::ok);
    reply.response.set(http::field::content_type, kStreamedContentType);
    reply.stream = [stream](std::string* chunk) { return stream->Next(chunk); };
    return;
  }

  std::string response;
  std::uint64_t series_sent = 0, samples_sent = 0;
  if (Status st = BuildSamplesResponse(storage_, queries, options_.max_points, skip_damage,
                                       &response, &series_sent, &samples_sent);
      !st.ok()) {
    fail(st.IsBusy() ? Rejection::kLimit : Rejection::kStorage,
         st.IsBusy() ? http::status::unprocessable_entity : http::status::internal_server_error,
         st.IsBusy() ? std::string(st.message()) : st.ToString());
    return;
  }
  metrics.series->Add(series_sent);
  metrics.samples->Add(samples_sent);
  std::string compressed;
  snappy::Compress(response.data(), response.size(), &compressed);
  reply.response.result(http::status::ok);
  reply.response.set(http::field::content_type, kSamplesContentType);
  reply.response.set(http::field::content_encoding, "snappy");
  reply.response.body() = std::move(compressed);
}

}  // namespace ingot
