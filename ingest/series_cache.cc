#include "ingest/series_cache.h"

#include <algorithm>
#include <cstring>

#include <xxhash.h>

namespace ingot::ingest {

namespace {
constexpr std::size_t kInitialSlots = 256;
}  // namespace

SeriesCache::SeriesCache(std::size_t max_entries, std::size_t max_key_bytes)
    : max_entries_(max_entries), max_key_bytes_(max_key_bytes), slots_(kInitialSlots) {}

std::uint64_t SeriesCache::HashPrefix(std::string_view prefix) {
  return XXH3_64bits(prefix.data(), prefix.size());
}

std::uint64_t SeriesCache::HashField(std::uint64_t prefix_hash, std::string_view field) {
  return XXH3_64bits_withSeed(field.data(), field.size(), prefix_hash);
}

bool SeriesCache::Equal(const Slot& s, std::string_view prefix, std::string_view field) const {
  if (s.prefix_len != prefix.size() || s.field_len != field.size()) return false;
  const char* p = bytes_.data() + s.offset;
  return std::memcmp(p, prefix.data(), prefix.size()) == 0 &&
         std::memcmp(p + prefix.size(), field.data(), field.size()) == 0;
}

bool SeriesCache::Find(std::uint64_t prefix_hash, std::string_view prefix, std::string_view field,
                       Entry* out) const {
  return FindHashed(HashField(prefix_hash, field), prefix, field, out);
}

void SeriesCache::PrefetchKey(std::uint64_t hash) const {
  const Slot& s = slots_[hash & (slots_.size() - 1)];
  if (s.sid == 0 || s.hash != hash) return;
  const char* p = bytes_.data() + s.offset;
  const std::size_t n = std::size_t{s.prefix_len} + s.field_len;
  for (std::size_t at = 0; at < n; at += 64) __builtin_prefetch(p + at);
}

bool SeriesCache::FindHashed(std::uint64_t hash, std::string_view prefix, std::string_view field,
                             Entry* out) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.sid == 0) return false;
    if (s.hash == hash && Equal(s, prefix, field)) {
      *out = Entry{s.sid, s.type};
      return true;
    }
  }
}

void SeriesCache::Insert(std::uint64_t prefix_hash, std::string_view prefix, std::string_view field,
                         Entry entry) {
  const std::size_t key_bytes = prefix.size() + field.size();
  if (size_ >= max_entries_ || bytes_.size() + key_bytes > max_key_bytes_) Clear();
  if (key_bytes > max_key_bytes_ || entry.sid > UINT32_MAX) return;  // never cacheable
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  Slot s;
  s.hash = HashField(prefix_hash, field);
  s.offset = static_cast<std::uint32_t>(bytes_.size());
  s.prefix_len = static_cast<std::uint32_t>(prefix.size());
  s.field_len = static_cast<std::uint32_t>(field.size());
  s.sid = static_cast<std::uint32_t>(entry.sid);
  s.type = entry.type;
  bytes_.insert(bytes_.end(), prefix.begin(), prefix.end());
  bytes_.insert(bytes_.end(), field.begin(), field.end());
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = s.hash & mask;
  while (slots_[i].sid != 0) i = (i + 1) & mask;
  slots_[i] = s;
  ++size_;
}

void SeriesCache::Clear() {
  // Capacity is kept: a connection that filled the cache once will fill it again.
  std::fill(slots_.begin(), slots_.end(), Slot{});
  bytes_.clear();
  size_ = 0;
  ++clears_;
}

void SeriesCache::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.sid == 0) continue;
    std::size_t i = s.hash & mask;
    while (slots_[i].sid != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace ingot::ingest
