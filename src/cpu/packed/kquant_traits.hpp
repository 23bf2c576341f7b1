// Geometry of the q4_Kx16 and q6_Kx16 formats (format.hpp) and of their Q8_K activation blocks,
// shared by packed_kquant_<isa>.cpp. Internal linkage (see cpu/kernels/kernel.hpp on inline code in
// ISA units).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/packed/format.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int64_t kSuper = 256;  ///< elements per K-quant super-block

/// q4_Kx16, one super-block of a group: d[16], dmin[16], 3 scale registers, 32 quant registers.
struct Q4KLayout {
    static constexpr int64_t kBytes = kGroupRows * 144;  // 2304
    static constexpr int64_t kD = 0, kDmin = 32, kScales = 64, kQs = 256;
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
