// StringArena: append-only storage for many small strings (series keys, label names and values)
// with stable addresses.
//
// Strings are copied into 64 KiB pages; a string longer than a quarter page gets a page of its
// own. Nothing is ever freed or moved before the arena is destroyed, so a returned view stays
// valid as long as the arena. Per string the cost is its bytes and nothing else: no allocation
// header, no std::string, no capacity slack beyond the unused tail of the current page.
//
// Thread safety: not thread-safe; the owner serializes Add(). Views may be read from any thread
// once they were published to it under the owner's synchronization.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

namespace ingot {

class StringArena {
 public:
  static constexpr std::size_t kPageBytes = 64 * 1024;

  StringArena() = default;
  StringArena(const StringArena&) = delete;
  StringArena& operator=(const StringArena&) = delete;

  // Copies `s` into the arena and returns a view of the copy.
  std::string_view Add(std::string_view s);

  // Bytes held (pages and big strings), for memory accounting.
  std::size_t bytes_reserved() const { return bytes_reserved_; }

 private:
  std::vector<std::unique_ptr<char[]>> pages_;
  char* cursor_ = nullptr;
  std::size_t left_ = 0;
  std::size_t bytes_reserved_ = 0;
};

}  // namespace ingot
