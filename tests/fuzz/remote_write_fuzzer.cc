// libFuzzer target for the Prometheus remote-write decoder (ingest/remote_write_decoder.h):
// snappy, the protobuf walk and the label validation, checked against protobuf's generated
// parser.
//
// The first input byte picks the mode: even, the rest is a protobuf WriteRequest that the harness
// compresses with snappy, so that mutations reach the protobuf walk; odd, the rest is the body as
// sent, for snappy's own paths. Every input must decode or be refused with a message, never crash.
// A request that decodes is read whole (labels, samples). When the generated parser accepts the
// same bytes too, both must agree on every series, label and sample bit; and when it accepts
// bytes whose label sets and timestamps are valid, the decoder must accept them as well (it is
// never stricter than protobuf about the wire format). A request that decoded is decoded again with
// every label set vouched for (as the node's series cache does for label bytes it has seen): the
// answer must be the same.
#include <snappy.h>

#include <google/protobuf/stubs/logging.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/proto/remote.pb.h"
#include "ingest/remote_write_decoder.h"

namespace {
using namespace ingot;
using namespace ingot::ingest;

constexpr std::uint64_t kMaxDecodedBytes = 1 << 20;

struct Series {
  std::string name;
  std::vector<std::pair<std::string, std::string>> tags;
  std::vector<std::pair<std::int64_t, std::uint64_t>> samples;
  bool operator==(const Series&) const = default;
};

bool NameByte(char c, bool first, bool colon) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return letter || (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

bool ValidName(const std::string& s, bool colon) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!NameByte(s[i], i == 0, colon)) return false;
  }
  return true;
}

// The decoder's rules, restated over the generated classes (independently of its code).
bool ValidRequest(const prometheus::WriteRequest& request) {
  constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max() / 1'000'000;
  constexpr std::int64_t kMinMs = std::numeric_limits<std::int64_t>::min() / 1'000'000;
  for (const prometheus::TimeSeries& ts : request.timeseries()) {
    bool has_name = false;
    for (int i = 0; i < ts.labels_size(); ++i) {
      const prometheus::Label& l = ts.labels(i);
      if (i > 0 && !(ts.labels(i - 1).name() < l.name())) return false;
      if (l.name() == "__name__") {
        if (!ValidName(l.value(), /*colon=*/true)) return false;
        has_name = true;
      } else if (!ValidName(l.name(), /*colon=*/false)) {
        return false;
      }
    }
    if (!has_name) return false;
    for (const prometheus::Sample& s : ts.samples()) {
      if (s.timestamp() > kMaxMs || s.timestamp() < kMinMs) return false;
    }
  }
  return true;
}

std::vector<Series> FromDecoder(const RemoteWriteDecoder& decoder) {
  std::vector<Series> out;
  std::vector<TagView> tags;
  for (const RemoteWriteSeries& s : decoder.series()) {
    Series series;
    std::string_view name;
    RemoteWriteDecoder::LabelsOf(s, &name, &tags);
    series.name = std::string(name);
    for (const auto& [k, v] : tags) series.tags.emplace_back(std::string(k), std::string(v));
    RemoteWriteDecoder::ForEachSample(
        s, [&](std::int64_t ts, std::uint64_t bits) { series.samples.emplace_back(ts, bits); });
    if (series.samples.size() != s.samples || series.name.empty()) std::abort();
    out.push_back(std::move(series));
  }
  return out;
}

std::vector<Series> FromProtobuf(const prometheus::WriteRequest& request) {
  std::vector<Series> out;
  for (const prometheus::TimeSeries& ts : request.timeseries()) {
    if (ts.samples_size() == 0) continue;
    Series series;
    for (const prometheus::Label& l : ts.labels()) {
      if (l.name() == "__name__") {
        series.name = l.value();
      } else if (!l.value().empty()) {
        series.tags.emplace_back(l.name(), l.value());
      }
    }
    for (const prometheus::Sample& s : ts.samples()) {
      series.samples.emplace_back(s.timestamp(), std::bit_cast<std::uint64_t>(s.value()));
    }
    out.push_back(std::move(series));
  }
  return out;
}

// Vouches for the label bytes it was given, as the node's series cache does.
class Remembered final : public KnownLabelSets {
 public:
  std::vector<std::string> known;
  bool Known(std::string_view raw_labels, std::uint64_t* token) override {
    for (std::size_t i = 0; i < known.size(); ++i) {
      if (known[i] == raw_labels) {
        *token = i;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static RemoteWriteDecoder* decoder = [] {
    google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 is expected here, not news
    return new RemoteWriteDecoder;
  }();
  if (size == 0) return 0;
  const bool compress = (data[0] & 1) == 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string body;
  if (compress) {
    snappy::Compress(rest.data(), rest.size(), &body);
  } else {
    body.assign(rest);
  }
  const RemoteWriteError error = decoder->Decode(body, kMaxDecodedBytes, "fuzz.limit");
  if (error != RemoteWriteError::kNone) {
    if (decoder->message().empty() || !decoder->series().empty()) std::abort();
  }
  if (compress && error != RemoteWriteError::kSnappy && error != RemoteWriteError::kTooLarge &&
      decoder->decoded() != rest) {
    std::abort();
  }
  std::vector<Series> ours;
  if (error == RemoteWriteError::kNone) {
    ours = FromDecoder(*decoder);
    Remembered remembered;
    for (const RemoteWriteSeries& series : decoder->series()) {
      if (!series.raw_labels.empty()) remembered.known.emplace_back(series.raw_labels);
    }
    if (decoder->Decode(body, kMaxDecodedBytes, "fuzz.limit", &remembered) !=
            RemoteWriteError::kNone ||
        FromDecoder(*decoder) != ours) {
      std::abort();
    }
    for (const RemoteWriteSeries& series : decoder->series()) {
      if (series.raw_labels.empty() == series.known) std::abort();
    }
  }
  if (error == RemoteWriteError::kSnappy || error == RemoteWriteError::kTooLarge) return 0;
  const std::string_view decoded = decoder->decoded();
  prometheus::WriteRequest reference;
  if (!reference.ParseFromArray(decoded.data(), static_cast<int>(decoded.size()))) return 0;
  if (error == RemoteWriteError::kNone) {
    if (ours != FromProtobuf(reference)) std::abort();
  } else if (ValidRequest(reference)) {
    std::abort();  // protobuf reads it and its labels are valid: the decoder must too
  }
  return 0;
}
