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
    // A running sum, which vectorizes as additions (i * step would need 64-bit multiplies,
    // which the baseline's SSE2 lacks: the loop ran scalar, 6% of a day-long range query).
    const std::uint64_t step = RegularStep(*h);
    auto t = static_cast<std::uint64_t>(h->min_ts_ns);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      ts[i] = static_cast<std::int64_t>(t);
      t += step;
    }
    return Status::OK();
  }
  codec::IntBlockShape shape;
  if (h->blocks == 1) {
    INGOT_RETURN_IF_ERROR(
        codec::DecodeInts(chunk.subspan(kChunkHeaderBytes, h->ts_bytes), ts, ws, &shape)
            .WithContext("chunk timestamps"));
    if (shape.arithmetic) return CheckRegularTimestamps(ts, shape.step, *h);
    return CheckTimestamps(ts, *h);
  }
  ChunkBlocks blocks;
  const std::size_t n = ListChunkBlocks(chunk, *h, blocks);
  for (std::size_t b = 0; b < n; ++b) {
    INGOT_RETURN_IF_ERROR(
        codec::DecodeInts(blocks[b].ts, ts.subspan(blocks[b].first, blocks[b].count), ws, &shape)
            .WithContext("chunk block " + std::to_string(b) + " timestamps"));
  }
  return CheckTimestamps(ts, *h);
}

std::string ValuesContext(const ChunkHeader& h, std::size_t block) {
  return h.blocks == 1 ? std::string("chunk values")
                       : "chunk block " + std::to_string(block) + " values";
}

// Directory entry bytes of a group: u16 count, u16 timestamp block bytes (integer-coded
// timestamps only), u16 value block bytes.
std::size_t DirectoryEntryBytes(std::uint8_t ts_encoding) {
  return ts_encoding == kTimestampEncodingInt ? 6 : 4;
}

// The group directory against the header: every block holds 1..kChunkCapacity points, and the
// counts and block sizes add up to the header's count and sections.
Status CheckDirectory(std::span<const std::uint8_t> chunk, const ChunkHeader& h) {
  const std::size_t entry = DirectoryEntryBytes(h.ts_encoding);
  const std::size_t dir = h.blocks * entry;
  if (h.ts_bytes < dir) {
    return Bad("timestamp section of " + std::to_string(h.ts_bytes) + " bytes < directory of " +
               std::to_string(h.blocks) + " blocks");
  }
  const std::uint8_t* p = chunk.data() + kChunkHeaderBytes;
  std::uint64_t count = 0, ts_bytes = dir, value_bytes = 0;
  for (std::size_t b = 0; b < h.blocks; ++b, p += entry) {
    const std::uint16_t n = Load<std::uint16_t>(p);
    if (n == 0 || n > kChunkCapacity) {
      return Bad("block " + std::to_string(b) + " count " + std::to_string(n) + " outside 1.." +
                 std::to_string(kChunkCapacity));
    }
    count += n;
    if (entry == 6) ts_bytes += Load<std::uint16_t>(p + 2);
    value_bytes += Load<std::uint16_t>(p + entry - 2);
  }
  if (count != h.count || ts_bytes != h.ts_bytes || value_bytes != h.value_bytes) {
    return Bad("block directory (" + std::to_string(count) + " points, " +
               std::to_string(ts_bytes) + " + " + std::to_string(value_bytes) +
               " bytes) disagrees with the header (" + std::to_string(h.count) + ", " +
               std::to_string(h.ts_bytes) + " + " + std::to_string(h.value_bytes) + ")");
  }
  return Status::OK();
}

bool IsCompactEncoding(std::uint8_t value_encoding) {
  using codec::FloatEncoding;
  for (FloatEncoding e :
       {FloatEncoding::kAlpZstd, FloatEncoding::kDictionary, FloatEncoding::kAlpRadix,
        FloatEncoding::kAlpRice, FloatEncoding::kAlpHuffman, FloatEncoding::kAlpRanked}) {
    if (value_encoding == static_cast<std::uint8_t>(e)) return true;
  }
  return false;
}

// Header fields and checksum of a chunk whose payload is in place; returns its size.
std::size_t FinishChunk(const ChunkHeader& h, std::uint8_t* p) {
  p[0] = h.blocks > 1 ? kChunkGroupFormatVersion : kChunkFormatVersion;
  p[1] = static_cast<std::uint8_t>(h.type);
  p[2] = h.ts_encoding;
  p[3] = h.value_encoding;
  Store<std::uint16_t>(p + 4, h.count);
  p[6] = static_cast<std::uint8_t>(h.blocks - 1);
  p[7] = 0;
  Store<std::int64_t>(p + 8, h.min_ts_ns);
  Store<std::int64_t>(p + 16, h.max_ts_ns);
  Store<std::uint32_t>(p + 24, h.ts_bytes);
  Store<std::uint32_t>(p + 28, h.value_bytes);
  const std::size_t total = kChunkHeaderBytes + h.ts_bytes + std::size_t{h.value_bytes};
  Store<std::uint64_t>(p + 32, ChunkChecksum({p, total}, total - kChunkHeaderBytes));
  return total;
}

// Writes a group's directory entry for block `b`.
void StoreDirectoryEntry(std::uint8_t* section, std::uint8_t ts_encoding, std::size_t b,
                         std::size_t count, std::size_t ts_bytes, std::size_t value_bytes) {
  const std::size_t entry = DirectoryEntryBytes(ts_encoding);
  std::uint8_t* p = section + b * entry;
  Store<std::uint16_t>(p, static_cast<std::uint16_t>(count));
  if (entry == 6) Store<std::uint16_t>(p + 2, static_cast<std::uint16_t>(ts_bytes));
  Store<std::uint16_t>(p + entry - 2, static_cast<std::uint16_t>(value_bytes));
}

}  // namespace

std::size_t MaxSealedChunkBytes(std::size_t count) noexcept {
  return kChunkHeaderBytes + codec::MaxEncodedIntBytes(count) +
         std::max(codec::MaxEncodedFloatBytes(count, 8), codec::MaxEncodedIntBytes(count));
}

std::size_t ListChunkBlocks(std::span<const std::uint8_t> chunk, const ChunkHeader& h,
                            ChunkBlocks& blocks) noexcept {
  if (h.blocks <= 1) {
    blocks[0] = {0, h.count, chunk.subspan(kChunkHeaderBytes, h.ts_bytes),
                 chunk.subspan(kChunkHeaderBytes + h.ts_bytes, h.value_bytes)};
    return 1;
  }
  const std::size_t entry = DirectoryEntryBytes(h.ts_encoding);
  const std::uint8_t* dir = chunk.data() + kChunkHeaderBytes;
  std::size_t ts_at = kChunkHeaderBytes + h.blocks * entry;
  std::size_t value_at = kChunkHeaderBytes + h.ts_bytes;
  std::uint32_t first = 0;
  for (std::size_t b = 0; b < h.blocks; ++b, dir += entry) {
    const std::uint16_t count = Load<std::uint16_t>(dir);
    const std::size_t ts_bytes = entry == 6 ? Load<std::uint16_t>(dir + 2) : 0;
    const std::size_t value_bytes = Load<std::uint16_t>(dir + entry - 2);
    blocks[b] = {first, count, chunk.subspan(ts_at, ts_bytes), chunk.subspan(value_at, value_bytes)};
    first += count;
    ts_at += ts_bytes;
    value_at += value_bytes;
  }
  return h.blocks;
}

Status GroupChunks(std::span<const std::span<const std::uint8_t>> chunks, codec::Workspace& ws,
                   std::string* out) {
  const std::size_t n = chunks.size();
  if (n < 2 || n > kMaxChunkBlocks) {
    return Status::InvalidArgument("group of " + std::to_string(n) + " chunks, not 2.." +
                                   std::to_string(kMaxChunkBlocks));
  }
  std::array<ChunkHeader, kMaxChunkBlocks> hs;
  std::size_t points = 0, bound = 0;
  for (std::size_t i = 0; i < n; ++i) {
    INGOT_RETURN_IF_ERROR(ValidateChunk(chunks[i], &hs[i]).WithContext("chunk " + std::to_string(i)));
    if (hs[i].blocks != 1) return Status::InvalidArgument("chunk " + std::to_string(i) + " is a group");
    if (hs[i].type != hs[0].type) return Status::InvalidArgument("chunks of different types");
    if (i > 0 && hs[i].min_ts_ns <= hs[i - 1].max_ts_ns) {
      return Status::InvalidArgument("chunk " + std::to_string(i) + " does not follow chunk " +
                                     std::to_string(i - 1));
    }
    if (hs[i].value_bytes > 0xffff) return Status::InvalidArgument("value block over 64 KiB");
    points += hs[i].count;
    bound += hs[i].value_bytes + codec::MaxEncodedIntBytes(hs[i].count);
  }
  if (points > kMaxChunkPoints) {
    return Status::InvalidArgument(std::to_string(points) + " points, more than a chunk's " +
                                   std::to_string(kMaxChunkPoints));
  }
  // Regular when every point is first + i * step (unsigned arithmetic, as in IsRegular).
  alignas(64) std::int64_t ts[kChunkCapacity];
  std::uint64_t first = 0, step = 0, index = 0;
  bool regular = true;
  for (std::size_t i = 0; i < n && regular; ++i) {
    ChunkHeader h;
    INGOT_RETURN_IF_ERROR(DecodeTimestamps(chunks[i], std::span(ts, hs[i].count), hs[i].count, &h,
                                           ws, ChunkSource::kInMemory));
    if (i == 0) {
      first = static_cast<std::uint64_t>(ts[0]);
      step = static_cast<std::uint64_t>(hs[0].count > 1 ? ts[1] : hs[1].min_ts_ns) - first;
    }
    for (std::size_t k = 0; k < hs[i].count; ++k, ++index) {
      regular &= static_cast<std::uint64_t>(ts[k]) == first + index * step;
    }
  }
  ChunkHeader g;
  g.type = hs[0].type;
  g.ts_encoding = regular ? kTimestampEncodingRegular : kTimestampEncodingInt;
  g.value_encoding = hs[0].value_encoding;
  g.count = static_cast<std::uint16_t>(points);
  g.blocks = static_cast<std::uint8_t>(n);
  g.min_ts_ns = hs[0].min_ts_ns;
  g.max_ts_ns = hs[n - 1].max_ts_ns;
  const std::size_t dir = n * DirectoryEntryBytes(g.ts_encoding);
  out->resize(kChunkHeaderBytes + dir + bound);
  auto* base = reinterpret_cast<std::uint8_t*>(out->data());
  std::uint8_t* section = base + kChunkHeaderBytes;
  std::size_t at = kChunkHeaderBytes + dir;
  std::array<std::size_t, kMaxChunkBlocks> ts_bytes{};
  if (!regular) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::span<const std::uint8_t> block =
          chunks[i].subspan(kChunkHeaderBytes, hs[i].ts_bytes);
      if (hs[i].ts_encoding == kTimestampEncodingInt) {
        std::memcpy(base + at, block.data(), block.size());
        ts_bytes[i] = block.size();
      } else {
        ChunkHeader h;
        INGOT_RETURN_IF_ERROR(DecodeTimestamps(chunks[i], std::span(ts, hs[i].count),
                                               hs[i].count, &h, ws, ChunkSource::kInMemory));
        ts_bytes[i] = codec::EncodeInts(std::span<const std::int64_t>(ts, hs[i].count), ws,
                                        {base + at, codec::MaxEncodedIntBytes(hs[i].count)});
      }
      if (ts_bytes[i] > 0xffff) return Status::InvalidArgument("timestamp block over 64 KiB");
      at += ts_bytes[i];
    }
  }
  g.ts_bytes = static_cast<std::uint32_t>(at - kChunkHeaderBytes);
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const std::uint8_t> values =
        chunks[i].subspan(kChunkHeaderBytes + hs[i].ts_bytes, hs[i].value_bytes);
    std::memcpy(base + at, values.data(), values.size());
    at += values.size();
    StoreDirectoryEntry(section, g.ts_encoding, i, hs[i].count, ts_bytes[i], values.size());
  }
  g.value_bytes = static_cast<std::uint32_t>(at - kChunkHeaderBytes - g.ts_bytes);
  out->resize(FinishChunk(g, base));
  return Status::OK();
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

namespace {

// RecodeChunkCompact for a group: each value block not yet compact is re-encoded and kept when
// smaller; the timestamp blocks are copied.
bool RecodeGroupCompact(std::span<const std::uint8_t> chunk, ChunkHeader h,
                        codec::SeriesHint& hint, codec::Workspace& ws, std::string* out) {
  ChunkBlocks blocks;
  const std::size_t n = ListChunkBlocks(chunk, h, blocks);
  bool any = false;
  for (std::size_t b = 0; b < n; ++b) {
    any |= !blocks[b].values.empty() && !IsCompactEncoding(blocks[b].values[0]);
  }
  if (!any || !ValidateChunk(chunk, &h).ok()) return false;
  out->resize(chunk.size());  // the result is kept only when smaller
  auto* base = reinterpret_cast<std::uint8_t*>(out->data());
  std::memcpy(base + kChunkHeaderBytes, chunk.data() + kChunkHeaderBytes, h.ts_bytes);
  std::size_t at = kChunkHeaderBytes + h.ts_bytes;
  alignas(64) double values[kChunkCapacity];
  for (std::size_t b = 0; b < n; ++b) {
    std::span<const std::uint8_t> block = blocks[b].values;
    if (block.empty()) return false;
    const std::span<double> decoded(values, blocks[b].count);
    std::array<std::uint8_t, 64 + 9 * kChunkCapacity> room;
    if (!IsCompactEncoding(block[0]) && codec::DecodeDoubles(block, decoded, ws).ok() &&
        room.size() >= codec::MaxEncodedFloatBytes(decoded.size(), 8)) {
      const codec::EncodeResult r = codec::EncodeDoublesCompact(decoded, hint, ws, room);
      if (r.bytes < block.size()) block = std::span<const std::uint8_t>(room.data(), r.bytes);
    }
    if (at + block.size() > chunk.size()) return false;
    std::memcpy(base + at, block.data(), block.size());
    at += block.size();
    if (b == 0) h.value_encoding = block[0];
    StoreDirectoryEntry(base + kChunkHeaderBytes, h.ts_encoding, b, blocks[b].count,
                        blocks[b].ts.size(), block.size());
  }
  h.value_bytes = static_cast<std::uint32_t>(at - kChunkHeaderBytes - h.ts_bytes);
  if (at >= chunk.size()) return false;
  out->resize(FinishChunk(h, base));
  return true;
}

}  // namespace

bool RecodeChunkCompact(std::span<const std::uint8_t> chunk, codec::SeriesHint& hint,
                        codec::Workspace& ws, std::string* out) noexcept {
  ChunkHeader h;
  if (!ParseChunkHeader(chunk, &h).ok() || h.type != ValueType::kFloat) return false;
  if (h.blocks > 1) return RecodeGroupCompact(chunk, h, hint, ws, out);
  if (IsCompactEncoding(h.value_encoding)) return false;
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
  h->blocks = static_cast<std::uint8_t>(p[6] + 1u);
  h->min_ts_ns = Load<std::int64_t>(p + 8);
  h->max_ts_ns = Load<std::int64_t>(p + 16);
  h->ts_bytes = Load<std::uint32_t>(p + 24);
  h->value_bytes = Load<std::uint32_t>(p + 28);
  h->checksum = Load<std::uint64_t>(p + 32);
  if (h->version != kChunkFormatVersion && h->version != kChunkGroupFormatVersion) {
    return Bad("unknown format version " + std::to_string(h->version));
  }
  if ((h->version == kChunkGroupFormatVersion) != (h->blocks > 1)) {
    return Bad("format version " + std::to_string(h->version) + " with " +
               std::to_string(h->blocks) + " blocks");
  }
  if (p[1] >= kValueTypeCount) return Bad("unknown value type " + std::to_string(p[1]));
  if (h->ts_encoding != kTimestampEncodingInt && h->ts_encoding != kTimestampEncodingRegular) {
    return Bad("unknown timestamp encoding " + std::to_string(h->ts_encoding));
  }
  if (p[6] >= kMaxChunkBlocks) {
    return Bad(std::to_string(p[6] + 1) + " blocks, more than " + std::to_string(kMaxChunkBlocks));
  }
  const std::size_t max_count = h->blocks * kChunkCapacity;
  if (h->count < h->blocks || h->count > max_count) {
    return Bad("count " + std::to_string(h->count) + " outside " + std::to_string(h->blocks) +
               ".." + std::to_string(max_count));
  }
  if (h->min_ts_ns > h->max_ts_ns || (h->count == 1) != (h->min_ts_ns == h->max_ts_ns)) {
    return Bad("time range [" + std::to_string(h->min_ts_ns) + ", " +
               std::to_string(h->max_ts_ns) + "] inconsistent with count " +
               std::to_string(h->count));
  }
  if (h->ts_encoding == kTimestampEncodingRegular) {
    const std::uint64_t span =
        static_cast<std::uint64_t>(h->max_ts_ns) - static_cast<std::uint64_t>(h->min_ts_ns);
    if (h->blocks == 1 && h->ts_bytes != 0) {
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
  if (h->blocks > 1) return CheckDirectory(chunk, *h);
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
  ChunkBlocks blocks;
  const std::size_t n = ListChunkBlocks(chunk, h, blocks);
  for (std::size_t b = 0; b < n; ++b) {
    const ChunkBlock& block = blocks[b];
    const std::span<std::int64_t> out = values_raw.subspan(block.first, block.count);
    if (h.type != ValueType::kFloat) {
      INGOT_RETURN_IF_ERROR(
          codec::DecodeInts(block.values, out, ws).WithContext(ValuesContext(h, b)));
      continue;
    }
    alignas(64) double decoded[kChunkCapacity];
    INGOT_RETURN_IF_ERROR(
        codec::DecodeDoubles(block.values, std::span<double>(decoded, block.count), ws)
            .WithContext(ValuesContext(h, b)));
    std::memcpy(out.data(), decoded, block.count * sizeof(double));
  }
  return Status::OK();
}

namespace {

// Decodes the values of blocks [from, to) into values[0, ...), the first at values[0].
Status DecodeBlockValues(const ChunkHeader& h, const ChunkBlocks& blocks, std::size_t from,
                         std::size_t to, std::span<double> values, codec::Workspace& ws) {
  const std::size_t base = blocks[from].first;
  for (std::size_t b = from; b < to; ++b) {
    const ChunkBlock& block = blocks[b];
    const std::span<double> out = values.subspan(block.first - base, block.count);
    if (h.type == ValueType::kFloat) {
      // The common case decodes straight into the caller's span.
      INGOT_RETURN_IF_ERROR(
          codec::DecodeDoubles(block.values, out, ws).WithContext(ValuesContext(h, b)));
      continue;
    }
    alignas(64) std::int64_t decoded[kChunkCapacity];
    INGOT_RETURN_IF_ERROR(
        codec::DecodeInts(block.values, std::span<std::int64_t>(decoded, block.count), ws)
            .WithContext(ValuesContext(h, b)));
    for (std::size_t i = 0; i < block.count; ++i) out[i] = static_cast<double>(decoded[i]);
  }
  return Status::OK();
}

}  // namespace

Status DecodeChunk(std::span<const std::uint8_t> chunk, std::span<std::int64_t> ts,
                   std::span<double> values, codec::Workspace& ws, ChunkSource source) noexcept {
  ChunkHeader h;
  INGOT_RETURN_IF_ERROR(DecodeTimestamps(chunk, ts, values.size(), &h, ws, source));
  ChunkBlocks blocks;
  const std::size_t n = ListChunkBlocks(chunk, h, blocks);
  return DecodeBlockValues(h, blocks, 0, n, values, ws);
}

Status DecodeChunkOverlapping(std::span<const std::uint8_t> chunk, std::int64_t start_ns,
                              std::int64_t end_ns, std::span<std::int64_t> ts,
                              std::span<double> values, codec::Workspace& ws,
                              std::size_t* decoded, ChunkSource source) noexcept {
  *decoded = 0;
  ChunkHeader h;
  INGOT_RETURN_IF_ERROR(DecodeTimestamps(chunk, ts, values.size(), &h, ws, source));
  ChunkBlocks blocks;
  const std::size_t n = ListChunkBlocks(chunk, h, blocks);
  // Blocks [from, to): those whose first point is at or before end_ns and whose last is at or
  // after start_ns (timestamps are sorted, so they are consecutive).
  std::size_t from = 0, to = n;
  while (from < n && ts[blocks[from].first + blocks[from].count - 1] < start_ns) ++from;
  while (to > from && ts[blocks[to - 1].first] > end_ns) --to;
  if (from == to) return Status::OK();
  const std::size_t first = blocks[from].first;
  const std::size_t points = blocks[to - 1].first + blocks[to - 1].count - first;
  if (first > 0) std::memmove(ts.data(), ts.data() + first, points * sizeof(std::int64_t));
  INGOT_RETURN_IF_ERROR(DecodeBlockValues(h, blocks, from, to, values, ws));
  *decoded = points;
  return Status::OK();
}

}  // namespace ingot
