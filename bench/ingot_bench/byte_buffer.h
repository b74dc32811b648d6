// ByteBuffer: a growable byte buffer that is written through a raw pointer.
//
// Unlike std::string it does not zero-fill on growth, and clearing keeps the capacity, so a buffer
// reused for every batch stops allocating once it has seen the largest batch.
//
// Thread safety: none; one owner at a time.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace ingot::bench {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;
  ByteBuffer(ByteBuffer&&) noexcept = default;
  ByteBuffer& operator=(ByteBuffer&&) noexcept = default;

  // Returns a pointer where up to `bytes` more bytes may be written; they count once Commit()ed.
  // The pointer is valid until the next call to Reserve().
  char* Reserve(size_t bytes) {
    if (size_ + bytes > capacity_) Grow(size_ + bytes);
    return data_.get() + size_;
  }
  // REQUIRES: bytes <= the amount passed to the last Reserve().
  void Commit(size_t bytes) { size_ += bytes; }

  void Append(std::string_view s) {
    std::memcpy(Reserve(s.size()), s.data(), s.size());
    Commit(s.size());
  }

  void Clear() { size_ = 0; }
  size_t size() const { return size_; }
  const char* data() const { return data_.get(); }
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  void Grow(size_t min_capacity) {
    size_t capacity = capacity_ == 0 ? 4096 : capacity_;
    while (capacity < min_capacity) capacity *= 2;
    std::unique_ptr<char[]> data(new char[capacity]);
    if (size_ > 0) std::memcpy(data.get(), data_.get(), size_);
    data_ = std::move(data);
    capacity_ = capacity;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ingot::bench
