// The AVX2 tile of the quantized matrix products (include only from translation units built
// with -mavx2 -mfma -mf16c): one template that the MUL_MAT/MUL_MAT_ID driver
// (mul_mat_driver.hpp) expands per micro-kernel, over the block decoders of
// quant_decode_avx2.hpp (unnamed namespace, as there: no ISA code shared between units).
//
// A block of 32 weights pairs with one 32-element activation block (Q8_0, or Q8_1 whose stored
// s = d·Σq carries a weight type's min term). Per (activation row i, weight row j) and block:
//   dot = Σ q_w·q_x   exact in int32 (maddubs: unsigned bytes × signed bytes, pair sums ≤ 32512,
//                     then madd to int32; signed weights move their sign onto the activation)
//   acc += (d_w·d_x)·dot   in float lanes, summed across lanes at the end of the tile
//   min += m_w·s_x          (types with a min: x = d·q + m)
// so a tile's result depends only on its inputs, never on the thread count.
#pragma once

#include <immintrin.h>

#include "cpu/kernels/mul_mat_driver.hpp"
#include "cpu/kernels/quant_decode_avx2.hpp"

namespace tessel::cpu::avx2 {
namespace {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// ---- the tile -----------------------------------------------------------------------------------

/// rows.out[i][j] = Σ over n_blocks blocks of weight row j (w + j·w_stride) · activation row i.
template <class W, class X, int MR, int NR>
void quant_tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
    __m256 acc[MR][NR];
    float mins[MR][NR];
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps(), mins[i][j] = 0.0f;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m256i wq[NR], wu[NR];
        float wd[NR], wm[NR];
        for (int j = 0; j < NR; ++j) {
            const auto& blk = reinterpret_cast<const typename W::Block*>(w + j * w_stride)[b];
            wq[j] = W::quants(blk);
            wu[j] = W::kSigned ? _mm256_sign_epi8(wq[j], wq[j]) : wq[j];
            wd[j] = W::scale(blk);
            if constexpr (W::kMin) wm[j] = W::min(blk);
        }
        for (int i = 0; i < MR; ++i) {
            const X& xb = reinterpret_cast<const X*>(rows.x[i])[b];
            const __m256i xq = load_bytes(xb.qs);
            const float xd = half_to_float(xb.d);
            for (int j = 0; j < NR; ++j) {
                const __m256i xs = W::kSigned ? _mm256_sign_epi8(xq, wq[j]) : xq;
                const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wu[j], xs), ones);
                acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(wd[j] * xd), _mm256_cvtepi32_ps(dot), acc[i][j]);
                if constexpr (W::kMin) mins[i][j] += wm[j] * half_to_float(xb.s);
            }
        }
    }
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) rows.out[i][j] = hsum(acc[i][j]) + mins[i][j];
}

}  // namespace
}  // namespace tessel::cpu::avx2
