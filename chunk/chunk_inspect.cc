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
  // ParseChunkHeader checked that both blocks lie inside the chunk.
  const std::span<const std::uint8_t> ts_block =
      chunk.subspan(kChunkHeaderBytes, d.header.ts_bytes);
  const std::span<const std::uint8_t> value_block =
      chunk.subspan(kChunkHeaderBytes + d.header.ts_bytes, d.header.value_bytes);
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
    const ChunkDescription d =
        DescribeChunk({reinterpret_cast<const std::uint8_t*>(v.data()), v.size()});
    if (!d.ok) {
      ++stats->unreadable_chunks;
      continue;
    }
    AddTo(&stats->all, d);
    stats->timestamp_bytes += d.header.ts_bytes;
    if (d.is_float) {
      AddTo(&stats->by_float_encoding[static_cast<std::size_t>(d.value.encoding)], d);
    } else {
      AddTo(&stats->integer, d);
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning the chunks family");
  return Status::OK();
}

}  // namespace ingot
