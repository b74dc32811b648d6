// The hot loops of the codec, one implementation per instruction-set level behind one table.
//
// Every level has the same functions with the same results bit for bit; the vector levels are the
// same source (kernels_simde.inc, written with SIMDe intrinsics) compiled once per ISA with that
// ISA's flags, and the scalar level is plain fixed-trip loops compiled for baseline x86-64. The
// table is chosen once at start-up from CPU detection; the environment variable INGOT_ISA
// (scalar|avx2|avx512) may force a lower level, never a higher one than the CPU supports.
//
// Layout used by the 1024-value FFOR kernels ("interleaved"): value i lives in lane i % 16, row
// i / 16; each lane packs its 64 rows into `width` consecutive 64-bit words, and word k of lane l
// is stored at index k * 16 + l. The shifts are then the same for all lanes of a row, which is what
// makes the loops vectorize. A packed block of 1024 values is exactly 128 * width bytes.
//
// Thread safety: the tables are immutable; all kernels are reentrant.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ingot::codec::simd {

inline constexpr int kLanes = 16;
inline constexpr int kRows = 64;
inline constexpr std::size_t kFullBlock = 1024;

enum class IsaLevel : std::uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* IsaName(IsaLevel level) noexcept;

struct Kernels {
  IsaLevel level;
  const char* name;

  // FFOR of exactly 1024 values: stores (in[i] - base) truncated to `width` bits (0..64) into
  // out[0 .. 16 * width) in the interleaved layout.
  // REQUIRES: every in[i] - base (mod 2^64) fits in `width` bits.
  void (*ffor_pack_1024)(const std::uint64_t* in, std::uint64_t base, unsigned width,
                         std::uint64_t* out);
  // Inverse of ffor_pack_1024: out[i] = unpacked + base (mod 2^64). Reads in[0 .. 16 * width).
  void (*ffor_unpack_1024)(const std::uint64_t* in, std::uint64_t base, unsigned width,
                           std::uint64_t* out);

  // ALP encode of n values with exponent e and factor f: ints[i] is the rounded integer of
  // in[i] * 10^e * 10^-f, and bit i of exceptions (n bits, zeroed first) is set where decoding
  // ints[i] does not give back the bits of in[i] or the integer is out of range (ints[i] is then
  // unspecified). Returns the number of exceptions.
  // REQUIRES: e <= kMaxExponent<T>, f <= e, exceptions has room for ceil(n / 64) words.
  std::size_t (*alp_encode_double)(const double* in, std::size_t n, unsigned e, unsigned f,
                                   std::int64_t* ints, std::uint64_t* exceptions);
  std::size_t (*alp_encode_float)(const float* in, std::size_t n, unsigned e, unsigned f,
                                  std::int64_t* ints, std::uint64_t* exceptions);

  // ALP decode of n integers: out[i] = ints[i] * 10^f * 10^-e in T's arithmetic.
  void (*alp_decode_double)(const std::int64_t* ints, std::size_t n, unsigned e, unsigned f,
                            double* out);
  void (*alp_decode_float)(const std::int64_t* ints, std::size_t n, unsigned e, unsigned f,
                           float* out);

  // Fused unFFOR + ALP decode of a full 1024-value block (interleaved layout).
  void (*alp_unpack_decode_double)(const std::uint64_t* packed, std::uint64_t base,
                                   unsigned width, unsigned e, unsigned f, double* out);
  void (*alp_unpack_decode_float)(const std::uint64_t* packed, std::uint64_t base,
                                  unsigned width, unsigned e, unsigned f, float* out);

  // Signed minimum and maximum of v[0..n). REQUIRES: n >= 1.
  void (*min_max)(const std::int64_t* v, std::size_t n, std::int64_t* min, std::int64_t* max);
};

// The kernels of one level, or nullptr when that level was not compiled in or the CPU lacks it.
const Kernels* KernelsFor(IsaLevel level) noexcept;

// The highest level this CPU supports (ignoring INGOT_ISA).
IsaLevel DetectIsa() noexcept;

// The kernels used by the codec: chosen once, on first use, from DetectIsa() lowered by INGOT_ISA.
const Kernels& ActiveKernels() noexcept;

// Replaces the active kernels (benchmarks and tests). Returns false, and changes nothing, when
// `level` is unavailable. Not thread-safe against concurrent codec calls.
bool ForceIsa(IsaLevel level) noexcept;

// Per-level tables, defined in their own object libraries.
const Kernels& ScalarKernels() noexcept;
const Kernels* Avx2Kernels() noexcept;    // nullptr when not compiled in
const Kernels* Avx512Kernels() noexcept;  // nullptr when not compiled in

}  // namespace ingot::codec::simd
