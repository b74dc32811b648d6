// SeriesCache: one connection's (or request's) map from a series as written, its line-protocol
// prefix (measurement and tags, escaped, in input order) and field key, to its series id and type.
//
// It saves the canonical key and the index lookup for series the connection has seen. The hot path
// is allocation-free: a flat open-addressing table of 32-byte slots holding the 64-bit hash, the
// id, and where the raw bytes sit in one byte arena; a hit compares the bytes, so two series never
// share an entry. The cache is bounded (entries and bytes); when either bound is reached it is
// emptied at once (the table zeroed, the arena rewound) rather than evicting entry by entry: a
// connection that streams ever-new series pays nothing for keeping them, and the node-wide memory
// for series stays the index's.
//
// Thread safety: not thread-safe; one cache per ingester.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "chunk/series_key.h"

namespace ingot::ingest {

class SeriesCache {
 public:
  struct Entry {
    SeriesId sid;
    ValueType type;
  };

  // REQUIRES: max_entries >= 16.
  SeriesCache(std::size_t max_entries, std::size_t max_key_bytes);

  // Hash of a line's prefix; combine with each field through Find/Insert.
  static std::uint64_t HashPrefix(std::string_view prefix);

  // True with `*out` set when (prefix, field) is cached.
  bool Find(std::uint64_t prefix_hash, std::string_view prefix, std::string_view field,
            Entry* out) const;

  // The same lookup in steps, for callers that look up many keys at once and overlap their cache
  // misses: Hash(), then Prefetch() (the key's first slot), a few keys later PrefetchKey() (the
  // bytes that slot points at, when its hash matches), a few keys later FindHashed().
  static std::uint64_t Hash(std::uint64_t prefix_hash, std::string_view field) {
    return HashField(prefix_hash, field);
  }
  void Prefetch(std::uint64_t hash) const {
    __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]);
  }
  void PrefetchKey(std::uint64_t hash) const;
  bool FindHashed(std::uint64_t hash, std::string_view prefix, std::string_view field,
                  Entry* out) const;
  // REQUIRES: (prefix, field) not cached.
  void Insert(std::uint64_t prefix_hash, std::string_view prefix, std::string_view field,
              Entry entry);

  std::size_t size() const { return size_; }
  std::size_t clears() const { return clears_; }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t offset = 0;  // of the prefix bytes in bytes_; the field follows
    std::uint32_t prefix_len = 0;
    std::uint32_t field_len = 0;
    std::uint32_t sid = 0;  // 0: empty slot (series ids start at 1)
    ValueType type = ValueType::kFloat;
  };
  static std::uint64_t HashField(std::uint64_t prefix_hash, std::string_view field);
  bool Equal(const Slot& s, std::string_view prefix, std::string_view field) const;
  void Clear();
  void Grow();

  const std::size_t max_entries_;
  const std::size_t max_key_bytes_;
  std::vector<Slot> slots_;
  std::vector<char> bytes_;
  std::size_t size_ = 0;
  std::size_t clears_ = 0;
};

}  // namespace ingot::ingest
