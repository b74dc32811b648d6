#include "query/export_writer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <future>
#include <limits>
#include <mutex>

#include "query/binary_export.h"
#include "query/text_format.h"

namespace ingot {
namespace {

constexpr std::int64_t kMinTs = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxTs = std::numeric_limits<std::int64_t>::max();

// Text is formatted into a fixed staging area and appended in large copies: growing the output
// string per number would cost a capacity check per character, and resizing it ahead would cost
// a memset of the worst case.
class Staging {
 public:
  static constexpr std::size_t kBytes = 64 * 1024;
  static constexpr std::size_t kRoom = 256;  // the largest single entry written between checks

  explicit Staging(std::string* out) : out_(out), p_(buf_) {}
  ~Staging() { Flush(); }

  char*& p() {
    if (static_cast<std::size_t>(buf_ + kBytes - p_) < kRoom) Flush();
    return p_;
  }
  void Append(std::string_view text) {
    Flush();
    out_->append(text);
  }
  void Flush() {
    out_->append(buf_, p_);
    p_ = buf_;
  }

 private:
  std::string* out_;
  char* p_;
  char buf_[kBytes];
};

// The json text of recently exported timestamp arrays, shared by all requests. Series written by
// the same agents share their timestamps, and dashboards ask for the same ranges again and
// again; formatting 13-digit millisecond timestamps is a large part of a json export. A lookup
// costs a lock and a memcmp per series, never per point.
class TimestampTextCache {
 public:
  static constexpr std::size_t kEntries = 8;
  static constexpr std::size_t kMinPoints = 256;     // smaller arrays are cheap to format
  static constexpr std::size_t kMaxPoints = 1 << 16;  // bounds the cache to a few MiB

  std::shared_ptr<const std::string> Find(std::span<const std::int64_t> ts) {
    if (ts.size() < kMinPoints || ts.size() > kMaxPoints) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    for (Entry& e : entries_) {
      if (e.ts.size() == ts.size() && e.ts.front() == ts.front() && e.ts.back() == ts.back() &&
          std::memcmp(e.ts.data(), ts.data(), ts.size_bytes()) == 0) {
        e.last_use = ++clock_;
        return e.text;
      }
    }
    return nullptr;
  }

  void Insert(std::span<const std::int64_t> ts, std::shared_ptr<const std::string> text) {
    if (ts.size() < kMinPoints || ts.size() > kMaxPoints) return;
    std::lock_guard<std::mutex> lock(mu_);
    Entry* victim = &entries_[0];
    for (Entry& e : entries_) {
      if (e.last_use < victim->last_use) victim = &e;
    }
    victim->ts.assign(ts.begin(), ts.end());
    victim->text = std::move(text);
    victim->last_use = ++clock_;
  }

 private:
  struct Entry {
    std::vector<std::int64_t> ts;
    std::shared_ptr<const std::string> text;
    std::uint64_t last_use = 0;
  };
  std::mutex mu_;
  std::array<Entry, kEntries> entries_;
  std::uint64_t clock_ = 0;
};

TimestampTextCache& SharedTimestampText() {
  static TimestampTextCache cache;
  return cache;
}

void AppendCsvQuoted(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

}  // namespace

Status ParseExportFormat(std::string_view text, ExportFormat* format) {
  if (text.empty() || text == "json") {
    *format = ExportFormat::kJson;
  } else if (text == "csv") {
    *format = ExportFormat::kCsv;
  } else if (text == "binary") {
    *format = ExportFormat::kBinary;
  } else {
    return Status::InvalidArgument("format: \"" + std::string(text) +
                                   "\" is not one of json, csv, binary");
  }
  return Status::OK();
}

const char* ExportContentType(ExportFormat format) {
  switch (format) {
    case ExportFormat::kJson: return "application/stream+json";
    case ExportFormat::kCsv: return "text/csv; charset=utf-8";
    case ExportFormat::kBinary: return "application/octet-stream";
  }
  return "application/octet-stream";
}

Status EstimateExportPoints(Storage& storage, const std::vector<SeriesRef>& series,
                            std::int64_t start_ns, std::int64_t end_ns, std::uint64_t* points) {
  *points = 0;
  if (start_ns > end_ns) return Status::OK();
  std::vector<std::int64_t> head_ts;
  std::vector<double> head_values;
  for (const SeriesRef& info : series) {
    INGOT_RETURN_IF_ERROR(
        storage.ForEachChunk(info->sid, start_ns, end_ns, [&](const ChunkView& view) {
          *points += view.count();
          return Status::OK();
        }));
    INGOT_RETURN_IF_ERROR(storage.shard(storage.ShardOf(info->sid))
                              .ReadHead(info->sid, start_ns, end_ns, &head_ts, &head_values));
    *points += head_ts.size();
  }
  return Status::OK();
}

ExportWriter::ExportWriter(Storage& storage, std::vector<SeriesRef> series,
                           std::int64_t start_ns, std::int64_t end_ns, ExportFormat format)
    : storage_(storage),
      series_(std::move(series)),
      start_ns_(start_ns),
      end_ns_(end_ns),
      format_(format),
      reader_(storage) {}

void ExportWriter::WriteError(const Status& st, std::string* out) {
  const std::string message = st.ToString();
  switch (format_) {
    case ExportFormat::kJson:
      out->append("{\"error\":");
      AppendJsonString(message, out);
      out->append("}\n");
      break;
    case ExportFormat::kCsv: {
      std::string line = message;
      std::replace(line.begin(), line.end(), '\n', ' ');
      out->append("# error: " + line + "\n");
      break;
    }
    case ExportFormat::kBinary:
      // Keep the frame alignment: the stream may have stopped inside nothing but whole frames.
      AppendBinaryTextFrame(BinaryFrameTag::kError, message, out);
      break;
  }
}

bool ExportWriter::Next(std::string* out) {
  if (finished_) return false;
  if (format_ == ExportFormat::kBinary) out->reserve(kPieceBytes + 32 * kChunkCapacity + 64);
  if (!started_) {
    started_ = true;
    if (format_ == ExportFormat::kBinary) AppendBinaryStreamHeader(out);
    if (format_ == ExportFormat::kCsv) out->append("series,timestamp,value\n");
  }
  while (out->size() < kPieceBytes) {
    if (next_series_ == series_.size()) {
      if (format_ == ExportFormat::kBinary) {
        AppendBinaryFrameHeader(BinaryFrameTag::kEnd, series_written_, out);
      }
      finished_ = true;
      return false;
    }
    if (format_ != ExportFormat::kBinary && next_series_ + 1 < series_.size()) {
      const Status st = WriteTextPair(out);
      if (!st.ok()) {
        WriteError(st, out);
        finished_ = true;
        return false;
      }
      next_series_ += 2;
      continue;
    }
    const SeriesInfo& info = *series_[next_series_];
    Status st = format_ == ExportFormat::kBinary
                    ? WriteBinarySeries(info, out)
                    : WriteTextSeries(reader_, ts_text_, info, out, &points_written_);
    if (!st.ok()) {
      WriteError(st, out);
      finished_ = true;
      return false;
    }
    if (!in_series_) ++next_series_;
  }
  return true;
}

Status ExportWriter::WriteTextPair(std::string* out) {
  // Text formatting (shortest doubles, millisecond timestamps) is most of a text export's cost
  // and each series is independent: format two at once so a large export uses two cores.
  if (!side_reader_) side_reader_ = std::make_unique<SeriesReader>(storage_);
  side_out_.clear();
  std::uint64_t side_points = 0;
  const SeriesInfo& second = *series_[next_series_ + 1];
  auto side = std::async(std::launch::async, [&] {
    return WriteTextSeries(*side_reader_, side_ts_text_, second, &side_out_, &side_points);
  });
  const Status first =
      WriteTextSeries(reader_, ts_text_, *series_[next_series_], out, &points_written_);
  const Status other = side.get();
  INGOT_RETURN_IF_ERROR(first);
  INGOT_RETURN_IF_ERROR(other);
  out->append(side_out_);
  points_written_ += side_points;
  return Status::OK();
}

Status ExportWriter::WriteTextSeries(SeriesReader& reader, TimestampText& ts_text,
                                     const SeriesInfo& info, std::string* out,
                                     std::uint64_t* points) const {
  INGOT_RETURN_IF_ERROR(reader.Read(info.sid, start_ns_, end_ns_));
  const auto ts = reader.ts();
  const auto values = reader.values();
  if (ts.empty()) return Status::OK();
  *points += ts.size();
  Staging staging(out);
  if (format_ == ExportFormat::kJson) {
    std::string metric = "{\"metric\":";
    info.AppendMetricJson(&metric);
    staging.Append(metric);
    staging.Append(",\"values\":[");
    int decimals_hint = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      char*& p = staging.p();
      if (i != 0) *p++ = ',';
      p = WriteDouble(values[i], p, &decimals_hint);
    }
    staging.Append("],\"timestamps\":[");
    if (ts.size() != ts_text.ts.size() ||
        std::memcmp(ts.data(), ts_text.ts.data(), ts.size_bytes()) != 0) {
      ts_text.ts.assign(ts.begin(), ts.end());
      ts_text.text = SharedTimestampText().Find(ts);
      if (ts_text.text == nullptr) {
        auto text = std::make_shared<std::string>();
        {
          Staging ts_staging(text.get());
          for (std::size_t i = 0; i < ts.size(); ++i) {
            char*& p = ts_staging.p();
            if (i != 0) *p++ = ',';
            p = WriteMillis(ts[i], p);
          }
        }
        ts_text.text = text;
        SharedTimestampText().Insert(ts, std::move(text));
      }
    }
    staging.Append(*ts_text.text);
    staging.Append("]}\n");
    return Status::OK();
  }
  std::string quoted;
  AppendCsvQuoted(info.PromText(), &quoted);
  quoted.push_back(',');
  int decimals_hint = 0;
  // Rows repeat the series name; a very long one is appended separately.
  const bool inline_name = quoted.size() + 128 <= Staging::kRoom;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!inline_name) staging.Append(quoted);
    char*& p = staging.p();
    if (inline_name) {
      std::memcpy(p, quoted.data(), quoted.size());
      p += quoted.size();
    }
    p = WriteMillis(ts[i], p);
    *p++ = ',';
    p = WriteDouble(values[i], p, &decimals_hint);
    *p++ = '\n';
  }
  return Status::OK();
}

Status ExportWriter::AppendBinaryChunk(const ChunkView& view, std::string* out) {
  const std::size_t n = view.count();
  if (n == 0) return Storage::DecodeChunk(view, {}, {}, reader_.workspace());
  const std::size_t frame = out->size();
  out->resize(frame + kBinaryFrameHeaderBytes + 16 * n);
  char* base = out->data() + frame + kBinaryFrameHeaderBytes;
  std::int64_t* ts;
  double* values;
  const bool aligned = reinterpret_cast<std::uintptr_t>(base) % alignof(std::int64_t) == 0;
  if (aligned) {
    // The common case: decode straight into the response.
    ts = reinterpret_cast<std::int64_t*>(base);
    values = reinterpret_cast<double*>(base + 8 * n);
  } else {
    scratch_ts_.resize(n);
    scratch_values_.resize(n);
    ts = scratch_ts_.data();
    values = scratch_values_.data();
  }
  Status st = Storage::DecodeChunk(view, std::span(ts, n), std::span(values, n),
                                   reader_.workspace());
  if (!st.ok()) {
    out->resize(frame);
    return st;
  }
  // Only the first and the last chunk of the range hold points outside it.
  std::size_t from = 0, to = n;
  if (ts[0] < cursor_ns_ || ts[n - 1] > chunk_end_ns_) {
    from = static_cast<std::size_t>(std::lower_bound(ts, ts + n, cursor_ns_) - ts);
    to = static_cast<std::size_t>(std::upper_bound(ts + from, ts + n, chunk_end_ns_) - ts);
  }
  const std::size_t m = to - from;
  if (m == 0) {
    out->resize(frame);
    return Status::OK();
  }
  if (aligned) {
    if (m != n) {
      std::memmove(base, ts + from, 8 * m);
      std::memmove(base + 8 * m, values + from, 8 * m);
    }
  } else {
    std::memcpy(base, ts + from, 8 * m);
    std::memcpy(base + 8 * m, values + from, 8 * m);
  }
  out->resize(frame + kBinaryFrameHeaderBytes + 16 * m);
  const auto tag = static_cast<std::uint32_t>(BinaryFrameTag::kPoints);
  const auto count = static_cast<std::uint32_t>(m);
  std::memcpy(out->data() + frame, &tag, 4);
  std::memcpy(out->data() + frame + 4, &count, 4);
  points_written_ += m;
  return Status::OK();
}

Status ExportWriter::WriteBinarySeries(const SeriesInfo& info, std::string* out) {
  if (!in_series_ && storage_.MayHaveLateData(info.sid)) {
    // Late chunks overlap the series' chunks: stored chunks cannot be sent as they are, so the
    // merged points go out as point frames.
    INGOT_RETURN_IF_ERROR(reader_.Read(info.sid, start_ns_, end_ns_));
    metric_json_.clear();
    info.AppendMetricJson(&metric_json_);
    AppendBinaryTextFrame(BinaryFrameTag::kSeries, metric_json_, out);
    ++series_written_;
    const auto ts = reader_.ts();
    const auto values = reader_.values();
    constexpr std::size_t kFramePoints = 1 << 16;
    for (std::size_t i = 0; i < ts.size(); i += kFramePoints) {
      const std::size_t n = std::min(kFramePoints, ts.size() - i);
      AppendBinaryFrameHeader(BinaryFrameTag::kPoints, static_cast<std::uint32_t>(n), out);
      out->append(reinterpret_cast<const char*>(ts.data() + i), 8 * n);
      out->append(reinterpret_cast<const char*>(values.data() + i), 8 * n);
    }
    points_written_ += ts.size();
    return Status::OK();
  }
  if (!in_series_) {
    // Head first (read-your-writes, as in SeriesReader): chunk points at or after the head's
    // first point were sealed after the snapshot and are already in the copy.
    std::int64_t head_first = kMaxTs;
    INGOT_RETURN_IF_ERROR(storage_.shard(storage_.ShardOf(info.sid))
                              .ReadHead(info.sid, start_ns_, end_ns_, &head_ts_, &head_values_,
                                        &head_first));
    chunk_end_ns_ = head_first == kMinTs ? kMinTs : std::min(end_ns_, head_first - 1);
    chunks_left_ = head_first != kMinTs && start_ns_ <= chunk_end_ns_;
    cursor_ns_ = start_ns_;
    in_series_ = true;
    metric_json_.clear();
    info.AppendMetricJson(&metric_json_);
    AppendBinaryTextFrame(BinaryFrameTag::kSeries, metric_json_, out);
    ++series_written_;
  }
  if (chunks_left_) {
    bool piece_full = false;
    Status st = storage_.ForEachChunk(
        info.sid, cursor_ns_, chunk_end_ns_, [&](const ChunkView& view) -> Status {
          INGOT_RETURN_IF_ERROR(AppendBinaryChunk(view, out));
          if (out->size() >= kPieceBytes) {
            piece_full = true;
            if (view.last_ts_ns() == kMaxTs) {
              chunks_left_ = false;
            } else {
              cursor_ns_ = view.last_ts_ns() + 1;
            }
            return Status::Busy("piece full");
          }
          return Status::OK();
        });
    if (piece_full) {
      if (cursor_ns_ > chunk_end_ns_) chunks_left_ = false;
      if (chunks_left_) return Status::OK();
    } else {
      INGOT_RETURN_IF_ERROR(st);
      chunks_left_ = false;
    }
  }
  if (!head_ts_.empty()) {
    const std::size_t n = head_ts_.size();
    AppendBinaryFrameHeader(BinaryFrameTag::kPoints, static_cast<std::uint32_t>(n), out);
    out->append(reinterpret_cast<const char*>(head_ts_.data()), 8 * n);
    out->append(reinterpret_cast<const char*>(head_values_.data()), 8 * n);
    points_written_ += n;
  }
  in_series_ = false;
  return Status::OK();
}

}  // namespace ingot
