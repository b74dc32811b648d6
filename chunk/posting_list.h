// PostingList: the ascending series ids that carry one label pair.
//
// Most pairs of a high-cardinality label (host=..., pod=...) belong to exactly one series, so the
// first id is stored inline and a list allocates only from its second id on (then doubling). 16
// bytes per list.
//
// Thread safety: not thread-safe; the owner guards it.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

namespace ingot {

class PostingList {
 public:
  PostingList() = default;
  ~PostingList() { Free(); }
  PostingList(PostingList&& o) noexcept : size_(o.size_), cap_(o.cap_), u_(o.u_) {
    o.size_ = o.cap_ = 0;
  }
  PostingList& operator=(PostingList&& o) noexcept {
    if (this != &o) {
      Free();
      size_ = std::exchange(o.size_, 0);
      cap_ = std::exchange(o.cap_, 0);
      u_ = o.u_;
    }
    return *this;
  }
  PostingList(const PostingList&) = delete;
  PostingList& operator=(const PostingList&) = delete;

  // REQUIRES: id greater than every id added before (ids are created ascending).
  void Add(std::uint32_t id) {
    if (cap_ == 0 && size_ == 0) {
      u_.one = id;
      size_ = 1;
      return;
    }
    if (cap_ == 0 || size_ == cap_) Grow();
    u_.heap[size_++] = id;
  }

  std::span<const std::uint32_t> ids() const {
    return cap_ == 0 ? std::span<const std::uint32_t>(&u_.one, size_)
                     : std::span<const std::uint32_t>(u_.heap, size_);
  }
  std::uint32_t size() const { return size_; }
  std::size_t heap_bytes() const { return std::size_t{cap_} * sizeof(std::uint32_t); }

 private:
  void Grow() {
    const std::uint32_t next = cap_ == 0 ? 4 : cap_ * 2;
    auto* heap = new std::uint32_t[next];
    const auto old = ids();
    std::memcpy(heap, old.data(), old.size() * sizeof(std::uint32_t));
    Free();
    u_.heap = heap;
    cap_ = next;
  }
  void Free() {
    if (cap_ != 0) delete[] u_.heap;
    cap_ = 0;
  }

  std::uint32_t size_ = 0;
  std::uint32_t cap_ = 0;  // 0: the list is inline (at most one id)
  union {
    std::uint32_t one;
    std::uint32_t* heap;
  } u_{};
};

}  // namespace ingot
