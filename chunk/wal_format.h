// WAL byte layout: segment files of framed records.
//
// A segment file starts with a 16-byte header:
//   "INGOTWAL" (8 bytes) | u32 format version | u32 reserved
// followed by records:
//   u32 magic (kWalRecordMagic) | u32 payload length L | u64 XXH64(payload, seed = L) | payload
// All integers little-endian. The magic lets recovery resynchronize after a corrupt record: it
// scans forward for the next magic whose length and checksum verify.
//
// A points payload (kind kWalPointsRecord) is
//   u8 kind | u8[3] reserved | u32 count | count x (u64 sid | i64 ts_ns | u64 value bits | u8 type)
// A batch payload (kind kWalBatchRecord) carries the definitions of new series ahead of points:
//   u8 kind | u8[3] reserved | u32 count | u32 D | D bytes of definitions | count x point (as above)
// where a definition is u64 sid | u8 type | u32 key bytes K | K bytes of canonical key.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ingot {

inline constexpr char kWalFileMagic[8] = {'I', 'N', 'G', 'O', 'T', 'W', 'A', 'L'};
inline constexpr std::uint32_t kWalFormatVersion = 1;
inline constexpr std::size_t kWalFileHeaderBytes = 16;
inline constexpr std::uint32_t kWalRecordMagic = 0x1A6077E5;
inline constexpr std::size_t kWalRecordHeaderBytes = 16;
// A record larger than this is treated as corrupt framing (a batch is far smaller).
inline constexpr std::uint32_t kWalMaxRecordBytes = 256u << 20;

// persisted: never renumber
inline constexpr std::uint8_t kWalPointsRecord = 1;
inline constexpr std::size_t kWalPointsHeaderBytes = 8;
inline constexpr std::size_t kWalPointBytes = 25;
inline constexpr std::uint8_t kWalBatchRecord = 2;
inline constexpr std::size_t kWalBatchHeaderBytes = 12;
inline constexpr std::size_t kWalDefinitionHeaderBytes = 13;

}  // namespace ingot
