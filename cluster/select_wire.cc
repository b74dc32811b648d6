#include "cluster/select_wire.h"

#include <bit>
#include <cassert>
#include <cstring>
#include <limits>
#include <utility>

#include "codec/format.h"

namespace ingot::cluster {
namespace {

static_assert(std::endian::native == std::endian::little,
              "points are copied between the wire and arrays as they are");

constexpr std::size_t kHeaderBytes = sizeof(kSelectRequestMagic) + 1;
// The fewest bytes one element can take: what a count is checked against before anything is
// allocated for it.
constexpr std::size_t kMinMatcherBytes = 1 + 4 + 4;
constexpr std::size_t kMinLabelBytes = 4 + 4;
constexpr std::size_t kMinSeriesBytes = 4 + 8;
constexpr std::size_t kPointBytes = 8 + 8;
constexpr std::size_t kMinDamageBytes = 8 + 8 + 4;

template <typename T>
void Put(T v, std::string* out) {
  std::uint8_t bytes[sizeof(T)];
  codec::StoreLe(bytes, v);
  out->append(reinterpret_cast<const char*>(bytes), sizeof(T));
}

void PutString(std::string_view s, std::string* out) {
  // Strings come from HTTP bodies and series keys, far below 4 GiB.
  assert(s.size() <= std::numeric_limits<std::uint32_t>::max());
  Put(static_cast<std::uint32_t>(s.size()), out);
  out->append(s);
}

// Reads fields off the input, never past its end; each failure names the field and offset.
class WireReader {
 public:
  WireReader(std::string_view bytes, std::string_view what) : bytes_(bytes), what_(what) {}

  std::size_t left() const { return bytes_.size() - pos_; }

  template <typename T>
  Status Get(std::string_view field, T* v) {
    INGOT_RETURN_IF_ERROR(Need(field, sizeof(T)));
    *v = codec::LoadLe<T>(reinterpret_cast<const std::uint8_t*>(bytes_.data() + pos_));
    pos_ += sizeof(T);
    return Status::OK();
  }

  Status GetString(std::string_view field, std::string* out) {
    std::uint32_t len = 0;
    INGOT_RETURN_IF_ERROR(Get(field, &len));
    INGOT_RETURN_IF_ERROR(Need(field, len));
    out->assign(bytes_.data() + pos_, len);
    pos_ += len;
    return Status::OK();
  }

  // A count of elements each at least `min_bytes` long, checked against the bytes left.
  template <typename T>
  Status GetCount(std::string_view field, std::size_t min_bytes, T* count) {
    INGOT_RETURN_IF_ERROR(Get(field, count));
    if (*count > left() / min_bytes) {
      return Error(std::string(field) + " " + std::to_string(*count) + " needs at least " +
                   std::to_string(min_bytes) + " bytes each, " + std::to_string(left()) +
                   " bytes left");
    }
    return Status::OK();
  }

  // `n` raw 8-byte words into `out`.
  template <typename T>
  Status GetArray(std::string_view field, std::size_t n, std::vector<T>* out) {
    static_assert(sizeof(T) == 8);
    INGOT_RETURN_IF_ERROR(Need(field, n * sizeof(T)));  // n <= left() / 16: no overflow
    out->resize(n);
    if (n != 0) std::memcpy(out->data(), bytes_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return Status::OK();
  }

  Status Magic(const char (&magic)[4]) {
    if (bytes_.size() < kHeaderBytes || std::memcmp(bytes_.data(), magic, sizeof(magic)) != 0) {
      return Error("not a " + std::string(what_) + " (" + std::to_string(bytes_.size()) +
                   " bytes, wrong magic)");
    }
    pos_ = sizeof(magic);
    std::uint8_t version = 0;
    INGOT_RETURN_IF_ERROR(Get("version", &version));
    if (version != kSelectWireVersion) {
      return Status::InvalidArgument(std::string(what_) + ": version " + std::to_string(version) +
                                     " unsupported (this node speaks " +
                                     std::to_string(kSelectWireVersion) + ")");
    }
    return Status::OK();
  }

  Status End() const {
    if (left() != 0) {
      return Error(std::to_string(left()) + " bytes after the end at offset " +
                   std::to_string(pos_));
    }
    return Status::OK();
  }

  Status Error(std::string message) const {
    return Status::Corruption(std::string(what_) + ": " + message);
  }

 private:
  Status Need(std::string_view field, std::size_t n) const {
    if (n > left()) {
      return Error(std::string(field) + " at offset " + std::to_string(pos_) + " needs " +
                   std::to_string(n) + " bytes, " + std::to_string(left()) + " left");
    }
    return Status::OK();
  }

  std::string_view bytes_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

SelectWireOp WireOp(MatchOp op) {
  switch (op) {
    case MatchOp::kEqual:
      return SelectWireOp::kEqual;
    case MatchOp::kNotEqual:
      return SelectWireOp::kNotEqual;
    case MatchOp::kRegexMatch:
      return SelectWireOp::kRegexMatch;
    case MatchOp::kRegexNoMatch:
      return SelectWireOp::kRegexNoMatch;
  }
  return SelectWireOp::kEqual;
}

bool MatchOpOf(std::uint8_t wire, MatchOp* op) {
  switch (static_cast<SelectWireOp>(wire)) {
    case SelectWireOp::kEqual:
      *op = MatchOp::kEqual;
      return true;
    case SelectWireOp::kNotEqual:
      *op = MatchOp::kNotEqual;
      return true;
    case SelectWireOp::kRegexMatch:
      *op = MatchOp::kRegexMatch;
      return true;
    case SelectWireOp::kRegexNoMatch:
      *op = MatchOp::kRegexNoMatch;
      return true;
  }
  return false;
}

}  // namespace

void EncodeSelectRequest(const Selector& selector, const SelectParams& params, std::string* out) {
  out->append(kSelectRequestMagic, sizeof(kSelectRequestMagic));
  Put(kSelectWireVersion, out);
  Put(params.lo_ns, out);
  Put(params.hi_ns, out);
  Put(params.max_series, out);
  Put(params.timeout_ms, out);
  Put(static_cast<std::uint8_t>((params.labels_only ? kSelectLabelsOnly : 0) |
                                (params.skip_damage ? kSelectSkipDamage : 0)),
      out);
  Put(static_cast<std::uint32_t>(selector.matchers.size()), out);
  for (const LabelMatcher& m : selector.matchers) {
    Put(static_cast<std::uint8_t>(WireOp(m.op)), out);
    PutString(m.name, out);
    PutString(m.value, out);
  }
}

Status DecodeSelectRequest(std::string_view bytes, SelectRequest* out) {
  WireReader r(bytes, "select request");
  INGOT_RETURN_IF_ERROR(r.Magic(kSelectRequestMagic));
  INGOT_RETURN_IF_ERROR(r.Get("lo_ns", &out->lo_ns));
  INGOT_RETURN_IF_ERROR(r.Get("hi_ns", &out->hi_ns));
  INGOT_RETURN_IF_ERROR(r.Get("max_series", &out->max_series));
  INGOT_RETURN_IF_ERROR(r.Get("timeout_ms", &out->timeout_ms));
  std::uint8_t flags = 0;
  INGOT_RETURN_IF_ERROR(r.Get("flags", &flags));
  if ((flags & ~(kSelectLabelsOnly | kSelectSkipDamage)) != 0) {
    return Status::InvalidArgument("select request: unknown flags " + std::to_string(flags));
  }
  out->labels_only = (flags & kSelectLabelsOnly) != 0;
  out->skip_damage = (flags & kSelectSkipDamage) != 0;
  std::uint32_t count = 0;
  INGOT_RETURN_IF_ERROR(r.GetCount("matcher count", kMinMatcherBytes, &count));
  out->selector.matchers.clear();
  out->selector.matchers.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint8_t wire_op = 0;
    std::string name, value;
    INGOT_RETURN_IF_ERROR(r.Get("matcher op", &wire_op));
    INGOT_RETURN_IF_ERROR(r.GetString("matcher name", &name));
    INGOT_RETURN_IF_ERROR(r.GetString("matcher value", &value));
    MatchOp op;
    if (!MatchOpOf(wire_op, &op)) {
      return Status::InvalidArgument("select request: matcher " + std::to_string(i) +
                                     ": unknown operator " + std::to_string(wire_op));
    }
    LabelMatcher m;
    INGOT_RETURN_IF_ERROR(MakeMatcher(std::move(name), op, std::move(value), &m)
                              .WithContext("select request: matcher " + std::to_string(i)));
    out->selector.matchers.push_back(std::move(m));
  }
  INGOT_RETURN_IF_ERROR(r.End());
  if (out->selector.matchers.empty()) {
    return Status::InvalidArgument("select request: no matcher (a selector selects something)");
  }
  return Status::OK();
}

void EncodeSelectResponse(std::span<const promql::FetchedSeries> series,
                          std::span<const CorruptChunk> damage, std::string* out) {
  std::size_t bytes = kHeaderBytes + 8 + 4;
  for (const promql::FetchedSeries& s : series) {
    bytes += kMinSeriesBytes + s.ts.size() * kPointBytes;
    for (const auto& [name, value] : s.labels) bytes += kMinLabelBytes + name.size() + value.size();
  }
  for (const CorruptChunk& d : damage) bytes += kMinDamageBytes + d.status.message().size();
  out->reserve(out->size() + bytes);
  out->append(kSelectResponseMagic, sizeof(kSelectResponseMagic));
  Put(kSelectWireVersion, out);
  Put(static_cast<std::uint64_t>(series.size()), out);
  for (const promql::FetchedSeries& s : series) {
    assert(s.ts.size() == s.values.size());
    Put(static_cast<std::uint32_t>(s.labels.size()), out);
    for (const auto& [name, value] : s.labels) {
      PutString(name, out);
      PutString(value, out);
    }
    Put(static_cast<std::uint64_t>(s.ts.size()), out);
    out->append(reinterpret_cast<const char*>(s.ts.data()), s.ts.size() * 8);
    // The values' bits as they are: memcpy never turns a signalling NaN quiet.
    out->append(reinterpret_cast<const char*>(s.values.data()), s.values.size() * 8);
  }
  // A count of chunks a reader skipped in one request: far below 2^32.
  assert(damage.size() <= std::numeric_limits<std::uint32_t>::max());
  Put(static_cast<std::uint32_t>(damage.size()), out);
  for (const CorruptChunk& d : damage) {
    Put(d.first_ts_ns, out);
    Put(d.last_ts_ns, out);
    PutString(d.status.message(), out);
  }
}

namespace {

Status DecodeAnswer(std::string_view bytes, std::vector<promql::FetchedSeries>* out,
                    std::vector<CorruptChunk>* damage) {
  WireReader r(bytes, "select response");
  INGOT_RETURN_IF_ERROR(r.Magic(kSelectResponseMagic));
  std::uint64_t count = 0;
  INGOT_RETURN_IF_ERROR(r.GetCount("series count", kMinSeriesBytes, &count));
  out->reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string at = "series " + std::to_string(i);
    promql::FetchedSeries s;
    std::uint32_t labels = 0;
    INGOT_RETURN_IF_ERROR(r.GetCount("label count", kMinLabelBytes, &labels));
    s.labels.resize(labels);
    for (std::uint32_t k = 0; k < labels; ++k) {
      INGOT_RETURN_IF_ERROR(r.GetString("label name", &s.labels[k].first));
      INGOT_RETURN_IF_ERROR(r.GetString("label value", &s.labels[k].second));
      if (k > 0 && !(s.labels[k - 1].first < s.labels[k].first)) {
        return r.Error(at + ": label " + std::to_string(k) + " (" + s.labels[k].first +
                       ") out of order or repeated");
      }
    }
    if (!out->empty() && !(out->back().labels < s.labels)) {
      return r.Error(at + ": labels out of order or repeated");
    }
    std::uint64_t points = 0;
    INGOT_RETURN_IF_ERROR(r.GetCount("point count", kPointBytes, &points));
    INGOT_RETURN_IF_ERROR(r.GetArray("timestamps", static_cast<std::size_t>(points), &s.ts));
    INGOT_RETURN_IF_ERROR(r.GetArray("values", static_cast<std::size_t>(points), &s.values));
    for (std::size_t p = 1; p < s.ts.size(); ++p) {
      if (s.ts[p] <= s.ts[p - 1]) {
        return r.Error(at + ": timestamp " + std::to_string(s.ts[p]) + " at point " +
                       std::to_string(p) + " not after " + std::to_string(s.ts[p - 1]));
      }
    }
    out->push_back(std::move(s));
  }
  std::uint32_t damaged = 0;
  INGOT_RETURN_IF_ERROR(r.GetCount("damaged count", kMinDamageBytes, &damaged));
  damage->reserve(damaged);
  for (std::uint32_t i = 0; i < damaged; ++i) {
    CorruptChunk d;
    std::string message;
    INGOT_RETURN_IF_ERROR(r.Get("damaged first_ts_ns", &d.first_ts_ns));
    INGOT_RETURN_IF_ERROR(r.Get("damaged last_ts_ns", &d.last_ts_ns));
    INGOT_RETURN_IF_ERROR(r.GetString("damaged message", &message));
    d.status = Status::Corruption(message);
    damage->push_back(std::move(d));
  }
  return r.End();
}

}  // namespace

Status DecodeSelectResponse(std::string_view bytes, std::vector<promql::FetchedSeries>* out,
                            std::vector<CorruptChunk>* damage) {
  out->clear();
  damage->clear();
  Status st = DecodeAnswer(bytes, out, damage);
  if (!st.ok()) {
    out->clear();
    damage->clear();
  }
  return st;
}

}  // namespace ingot::cluster
