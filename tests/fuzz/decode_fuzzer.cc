// libFuzzer target for one codec decoder (chosen by INGOT_FUZZ_DECODER at build time). The first
// two input bytes give the expected value count; the rest is the block. Any input must give an
// error or a valid decode; a successful decode of a float block must re-encode and round trip.
// The alp_zstd target builds its block around a real zstd frame of the fuzzer's bytes, so that
// the mutations reach the varints inside the frame (zstd's own decoder is fuzzed upstream). The
// dictionary, alp_radix, alp_rice, alp_huffman and alp_ranked targets prefix their encoding byte,
// so that every
// input reaches the encoding's header, varints, nested block, bitmap and packed fields. The chunk
// target ignores the count bytes and decodes a whole sealed chunk (header, timestamps, values)
// without its checksum, so that mutations reach the header checks and the timestamp decoders; a
// chunk that decodes must seal again into one that decodes to the same points.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "codec/codec.h"
#include "codec/format.h"

#if INGOT_FUZZ_DECODER == 3
#include <zstd.h>
#endif
#if INGOT_FUZZ_DECODER == 6
#include "chunk/chunk_format.h"
#endif

namespace {

ingot::codec::Workspace& Ws() {
  static auto* ws = new ingot::codec::Workspace();
  return *ws;
}

template <typename T>
void FuzzFloat(const std::uint8_t* data, std::size_t size, std::size_t count) {
  using namespace ingot::codec;
  using ingot::Status;
  std::vector<T> out(count);
  const Status st = [&] {
    if constexpr (sizeof(T) == 8) return DecodeDoubles({data, size}, out, Ws());
    else return DecodeFloats({data, size}, out, Ws());
  }();
  if (!st.ok()) return;
  std::vector<std::uint8_t> buf(MaxEncodedFloatBytes(count, sizeof(T)));
  SeriesHint hint;
  EncodeResult r;
  if constexpr (sizeof(T) == 8) r = EncodeDoubles(out, hint, Ws(), buf);
  else r = EncodeFloats(out, hint, Ws(), buf);
  std::vector<T> back(count);
  Status again;
  if constexpr (sizeof(T) == 8) again = DecodeDoubles({buf.data(), r.bytes}, back, Ws());
  else again = DecodeFloats({buf.data(), r.bytes}, back, Ws());
  if (!again.ok() || std::memcmp(back.data(), out.data(), count * sizeof(T)) != 0) __builtin_trap();
}

#if INGOT_FUZZ_DECODER == 3
// Input: the 13 header bytes after the block header (exponent, factor, flags, exception count,
// base), the varint stream, then the exceptions (10 bytes each).
void FuzzAlpZstd(const std::uint8_t* data, std::size_t size, std::size_t count) {
  using namespace ingot::codec;
  constexpr std::size_t kFields = 13;
  if (size < kFields) return;
  std::uint8_t fields[kFields];
  std::memcpy(fields, data, kFields);
  const std::size_t exceptions = (fields[3] | (fields[4] << 8)) % (count + 1);
  fields[3] = static_cast<std::uint8_t>(exceptions);
  fields[4] = static_cast<std::uint8_t>(exceptions >> 8);
  const std::size_t tail = exceptions * 10;
  if (size - kFields < tail) return;
  const std::uint8_t* stream = data + kFields;
  const std::size_t stream_len = size - kFields - tail;
  std::vector<std::uint8_t> frame(ZSTD_compressBound(stream_len));
  const std::size_t z = ZSTD_compress(frame.data(), frame.size(), stream, stream_len, 1);
  if (ZSTD_isError(z)) return;
  std::vector<std::uint8_t> block(kAlpZstdHeaderBytes + z + tail);
  block[0] = static_cast<std::uint8_t>(FloatEncoding::kAlpZstd);
  block[1] = static_cast<std::uint8_t>(count);
  block[2] = static_cast<std::uint8_t>(count >> 8);
  std::memcpy(block.data() + 3, fields, kFields);
  StoreLe<std::uint32_t>(block.data() + 16, static_cast<std::uint32_t>(z));
  std::memcpy(block.data() + kAlpZstdHeaderBytes, frame.data(), z);
  std::memcpy(block.data() + kAlpZstdHeaderBytes + z, data + size - tail, tail);
  FuzzFloat<double>(block.data(), block.size(), count);
}
#endif

#if INGOT_FUZZ_DECODER == 6
void FuzzChunk(const std::uint8_t* data, std::size_t size) {
  using namespace ingot;
  ChunkHeader h;
  if (!ParseChunkHeader({data, size}, &h).ok()) return;
  std::vector<std::int64_t> ts(h.count), raw(h.count);
  if (!DecodeChunkRaw({data, size}, ts, raw, Ws(), ChunkSource::kInMemory).ok()) return;
  for (std::size_t i = 1; i < ts.size(); ++i) {
    if (ts[i] <= ts[i - 1]) __builtin_trap();  // the decoder promised sorted timestamps
  }
  // Sealed again in blocks of the same counts (and joined when it was a group), the points must
  // come back the same.
  ChunkBlocks blocks;
  const std::size_t n = ListChunkBlocks({data, size}, h, blocks);
  std::vector<std::vector<std::uint8_t>> sealed(n);
  std::vector<std::span<const std::uint8_t>> spans;
  ingot::codec::SeriesHint hint;
  for (std::size_t b = 0; b < n; ++b) {
    const std::size_t first = blocks[b].first, count = blocks[b].count;
    sealed[b].resize(MaxSealedChunkBytes(count));
    sealed[b].resize(SealChunk(h.type, std::span(ts).subspan(first, count),
                               std::span<const std::uint64_t>(
                                   reinterpret_cast<const std::uint64_t*>(raw.data()) + first,
                                   count),
                               hint, Ws(), sealed[b]));
    spans.emplace_back(sealed[b]);
  }
  std::string group;
  if (n > 1 && !GroupChunks(spans, Ws(), &group).ok()) __builtin_trap();
  const std::span<const std::uint8_t> again =
      n > 1 ? std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(group.data()),
                                            group.size())
            : spans[0];
  std::vector<std::int64_t> ts2(h.count), raw2(h.count);
  if (!DecodeChunkRaw(again, ts2, raw2, Ws()).ok() || ts2 != ts || raw2 != raw) __builtin_trap();
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t count = 1 + ((data[0] | (data[1] << 8)) % ingot::codec::kBlockCapacity);
  data += 2;
  size -= 2;
#if INGOT_FUZZ_DECODER == 0
  FuzzFloat<double>(data, size, count);
#elif INGOT_FUZZ_DECODER == 1
  FuzzFloat<float>(data, size, count);
#elif INGOT_FUZZ_DECODER == 3
  FuzzAlpZstd(data, size, count);
#elif INGOT_FUZZ_DECODER == 4 || INGOT_FUZZ_DECODER == 5 || INGOT_FUZZ_DECODER == 7 || \
    INGOT_FUZZ_DECODER == 8 || INGOT_FUZZ_DECODER == 9
  std::vector<std::uint8_t> block(3 + size);
  block[0] = static_cast<std::uint8_t>(
      INGOT_FUZZ_DECODER == 4   ? ingot::codec::FloatEncoding::kDictionary
      : INGOT_FUZZ_DECODER == 5 ? ingot::codec::FloatEncoding::kAlpRadix
      : INGOT_FUZZ_DECODER == 7 ? ingot::codec::FloatEncoding::kAlpRice
      : INGOT_FUZZ_DECODER == 8 ? ingot::codec::FloatEncoding::kAlpHuffman
                                : ingot::codec::FloatEncoding::kAlpRanked);
  block[1] = static_cast<std::uint8_t>(count);
  block[2] = static_cast<std::uint8_t>(count >> 8);
  if (size > 0) std::memcpy(block.data() + 3, data, size);
  FuzzFloat<double>(block.data(), block.size(), count);
#elif INGOT_FUZZ_DECODER == 6
  (void)count;
  FuzzChunk(data, size);
#else
  std::vector<std::int64_t> out(count);
  (void)ingot::codec::DecodeInts({data, size}, out, Ws());
#endif
  return 0;
}
