// IdHashTable: an open-addressing hash table of 32-bit ids, for indexes whose entries live in
// arrays elsewhere (series records, interned strings, label pairs).
//
// A slot holds the 64-bit hash and the id (12 bytes); the caller compares an id against the
// probed key, so the keys are owned once, by the caller. The stored hash filters probes without
// touching keys and lets growth rehash without them. Linear probing; the table doubles at 70%
// load. Id 0 marks an empty slot and is never stored.
//
// Thread safety: not thread-safe; the owner guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ingot {

class IdHashTable {
 public:
  IdHashTable() : slots_(16) {}

  // The id whose key equals the probed key (per `equal(id)`), or 0.
  template <typename Equal>
  std::uint32_t Find(std::uint64_t hash, Equal&& equal) const {
    const auto tag = static_cast<std::uint32_t>(hash >> 32);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = static_cast<std::size_t>(hash) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id == 0) return 0;
      if (s.tag == tag && equal(s.id)) return s.id;
    }
  }

  // REQUIRES: id != 0 and no entry equal to it is present.
  void Insert(std::uint64_t hash, std::uint32_t id) {
    if ((size_ + 1) * 10 > slots_.size() * 7) Grow();
    Place(Slot{static_cast<std::uint32_t>(hash >> 32), static_cast<std::uint32_t>(hash), id});
    ++size_;
  }

  std::size_t size() const { return size_; }
  std::size_t heap_bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    std::uint32_t tag = 0;   // high 32 bits of the hash: compared before the key
    std::uint32_t home = 0;  // low 32 bits of the hash: pick the home slot
    std::uint32_t id = 0;
  };

  void Place(Slot s) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = s.home & mask;
    while (slots_[i].id != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.id != 0) Place(s);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace ingot
