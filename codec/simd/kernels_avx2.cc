// The AVX2 kernels (compiled with -mavx2 -mfma -mbmi2).
#define INGOT_SIMD_BITS 256
#define INGOT_SIMD_LEVEL IsaLevel::kAvx2
#define INGOT_SIMD_ACCESSOR Avx2Kernels
#include "codec/simd/kernels_simde.inc"
