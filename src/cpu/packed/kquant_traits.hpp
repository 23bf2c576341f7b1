// Geometry of the q4_Kx16, q5_Kx16 and q6_Kx16 formats (format.hpp) and of their Q8_K activation blocks,
// shared by packed_kquant_<isa>.cpp. Internal linkage (see cpu/kernels/kernel.hpp on inline code in
// ISA units).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"
#include "cpu/packed/format.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int64_t kSuper = 256;  ///< elements per K-quant super-block

/// q4_Kx16, one super-block of a group: d[16], dmin[16], 3 scale registers, 32 quant registers.
struct Q4KLayout {
    static constexpr DType kWeight = DType::Q4_K;
    static constexpr bool kFifthBit = false;
    static constexpr int64_t kBytes = kGroupRows * 144;  // 2304
    static constexpr int64_t kD = 0, kDmin = 32, kScales = 64, kQh = 0, kQs = 256;
};
/// q5_Kx16: as q4_Kx16 with 8 qh registers before the quant registers (bit j of qh byte l is bit 4
/// of element 32 j + l).
struct Q5KLayout {
    static constexpr DType kWeight = DType::Q5_K;
    static constexpr bool kFifthBit = true;
    static constexpr int64_t kBytes = kGroupRows * 176;  // 2816
    static constexpr int64_t kD = 0, kDmin = 32, kScales = 64, kQh = 256, kQs = 768;
};
/// q6_Kx16, one super-block of a group: 32 ql registers, 16 qh registers, 4 scale registers, d[16].
struct Q6KLayout {
    static constexpr int64_t kBytes = kGroupRows * 210;  // 3360
    static constexpr int64_t kQl = 0, kQh = 2048, kScales = 3072, kD = 3328;
};

/// Q8_K activation block: float d, int8 qs[256], int16 bsums[16] (sums of 16 quants).
constexpr int64_t kQ8KD = 0, kQ8KQs = 4, kQ8KBsums = 260;

}  // namespace
}  // namespace tessel::cpu::packed
