// RemoteWriteDecoder: a Prometheus remote write 1.0 body (a snappy block holding a protobuf
// `prometheus.WriteRequest`, ingest/remote_write_format.h) turned into validated series and
// samples, before anything of the request is stored.
//
// Decode() inflates the body into the decoder's own buffer, refusing a block whose header claims
// more than the limit before allocating for it, then walks the whole protobuf once: every tag,
// length and varint is checked against the buffer, every label set must be a valid Prometheus
// series (the rules below), every timestamp must fit nanoseconds. Only when all of it is valid
// does Decode() succeed, so a caller that stores after a successful Decode() never stores part of
// a bad request. Nothing is copied: series() are views into the buffer, and LabelsOf() and
// ForEachSample() read a series' labels and samples from there again (they cannot fail once
// Decode() has succeeded).
//
// A label set is valid when its names are strictly ascending (byte order, as Prometheus sorts
// them; an equal name is a duplicate), it has a `__name__` matching [a-zA-Z_:][a-zA-Z0-9_:]*,
// every other name matches [a-zA-Z_][a-zA-Z0-9_]*, and names and values are UTF-8 (protobuf's
// rule for proto3 strings). A label with an empty value is no label, as in Prometheus: it is
// dropped. Exemplars, native histograms and metadata are counted and skipped (their contents are
// only checked to be well delimited); a series without samples is validated and skipped.
//
// Allocation: the buffer and the scratch vectors are kept between requests, so a decoder that
// has seen its largest request allocates nothing; ShrinkTo() gives memory back after an outlier.
// Views returned stay valid until the next Decode() or ShrinkTo().
//
// Thread safety: not thread-safe; one request at a time per decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chunk/series_key.h"
#include "config/protobuf_wire.h"
#include "ingest/remote_write_format.h"

namespace ingot::ingest {

// Why a body was refused. The names are the `reason` label of
// ingot_remote_write_requests_rejected_total.
enum class RemoteWriteError : std::uint8_t {
  kNone = 0,
  kTooLarge,   // the body, or the size its snappy header claims, passes the limit (HTTP 413)
  kSnappy,     // not a snappy block
  kProtobuf,   // not a protobuf WriteRequest
  kLabels,     // a label set that is not a valid series
  kTimestamp,  // a sample timestamp outside what nanoseconds can hold
};
inline constexpr int kRemoteWriteErrorCount = 6;
// "none", "too_large", "snappy", "protobuf", "labels", "timestamp".
const char* RemoteWriteErrorName(RemoteWriteError error) noexcept;

// What one request held.
struct RemoteWriteCounts {
  std::uint64_t series = 0;  // TimeSeries entries, with samples or not
  std::uint64_t samples = 0;
  std::uint64_t exemplars = 0;   // skipped
  std::uint64_t histograms = 0;  // native histogram samples, skipped
  std::uint64_t metadata = 0;    // MetricMetadata entries, skipped
};

// One series of a decoded request that carries samples. Views into the decoder's buffer.
struct RemoteWriteSeries {
  std::string_view message;  // the encoded TimeSeries
  // The encoded TimeSeries from its first samples field on: what ForEachSample() reads (labels
  // come first in every client's encoding, and need no second walk).
  std::string_view from_samples;
  // Its label fields exactly as encoded when they follow each other (what every client sends):
  // equal bytes are an equal label set, a cheap cache key. Empty when other fields interleave.
  std::string_view raw_labels;
  std::uint64_t index = 0;  // position among the request's TimeSeries
  std::uint64_t samples = 0;
  // Set when KnownLabelSets vouched for raw_labels (their labels were then not checked again),
  // with the token it gave.
  bool known = false;
  std::uint64_t known_token = 0;
};

// Label sets a caller has already seen valid, asked by RemoteWriteDecoder::Decode() so that the
// labels of a series it knows are not parsed and checked again in every request (the same
// clients send the same series over and over: checking them was a quarter of remote write's CPU).
class KnownLabelSets {
 public:
  virtual ~KnownLabelSets() = default;
  // True when these exact label-field bytes (RemoteWriteSeries::raw_labels) passed the checks of
  // an earlier Decode(); `*token` is handed back in RemoteWriteSeries::known_token.
  virtual bool Known(std::string_view raw_labels, std::uint64_t* token) = 0;
  // Known() for each of `raw_labels`: known[i] and tokens[i]. The decoder asks about a whole
  // request at once, so that an implementation can overlap the lookups' cache misses.
  // REQUIRES: the three spans have the same size.
  virtual void KnownMany(std::span<const std::string_view> raw_labels,
                         std::span<std::uint8_t> known, std::span<std::uint64_t> tokens) {
    for (std::size_t i = 0; i < raw_labels.size(); ++i) known[i] = Known(raw_labels[i], &tokens[i]);
  }
};

using protobuf::WireReader;

class RemoteWriteDecoder {
 public:
  RemoteWriteDecoder() = default;
  RemoteWriteDecoder(const RemoteWriteDecoder&) = delete;
  RemoteWriteDecoder& operator=(const RemoteWriteDecoder&) = delete;

  // Inflates and validates `body`. `max_decoded_bytes` bounds the decoded request (and so the body:
  // past snappy's worst-case expansion of that much is too large too); `limit_name` names the
  // limit in the message. On an error, message() says what is wrong and where (the series, the
  // label or sample, the byte offset).
  // `known`, when given, is asked about each series with samples whose label fields are
  // contiguous; a series it vouches for is not checked again.
  // kProtobuf: `body` is the WriteRequest itself (a cluster node's log message, decoded
  // already by the node that accepted it); it is copied, not inflated.
  enum class BodyFormat { kSnappy, kProtobuf };
  RemoteWriteError Decode(std::string_view body, std::uint64_t max_decoded_bytes,
                          std::string_view limit_name, KnownLabelSets* known = nullptr,
                          BodyFormat format = BodyFormat::kSnappy);

  const std::string& message() const { return message_; }
  const RemoteWriteCounts& counts() const { return counts_; }
  // The series with samples, in request order. REQUIRES: the last Decode() succeeded.
  std::span<const RemoteWriteSeries> series() const { return series_; }
  // The decoded protobuf.
  std::string_view decoded() const { return {buffer_.get(), decoded_bytes_}; }

  // The metric name and the other labels (sorted, without empty values) of `series`, as views
  // into the buffer; `*tags` is replaced. REQUIRES: `series` from the last successful Decode().
  static void LabelsOf(const RemoteWriteSeries& series, std::string_view* metric_name,
                       std::vector<TagView>* tags);

  // Calls fn(std::int64_t timestamp_ms, std::uint64_t value_bits) for each sample of `series`
  // in request order. REQUIRES: `series` from the last successful Decode().
  template <typename Fn>
  static void ForEachSample(const RemoteWriteSeries& series, Fn&& fn);

  // Bytes held between requests.
  std::size_t retained_bytes() const;
  // Frees the buffers when they hold more than `max_bytes` (after an unusually large request).
  void ShrinkTo(std::size_t max_bytes);

 private:
  struct Label {
    std::string_view name;
    std::string_view value;
  };
  RemoteWriteError Inflate(std::string_view body, std::uint64_t max_decoded_bytes,
                           std::string_view limit_name);
  // The kProtobuf body into the buffer, within the limit.
  RemoteWriteError Copy(std::string_view body, std::uint64_t max_decoded_bytes,
                        std::string_view limit_name);
  // The buffer holds at least `bytes` (its contents are not kept).
  void Reserve(std::size_t bytes);
  RemoteWriteError Walk();
  // Parses and validates one TimeSeries.
  RemoteWriteError WalkSeries(std::string_view message, std::uint64_t index);
  // Parses one series' Label messages into labels_, then CheckLabels.
  RemoteWriteError ParseAndCheckLabels(std::uint64_t index,
                                       std::span<const std::string_view> fields);
  RemoteWriteError CheckLabels(std::uint64_t index);
  // Asks known_ about the series waiting for it, then parses and checks the labels of those it
  // does not know, in request order.
  RemoteWriteError ResolvePending();
  RemoteWriteError CheckPending();  // ResolvePending's work, pending_ left as it was
  // `error`, found in the walk, unless a series before it that waited for known_ is bad: then
  // that one's (its message replaces the walk's).
  RemoteWriteError EarlierError(RemoteWriteError error);
  // A protobuf error found by `reader`, which reads `part` (a view into the buffer).
  RemoteWriteError ProtobufError(const WireReader& reader, std::string_view part,
                                 std::string_view where);
  // `timeseries[3] {__name__="up", job="api"}` (bounded), for messages about a series.
  std::string DescribeSeries(std::uint64_t index) const;

  std::unique_ptr<char[]> buffer_;
  std::size_t buffer_capacity_ = 0;
  std::size_t decoded_bytes_ = 0;
  std::vector<RemoteWriteSeries> series_;
  std::vector<Label> labels_;                   // of the series being validated
  std::vector<std::string_view> label_fields_;  // its encoded Label messages
  // Series (indexes into series_) whose labels wait for known_, and its answers for them.
  std::vector<std::size_t> pending_;
  std::vector<std::string_view> pending_labels_;
  std::vector<std::string_view> pending_fields_;  // the Label messages of one of them
  std::vector<std::uint8_t> pending_known_;
  std::vector<std::uint64_t> pending_tokens_;
  KnownLabelSets* known_ = nullptr;  // of the current Decode()
  RemoteWriteCounts counts_;
  std::string message_;
};

// The label fields of one Label message. False when malformed (never after a successful Decode).
bool ParseRemoteWriteLabel(std::string_view message, std::string_view* name,
                           std::string_view* value, WireReader* error_reader = nullptr);

template <typename Fn>
void RemoteWriteDecoder::ForEachSample(const RemoteWriteSeries& series, Fn&& fn) {
  using namespace remote_write;
  WireReader reader(series.from_samples);
  std::uint32_t field = 0, wire_type = 0;
  while (!reader.done() && reader.ReadTag(&field, &wire_type)) {
    if (field != kTimeSeriesSamples || wire_type != kLengthDelimited) {
      std::string_view skipped;
      const bool ok = wire_type == kLengthDelimited ? reader.ReadLengthDelimited(&skipped)
                                                    : reader.Skip(field, wire_type);
      if (!ok) return;
      continue;
    }
    std::string_view sample;
    if (!reader.ReadLengthDelimited(&sample)) return;
    // Proto3 defaults: a field left out is 0.
    std::uint64_t value_bits = 0, ts = 0;
    WireReader s(sample);
    std::uint32_t f = 0, w = 0;
    while (!s.done() && s.ReadTag(&f, &w)) {
      if (f == kSampleValue && w == kFixed64) {
        if (!s.ReadFixed64(&value_bits)) return;
      } else if (f == kSampleTimestamp && w == kVarint) {
        if (!s.ReadVarint(&ts)) return;
      } else if (!s.Skip(f, w)) {
        return;
      }
    }
    fn(static_cast<std::int64_t>(ts), value_bits);
  }
}

}  // namespace ingot::ingest
