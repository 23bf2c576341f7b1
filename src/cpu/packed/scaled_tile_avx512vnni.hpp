// The vpdpbusd tile over scaled activation blocks (kernel.hpp's LhsLayout::Scaled) shared by the
// avx512vnni kernels of 32-element-block weights whose decoded codes are unsigned bytes: MR
// activation rows x one group (16 columns). Per block the weight decoder builds 8 registers, op[j]
// holding K-elements 4j..4j+3 of the 16 rows, once for the MR rows; each row's integer dot starts
// at its block's aux (-c * sum q_x, c the code offset) and adds vpdpbusd(op[j], q_x[4j..4j+3]);
// then acc += (d_w * d_x) * dot in float lanes. A decoder whose codes need no offset (Q4_1) has a
// min instead: its dots start at 0 and acc += m_w * s_x follows (s_x: the block's aux, Q8_1's s).
// Included by avx512vnni translation units only; internal linkage (see cpu/kernels/kernel.hpp on
// inline code in ISA units).
#pragma once

#include "cpu/packed/lhs_avx512.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>
#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_traits.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

/// dot + vpdpbusd(w, the int32 at p broadcast), the broadcast embedded in the instruction.
inline __m512i dpbusd_bcast(__m512i dot, __m512i w, const uint8_t* p) {
    asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(dot) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(p)));
    return dot;
}

inline float f32_at(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}

/// MR scaled activation rows (from row i0) times one group over all blocks. D (the weight
/// decoder) has kBlockBytes (bytes of one block of a group, its fp16 d[16] first), kCorr (the code
/// offset c of its scaled blocks' aux, quant_traits.hpp's kScaledCorr; 0: the block has fp16 m[16]
/// after d[16] and the aux is s_x) and decode(gb, op) filling the 8 operand registers of the group
/// block at gb.
template <class D, int MR>
void scaled_tile(const D& dec, const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    const uint8_t* row[MR];
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) row[i] = a.lhs + (i0 + i) * a.lhs_stride;
    __m512 acc[MR];
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * D::kBlockBytes;
        __m512i op[8];
        dec.decode(gb, op);
        const uint8_t* x[MR];
        __m512i dot[MR];
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            x[i] = row[i] + b * kScaledBlockBytes;
            dot[i] = D::kCorr != 0 ? _mm512_set1_epi32(i32_at(x[i] + kScaledAux)) : _mm512_setzero_si512();
        }
        #pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {
            #pragma GCC unroll 16
            for (int i = 0; i < MR; ++i) dot[i] = dpbusd_bcast(dot[i], op[j], x[i] + 4 * j);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i]), _mm512_mul_ps(dw, _mm512_set1_ps(f32_at(x[i] + kScaledD))), acc[i]);
        if constexpr (D::kCorr == 0) {
            const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 2 * kGroupRows)));
            #pragma GCC unroll 16
            for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(f32_at(x[i] + kScaledAux)), acc[i]);
        }
    }
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + i) * a.dst_stride) + n0, mask, acc[i]);
}

/// The GEMM (MR > 1) or GEMV (MR == 1) of decoder D over scaled activation rows.
template <class D, int MR>
void scaled_gemm(const GemmArgs& a) {
    const D dec;
    const size_t group_bytes = static_cast<size_t>((a.k / 32) * D::kBlockBytes);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { scaled_tile<D, decltype(rows)::value>(dec, a, i0, group, n0, n_cols); });
    }
}

}  // namespace
}  // namespace tessel::cpu::packed
