// Sealed chunk format: one series' points as a self-checking byte string. A chunk is one block of
// at most 1024 points (what ingest seals), or a group of 2..8 such blocks (what ChunkGrouper
// writes when it joins a series' consecutive chunks: one header and one key for up to 8192
// points).
//
//   offset size
//   0      1    format version: kChunkFormatVersion for a single block, kChunkGroupFormatVersion
//               for a group (a reader that predates groups refuses them by their version)
//   1      1    value type (ValueType)
//   2      1    timestamp encoding: kTimestampEncodingInt (codec::EncodeInts), or
//               kTimestampEncodingRegular (min + i * step, step = (max - min) / (count - 1):
//               no timestamp blocks)
//   3      1    value encoding: codec::FloatEncoding for float series (of the first block in a
//               group), kIntValueEncoding otherwise
//   4      2    count (1..1024; in a group, the sum of its blocks' counts)
//   6      1    blocks - 1 (0: a single block, as in every chunk written before groups)
//   7      1    reserved, 0
//   8      8    min timestamp (ns, the first point)
//   16     8    max timestamp (ns, the last point)
//   24     4    timestamp section bytes (T)
//   28     4    value section bytes (V)
//   32     8    checksum: XXH64(payload, seed = XXH64(bytes 0..31, 0))
//   40     T    timestamp section
//   40+T   V    value section
//
// A single block: the timestamp section is its timestamp block (empty when regular), the value
// section its value block. A group of B blocks: the timestamp section is a directory, B entries of
// u16 count, u16 timestamp block bytes (only with kTimestampEncodingInt), u16 value block bytes,
// followed by the B timestamp blocks; the value section is the B value blocks.
//
// All integers little-endian. Timestamps are strictly increasing within a chunk. The drawing with
// the rationale lives in docs/chunk-format.md.
//
// Thread safety: free functions over caller buffers; reentrant (one Workspace per thread).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "chunk/series_key.h"
#include "codec/codec.h"
#include "config/status.h"

namespace ingot {

inline constexpr std::uint8_t kChunkFormatVersion = 1;
inline constexpr std::uint8_t kChunkGroupFormatVersion = 2;
inline constexpr std::size_t kChunkHeaderBytes = 40;
// Points of one block: what ingest seals into a chunk.
inline constexpr std::size_t kChunkCapacity = codec::kBlockCapacity;
// A group joins at most this many blocks, so a chunk holds at most kMaxChunkPoints points.
inline constexpr std::size_t kMaxChunkBlocks = 8;
inline constexpr std::size_t kMaxChunkPoints = kMaxChunkBlocks * kChunkCapacity;
// persisted: never renumber
inline constexpr std::uint8_t kTimestampEncodingInt = 1;
// Points at a fixed interval (what scrapers and agents write): the header's min, max and count
// give every timestamp, so the chunk stores none (20 bytes saved per chunk).
inline constexpr std::uint8_t kTimestampEncodingRegular = 2;
inline constexpr std::uint8_t kIntValueEncoding = 0x80;
// Offset of the max timestamp: the retention filter reads only this field.
inline constexpr std::size_t kChunkMaxTsOffset = 16;

struct ChunkHeader {
  std::uint8_t version = 0;
  ValueType type = ValueType::kFloat;
  std::uint8_t ts_encoding = 0;
  std::uint8_t value_encoding = 0;
  std::uint16_t count = 0;
  std::uint8_t blocks = 1;  // 1 for a single block, 2..kMaxChunkBlocks for a group
  std::int64_t min_ts_ns = 0;
  std::int64_t max_ts_ns = 0;
  std::uint32_t ts_bytes = 0;
  std::uint32_t value_bytes = 0;
  std::uint64_t checksum = 0;
};

// One block of a chunk: points [first, first + count) of the chunk, its timestamp block (empty
// when the chunk's timestamps are regular) and its value block.
struct ChunkBlock {
  std::uint32_t first = 0;
  std::uint16_t count = 0;
  std::span<const std::uint8_t> ts;
  std::span<const std::uint8_t> values;
};
using ChunkBlocks = std::array<ChunkBlock, kMaxChunkBlocks>;

// The blocks of a chunk, in time order; returns how many (header.blocks).
// REQUIRES: ParseChunkHeader(chunk, &header) returned OK.
std::size_t ListChunkBlocks(std::span<const std::uint8_t> chunk, const ChunkHeader& header,
                            ChunkBlocks& blocks) noexcept;

// Upper bound of a sealed chunk of `count` points; size the seal buffer with it.
std::size_t MaxSealedChunkBytes(std::size_t count) noexcept;

// Which float encoder a chunk is sealed with: what the chunk's life asks of it.
enum class SealFor : std::uint8_t {
  kIngest,   // codec::EncodeDoubles: sealed chunks as points arrive (fast to write and to read)
  kHead,     // codec::EncodeDoublesForHead: checkpointed heads, rewritten often, read at recovery
  kCompact,  // codec::EncodeDoublesCompact: background rewrites (smallest, several times slower)
};

// Encodes points into `out` and returns the bytes written. `values_bits` holds double bits for a
// float series and int64 values for integer/boolean series. Uses and updates `hint` (float only).
// REQUIRES: 1 <= ts.size() == values_bits.size() <= kChunkCapacity; ts strictly increasing;
//           out.size() >= MaxSealedChunkBytes(ts.size()).
std::size_t SealChunk(ValueType type, std::span<const std::int64_t> ts,
                      std::span<const std::uint64_t> values_bits, codec::SeriesHint& hint,
                      codec::Workspace& ws, std::span<std::uint8_t> out,
                      ChunkHeader* header = nullptr, SealFor purpose = SealFor::kIngest) noexcept;

// Joins consecutive single-block chunks of one series (in time order, one value type, at most
// kMaxChunkPoints points together) into one group chunk in `*out`. Value blocks are copied as
// they are; timestamps become regular when all points are at one interval, and otherwise each
// block keeps (or gets) an integer-coded timestamp block. Every input is validated (checksum
// included): a corrupt, grouped or out-of-order input is Corruption or InvalidArgument and
// `*out` is unspecified.
Status GroupChunks(std::span<const std::span<const std::uint8_t>> chunks, codec::Workspace& ws,
                   std::string* out);

// Rewrites a sealed float chunk with the compact value encoding; true with `*out` holding the new
// chunk when that is smaller. A group is rewritten block by block (blocks already compact are
// kept). A chunk that is not a float chunk, is already compact or does not validate is left as it
// is (false). `hint` carries the series' encoding state from one chunk to
// the next when consecutive calls rewrite one series.
bool RecodeChunkCompact(std::span<const std::uint8_t> chunk, codec::SeriesHint& hint,
                        codec::Workspace& ws, std::string* out) noexcept;

// Structural checks only (size, version, type, count, block sizes, min <= max); no checksum. Cheap
// enough for range filtering before a decode.
Status ParseChunkHeader(std::span<const std::uint8_t> chunk, ChunkHeader* header) noexcept;

// A checkpointed head buffer's stored value: the head's points as a sealed chunk, then the
// series' saved codec hint (codec::kSavedHintBytes), so that a restart seals the series' next
// chunk with a warm hint. Values written before hints were saved hold the chunk alone.
// Writes the hint after `chunk_bytes` bytes of `buffer` and returns the value's size.
// REQUIRES: buffer.size() >= chunk_bytes + codec::kSavedHintBytes.
std::size_t AppendHeadHint(const codec::SeriesHint& hint, std::size_t chunk_bytes,
                           std::span<std::uint8_t> buffer) noexcept;
// The chunk of a head value, and its hint: *hint is left as it is when the value has none or
// the hint is unreadable (that costs speed only; the chunk is checked on its own).
std::span<const std::uint8_t> SplitHeadValue(std::span<const std::uint8_t> value,
                                             codec::SeriesHint* hint) noexcept;

// ParseChunkHeader plus the checksum.
Status ValidateChunk(std::span<const std::uint8_t> chunk, ChunkHeader* header) noexcept;

// Where a chunk's bytes come from: kStored for anything read back from RocksDB (the checksum is
// verified), kInMemory for bytes this process encoded and kept in memory (a head buffer's frozen
// segments), where the checksum guards against nothing that the structural and timestamp checks
// do not, and costs a hash of every byte on every read.
enum class ChunkSource : std::uint8_t { kStored, kInMemory };

// DecodeChunk for a range read: only the blocks that may hold points in [start_ns, end_ns] are
// decoded (all of a single-block chunk), into the front of ts/values; *decoded gets their number
// of points (0 when no block overlaps). Timestamps are decoded and checked whole; a group with
// regular timestamps skips the other blocks' values entirely. Sizes as for DecodeChunk.
Status DecodeChunkOverlapping(std::span<const std::uint8_t> chunk, std::int64_t start_ns,
                              std::int64_t end_ns, std::span<std::int64_t> ts,
                              std::span<double> values, codec::Workspace& ws,
                              std::size_t* decoded,
                              ChunkSource source = ChunkSource::kStored) noexcept;

// Validates and decodes the whole chunk. Integer and boolean series come back as doubles.
// REQUIRES: ts.size() == values.size() == header count (ParseChunkHeader first); a size mismatch is
// reported as InvalidArgument. After a decode, timestamps are checked to be strictly increasing
// and to match the header's min/max.
Status DecodeChunk(std::span<const std::uint8_t> chunk, std::span<std::int64_t> ts,
                   std::span<double> values, codec::Workspace& ws,
                   ChunkSource source = ChunkSource::kStored) noexcept;

// As DecodeChunk, but values come back as their stored 64-bit pattern: double bits for float
// series, the int64 itself for integer/boolean series.
Status DecodeChunkRaw(std::span<const std::uint8_t> chunk, std::span<std::int64_t> ts,
                      std::span<std::int64_t> values_raw, codec::Workspace& ws,
                      ChunkSource source = ChunkSource::kStored) noexcept;

}  // namespace ingot
