// Workspace: caller-owned scratch memory for encoding and decoding blocks.
//
// One per thread; reused for every block so that the codec never allocates per block. About 80 KiB:
// keep it on the heap or in a long-lived object rather than on a small stack.
// Thread safety: not thread-safe; use one Workspace per thread.
#pragma once

#include <cstdint>

namespace ingot::codec {

struct ZstdContexts;

class Workspace {
 public:
  static constexpr int kLanes = 1024;
  // Room for any encoded block (raw double block plus header) with slack for padded bit reads
  // (a grouped-XOR group may read 260 bytes before its bounds check).
  static constexpr int kScratchBytes = kLanes * 8 + 512;

  Workspace() = default;
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // Scratch arrays sized for one block. Their contents are unspecified between calls.
  alignas(64) std::int64_t ints[kLanes];
  // Also a Rice block's escapes' rests, then (lane order) its numbers in block order, decoding.
  alignas(64) std::int64_t ints2[kLanes];
  alignas(64) std::uint64_t bits[kLanes];
  alignas(64) std::uint16_t positions[kLanes];
  alignas(64) std::uint16_t lefts[kLanes];  // also a Rice block's escapes' positions, decoding
  // The compact ALP encodings' exceptions that decode by division (codec/alp_compact.cc).
  alignas(64) std::uint16_t divided[kLanes];
  std::size_t divided_count = 0;
  // Packed words for the FFOR kernels (one spare word for the short-block stream).
  alignas(64) std::uint64_t packed[kLanes + 8];
  // One bit per value: the ALP exceptions of the current block.
  alignas(64) std::uint64_t exception_bitmap[kLanes / 64];
  // A second encoded block (the runner-up candidate) or a zero-padded copy of an input stream.
  alignas(64) std::uint8_t bytes[kScratchBytes];
  // A copy of an input bit stream with room for a reader that runs up to kStreamSlack bytes past
  // its end without a bounds check per read (codec/alp_huffman.cc).
  static constexpr int kStreamSlack = 1024;
  alignas(64) std::uint8_t stream[kScratchBytes + kStreamSlack];
  // A dictionary block's value per run, from runs[kRunSlack] on, with room around it for the
  // run expansion's vector reads (codec/dictionary.cc, simd::kExpandRunsSlack).
  static constexpr int kRunSlack = 16;
  alignas(64) double runs[kLanes + 2 * kRunSlack];
  // zstd's compression and decompression contexts, made on first use by the entropy-coded
  // encoding (codec/alp_zstd.cc) and kept for the Workspace's life.
  ZstdContexts* zstd = nullptr;
};

}  // namespace ingot::codec
