// Helpers for tests that damage files on disk behind the storage's back.
#pragma once

#include <cstdint>
#include <string>

namespace ingot::testing {

// XORs the byte at `offset` of `path` with 0x5a; false if the file cannot be opened.
bool FlipByte(const std::string& path, std::uint64_t offset);

// The largest regular file in `dir` whose name ends with `suffix` ("" when none), and its size.
std::string LargestFile(const std::string& dir, const std::string& suffix, std::uint64_t* size);

}  // namespace ingot::testing
