#include "chunk/chunk_format.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>

#include <xxhash.h>

namespace ingot {

namespace {

static_assert(std::endian::native == std::endian::little,
              "chunk format fields are stored with memcpy as little-endian");

template <typename T>
void Store(std::uint8_t* p, T v) noexcept {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
T Load(const std::uint8_t* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint64_t ChunkChecksum(std::span<const std::uint8_t> chunk, std::size_t payload_bytes) {
  const std::uint64_t seed = XXH64(chunk.data(), 32, 0);
  return XXH64(chunk.data() + kChunkHeaderBytes, payload_bytes, seed);
}

Status Bad(const std::string& what) { return Status::Corruption("chunk: " + what); }

// Checks that decoded timestamps keep the header's promise (sorted, distinct, within
// [min, max]): a decoder bug or corruption that slips past the checksum must not hand unsorted
// data to readers.
Status CheckTimestamps(std::span<const std::int64_t> ts, const ChunkHeader& h) {
  // Written without a carried variable so that it vectorizes: it runs on every decoded chunk.
  bool sorted = true;
  for (std::size_t i = 1; i < ts.size(); ++i) sorted &= ts[i] > ts[i - 1];
  if (!sorted || ts.front() != h.min_ts_ns || ts.back() != h.max_ts_ns) {
    return Bad("timestamps not strictly increasing or outside header range [" +
               std::to_string(h.min_ts_ns) + ", " + std::to_string(h.max_ts_ns) + "]");
  }
  return Status::OK();
}

// The same check for timestamps first + i * step: strictly increasing exactly when the step is
// positive and the last one did not wrap, i.e. (n - 1) * step spans exactly max - min.
Status CheckRegularTimestamps(std::span<const std::int64_t> ts, std::int64_t step,
                              const ChunkHeader& h) {
  const std::uint64_t span =
      static_cast<std::uint64_t>(h.max_ts_ns) - static_cast<std::uint64_t>(h.min_ts_ns);
  std::uint64_t expected = 0;
  const bool overflow = __builtin_mul_overflow(static_cast<std::uint64_t>(ts.size() - 1),
                                               static_cast<std::uint64_t>(step), &expected);
  if ((ts.size() > 1 && step <= 0) || overflow || h.max_ts_ns < h.min_ts_ns ||
      expected != span || ts.front() != h.min_ts_ns || ts.back() != h.max_ts_ns) {
    return Bad("regular timestamps with step " + std::to_string(step) +
               " do not span the header range [" + std::to_string(h.min_ts_ns) + ", " +
               std::to_string(h.max_ts_ns) + "]");
  }
  return Status::OK();
}

// The interval of a kTimestampEncodingRegular chunk (0 for a single point).
// REQUIRES: a header that ParseChunkHeader accepted.
std::uint64_t RegularStep(const ChunkHeader& h) {
  if (h.count <= 1) return 0;
  return (static_cast<std::uint64_t>(h.max_ts_ns) - static_cast<std::uint64_t>(h.min_ts_ns)) /
         (h.count - 1u);
}

// Whether `ts` (strictly increasing) is first + i * step for one step.
bool IsRegular(std::span<const std::int64_t> ts) {
  const std::size_t n = ts.size();
  if (n <= 2) return true;
  const auto first = static_cast<std::uint64_t>(ts[0]);
  const std::uint64_t step = static_cast<std::uint64_t>(ts[1]) - first;
  // Without an early exit, so that it vectorizes: it runs on every seal.
  bool regular = true;
  for (std::size_t i = 2; i < n; ++i) {
    regular &= static_cast<std::uint64_t>(ts[i]) == first + i * step;
  }
  return regular;
}

// Validates the chunk, checks the output size and decodes the timestamps.
Status DecodeTimestamps(std::span<const std::uint8_t> chunk, std::span<std::int64_t> ts,
                        std::size_t values_size, ChunkHeader* h, codec::Workspace& ws,
                        ChunkSource source) {
  if (values_size != ts.size()) {
    return Status::InvalidArgument("chunk decode: " + std::to_string(ts.size()) +
                                   " timestamps but " + std::to_string(values_size) + " values");
  }
  INGOT_RETURN_IF_ERROR(source == ChunkSource::kStored ? ValidateChunk(chunk, h)
                                                      : ParseChunkHeader(chunk, h));
  if (ts.size() != h->count) {
    return Status::InvalidArgument("chunk decode: output holds " + std::to_string(ts.size()) +
                                   " points, chunk has " + std::to_string(h->count));
  }
  if (h->ts_encoding == kTimestampEncodingRegular) {
    // ParseChunkHeader checked that the step divides the range: the timestamps are strictly
    // increasing and end at max by construction.
    const std::uint64_t step = RegularStep(*h);
    const auto first = static_cast<std::uint64_t>(h->min_ts_ns);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      ts[i] = static_cast<std::int64_t>(first + i * step);
    }
    return Status::OK();
  }
  codec::IntBlockShape shape;
  INGOT_RETURN_IF_ERROR(
      codec::DecodeInts(chunk.subspan(kChunkHeaderBytes, h->ts_bytes), ts, ws, &shape)
          .WithContext("chunk timestamps"));
  if (shape.arithmetic) return CheckRegularTimestamps(ts, shape.step, *h);
  return CheckTimestamps(ts, *h);
}

std::span<const std::uint8_t> ValueBlock(std::span<const std::uint8_t> chunk,
                                         const ChunkHeader& h) {
  return chunk.subspan(kChunkHeaderBytes + h.ts_bytes, h.value_bytes);
}

}  // namespace

std::size_t MaxSealedChunkBytes(std::size_t count) noexcept {
  return kChunkHeaderBytes + codec::MaxEncodedIntBytes(count) +
         std::max(codec::MaxEncodedFloatBytes(count, 8), codec::MaxEncodedIntBytes(count));
}

std::size_t SealChunk(ValueType type, std::span<const std::int64_t> ts,
                      std::span<const std::uint64_t> values_bits, codec::SeriesHint& hint,
                      codec::Workspace& ws, std::span<std::uint8_t> out,
                      ChunkHeader* header, SealFor purpose) noexcept {
  const std::size_t n = ts.size();
  std::uint8_t* p = out.data();
  const bool regular = IsRegular(ts);
  const std::size_t ts_bytes =
      regular
          ? 0
          : codec::EncodeInts(ts, ws, out.subspan(kChunkHeaderBytes, codec::MaxEncodedIntBytes(n)));
  const std::uint8_t ts_encoding = regular ? kTimestampEncodingRegular : kTimestampEncodingInt;
  std::size_t value_bytes = 0;
  std::uint8_t value_encoding = kIntValueEncoding;
  auto value_out = out.subspan(kChunkHeaderBytes + ts_bytes);
  if (type == ValueType::kFloat) {
    // Head buffers keep double bit patterns as uint64; memcpy is the defined way to view them as
    // doubles (8 KiB per chunk, nothing per value).
    alignas(64) double values[kChunkCapacity];
    std::memcpy(values, values_bits.data(), n * sizeof(double));
    const std::span<const double> doubles(values, n);
    codec::EncodeResult r;
    switch (purpose) {
      case SealFor::kIngest: r = codec::EncodeDoubles(doubles, hint, ws, value_out); break;
      case SealFor::kHead: r = codec::EncodeDoublesForHead(doubles, hint, ws, value_out); break;
      case SealFor::kCompact: r = codec::EncodeDoublesCompact(doubles, hint, ws, value_out); break;
    }
    value_bytes = r.bytes;
    value_encoding = static_cast<std::uint8_t>(r.encoding);
  } else {
    value_bytes = codec::EncodeInts(
        std::span<const std::int64_t>(reinterpret_cast<const std::int64_t*>(values_bits.data()),
                                      n),
        ws, value_out);
  }
  p[0] = kChunkFormatVersion;
  p[1] = static_cast<std::uint8_t>(type);
  p[2] = ts_encoding;
  p[3] = value_encoding;
  Store<std::uint16_t>(p + 4, static_cast<std::uint16_t>(n));
  Store<std::uint16_t>(p + 6, 0);
  Store<std::int64_t>(p + 8, ts.front());
  Store<std::int64_t>(p + 16, ts.back());
  Store<std::uint32_t>(p + 24, static_cast<std::uint32_t>(ts_bytes));
  Store<std::uint32_t>(p + 28, static_cast<std::uint32_t>(value_bytes));
  const std::size_t total = kChunkHeaderBytes + ts_bytes + value_bytes;
  const std::uint64_t checksum = ChunkChecksum(out.first(total), ts_bytes + value_bytes);
  Store<std::uint64_t>(p + 32, checksum);
  if (header != nullptr) {
    header->version = kChunkFormatVersion;
    header->type = type;
    header->ts_encoding = ts_encoding;
    header->value_encoding = value_encoding;
    header->count = static_cast<std::uint16_t>(n);
    header->min_ts_ns = ts.front();
    header->max_ts_ns = ts.back();
    header->ts_bytes = static_cast<std::uint32_t>(ts_bytes);
    header->value_bytes = static_cast<std::uint32_t>(value_bytes);
    header->checksum = checksum;
  }
  return total;
}

bool RecodeChunkCompact(std::span<const std::uint8_t> chunk, codec::SeriesHint& hint,
                        codec::Workspace& ws, std::string* out) noexcept {
  ChunkHeader h;
  if (!ParseChunkHeader(chunk, &h).ok() || h.type != ValueType::kFloat ||
      h.value_encoding == static_cast<std::uint8_t>(codec::FloatEncoding::kAlpZstd) ||
      h.value_encoding == static_cast<std::uint8_t>(codec::FloatEncoding::kDictionary) ||
      h.value_encoding == static_cast<std::uint8_t>(codec::FloatEncoding::kAlpRadix) ||
      h.value_encoding == static_cast<std::uint8_t>(codec::FloatEncoding::kAlpRice)) {
    return false;
  }
  const std::size_t n = h.count;
  alignas(64) std::int64_t ts[kChunkCapacity];
  alignas(64) std::int64_t raw[kChunkCapacity];
  if (!DecodeChunkRaw(chunk, std::span(ts, n), std::span(raw, n), ws).ok()) return false;
  // Room for timestamps and values of a full chunk (checked against MaxSealedChunkBytes).
  alignas(64) std::uint8_t buf[kChunkHeaderBytes + 2 * (64 + 9 * kChunkCapacity)];
  if (sizeof buf < MaxSealedChunkBytes(n)) return false;
  const std::span<std::uint8_t> room(buf, MaxSealedChunkBytes(n));
  const std::size_t bytes = SealChunk(
      ValueType::kFloat, std::span<const std::int64_t>(ts, n),
      std::span<const std::uint64_t>(reinterpret_cast<const std::uint64_t*>(raw), n), hint, ws,
      room, nullptr, SealFor::kCompact);
  if (bytes >= chunk.size()) return false;
  out->assign(reinterpret_cast<const char*>(buf), bytes);
  return true;
}

std::size_t AppendHeadHint(const codec::SeriesHint& hint, std::size_t chunk_bytes,
                           std::span<std::uint8_t> buffer) noexcept {
  codec::SaveHint(hint, buffer.subspan(chunk_bytes).first<codec::kSavedHintBytes>());
  return chunk_bytes + codec::kSavedHintBytes;
}

std::span<const std::uint8_t> SplitHeadValue(std::span<const std::uint8_t> value,
                                             codec::SeriesHint* hint) noexcept {
  if (value.size() < kChunkHeaderBytes + codec::kSavedHintBytes) return value;
  const std::uint64_t chunk_bytes = std::uint64_t{kChunkHeaderBytes} +
                                    Load<std::uint32_t>(value.data() + 24) +
                                    Load<std::uint32_t>(value.data() + 28);
  if (chunk_bytes + codec::kSavedHintBytes != value.size()) return value;
  codec::LoadHint(value.subspan(chunk_bytes), hint);
  return value.first(chunk_bytes);
}

Status ParseChunkHeader(std::span<const std::uint8_t> chunk, ChunkHeader* h) noexcept {
  if (chunk.size() < kChunkHeaderBytes) {
    return Bad(std::to_string(chunk.size()) + " bytes < header " +
               std::to_string(kChunkHeaderBytes));
  }
  const std::uint8_t* p = chunk.data();
  h->version = p[0];
  h->type = static_cast<ValueType>(p[1]);
  h->ts_encoding = p[2];
  h->value_encoding = p[3];
  h->count = Load<std::uint16_t>(p + 4);
  h->min_ts_ns = Load<std::int64_t>(p + 8);
  h->max_ts_ns = Load<std::int64_t>(p + 16);
  h->ts_bytes = Load<std::uint32_t>(p + 24);
  h->value_bytes = Load<std::uint32_t>(p + 28);
  h->checksum = Load<std::uint64_t>(p + 32);
  if (h->version != kChunkFormatVersion) {
    return Bad("unknown format version " + std::to_string(h->version));
  }
  if (p[1] >= kValueTypeCount) return Bad("unknown value type " + std::to_string(p[1]));
  if (h->ts_encoding != kTimestampEncodingInt && h->ts_encoding != kTimestampEncodingRegular) {
    return Bad("unknown timestamp encoding " + std::to_string(h->ts_encoding));
  }
  if (h->count == 0 || h->count > kChunkCapacity) {
    return Bad("count " + std::to_string(h->count) + " outside 1.." +
               std::to_string(kChunkCapacity));
  }
  if (h->min_ts_ns > h->max_ts_ns || (h->count == 1) != (h->min_ts_ns == h->max_ts_ns)) {
    return Bad("time range [" + std::to_string(h->min_ts_ns) + ", " +
               std::to_string(h->max_ts_ns) + "] inconsistent with count " +
               std::to_string(h->count));
  }
  if (h->ts_encoding == kTimestampEncodingRegular) {
    const std::uint64_t span =
        static_cast<std::uint64_t>(h->max_ts_ns) - static_cast<std::uint64_t>(h->min_ts_ns);
    if (h->ts_bytes != 0) {
      return Bad("regular timestamps with a timestamp block of " + std::to_string(h->ts_bytes) +
                 " bytes");
    }
    if (h->count > 1 && span % (h->count - 1u) != 0) {
      return Bad("regular timestamps: range " + std::to_string(span) + " ns is not " +
                 std::to_string(h->count - 1) + " equal steps");
    }
  }
  const std::uint64_t expected =
      std::uint64_t{kChunkHeaderBytes} + h->ts_bytes + std::uint64_t{h->value_bytes};
  if (expected != chunk.size()) {
    return Bad("block sizes " + std::to_string(h->ts_bytes) + " + " +
               std::to_string(h->value_bytes) + " + header != " + std::to_string(chunk.size()) +
               " bytes");
  }
  return Status::OK();
}

Status ValidateChunk(std::span<const std::uint8_t> chunk, ChunkHeader* h) noexcept {
  INGOT_RETURN_IF_ERROR(ParseChunkHeader(chunk, h));
  const std::uint64_t actual = ChunkChecksum(chunk, h->ts_bytes + std::size_t{h->value_bytes});
  if (actual != h->checksum) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "checksum mismatch: stored %016llx, computed %016llx",
                  static_cast<unsigned long long>(h->checksum),
                  static_cast<unsigned long long>(actual));
    return Bad(buf);
  }
  return Status::OK();
}

Status DecodeChunkRaw(std::span<const std::uint8_t> chunk, std::span<std::int64_t> ts,
                      std::span<std::int64_t> values_raw, codec::Workspace& ws,
                      ChunkSource source) noexcept {
  ChunkHeader h;
  INGOT_RETURN_IF_ERROR(DecodeTimestamps(chunk, ts, values_raw.size(), &h, ws, source));
  if (h.type != ValueType::kFloat) {
    return codec::DecodeInts(ValueBlock(chunk, h), values_raw, ws).WithContext("chunk values");
  }
  alignas(64) double decoded[kChunkCapacity];
  INGOT_RETURN_IF_ERROR(
      codec::DecodeDoubles(ValueBlock(chunk, h), std::span<double>(decoded, h.count), ws)
          .WithContext("chunk values"));
  std::memcpy(values_raw.data(), decoded, h.count * sizeof(double));
  return Status::OK();
}

Status DecodeChunk(std::span<const std::uint8_t> chunk, std::span<std::int64_t> ts,
                   std::span<double> values, codec::Workspace& ws, ChunkSource source) noexcept {
  ChunkHeader h;
  INGOT_RETURN_IF_ERROR(DecodeTimestamps(chunk, ts, values.size(), &h, ws, source));
  if (h.type == ValueType::kFloat) {
    // The common case decodes straight into the caller's span.
    return codec::DecodeDoubles(ValueBlock(chunk, h), values, ws).WithContext("chunk values");
  }
  alignas(64) std::int64_t decoded[kChunkCapacity];
  INGOT_RETURN_IF_ERROR(
      codec::DecodeInts(ValueBlock(chunk, h), std::span<std::int64_t>(decoded, h.count), ws)
          .WithContext("chunk values"));
  for (std::size_t i = 0; i < h.count; ++i) values[i] = static_cast<double>(decoded[i]);
  return Status::OK();
}

}  // namespace ingot
