// Helpers for the remote-write suites: requests built with the generated protobuf classes (the
// reference encoder) and compressed with libsnappy, and a small hand encoder for bytes that
// protobuf's own classes would not write (unsorted fields, unknown fields, broken UTF-8).
#pragma once

#include <snappy.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ingest/proto/remote.pb.h"

namespace ingot::ingest::testutil {

using LabelList = std::vector<std::pair<std::string, std::string>>;

// A TimeSeries with `labels` in the given order and `samples` (ms, value).
inline prometheus::TimeSeries* AddSeries(
    prometheus::WriteRequest* request, const LabelList& labels,
    const std::vector<std::pair<std::int64_t, double>>& samples) {
  prometheus::TimeSeries* ts = request->add_timeseries();
  for (const auto& [name, value] : labels) {
    prometheus::Label* l = ts->add_labels();
    l->set_name(name);
    l->set_value(value);
  }
  for (const auto& [t, v] : samples) {
    prometheus::Sample* s = ts->add_samples();
    s->set_timestamp(t);
    s->set_value(v);
  }
  return ts;
}

inline std::string Snappy(std::string_view raw) {
  std::string out;
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

inline std::string Encode(const prometheus::WriteRequest& request) {
  return Snappy(request.SerializeAsString());
}

// Protobuf wire format by hand.
class PbWriter {
 public:
  PbWriter& Varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  PbWriter& Tag(std::uint32_t field, std::uint32_t wire_type) {
    return Varint(static_cast<std::uint64_t>(field) << 3 | wire_type);
  }
  PbWriter& VarintField(std::uint32_t field, std::uint64_t v) { return Tag(field, 0).Varint(v); }
  PbWriter& Fixed64Field(std::uint32_t field, std::uint64_t v) {
    Tag(field, 1);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  PbWriter& Bytes(std::uint32_t field, std::string_view bytes) {
    Tag(field, 2).Varint(bytes.size());
    out_.append(bytes);
    return *this;
  }
  PbWriter& Raw(std::string_view bytes) {
    out_.append(bytes);
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

// An encoded Label and Sample.
inline std::string PbLabel(std::string_view name, std::string_view value) {
  return PbWriter().Bytes(1, name).Bytes(2, value).str();
}
inline std::string PbSample(std::int64_t ts_ms, std::uint64_t value_bits) {
  return PbWriter()
      .Fixed64Field(1, value_bits)
      .VarintField(2, static_cast<std::uint64_t>(ts_ms))
      .str();
}
// A TimeSeries of the given labels (in this order) and samples.
inline std::string PbSeries(const LabelList& labels,
                            std::initializer_list<std::pair<std::int64_t, std::uint64_t>> samples) {
  PbWriter w;
  for (const auto& [n, v] : labels) w.Bytes(1, PbLabel(n, v));
  for (const auto& [t, bits] : samples) w.Bytes(2, PbSample(t, bits));
  return w.str();
}

}  // namespace ingot::ingest::testutil
