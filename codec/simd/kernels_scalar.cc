// The scalar kernels: fixed-trip loops over caller buffers, the reference every vector level must
// match bit for bit. Compiled with the baseline x86-64 flags.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "codec/simd/kernels.h"
#include "codec/simd/lane_ops.h"

namespace ingot::codec::simd {
namespace {

#include "codec/simd/kernels_generic.inc"

constexpr Kernels kScalar = {
    IsaLevel::kScalar,
    "scalar",
    FforPack,
    FforUnpack,
    AlpEncode<double>,
    AlpEncode<float>,
    AlpSampleStats<double>,
    AlpSampleStats<float>,
    AlpDecodeDouble,
    AlpDecodeFloat,
    AlpUnpackDecodeDouble,
    AlpUnpackDecodeFloat,
    AlpDeltaUnpackDecodeDouble,
    AlpDeltaUnpackDecodeFloat,
    OutsideWindow,
    MinMax,
    DeltaMinMax,
    AlpRdSplit<double>,
    AlpRdSplit<float>,
    XorGroupsScan,
    XorGroupFields,
    SetBitPositions,
    RiceJoin,
    RiceJoinLanes,
    PrefixSum,
    UnZigZagPrefixSum,
    DecodeVarints,
    HuffmanSegmentsAny,
    RankedCodesAny,
    SampleLeadingZeros,
    CountBelow,
    ExpandRuns,
    UnpackStream,
    RadixDigits,
    AlpRdJoinDouble,
    XorGroupDouble,
};

}  // namespace

const Kernels& ScalarKernels() noexcept { return kScalar; }

}  // namespace ingot::codec::simd
