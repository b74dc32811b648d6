// Dictionary blocks (FloatEncoding::kDictionary): each distinct value once, then indexes.
//
// Real series repeat values that are not neighbours: a taxi zone's coordinates, a handful of
// prices, a sensor's quantized readings. XOR encodings pay for every change back to a value seen
// before, and ALP's frame of reference pays the full width for it. Here each distinct value is
// stored once, sorted so that its deltas are small, as a nested block of any other encoding (the
// compact choice writes ALP, radix digits or Rice codes, which decode fast), and the block becomes
// indexes of ⌈log2 D⌉ bits: one per value, or one per run of equal values behind a bitmap of where
// runs start, whichever is smaller.
//
// Layout (little-endian), after the 3-byte block header:
//   u16 D (1..count), u8 flags (bit 0: run bitmap), u16 dictionary block bytes B,
//   B bytes: a value block of D values (not a dictionary),
//   flagged: ⌈count/8⌉ bytes, bit i set when value i starts a run (bit 0 set, none past count),
//   the indexes (one per value, or one per run): FFOR with base 0 and width ⌈log2 D⌉, or (flag
//   bit 1) digits of D radix-packed, when that is smaller (560 distinct values: 28 bits per 3
//   indexes instead of 30).
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "codec/bit_packing.h"
#include "codec/float_encoders_internal.h"
#include "codec/float_encodings.h"
#include "codec/format.h"
#include "codec/simd/kernels.h"

namespace ingot::codec {

namespace {

// A key whose unsigned order is the numeric order of the value: negative values have their bits
// inverted (larger magnitude, smaller key), others get the sign bit set.
template <typename T>
BitsOf<T> OrderKey(T v) {
  using B = BitsOf<T>;
  constexpr B kSign = B{1} << (8 * sizeof(T) - 1);
  const B b = std::bit_cast<B>(v);
  return (b & kSign) ? static_cast<B>(~b) : static_cast<B>(b | kSign);
}

template <typename T>
T FromOrderKey(BitsOf<T> k) {
  using B = BitsOf<T>;
  constexpr B kSign = B{1} << (8 * sizeof(T) - 1);
  return std::bit_cast<T>((k & kSign) ? static_cast<B>(k & ~kSign) : static_cast<B>(~k));
}

unsigned IndexWidth(std::size_t distinct) {
  return distinct <= 1 ? 0u : static_cast<unsigned>(std::bit_width(distinct - 1));
}

std::size_t RunBitmapBytes(std::size_t count) { return (count + 7) / 8; }

// Whether `indexes` indexes into `distinct` values pack smaller as radix digits than with FFOR.
bool RadixIndexes(std::size_t indexes, std::size_t distinct) {
  return RadixPackedBytes(indexes, distinct) < PackedBytes(indexes, IndexWidth(distinct));
}

std::size_t IndexBytes(std::size_t indexes, std::size_t distinct) {
  return RadixIndexes(indexes, distinct) ? RadixPackedBytes(indexes, distinct)
                                         : PackedBytes(indexes, IndexWidth(distinct));
}

std::string N(std::size_t v) { return std::to_string(v); }

Status Corrupt(const std::string& what) {
  return Status::Corruption("block (dictionary): " + what);
}

}  // namespace

template <typename T>
std::size_t FindDistinct(std::span<const T> values, T* distinct_values,
                         std::uint16_t* indexes) noexcept {
  using B = BitsOf<T>;
  // Open addressing over twice the block's capacity: `ids` holds a distinct value's number plus
  // one (0: free), `keys` its bits.
  constexpr std::size_t kSlots = 2 * kBlockCapacity;
  constexpr unsigned kSlotBits = std::countr_zero(kSlots);
  B keys[kSlots];
  std::uint16_t ids[kSlots];
  std::memset(ids, 0, sizeof ids);
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const B bits = std::bit_cast<B>(values[i]);
    std::size_t slot = static_cast<std::size_t>(
        (static_cast<std::uint64_t>(bits) * 0x9e3779b97f4a7c15ull) >> (64 - kSlotBits));
    while (ids[slot] != 0 && keys[slot] != bits) slot = (slot + 1) & (kSlots - 1);
    if (ids[slot] == 0) {
      keys[slot] = bits;
      distinct_values[distinct] = values[i];
      ids[slot] = static_cast<std::uint16_t>(++distinct);
    }
    indexes[i] = static_cast<std::uint16_t>(ids[slot] - 1);
  }
  return distinct;
}

template <typename T>
void SortDictionary(T* distinct_values, std::size_t distinct,
                    std::span<std::uint16_t> indexes) noexcept {
  struct Entry {
    BitsOf<T> key;
    std::uint16_t id;
  };
  Entry entries[kBlockCapacity];
  std::uint16_t rank[kBlockCapacity];
  for (std::size_t d = 0; d < distinct; ++d) {
    entries[d] = {OrderKey(distinct_values[d]), static_cast<std::uint16_t>(d)};
  }
  // Keys are distinct, so the order is total.
  std::sort(entries, entries + distinct,
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  for (std::size_t r = 0; r < distinct; ++r) {
    rank[entries[r].id] = static_cast<std::uint16_t>(r);
    distinct_values[r] = FromOrderKey<T>(entries[r].key);
  }
  for (std::uint16_t& index : indexes) index = rank[index];
}

std::size_t CountRuns(std::span<const std::uint16_t> indexes) noexcept {
  std::size_t runs = indexes.empty() ? 0 : 1;
  for (std::size_t i = 1; i < indexes.size(); ++i) runs += indexes[i] != indexes[i - 1];
  return runs;
}

std::size_t DictionaryIndexBytes(std::size_t count, std::size_t distinct,
                                 std::size_t runs) noexcept {
  return kDictionaryHeaderBytes + std::min(IndexBytes(count, distinct),
                                           RunBitmapBytes(count) + IndexBytes(runs, distinct));
}

std::size_t EncodeDictionary(std::span<const std::uint16_t> indexes, std::size_t distinct,
                             std::span<const std::uint8_t> dictionary_block, Workspace& ws,
                             std::span<std::uint8_t> out) noexcept {
  const std::size_t n = indexes.size();
  // Every index as a word into ws.ints2, each run's into ws.ints, run starts into a bitmap.
  auto* all = reinterpret_cast<std::uint64_t*>(ws.ints2);
  auto* runs = reinterpret_cast<std::uint64_t*>(ws.ints);
  std::uint8_t bitmap[kBlockCapacity / 8] = {};
  std::size_t run_count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    all[i] = indexes[i];
    if (i == 0 || indexes[i] != indexes[i - 1]) {
      bitmap[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
      runs[run_count++] = indexes[i];
    }
  }
  const bool use_runs = RunBitmapBytes(n) + IndexBytes(run_count, distinct) < IndexBytes(n, distinct);
  const std::size_t packed_count = use_runs ? run_count : n;
  const bool radix = RadixIndexes(packed_count, distinct);
  const std::size_t index_bytes =
      (use_runs ? RunBitmapBytes(n) : 0) + IndexBytes(packed_count, distinct);
  const std::size_t total = kDictionaryHeaderBytes + dictionary_block.size() + index_bytes;
  if (total > out.size() || dictionary_block.size() > 0xffff) return 0;
  std::uint8_t* p = out.data();
  WriteBlockHeader(p, FloatEncoding::kDictionary, n);
  StoreLe<std::uint16_t>(p + kDictionarySizeOffset, static_cast<std::uint16_t>(distinct));
  p[kDictionaryFlagsOffset] = static_cast<std::uint8_t>((use_runs ? kDictionaryRunsFlag : 0) |
                                                        (radix ? kDictionaryRadixFlag : 0));
  StoreLe<std::uint16_t>(p + kDictionaryBlockBytesOffset,
                         static_cast<std::uint16_t>(dictionary_block.size()));
  p += kDictionaryHeaderBytes;
  std::memcpy(p, dictionary_block.data(), dictionary_block.size());
  p += dictionary_block.size();
  if (use_runs) {
    std::memcpy(p, bitmap, RunBitmapBytes(n));
    p += RunBitmapBytes(n);
  }
  const std::uint64_t* packed = use_runs ? runs : all;
  if (radix) {
    PackRadix(packed, packed_count, 0, distinct, p);
  } else {
    PackInts(packed, packed_count, 0, IndexWidth(distinct), ws.packed, p);
  }
  return total;
}

template <typename T>
Status DecodeDictionary(std::span<const std::uint8_t> src, std::span<T> out,
                        Workspace& ws) noexcept {
  const std::size_t n = out.size();
  if (src.size() < kDictionaryHeaderBytes) {
    return Corrupt(N(src.size()) + " bytes < header " + N(kDictionaryHeaderBytes));
  }
  const std::size_t distinct = LoadLe<std::uint16_t>(src.data() + kDictionarySizeOffset);
  const unsigned flags = src[kDictionaryFlagsOffset];
  const std::size_t block_bytes = LoadLe<std::uint16_t>(src.data() + kDictionaryBlockBytesOffset);
  if (distinct == 0 || distinct > n) {
    return Corrupt("dictionary of " + N(distinct) + " values for " + N(n) + " values");
  }
  if ((flags & ~std::uint32_t{kDictionaryRunsFlag | kDictionaryRadixFlag}) != 0) {
    return Corrupt("unknown flags " + N(flags));
  }
  if (block_bytes > src.size() - kDictionaryHeaderBytes) {
    return Corrupt("dictionary block of " + N(block_bytes) + " bytes past the block's " +
                   N(src.size()));
  }
  const std::span<const std::uint8_t> nested = src.subspan(kDictionaryHeaderBytes, block_bytes);
  if (!nested.empty() && nested[0] == static_cast<std::uint8_t>(FloatEncoding::kDictionary)) {
    return Corrupt("the dictionary is itself a dictionary block");
  }
  alignas(64) T dictionary[kBlockCapacity];
  const std::span<T> dict(dictionary, distinct);
  if constexpr (sizeof(T) == 8) {
    INGOT_RETURN_IF_ERROR(DecodeDoubles(nested, dict, ws).WithContext("dictionary"));
  } else {
    INGOT_RETURN_IF_ERROR(DecodeFloats(nested, dict, ws).WithContext("dictionary"));
  }
  const std::uint8_t* p = src.data() + kDictionaryHeaderBytes + block_bytes;
  std::size_t left = src.size() - kDictionaryHeaderBytes - block_bytes;
  const bool use_runs = (flags & kDictionaryRunsFlag) != 0;
  const std::uint8_t* bitmap = p;
  std::size_t indexes = n;
  if (use_runs) {
    const std::size_t bytes = RunBitmapBytes(n);
    if (left < bytes) return Corrupt("run bitmap of " + N(bytes) + " bytes past the block");
    if ((bitmap[0] & 1) == 0) return Corrupt("run bitmap does not start a run at value 0");
    if (n % 8 != 0 && (bitmap[bytes - 1] >> (n % 8)) != 0) {
      return Corrupt("run bitmap has bits past the " + N(n) + " values");
    }
    // Counted four bytes at a time without a popcount instruction (the baseline build has none).
    indexes = 0;
    std::size_t i = 0;
    for (; i + 4 <= bytes; i += 4) indexes += CountBits32(LoadLe<std::uint32_t>(bitmap + i));
    for (; i < bytes; ++i) indexes += CountBits32(bitmap[i]);
    p += bytes;
    left -= bytes;
  }
  const bool radix = (flags & kDictionaryRadixFlag) != 0;
  const unsigned width = IndexWidth(distinct);
  const std::size_t index_bytes =
      radix ? RadixPackedBytes(indexes, distinct) : PackedBytes(indexes, width);
  if (left != index_bytes) {
    return Corrupt(N(left) + " bytes of indexes, " + N(indexes) + " indexes into " +
                   N(distinct) + (radix ? " as radix digits" : "") + " need " + N(index_bytes));
  }
  std::uint64_t* index = ws.bits;
  if (radix) {
    // Digits of D are below D by construction; a field past its digits is corrupt.
    if (!UnpackRadix(p, indexes, 0, distinct, ws.packed, index)) {
      return Corrupt("radix-packed indexes hold a field past their digits");
    }
  } else {
    UnpackInts(p, indexes, 0, width, ws.packed, index);
    // Unpacked indexes are below 2^width (at most 2^10), so the signed range kernel finds the
    // largest; with 2^width values every index is valid.
    if (distinct < std::size_t{1} << width) {
      std::int64_t smallest = 0, largest = 0;
      simd::ActiveKernels().min_max(reinterpret_cast<const std::int64_t*>(index), indexes,
                                    &smallest, &largest);
      if (static_cast<std::uint64_t>(largest) >= distinct) {
        return Corrupt("index " + N(static_cast<std::size_t>(largest)) + " >= dictionary size " +
                       N(distinct));
      }
    }
  }
  T* __restrict dst = out.data();
  if (!use_runs) {
    for (std::size_t i = 0; i < n; ++i) dst[i] = dictionary[index[i]];
    return Status::OK();
  }
  // Run r covers the values from its start bit up to the next; bit 0 starts run 0.
  if constexpr (sizeof(T) == 8) {
    static_assert(Workspace::kRunSlack >= simd::kExpandRunsSlack);
    double* runs = ws.runs + Workspace::kRunSlack;
    // Last run first: ws.runs lies 384 bytes past a 4 KiB multiple from the indexes in ws.bits,
    // so forwards each index load 48 runs ahead was taken for a reload of an older run's store
    // (4K aliasing) and waited on it; backwards the loads run ahead of no store they alias
    // (food_prices' dictionary blocks 0.85-0.87 -> 0.84-0.85 ns per value).
    for (std::size_t r = indexes; r-- > 0;) runs[r] = dictionary[index[r]];
    simd::ActiveKernels().expand_runs(bitmap, runs, n, dst);
    return Status::OK();
  }
  std::size_t run = 0;
  dst[0] = dictionary[index[0]];
  for (std::size_t i = 1; i < n; ++i) {
    run += (bitmap[i / 8] >> (i % 8)) & 1u;
    dst[i] = dictionary[index[run]];
  }
  return Status::OK();
}

template std::size_t FindDistinct<double>(std::span<const double>, double*,
                                          std::uint16_t*) noexcept;
template std::size_t FindDistinct<float>(std::span<const float>, float*, std::uint16_t*) noexcept;
template void SortDictionary<double>(double*, std::size_t, std::span<std::uint16_t>) noexcept;
template void SortDictionary<float>(float*, std::size_t, std::span<std::uint16_t>) noexcept;
template Status DecodeDictionary<double>(std::span<const std::uint8_t>, std::span<double>,
                                         Workspace&) noexcept;
template Status DecodeDictionary<float>(std::span<const std::uint8_t>, std::span<float>,
                                        Workspace&) noexcept;

}  // namespace ingot::codec
