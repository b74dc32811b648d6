#include "chunk/chunk_inspect.h"

#include <memory>

#include <rocksdb/iterator.h>
#include <rocksdb/options.h>

namespace ingot {

ChunkDescription DescribeChunk(std::span<const std::uint8_t> chunk) {
  ChunkDescription d;
  d.bytes = chunk.size();
  Status st = ParseChunkHeader(chunk, &d.header);
  if (!st.ok()) {
    d.error = st.ToString();
    return d;
  }
  d.header_ok = true;
  // ParseChunkHeader checked that every block lies inside the chunk. A group is described by its
  // first block.
  ChunkBlocks blocks;
  ListChunkBlocks(chunk, d.header, blocks);
  const std::span<const std::uint8_t> ts_block = blocks[0].ts;
  const std::span<const std::uint8_t> value_block = blocks[0].values;
  if (d.header.ts_encoding == kTimestampEncodingRegular) {
    d.ts_encoding_name = "regular";
  } else {
    d.ts_encoding_name = ts_block.empty() ? "unknown" : codec::IntEncodingName(ts_block[0]);
  }
  if (d.header.type != ValueType::kFloat) {
    d.value_encoding_name =
        std::string("int_") +
        (value_block.empty() ? "unknown" : codec::IntEncodingName(value_block[0]));
    d.ok = true;
    return d;
  }
  d.is_float = true;
  st = codec::InspectFloatBlock(value_block, &d.value);
  if (!st.ok()) {
    d.error = st.ToString();
    return d;
  }
  d.value_encoding_name = codec::FloatEncodingName(d.value.encoding);
  d.ok = true;
  return d;
}

namespace {

void AddTo(EncodingTotals* t, const ChunkDescription& d) {
  t->chunks += 1;
  t->values += d.header.count;
  t->value_bytes += d.header.value_bytes;
  t->chunk_bytes += d.bytes;
}

}  // namespace

Status CollectCodecStats(ChunkStore& store, std::uint64_t max_chunks, CodecStats* stats) {
  *stats = CodecStats{};
  rocksdb::DB* db = store.db();
  if (db == nullptr) return Status::IOError("the store is closed");
  rocksdb::ReadOptions read;
  read.fill_cache = false;  // a report must not evict the queries' blocks
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, store.chunks_cf()));
  std::uint64_t seen = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (seen == max_chunks) {
      stats->truncated = true;
      break;
    }
    ++seen;
    const rocksdb::Slice v = it->value();
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(v.data()),
                                              v.size());
    const ChunkDescription d = DescribeChunk(bytes);
    if (!d.ok) {
      ++stats->unreadable_chunks;
      continue;
    }
    AddTo(&stats->all, d);
    stats->timestamp_bytes += d.header.ts_bytes;
    if (!d.is_float) {
      AddTo(&stats->integer, d);
      continue;
    }
    // A group's blocks count under their own encodings, sharing the group's bytes by value bytes.
    ChunkBlocks blocks;
    const std::size_t n = ListChunkBlocks(bytes, d.header, blocks);
    for (std::size_t b = 0; b < n; ++b) {
      codec::FloatBlockInfo info;
      if (!codec::InspectFloatBlock(blocks[b].values, &info).ok()) continue;
      EncodingTotals& t = stats->by_float_encoding[static_cast<std::size_t>(info.encoding)];
      t.chunks += 1;
      t.values += blocks[b].count;
      t.value_bytes += blocks[b].values.size();
      t.chunk_bytes += d.header.value_bytes == 0
                           ? d.bytes / n
                           : d.bytes * blocks[b].values.size() / d.header.value_bytes;
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning the chunks family");
  return Status::OK();
}

}  // namespace ingot
