// What the codec did with stored data, for reports (the codec inspector, node/codec_routes.h):
// one chunk's header and value-block parameters, and the node-wide mix of encodings.
//
// Both read headers only and never decode points. A chunk whose header does not parse is
// described with `ok == false` and the reason, not skipped: a report shows damage too.
//
// Thread safety: reentrant; CollectCodecStats reads the store through a RocksDB iterator and may
// run beside ingest.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "chunk/chunk_format.h"
#include "chunk/chunk_store.h"
#include "codec/block_info.h"
#include "config/status.h"

namespace ingot {

struct ChunkDescription {
  bool ok = false;         // header (and, for float chunks, the value block's header) parsed
  std::string error;       // why not, when !ok
  bool header_ok = false;  // the chunk header parsed (the value block's may still not)
  ChunkHeader header;      // valid when header_ok
  std::size_t bytes = 0;   // the whole stored chunk, header included
  // Float chunks: the value block's parameters (a group's first block). Integer and boolean chunks: unset.
  bool is_float = false;
  codec::FloatBlockInfo value;
  // Names of the encodings: the float encoding ("alp", ...) or "int_<kind>" for integer and
  // boolean values; the timestamp block's integer encoding ("delta_of_delta", ...).
  std::string value_encoding_name;
  std::string ts_encoding_name;
};

// Describes a stored chunk from its bytes (no checksum, no decode).
ChunkDescription DescribeChunk(std::span<const std::uint8_t> chunk);

// Totals of one encoding over many chunks.
struct EncodingTotals {
  std::uint64_t chunks = 0;  // blocks: a group counts once per block, under each one's encoding
  std::uint64_t values = 0;
  std::uint64_t value_bytes = 0;  // value blocks only
  std::uint64_t chunk_bytes = 0;  // whole chunks: headers and timestamps included
};

struct CodecStats {
  // Float chunks by value encoding (index: codec::FloatEncoding), then integer/boolean chunks.
  std::array<EncodingTotals, codec::kFloatEncodingCount> by_float_encoding{};
  EncodingTotals integer;
  EncodingTotals all;
  std::uint64_t timestamp_bytes = 0;  // timestamp blocks of all chunks
  std::uint64_t unreadable_chunks = 0;
  bool truncated = false;  // stopped after max_chunks
};

// Walks the sealed chunks family (not late chunks, not open heads), at most `max_chunks` chunks.
Status CollectCodecStats(ChunkStore& store, std::uint64_t max_chunks, CodecStats* stats);

}  // namespace ingot
