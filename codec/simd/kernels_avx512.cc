// The AVX-512 kernels (compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl).
#define INGOT_SIMD_BITS 512
#define INGOT_SIMD_LEVEL IsaLevel::kAvx512
#define INGOT_SIMD_ACCESSOR Avx512Kernels
#include "codec/simd/kernels_simde.inc"
