// The single-encoding steps behind the adaptive float codec, exposed for tests and codec-bench.
//
// Each encoder is a template over the value type (float, double; instantiated for those only) and
// a kDryRun flag: the dry run walks the same code and returns the size it would write without
// writing, so the chooser's estimate and the encoder cannot drift apart. Encoders return the bytes
// written (header included), or 0 when the encoding cannot represent the block within out.size().
//
// Each decoder reads one whole block of its encoding and trusts only what DecodeDoubles and
// DecodeFloats check before they pick it (a "checked header"): src.size() >= kBlockHeaderBytes,
// the header's count equals out.size(), and 1 <= out.size() <= kBlockCapacity (the Workspace holds
// one block). Everything past the 3-byte header is validated: bad bytes give Status::Corruption
// naming the field, never an access outside `src`, `out` and `ws`, and `out` then holds
// unspecified values.
//
// Thread safety: reentrant; the Workspace and SeriesHint belong to the caller's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/codec.h"
#include "codec/format.h"

namespace ingot::codec {

// ---- ALP -----------------------------------------------------------------------------------

enum class AlpMode : std::uint8_t { kPlain, kDelta, kSmaller };

struct AlpChoice {
  std::uint8_t exponent = 0;
  std::uint8_t factor = 0;
  // How the block is to be written: kSmaller tries both, kPlain skips delta coding when the
  // samples show it far behind.
  AlpMode mode = AlpMode::kSmaller;
  // A full search's estimate of the block's ALP size in bits per value, from its 64-value sample
  // (plain) and a window of neighbours (delta), with `mode` set from the two; 0 when the search
  // did not run or stopped at its coarse ranking.
  double sampled_bits_per_value = 0;
};

// Picks the exponent/factor for `values`: the hint's pairs on a 32-value sample first, a full
// search of every pair when the hint is empty, stale, or stops winning. Updates `hint`.
// `rival_bits_per_value`: the estimated size of the best other encoding; a full search whose
// sample puts ALP far behind it keeps the sample's ranking instead of judging its finalists on the
// whole block. `for_encode`: the caller writes ALP next, so a stale hint (a quarter of the sample
// exceptions) searches again even when ALP did not win the series' last block.
template <typename T>
AlpChoice SearchAlpExponents(std::span<const T> values, SeriesHint& hint, Workspace& ws,
                             double rival_bits_per_value = 1e9, bool for_encode = false) noexcept;

// ALP's size for `values` with the best of the hint's pairs (no search): plain from a 32-value
// strided sample, delta from a 32-value window of neighbours, the smaller of the two. A cheap
// check that ALP did not become the better choice. SIZE_MAX without a hint. `mode` (nullable)
// receives kPlain when the delta window is half again the plain sample's size, else kSmaller.
template <typename T>
std::size_t EstimateAlpWithHint(std::span<const T> values, const SeriesHint& hint,
                                AlpMode* mode = nullptr) noexcept;

// Encodes with the given exponent/factor; kSmaller writes plain or delta, whichever is smaller.
// `chosen` (nullable) receives kAlp or kAlpDelta.

template <typename T, bool kDryRun>
std::size_t EncodeAlp(std::span<const T> values, unsigned exponent, unsigned factor, AlpMode mode,
                      Workspace& ws, std::span<std::uint8_t> out, FloatEncoding* chosen) noexcept;

// Decodes a kAlp or kAlpDelta block: src[0] tells which (any byte but kAlpDelta reads as kAlp).
// REQUIRES: a checked header. Corruption on a bad field, length or exception position.
template <typename T>
Status DecodeAlp(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ALP integers (delta or offsets from the minimum) as varints compressed with zstd. Slower to
// encode than ALP; smaller on data whose integers are unevenly distributed. 0 when it cannot
// represent the block or does not fit in `out`.
template <typename T>
std::size_t EncodeAlpZstd(std::span<const T> values, unsigned exponent, unsigned factor,
                          Workspace& ws, std::span<std::uint8_t> out) noexcept;

// Decodes a kAlpZstd block. REQUIRES: a checked header. Corruption on a bad field, length, zstd
// frame or varint; IOError when the Workspace's zstd context cannot be allocated.
template <typename T>
Status DecodeAlpZstd(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ALP integers (deltas or offsets from the minimum, whichever packs smaller) as digits of their
// range, several digits to a field of at most 32 bits: log2(range) bits per value where ALP spends
// ⌈log2(range)⌉. 0 when it cannot represent the block (every value an exception, a range past
// 2^32) or does not fit in `out`.
template <typename T>
std::size_t EncodeAlpRadix(std::span<const T> values, unsigned exponent, unsigned factor,
                           Workspace& ws, std::span<std::uint8_t> out) noexcept;

// Decodes a kAlpRadix block. REQUIRES: a checked header. Corruption on a bad field, varint,
// length, packed field past its digits or exception position.
template <typename T>
Status DecodeAlpRadix(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ALP integers as Rice codes (a unary quotient and k low bits each): offsets from the minimum,
// zigzagged deltas, or deltas above the smallest delta, whichever stream is shortest. Near the
// entropy of geometric-like gaps (a dictionary's sorted distinct values, skewed deltas) where
// packing spends the width of the largest. 0 when it cannot represent the block or does not fit.
// Full blocks of deltas have their codes in lane order (compact::kLaneFlag), which decodes faster.
template <typename T>
std::size_t EncodeAlpRice(std::span<const T> values, unsigned exponent, unsigned factor,
                          Workspace& ws, std::span<std::uint8_t> out) noexcept;
// kLanes: EncodeAlpRice. kBlock: every block in block order, as blocks were written before lane
// order (for tests of the decoder's older layout).
enum class RiceOrder : std::uint8_t { kLanes, kBlock };
template <typename T>
std::size_t EncodeAlpRiceOrdered(std::span<const T> values, unsigned exponent, unsigned factor,
                                 Workspace& ws, std::span<std::uint8_t> out,
                                 RiceOrder order) noexcept;

// Decodes a kAlpRice block. REQUIRES: a checked header. Corruption on a bad field, varint,
// parameter, length, code past the stream, bits after the last code or exception position.
template <typename T>
Status DecodeAlpRice(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ALP integers as a Huffman code of each one's bit length and its bits below the leading one
// (no longer chosen by EncodeDoublesCompact, which writes kAlpRanked instead; still decoded):
// offsets from the minimum, zigzagged deltas, deltas above the smallest or (full blocks) second
// differences, whichever is smallest. Near the entropy of skewed deltas that follow no one-
// parameter law (sentinels, prices that mostly stay put), decoded several times faster than
// zstd. 0 when it cannot represent the block (a number of 2^47 or more) or does not fit.
template <typename T>
std::size_t EncodeAlpHuffman(std::span<const T> values, unsigned exponent, unsigned factor,
                             Workspace& ws, std::span<std::uint8_t> out) noexcept;

// Decodes a kAlpHuffman block. REQUIRES: a checked header. Corruption on a bad field, varint,
// code table (lengths over 11 bits, not a complete code), segment length, a segment that does not
// end with its last byte, or a bad exception position.
template <typename T>
Status DecodeAlpHuffman(std::span<const std::uint8_t> src, std::span<T> out,
                        Workspace& ws) noexcept;

// ALP integers as the bit lengths of the same four streams ranked by frequency and Rice-coded
// (parameter 0-3), with the bits below each leading one in a stream of their own: within about 2%
// of the Huffman code's bits, and every step of the decode a vector step (codec/alp_ranked.cc).
// 0 when it cannot represent the block (a number of 2^47 or more) or does not fit.
template <typename T>
std::size_t EncodeAlpRanked(std::span<const T> values, unsigned exponent, unsigned factor,
                            Workspace& ws, std::span<std::uint8_t> out) noexcept;

// Decodes a kAlpRanked block. REQUIRES: a checked header. Corruption on a bad field, varint,
// rank table (a category over 47), stream length, a unary stream that does not end with its last
// code, a rank past the table, a field stream that does not end in its last byte with zero
// padding, or a bad exception position.
template <typename T>
Status DecodeAlpRanked(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ---- Dictionary ----------------------------------------------------------------------------
// Blocks that repeat a few hundred distinct values (prices, sensor readings, coordinates that
// recur) store each distinct value once, sorted, as a nested block of any other encoding, and the
// block as indexes into it: one per value, or one per run of equal values behind a bitmap of where
// runs start. Sorting turns the dictionary into small deltas for ALP.

// The distinct bit patterns of `values` in the order they first occur, into `distinct_values`
// (room for values.size()), and each value's number among them into `indexes`; returns how many
// there are. -0.0 and 0.0, and NaNs with different payloads, are distinct.
template <typename T>
std::size_t FindDistinct(std::span<const T> values, T* distinct_values,
                         std::uint16_t* indexes) noexcept;

// Sorts FindDistinct's values into numeric order (negative values first, NaNs at the ends) and
// renumbers `indexes` to match.
template <typename T>
void SortDictionary(T* distinct_values, std::size_t distinct,
                    std::span<std::uint16_t> indexes) noexcept;

// Runs of equal indexes.
std::size_t CountRuns(std::span<const std::uint16_t> indexes) noexcept;

// The smallest a dictionary block of `count` values with `distinct` distinct values and `runs`
// runs can be, before its dictionary: header, then the cheaper of one index per value and a run
// bitmap with one index per run.
std::size_t DictionaryIndexBytes(std::size_t count, std::size_t distinct, std::size_t runs) noexcept;

// Writes a dictionary block of indexes.size() values: `indexes` into a dictionary of `distinct`
// values encoded as `dictionary_block`. Returns the bytes written, 0 when it does not fit in
// `out`. REQUIRES: every index < distinct; dictionary_block is a non-dictionary block of
// `distinct` values.
std::size_t EncodeDictionary(std::span<const std::uint16_t> indexes, std::size_t distinct,
                             std::span<const std::uint8_t> dictionary_block, Workspace& ws,
                             std::span<std::uint8_t> out) noexcept;

// Decodes a kDictionary block. REQUIRES: a checked header. Corruption on a bad count, flag,
// length, bitmap or index, and on a nested block that is a dictionary or does not decode (reported
// with the context "dictionary").
template <typename T>
Status DecodeDictionary(std::span<const std::uint8_t> src, std::span<T> out,
                        Workspace& ws) noexcept;

// ---- ALP-RD --------------------------------------------------------------------------------

struct AlpRdPlan {
  std::uint8_t right_bits = 0;
  std::uint8_t dictionary_size = 0;
  std::uint16_t dictionary[8] = {};
};

// Chooses the left/right split and the left-part dictionary from a sample of `values`. Splits
// whose right parts alone take `rival_bits` bits per value or more (they cannot beat a rival of
// that size) are not considered, except the widest left part, which always is.
template <typename T>
AlpRdPlan AnalyzeAlpRd(std::span<const T> values, std::size_t rival_bits = SIZE_MAX) noexcept;

// The dictionary for a known split (right_bits as chosen for an earlier block of the series).
template <typename T>
AlpRdPlan AnalyzeAlpRdForSplit(std::span<const T> values, unsigned right_bits) noexcept;

template <typename T, bool kDryRun>
std::size_t EncodeAlpRd(std::span<const T> values, const AlpRdPlan& plan, Workspace& ws,
                        std::span<std::uint8_t> out) noexcept;

// Decodes a kAlpRd block. REQUIRES: a checked header. Corruption on a bad split, dictionary,
// index, length or exception; every check runs before `out` is written.
template <typename T>
Status DecodeAlpRd(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ---- Gorilla -------------------------------------------------------------------------------

template <typename T, bool kDryRun>
std::size_t EncodeGorilla(std::span<const T> values, std::span<std::uint8_t> out) noexcept;

// Decodes a kGorilla block. REQUIRES: a checked header; src.size() >= kBlockHeaderBytes in
// particular is not checked again (the stream's length is src.size() minus the header).
// Corruption when the stream's length does not match its values or a window is invalid.
template <typename T>
Status DecodeGorilla(std::span<const std::uint8_t> src, std::span<T> out, Workspace& ws) noexcept;

// ---- Grouped XOR ---------------------------------------------------------------------------
// Each value's XOR with its predecessor, in groups of 32: one window (shift and width) per group
// instead of Gorilla's per-value control bits, so encoding and decoding run without
// data-dependent branches. A group with many repeats stores a bitmap of its non-zero XORs and only
// those.

template <typename T, bool kDryRun>
std::size_t EncodeXorGroups(std::span<const T> values, std::span<std::uint8_t> out) noexcept;

// Decodes a kXorGroups block. REQUIRES: a checked header; out.size() >= 1 in particular (the
// group count is derived from out.size() - 1). Corruption on a bad descriptor or bitmap, or a
// block length that does not match the groups'.
template <typename T>
Status DecodeXorGroups(std::span<const std::uint8_t> src, std::span<T> out,
                       Workspace& ws) noexcept;

// ---- Constant and raw ----------------------------------------------------------------------

template <typename T>
bool IsConstantBlock(std::span<const T> values) noexcept;

template <typename T>
std::size_t EncodeConstant(std::span<const T> values, std::span<std::uint8_t> out) noexcept;

template <typename T>
std::size_t EncodeRaw(std::span<const T> values, std::span<std::uint8_t> out) noexcept;

inline void WriteBlockHeader(std::uint8_t* out, FloatEncoding encoding, std::size_t count) {
  out[0] = static_cast<std::uint8_t>(encoding);
  out[kBlockCountOffset] = static_cast<std::uint8_t>(count & 0xff);
  out[kBlockCountOffset + 1] = static_cast<std::uint8_t>(count >> 8);
}

}  // namespace ingot::codec
