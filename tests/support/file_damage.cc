#include "tests/support/file_damage.h"

#include <filesystem>
#include <fstream>

namespace ingot::testing {

bool FlipByte(const std::string& path, std::uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!file.good()) return false;
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x5a);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
  return file.good();
}

std::string LargestFile(const std::string& dir, const std::string& suffix, std::uint64_t* size) {
  std::string largest;
  *size = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().string();
    if (entry.is_regular_file() && name.ends_with(suffix) && entry.file_size() > *size) {
      *size = entry.file_size();
      largest = name;
    }
  }
  return largest;
}

}  // namespace ingot::testing
