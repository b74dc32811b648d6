// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of remote read's streamed
// frames (query/remote_read_format.h) as Go's crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
// computes it. Boost.CRC's table-driven implementation: a frame is checksummed once per answer,
// far from the bottleneck (decoding the chunks and the socket).
//
// Thread safety: thread-safe (no state besides constant tables).
#pragma once

#include <cstdint>
#include <string_view>

namespace ingot {

// The CRC-32C of `data` (initial value and final xor 0xFFFFFFFF, as usual).
std::uint32_t Crc32c(std::string_view data);

}  // namespace ingot
