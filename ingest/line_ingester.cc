#include "ingest/line_ingester.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "chunk/series_key.h"
#include "ingest/ingest_metrics.h"
#include "ingest/line_protocol_escape.h"

namespace ingot::ingest {
namespace {

// Bad input from many connections shares one budget so a flood cannot flood the log.
RateLimiter& BadLineLimiter() {
  static RateLimiter limiter(10);
  return limiter;
}

// Bounds of a connection's series cache (see SeriesCache): ~32 bytes per entry plus the raw key
// bytes, so at most ~8 MiB + 4 MiB per connection; a miss costs one canonical key and one index
// lookup.
constexpr std::size_t kMaxCachedSeries = 1 << 17;
constexpr std::size_t kMaxCachedKeyBytes = 4 << 20;

// True when `v` converts to a double and back unchanged. (Comparing the converted value against
// 2^53 is not enough: 2^53 + 1 rounds down to 2^53 and would pass.) The upper bound keeps the
// conversion back defined: 2^63 (resp. 2^64) is where a rounded-up value leaves the type's range.
// Keys in log messages are cut: a refused key may be the very thing that is too long.
std::string Truncated(std::string_view key) {
  constexpr std::size_t kMax = 200;
  if (key.size() <= kMax) return std::string(key);
  return std::string(key.substr(0, kMax)) + "... (" + std::to_string(key.size()) + " bytes)";
}

bool IsExactDouble(std::int64_t v) {
  const double d = static_cast<double>(v);
  return d < 9223372036854775808.0 && static_cast<std::int64_t>(d) == v;
}
bool IsExactDouble(std::uint64_t v) {
  const double d = static_cast<double>(v);
  return d < 18446744073709551616.0 && static_cast<std::uint64_t>(d) == v;
}

ValueType WantedType(FieldType type) {
  switch (type) {
    case FieldType::kFloat:
      return ValueType::kFloat;
    case FieldType::kBool:
      return ValueType::kBoolean;
    default:
      return ValueType::kInteger;
  }
}

}  // namespace

LineIngester::LineIngester(ShardSet& shards, SeriesIndex& index, const Clock& clock,
                           Precision precision, std::size_t max_line_bytes, WriteProtocol protocol,
                           std::string context, std::unique_ptr<SeriesCache> cache)
    : shards_(shards),
      index_(index),
      clock_(clock),
      max_line_bytes_(max_line_bytes),
      context_(std::move(context)),
      parser_(precision),
      cache_(cache ? std::move(cache) : NewCache()),
      completion_(protocol),
      log_(Logger("ingest")) {
  open_.resize(static_cast<std::size_t>(shards_.shard_count()));
}

LineIngester::~LineIngester() {
  // Everything handed to shards references completion_; it must be done before it goes away.
  Flush();
  (void)completion_.Wait();
}

void LineIngester::Consume(std::string_view lines) {
  Metrics().bytes_received->Add(lines.size());
  const std::uint64_t lines_before = stats_.lines;
  const std::int64_t now_ns = clock_.NowNs();
  std::size_t pos = 0;
  std::string_view line;
  while (NextLine(lines, &pos, &line, /*end_of_input=*/true)) {
    ++stats_.lines;
    HandleLine(line, now_ns);
  }
  Metrics().lines->Add(stats_.lines - lines_before);
  if (router_ != nullptr) {
    router_->Send();
  } else {
    Flush();
  }
}

void LineIngester::OverlongLine(std::uint64_t line_number, std::size_t bytes_seen) {
  ++stats_.lines;
  ++stats_.lines_too_long;
  Metrics().lines->Add();
  Metrics().lines_too_long->Add();
  if (stats_.first_error.empty()) {
    stats_.first_error = "line " + std::to_string(line_number) + ": longer than " +
                         std::to_string(max_line_bytes_) + " bytes";
  }
  std::uint64_t suppressed = 0;
  if (BadLineLimiter().Allow(&suppressed)) {
    log_->warn("{} line {}: skipped a line of at least {} bytes (ingest.max_line_bytes = {}){}",
               context_, line_number, bytes_seen, max_line_bytes_,
               suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
}

void LineIngester::LogStringField(std::string_view key) {
  const std::string what =
      "line " + std::to_string(stats_.lines) + ": field '" + std::string(key) +
      "' has a string value, which is not stored (the line's other fields are)";
  if (stats_.first_error.empty()) stats_.first_error = what;
  // Agents that send strings send them on every line: their own budget, so that they do not
  // hide other bad lines from the log.
  static RateLimiter limiter(2);
  std::uint64_t suppressed = 0;
  if (limiter.Allow(&suppressed)) {
    log_->warn("{} {}{}", context_, what,
               suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
}

void LineIngester::LogBadLine(std::string_view what) {
  if (stats_.first_error.empty()) stats_.first_error = std::string(what);
  std::uint64_t suppressed = 0;
  if (BadLineLimiter().Allow(&suppressed)) {
    log_->warn("{} {}{}", context_, what,
               suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
}

void LineIngester::HandleLine(std::string_view line, std::int64_t now_ns) {
  if (line.size() > max_line_bytes_) {
    ++stats_.lines_too_long;
    Metrics().lines_too_long->Add();
    LogBadLine("line " + std::to_string(stats_.lines) + ": " + std::to_string(line.size()) +
               " bytes exceeds ingest.max_line_bytes = " + std::to_string(max_line_bytes_));
    return;
  }
  ParseError error;
  const ParseResult result = parser_.Parse(line, now_ns, &parsed_, &error);
  if (result == ParseResult::kSkip) return;
  if (result == ParseResult::kError) {
    ++stats_.lines_malformed;
    Metrics().lines_malformed->Add();
    LogBadLine("line " + std::to_string(stats_.lines) + ": " + error.Describe(line));
    return;
  }

  if (router_ != nullptr) {
    for (const Field& field : parsed_.fields) {
      if (field.type != FieldType::kString) {
        ++stats_.points;
      } else {
        ++stats_.points_unsupported;
        Metrics().points_string_field->Add();
        if (log_string_fields_) LogStringField(field.key);
      }
    }
    router_->Route(parsed_, line);
    return;
  }
  const std::uint64_t prefix_hash = SeriesCache::HashPrefix(parsed_.series_prefix);
  for (std::size_t i = 0; i < parsed_.fields.size(); ++i) {
    const Field& field = parsed_.fields[i];
    if (field.type == FieldType::kString) {
      ++stats_.points_unsupported;
      Metrics().points_string_field->Add();
      if (log_string_fields_) LogStringField(field.key);
      continue;
    }
    SeriesCache::Entry series;
    if (!cache_->Find(prefix_hash, parsed_.series_prefix, field.key, &series)) {
      if (!ResolveField(prefix_hash, parsed_, field, WantedType(field.type), &series)) continue;
    }
    AddPoint(series, parsed_.ts_ns, field);
  }
}

bool LineIngester::ResolveField(std::uint64_t prefix_hash, const ParsedLine& line,
                                const Field& field, ValueType wanted, SeriesCache::Entry* out) {
  // Slow path: the canonical key, then the index (creates the series when new).
  tag_scratch_.resize(line.tags.size());
  for (std::size_t t = 0; t < line.tags.size(); ++t) {
    tag_scratch_[t].first.clear();
    tag_scratch_[t].second.clear();
    AppendUnescaped(line.tags[t].key, EscapeContext::kTagKey, &tag_scratch_[t].first);
    AppendUnescaped(line.tags[t].value, EscapeContext::kTagValue, &tag_scratch_[t].second);
  }
  std::sort(tag_scratch_.begin(), tag_scratch_.end());
  for (const auto& [key, value] : tag_scratch_) {
    // Queries name a series by its labels; the metric name (measurement_field) is __name__, so
    // a tag of that name would give the series two.
    if (key == "__name__") {
      ++stats_.points_rejected;
      Metrics().points_reserved_label->Add();
      LogBadLine("line " + std::to_string(stats_.lines) +
                 ": tag key '__name__' is reserved (the metric name is <measurement>_<field>)");
      return false;
    }
  }
  tag_views_.clear();
  for (const auto& [k, v] : tag_scratch_) tag_views_.emplace_back(k, v);
  measurement_scratch_.clear();
  field_scratch_.clear();
  AppendUnescaped(line.measurement, EscapeContext::kMeasurement, &measurement_scratch_);
  AppendUnescaped(field.key, EscapeContext::kFieldKey, &field_scratch_);
  BuildSeriesKey(measurement_scratch_, tag_views_, field_scratch_, &key_scratch_);
  ResolvedSeries resolved;
  Status st = index_.Resolve(key_scratch_, wanted, &resolved);
  if (!st.ok()) {
    ++stats_.points_rejected;
    if (resolved.rejection == SeriesRejection::kNone) Metrics().points_storage_error->Add();
    LogBadLine("line " + std::to_string(stats_.lines) + ": series '" + Truncated(key_scratch_) +
               "' refused: " + st.ToString());
    return false;
  }
  if (resolved.definition_pending) {
    // Logged ahead of this connection's first point of the series, in the series' shard WAL.
    index_.AppendDefinition(resolved.sid, &OpenBatch(shards_.ShardOf(resolved.sid)).definitions);
  }
  *out = SeriesCache::Entry{resolved.sid, resolved.type};
  cache_->Insert(prefix_hash, line.series_prefix, field.key, *out);
  return true;
}

Batch& LineIngester::OpenBatch(int shard) {
  std::unique_ptr<Batch>& batch = open_[static_cast<std::size_t>(shard)];
  if (!batch) {
    batch = shards_.Acquire();
    batch->completion = &completion_;
  }
  return *batch;
}

void LineIngester::AddPoint(const SeriesCache::Entry& series, std::int64_t ts_ns,
                            const Field& field) {
  std::uint64_t bits = 0;
  bool ok = true;
  const char* conflict = nullptr;
  switch (series.type) {
    case ValueType::kFloat:
      if (field.type == FieldType::kFloat) {
        bits = std::bit_cast<std::uint64_t>(field.float_value);
      } else if (field.type == FieldType::kInt && IsExactDouble(field.int_value)) {
        bits = std::bit_cast<std::uint64_t>(static_cast<double>(field.int_value));
      } else if (field.type == FieldType::kUint && IsExactDouble(field.uint_value)) {
        bits = std::bit_cast<std::uint64_t>(static_cast<double>(field.uint_value));
      } else {
        ok = false;
        conflict = "float";
      }
      break;
    case ValueType::kInteger:
      if (field.type == FieldType::kInt) {
        bits = static_cast<std::uint64_t>(field.int_value);
      } else if (field.type == FieldType::kUint) {
        if (field.uint_value >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          ++stats_.points_rejected;
          Metrics().points_uint_overflow->Add();
          LogBadLine("line " + std::to_string(stats_.lines) + ": unsigned value " +
                     std::string(field.text) + " does not fit a signed 64-bit integer");
          return;
        }
        bits = field.uint_value;
      } else {
        ok = false;
        conflict = "integer";
      }
      break;
    case ValueType::kBoolean:
      if (field.type == FieldType::kBool) {
        bits = field.bool_value ? 1 : 0;
      } else {
        ok = false;
        conflict = "boolean";
      }
      break;
  }
  if (!ok) {
    ++stats_.points_rejected;
    Metrics().points_type_conflict->Add();
    LogBadLine("line " + std::to_string(stats_.lines) + ": field '" + std::string(field.key) +
               "' has a " + std::string(FieldTypeName(field.type)) + " value " +
               std::string(field.text) + " but the series stores " + conflict +
               " values (converted only when exact)");
    return;
  }
  const int shard = shards_.ShardOf(series.sid);
  Batch& batch = OpenBatch(shard);
  batch.points.push_back(PointRecord{series.sid, ts_ns, bits, series.type});
  ++stats_.points;
  if (batch.points.size() >= Batch::kCapacity) {
    Metrics().points_received->Add(batch.points.size());
    shards_.Submit(shard, std::move(open_[static_cast<std::size_t>(shard)]));
  }
}

void LineIngester::Flush(bool apply_when_idle) {
  for (std::size_t shard = 0; shard < open_.size(); ++shard) {
    if (open_[shard]) {
      Metrics().points_received->Add(open_[shard]->points.size());
      if (apply_when_idle) {
        shards_.SubmitOrApply(static_cast<int>(shard), std::move(open_[shard]));
      } else {
        shards_.Submit(static_cast<int>(shard), std::move(open_[shard]));
      }
    }
  }
}

void LineIngester::Finish() {
  if (router_ != nullptr) {
    storage_status_ = router_->Finish();
    return;
  }
  // What is left is waited for right away: applied here where the shard is idle.
  Flush(/*apply_when_idle=*/true);
  storage_status_ = completion_.Wait();
}

std::unique_ptr<SeriesCache> LineIngester::NewCache() {
  return std::make_unique<SeriesCache>(kMaxCachedSeries, kMaxCachedKeyBytes);
}

std::unique_ptr<SeriesCache> LineIngester::ReleaseCache() {
  if (!storage_status_.ok()) return nullptr;
  return std::move(cache_);
}

}  // namespace ingot::ingest
