#include "chunk/string_arena.h"

#include <cstring>

namespace ingot {

std::string_view StringArena::Add(std::string_view s) {
  if (s.empty()) return {};
  if (s.size() > kPageBytes / 4) {
    // Big strings would waste the rest of a page; they get an exact allocation instead.
    pages_.push_back(std::make_unique_for_overwrite<char[]>(s.size()));
    bytes_reserved_ += s.size();
    std::memcpy(pages_.back().get(), s.data(), s.size());
    return {pages_.back().get(), s.size()};
  }
  if (s.size() > left_) {
    pages_.push_back(std::make_unique_for_overwrite<char[]>(kPageBytes));
    bytes_reserved_ += kPageBytes;
    cursor_ = pages_.back().get();
    left_ = kPageBytes;
  }
  std::memcpy(cursor_, s.data(), s.size());
  const std::string_view out(cursor_, s.size());
  cursor_ += s.size();
  left_ -= s.size();
  return out;
}

}  // namespace ingot
