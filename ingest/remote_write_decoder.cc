#include "ingest/remote_write_decoder.h"

#include <cstring>

#include <snappy.h>

#include <limits>

namespace ingot::ingest {

using namespace remote_write;

namespace {

constexpr std::string_view kMetricNameLabel = "__name__";
// Series descriptions in messages are cut here: a refused label set may be huge.
constexpr std::size_t kMaxDescribedBytes = 256;

// Timestamps in milliseconds whose nanoseconds fit an int64.
constexpr std::int64_t kMaxTimestampMs = std::numeric_limits<std::int64_t>::max() / kNanosPerMilli;
constexpr std::int64_t kMinTimestampMs = std::numeric_limits<std::int64_t>::min() / kNanosPerMilli;

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), the
// check protobuf makes of proto3 strings and Prometheus of label values.
bool ValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // ASCII runs, 8 bytes at a time.
    while (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, 8);
      if (word & 0x8080808080808080ull) break;
      p += 8;
    }
    if (p == end) break;
    const std::uint8_t c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra = 0;
    std::uint8_t lo = 0x80, hi = 0xbf;  // bounds of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= extra; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
    }
    p += 1 + extra;
  }
  return true;
}

bool IsLabelNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsLabelNameByte(char c) { return IsLabelNameStart(c) || (c >= '0' && c <= '9'); }

// [a-zA-Z_][a-zA-Z0-9_]*
bool ValidLabelName(std::string_view name) {
  if (name.empty() || !IsLabelNameStart(name[0])) return false;
  for (char c : name) {
    if (!IsLabelNameByte(c)) return false;
  }
  return true;
}

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool ValidMetricName(std::string_view name) {
  if (name.empty() || !(IsLabelNameStart(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!IsLabelNameByte(c) && c != ':') return false;
  }
  return true;
}

// Appends `s` quoted, with quotes, backslashes and control bytes escaped (and bytes past ASCII
// too when `s` is not UTF-8), at most `budget` bytes of it.
void AppendQuoted(std::string_view s, std::size_t budget, std::string* out) {
  const bool utf8 = ValidUtf8(s);
  out->push_back('"');
  std::size_t i = 0;
  for (; i < s.size() && i < budget; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) {
      static constexpr char kHex[] = "0123456789abcdef";
      out->append("\\x");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  if (i < s.size()) out->append("...");
  out->push_back('"');
}

}  // namespace

const char* RemoteWriteErrorName(RemoteWriteError error) noexcept {
  switch (error) {
    case RemoteWriteError::kNone:
      return "none";
    case RemoteWriteError::kTooLarge:
      return "too_large";
    case RemoteWriteError::kSnappy:
      return "snappy";
    case RemoteWriteError::kProtobuf:
      return "protobuf";
    case RemoteWriteError::kLabels:
      return "labels";
    case RemoteWriteError::kTimestamp:
      return "timestamp";
  }
  return "unknown";
}

bool ParseRemoteWriteLabel(std::string_view message, std::string_view* name,
                           std::string_view* value, WireReader* error_reader) {
  WireReader local(message);
  WireReader& r = error_reader != nullptr ? *error_reader : local;
  *name = {};
  *value = {};
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done()) {
    if (!r.ReadTag(&field, &wire_type)) return false;
    if (field == kLabelName && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(name)) return false;
    } else if (field == kLabelValue && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(value)) return false;
    } else if (!r.Skip(field, wire_type)) {
      return false;
    }
  }
  return true;
}

RemoteWriteError RemoteWriteDecoder::Decode(std::string_view body, std::uint64_t max_decoded_bytes,
                                            std::string_view limit_name, KnownLabelSets* known,
                                            BodyFormat format) {
  known_ = known;
  message_.clear();
  counts_ = RemoteWriteCounts{};
  series_.clear();
  labels_.clear();
  pending_.clear();
  decoded_bytes_ = 0;
  const RemoteWriteError inflated = format == BodyFormat::kSnappy
                                        ? Inflate(body, max_decoded_bytes, limit_name)
                                        : Copy(body, max_decoded_bytes, limit_name);
  if (inflated != RemoteWriteError::kNone) return inflated;
  RemoteWriteError walked = Walk();
  if (walked == RemoteWriteError::kNone) walked = ResolvePending();
  known_ = nullptr;
  if (walked != RemoteWriteError::kNone) series_.clear();
  return walked;
}

RemoteWriteError RemoteWriteDecoder::Inflate(std::string_view body, std::uint64_t max_decoded_bytes,
                                             std::string_view limit_name) {
  const std::uint64_t max_body =
      max_decoded_bytes >= std::numeric_limits<std::uint32_t>::max()
          ? std::numeric_limits<std::uint64_t>::max()
          : snappy::MaxCompressedLength(static_cast<std::size_t>(max_decoded_bytes));
  if (body.size() > max_body) {
    message_.append("body of ")
        .append(std::to_string(body.size()))
        .append(" bytes exceeds what ")
        .append(limit_name)
        .append(" = ")
        .append(std::to_string(max_decoded_bytes))
        .append(" decoded bytes can compress to");
    return RemoteWriteError::kTooLarge;
  }
  if (body.size() >= kSnappyFramedMagicBytes &&
      body.substr(0, kSnappyFramedMagicBytes) ==
          std::string_view(kSnappyFramedMagic, kSnappyFramedMagicBytes)) {
    message_.append(
        "body is a framed snappy stream; remote write sends one snappy block (the "
        "block format)");
    return RemoteWriteError::kSnappy;
  }
  std::size_t decoded = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &decoded)) {
    message_.append(body.empty() ? "empty body: expected a snappy block"
                                 : "body is not a snappy block: its length header is invalid");
    return RemoteWriteError::kSnappy;
  }
  // Refused before the buffer is sized: a 10-byte body may claim 4 GiB.
  if (decoded > max_decoded_bytes) {
    message_.append("snappy header claims ")
        .append(std::to_string(decoded))
        .append(" decoded bytes, more than ")
        .append(limit_name)
        .append(" = ")
        .append(std::to_string(max_decoded_bytes));
    return RemoteWriteError::kTooLarge;
  }
  Reserve(decoded);
  if (!snappy::RawUncompress(body.data(), body.size(), buffer_.get())) {
    message_.append("body is not a valid snappy block (")
        .append(std::to_string(body.size()))
        .append(" bytes claiming ")
        .append(std::to_string(decoded))
        .append(" decoded bytes)");
    return RemoteWriteError::kSnappy;
  }
  decoded_bytes_ = decoded;
  return RemoteWriteError::kNone;
}

RemoteWriteError RemoteWriteDecoder::Copy(std::string_view body, std::uint64_t max_decoded_bytes,
                                          std::string_view limit_name) {
  if (body.size() > max_decoded_bytes) {
    message_.append("body of ")
        .append(std::to_string(body.size()))
        .append(" bytes exceeds ")
        .append(limit_name)
        .append(" = ")
        .append(std::to_string(max_decoded_bytes));
    return RemoteWriteError::kTooLarge;
  }
  Reserve(body.size());
  std::memcpy(buffer_.get(), body.data(), body.size());
  decoded_bytes_ = body.size();
  return RemoteWriteError::kNone;
}

void RemoteWriteDecoder::Reserve(std::size_t bytes) {
  if (bytes <= buffer_capacity_ && buffer_) return;
  buffer_.reset();
  buffer_capacity_ = 0;
  buffer_.reset(new char[bytes == 0 ? 1 : bytes]);
  buffer_capacity_ = bytes == 0 ? 1 : bytes;
}

RemoteWriteError RemoteWriteDecoder::ProtobufError(const WireReader& reader, std::string_view part,
                                                   std::string_view where) {
  const std::size_t offset =
      static_cast<std::size_t>(part.data() - buffer_.get()) + reader.offset();
  message_.append("invalid protobuf WriteRequest: ")
      .append(reader.error())
      .append(" at byte ")
      .append(std::to_string(offset))
      .append(" of ")
      .append(std::to_string(decoded_bytes_))
      .append(" decoded bytes");
  if (!where.empty()) message_.append(" (in ").append(where).append(")");
  return RemoteWriteError::kProtobuf;
}

RemoteWriteError RemoteWriteDecoder::Walk() {
  const std::string_view request = decoded();
  WireReader r(request);
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done()) {
    if (!r.ReadTag(&field, &wire_type)) return ProtobufError(r, request, "");
    std::string_view message;
    if (field == kWriteRequestTimeseries && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(&message)) {
        std::string where = "timeseries[";
        where.append(std::to_string(counts_.series)).append("]");
        return ProtobufError(r, request, where);
      }
      const RemoteWriteError e = WalkSeries(message, counts_.series++);
      if (e != RemoteWriteError::kNone) return EarlierError(e);
    } else if (field == kWriteRequestMetadata && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(&message)) return ProtobufError(r, request, "metadata");
      ++counts_.metadata;
    } else if (!r.Skip(field, wire_type)) {
      return ProtobufError(r, request, "");
    }
  }
  return RemoteWriteError::kNone;
}

namespace {
// A walked series; `samples_begin` is where its first samples field starts in `message`.
RemoteWriteSeries SeriesOf(std::string_view message, const char* samples_begin,
                           std::string_view raw_labels, std::uint64_t index,
                           std::uint64_t samples) {
  RemoteWriteSeries s;
  s.message = message;
  s.from_samples = message.substr(static_cast<std::size_t>(samples_begin - message.data()));
  s.raw_labels = raw_labels;
  s.index = index;
  s.samples = samples;
  return s;
}
}  // namespace

RemoteWriteError RemoteWriteDecoder::WalkSeries(std::string_view message, std::uint64_t index) {
  labels_.clear();
  label_fields_.clear();
  const char* labels_begin = nullptr;
  const char* labels_end = nullptr;
  const char* samples_begin = nullptr;
  bool contiguous = true;
  std::uint64_t samples = 0;
  // The first sample whose timestamp does not fit, reported after the labels are checked.
  std::uint64_t bad_sample = 0;
  std::int64_t bad_ts_ms = 0;
  bool bad_ts = false;
  // "timeseries[3]" or "timeseries[3].samples[7]", for protobuf errors.
  auto where = [&](const char* what, std::uint64_t i) {
    std::string w = "timeseries[";
    w.append(std::to_string(index)).append("]");
    if (what != nullptr) {
      w.append(".").append(what).append("[").append(std::to_string(i)).append("]");
    }
    return w;
  };
  WireReader r(message);
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done()) {
    const char* field_begin = message.data() + r.offset();
    if (!r.ReadTag(&field, &wire_type)) return ProtobufError(r, message, where(nullptr, 0));
    std::string_view part;
    if (field == kTimeSeriesLabels && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(&part)) {
        return ProtobufError(r, message, where("labels", label_fields_.size()));
      }
      if (labels_end != nullptr && labels_end != field_begin) contiguous = false;
      if (labels_begin == nullptr) labels_begin = field_begin;
      labels_end = message.data() + r.offset();
      // Parsed below, unless the caller knows these label fields already.
      label_fields_.push_back(part);
    } else if (field == kTimeSeriesSamples && wire_type == kLengthDelimited) {
      if (samples_begin == nullptr) samples_begin = field_begin;
      if (!r.ReadLengthDelimited(&part)) {
        return ProtobufError(r, message, where("samples", samples));
      }
      WireReader sr(part);
      std::uint64_t ts = 0, value = 0;
      std::uint32_t f = 0, w = 0;
      while (!sr.done()) {
        bool ok = sr.ReadTag(&f, &w);
        if (ok) {
          if (f == kSampleValue && w == kFixed64) {
            ok = sr.ReadFixed64(&value);
          } else if (f == kSampleTimestamp && w == kVarint) {
            ok = sr.ReadVarint(&ts);
          } else {
            ok = sr.Skip(f, w);
          }
        }
        if (!ok) return ProtobufError(sr, part, where("samples", samples));
      }
      const auto ts_ms = static_cast<std::int64_t>(ts);
      if (!bad_ts && (ts_ms > kMaxTimestampMs || ts_ms < kMinTimestampMs)) {
        bad_ts = true;
        bad_sample = samples;
        bad_ts_ms = ts_ms;
      }
      ++samples;
    } else if (field == kTimeSeriesExemplars && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(&part)) {
        return ProtobufError(r, message, where(nullptr, 0));
      }
      ++counts_.exemplars;
    } else if (field == kTimeSeriesHistograms && wire_type == kLengthDelimited) {
      if (!r.ReadLengthDelimited(&part)) {
        return ProtobufError(r, message, where(nullptr, 0));
      }
      ++counts_.histograms;
    } else if (!r.Skip(field, wire_type)) {
      return ProtobufError(r, message, where(nullptr, 0));
    }
  }
  std::string_view raw_labels;
  if (contiguous && labels_begin != nullptr) {
    raw_labels =
        std::string_view(labels_begin, static_cast<std::size_t>(labels_end - labels_begin));
  }
  // Equal bytes are an equal label set: one that passed the checks before passes them again.
  // Whether known_ knows them is asked after the walk, for the whole request at once
  // (ResolvePending), and only the labels it does not know are then parsed and checked.
  if (known_ != nullptr && samples > 0 && !bad_ts && !raw_labels.empty()) {
    counts_.samples += samples;
    pending_.push_back(series_.size());
    series_.push_back(SeriesOf(message, samples_begin, raw_labels, index, samples));
    return RemoteWriteError::kNone;
  }
  // Earlier series first, so that the first bad series in request order is the one reported.
  const RemoteWriteError earlier = ResolvePending();
  if (earlier != RemoteWriteError::kNone) return earlier;
  const RemoteWriteError labels = ParseAndCheckLabels(index, label_fields_);
  if (labels != RemoteWriteError::kNone) return labels;
  if (bad_ts) {
    message_.append(DescribeSeries(index))
        .append(": sample ")
        .append(std::to_string(bad_sample))
        .append(" has timestamp ")
        .append(std::to_string(bad_ts_ms))
        .append(" ms, outside the range nanoseconds can hold (")
        .append(std::to_string(kMinTimestampMs))
        .append(" .. ")
        .append(std::to_string(kMaxTimestampMs))
        .append(" ms)");
    return RemoteWriteError::kTimestamp;
  }
  counts_.samples += samples;
  if (samples > 0) {
    series_.push_back(SeriesOf(message, samples_begin, raw_labels, index, samples));
  }
  return RemoteWriteError::kNone;
}

RemoteWriteError RemoteWriteDecoder::EarlierError(RemoteWriteError error) {
  if (pending_.empty()) return error;
  std::string later;
  later.swap(message_);
  const RemoteWriteError earlier = ResolvePending();
  if (earlier != RemoteWriteError::kNone) return earlier;
  message_.swap(later);
  return error;
}

RemoteWriteError RemoteWriteDecoder::ResolvePending() {
  if (pending_.empty()) return RemoteWriteError::kNone;
  const RemoteWriteError e = CheckPending();
  pending_.clear();  // asked once, whatever the answer
  return e;
}

RemoteWriteError RemoteWriteDecoder::CheckPending() {
  const std::size_t n = pending_.size();
  pending_labels_.resize(n);
  pending_known_.assign(n, 0);
  pending_tokens_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) pending_labels_[i] = series_[pending_[i]].raw_labels;
  known_->KnownMany(pending_labels_, pending_known_, pending_tokens_);
  for (std::size_t i = 0; i < n; ++i) {
    RemoteWriteSeries& s = series_[pending_[i]];
    if (pending_known_[i]) {
      s.known = true;
      s.known_token = pending_tokens_[i];
      continue;
    }
    // The walk found these label fields well delimited and contiguous: only labels follow.
    pending_fields_.clear();
    WireReader r(s.raw_labels);
    std::uint32_t field = 0, wire_type = 0;
    while (!r.done()) {
      std::string_view part;
      if (!r.ReadTag(&field, &wire_type) || !r.ReadLengthDelimited(&part)) {
        return ProtobufError(r, s.raw_labels, "timeseries[" + std::to_string(s.index) + "]");
      }
      pending_fields_.push_back(part);
    }
    const RemoteWriteError labels = ParseAndCheckLabels(s.index, pending_fields_);
    if (labels != RemoteWriteError::kNone) return labels;
  }
  return RemoteWriteError::kNone;
}

RemoteWriteError RemoteWriteDecoder::ParseAndCheckLabels(std::uint64_t index,
                                                         std::span<const std::string_view> fields) {
  labels_.clear();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    Label label;
    WireReader lr(fields[i]);
    if (!ParseRemoteWriteLabel(fields[i], &label.name, &label.value, &lr)) {
      std::string where = "timeseries[";
      where.append(std::to_string(index)).append("].labels[").append(std::to_string(i));
      where.append("]");
      return ProtobufError(lr, fields[i], where);
    }
    labels_.push_back(label);
  }
  return CheckLabels(index);
}

RemoteWriteError RemoteWriteDecoder::CheckLabels(std::uint64_t index) {
  auto fail = [&](std::size_t label, std::string_view what) {
    message_.append(DescribeSeries(index));
    if (label < labels_.size()) {
      message_.append(": label ").append(std::to_string(label)).append(" ");
      AppendQuoted(labels_[label].name, kMaxDescribedBytes, &message_);
    }
    message_.append(": ").append(what);
    return RemoteWriteError::kLabels;
  };
  if (labels_.empty()) return fail(0, "no labels (a series needs at least __name__)");
  const Label* metric = nullptr;
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    const Label& l = labels_[i];
    if (l.name.empty()) return fail(i, "empty label name");
    if (!ValidUtf8(l.name)) return fail(i, "label name is not valid UTF-8");
    if (!ValidUtf8(l.value)) return fail(i, "label value is not valid UTF-8");
    if (i > 0) {
      const int order = labels_[i - 1].name.compare(l.name);
      if (order == 0) return fail(i, "duplicate label name");
      if (order > 0) {
        std::string what = "labels not sorted by name (comes after ";
        AppendQuoted(labels_[i - 1].name, kMaxDescribedBytes, &what);
        what.append(")");
        return fail(i, what);
      }
    }
    if (l.name == kMetricNameLabel) {
      metric = &l;
    } else if (!ValidLabelName(l.name)) {
      return fail(i, "invalid label name (must match [a-zA-Z_][a-zA-Z0-9_]*)");
    }
  }
  if (metric == nullptr) return fail(labels_.size(), "no metric name (label __name__)");
  if (metric->value.empty()) return fail(labels_.size(), "empty metric name (label __name__)");
  if (!ValidMetricName(metric->value)) {
    std::string what = "invalid metric name ";
    AppendQuoted(metric->value, kMaxDescribedBytes, &what);
    what.append(" (must match [a-zA-Z_:][a-zA-Z0-9_:]*)");
    return fail(labels_.size(), what);
  }
  return RemoteWriteError::kNone;
}

std::string RemoteWriteDecoder::DescribeSeries(std::uint64_t index) const {
  std::string out = "timeseries[";
  out.append(std::to_string(index)).append("] {");
  std::size_t budget = kMaxDescribedBytes;
  for (std::size_t i = 0; i < labels_.size(); ++i) {
    if (i > 0) out.append(", ");
    const std::size_t before = out.size();
    // The name unquoted when it is a plain name, as Prometheus prints label sets.
    if (ValidLabelName(labels_[i].name)) {
      out.append(labels_[i].name);
    } else {
      AppendQuoted(labels_[i].name, budget, &out);
    }
    out.push_back('=');
    AppendQuoted(labels_[i].value, budget, &out);
    const std::size_t used = out.size() - before;
    if (used >= budget) {
      if (i + 1 < labels_.size()) out.append(", ...");
      break;
    }
    budget -= used;
  }
  out.push_back('}');
  return out;
}

void RemoteWriteDecoder::LabelsOf(const RemoteWriteSeries& series, std::string_view* metric_name,
                                  std::vector<TagView>* tags) {
  tags->clear();
  *metric_name = {};
  WireReader r(series.message);
  std::uint32_t field = 0, wire_type = 0;
  while (!r.done() && r.ReadTag(&field, &wire_type)) {
    if (field != kTimeSeriesLabels || wire_type != kLengthDelimited) {
      if (!r.Skip(field, wire_type)) return;
      continue;
    }
    std::string_view label, name, value;
    if (!r.ReadLengthDelimited(&label) || !ParseRemoteWriteLabel(label, &name, &value)) return;
    if (name == kMetricNameLabel) {
      *metric_name = value;
    } else if (!value.empty()) {
      tags->emplace_back(name, value);
    }
  }
}

std::size_t RemoteWriteDecoder::retained_bytes() const {
  return buffer_capacity_ + series_.capacity() * sizeof(RemoteWriteSeries) +
         labels_.capacity() * sizeof(Label) + label_fields_.capacity() * sizeof(std::string_view) +
         message_.capacity();
}

void RemoteWriteDecoder::ShrinkTo(std::size_t max_bytes) {
  if (retained_bytes() <= max_bytes) return;
  buffer_.reset();
  buffer_capacity_ = 0;
  decoded_bytes_ = 0;
  std::vector<RemoteWriteSeries>().swap(series_);
  std::vector<Label>().swap(labels_);
  std::vector<std::string_view>().swap(label_fields_);
  std::string().swap(message_);
}

}  // namespace ingot::ingest
