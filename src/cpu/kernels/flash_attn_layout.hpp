// The tensor layouts every fast FLASH_ATTN_EXT kernel reads (flash_attn_avx2.cpp,
// flash_attn_avx512.cpp); compiled without ISA flags, so the per-ISA units share it safely.
#pragma once

#include "graph/tensor.hpp"

namespace tessel::cpu {

/// Whether dst is a FLASH_ATTN_EXT the fast kernels can read: dst F32 [Dv, H, T, B] rows; q F32
/// [D, T, H, B] rows; k [D, KV, Hk, B/bk] and v [Dv, KV, Hv, B/bv] as F32, F16, Q8_0 or Q4_0 rows
/// with H a multiple of Hk and Hv (grouped-query broadcast) and D, Dv at most max_dim; an
/// optional mask F16/F32 [KV, >= T, H/mh, B/mb]; optional sinks F32 [H]. Semantics:
/// cpu/ref/flash_attn.cpp.
bool flash_attn_layout_ok(const Tensor& dst, int64_t max_dim);

}  // namespace tessel::cpu
