#include "query/crc32c.h"

#include <boost/crc.hpp>

namespace ingot {

std::uint32_t Crc32c(std::string_view data) {
  // Castagnoli's polynomial, reflected input and output, all-ones initial value and final xor.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

}  // namespace ingot
