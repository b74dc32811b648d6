// Picks the kernel table once from CPU detection, lowered by INGOT_ISA when set.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "codec/simd/kernels.h"

namespace ingot::codec::simd {

#ifndef INGOT_HAVE_AVX2_KERNELS
const Kernels* Avx2Kernels() noexcept { return nullptr; }
#endif
#ifndef INGOT_HAVE_AVX512_KERNELS
const Kernels* Avx512Kernels() noexcept { return nullptr; }
const Kernels* Avx512KernelsWithoutVbmi() noexcept { return nullptr; }
#endif

namespace {

bool CpuHas(IsaLevel level) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (level) {
    case IsaLevel::kScalar: return true;
    case IsaLevel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2");
    case IsaLevel::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             CpuHas(IsaLevel::kAvx2);
  }
  return false;
#else
  return level == IsaLevel::kScalar;
#endif
}

const Kernels* Choose() noexcept {
  IsaLevel level = DetectIsa();
  // getenv once at start-up; the codec itself does no I/O.
  if (const char* forced = std::getenv("INGOT_ISA")) {
    IsaLevel wanted = level;
    if (std::strcmp(forced, "scalar") == 0) wanted = IsaLevel::kScalar;
    if (std::strcmp(forced, "avx2") == 0) wanted = IsaLevel::kAvx2;
    if (std::strcmp(forced, "avx512") == 0) wanted = IsaLevel::kAvx512;
    if (static_cast<int>(wanted) < static_cast<int>(level)) level = wanted;
  }
  for (int l = static_cast<int>(level); l >= 0; --l) {
    if (const Kernels* k = KernelsFor(static_cast<IsaLevel>(l))) return k;
  }
  return &ScalarKernels();
}

std::atomic<const Kernels*>& Active() noexcept {
  static std::atomic<const Kernels*> active{Choose()};
  return active;
}

}  // namespace

const char* IsaName(IsaLevel level) noexcept {
  switch (level) {
    case IsaLevel::kScalar: return "scalar";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

IsaLevel DetectIsa() noexcept {
  if (CpuHas(IsaLevel::kAvx512) && Avx512Kernels() != nullptr) return IsaLevel::kAvx512;
  if (CpuHas(IsaLevel::kAvx2) && Avx2Kernels() != nullptr) return IsaLevel::kAvx2;
  return IsaLevel::kScalar;
}

const Kernels* KernelsFor(IsaLevel level) noexcept {
  if (!CpuHas(level)) return nullptr;
  switch (level) {
    case IsaLevel::kScalar: return &ScalarKernels();
    case IsaLevel::kAvx2: return Avx2Kernels();
    case IsaLevel::kAvx512: return Avx512Kernels();
  }
  return nullptr;
}

const Kernels& ActiveKernels() noexcept { return *Active().load(std::memory_order_acquire); }

bool ForceIsa(IsaLevel level) noexcept {
  const Kernels* k = KernelsFor(level);
  if (k == nullptr) return false;
  Active().store(k, std::memory_order_release);
  return true;
}

}  // namespace ingot::codec::simd
