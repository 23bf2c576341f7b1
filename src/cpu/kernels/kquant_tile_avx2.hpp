// AVX2 tile of the super-block (QK_K = 256) matrix products: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and
// IQ4_XS weights against Q8_K activations (include only from translation units built with
// -mavx2 -mfma -mf16c). The block decoders are in kquant_decode_avx2.hpp; the driver that
// expands the tile per micro-kernel is mul_mat_driver.hpp.
//
// Per (activation row i, weight row j) and super-block, with the weight block decoded once and
// used for all MR activation rows:
//   dot  = Σ_s sc_s · Σ_{e in s} q_e·x_e    exact in int32: maddubs of unsigned quants (0..63)
//          against the signed Q8_K bytes (pair sums ≤ 2·63·127), then madd with the integer
//          sub-block scales (IQ4_XS: signed table values, the sign moved onto the activation)
//   corr = Σ_s c_s · bsum_s                 madd of 16 per-16-element factors with Q8_K's bsums
//   acc += (d·dot − dmin·corr)·d_x           types with a min (x = d·sc·q − dmin·m: Q2_K, Q4_K, Q5_K)
//   acc += d·(dot − 2^shift·corr)·d_x        types with an offset (q − 32: Q6_K; q − 4: Q3_K)
// in float lanes summed across lanes at the end of the tile, so a result depends only on its
// inputs, never on the thread count.
#pragma once

#include <utility>

#include "cpu/kernels/kquant_decode_avx2.hpp"
#include "cpu/kernels/quant_tile_avx2.hpp"

namespace tessel::cpu::avx2 {

/// Calls f(std::integral_constant<int, I>{}) for I = 0..N-1, unrolled at compile time.
template <int N, class F>
inline void unroll(F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }(
        std::make_integer_sequence<int, N>{});
}

/// rows.out[i][j] = Σ over n_blocks super-blocks of weight row j (w + j·w_stride, blocks of
/// W::Block) · activation row i (blocks of block_q8_K).
template <class W, int MR, int NR>
void kquant_tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
    using quant::block_q8_K;
    __m256 acc[MR][NR];
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const block_q8_K* xb[MR];
        for (int i = 0; i < MR; ++i) xb[i] = reinterpret_cast<const block_q8_K*>(rows.x[i]) + b;
        for (int j = 0; j < NR; ++j) {
            const auto& blk = reinterpret_cast<const typename W::Block*>(w + j * w_stride)[b];
            const typename W::Head head = W::head(blk);
            __m256i dot[MR];
            for (int i = 0; i < MR; ++i) dot[i] = _mm256_setzero_si256();
            unroll<2>([&](auto h) {
                constexpr int H = decltype(h)::value;
                __m256i q[4];
                W::template quants<H>(blk, q);
                unroll<4>([&](auto v) {
                    constexpr int V = 4 * H + decltype(v)::value;
                    const __m256i wq = q[decltype(v)::value];
                    const __m256i wu = W::kSigned ? _mm256_sign_epi8(wq, wq) : wq;
                    const __m256i sc = W::template scale<V>(head);
                    for (int i = 0; i < MR; ++i) {
                        const __m256i x = load_bytes(xb[i]->qs + 32 * V);
                        const __m256i xs = W::kSigned ? _mm256_sign_epi8(x, wq) : x;
                        dot[i] = _mm256_add_epi32(dot[i], _mm256_madd_epi16(_mm256_maddubs_epi16(wu, xs), sc));
                    }
                });
            });
            const __m256 d = head.d;
            for (int i = 0; i < MR; ++i) {
                __m256 t;  // the block's dot over d_x
                if constexpr (W::kMin) {
                    const __m256i corr = _mm256_madd_epi16(head.corr, load_i16(xb[i]->bsums));
                    t = _mm256_fmsub_ps(_mm256_cvtepi32_ps(dot[i]), d, _mm256_mul_ps(_mm256_cvtepi32_ps(corr), head.dmin));
                } else if constexpr (W::kOffsetShift > 0) {
                    const __m256i corr = _mm256_madd_epi16(head.corr, load_i16(xb[i]->bsums));
                    t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(dot[i], _mm256_slli_epi32(corr, W::kOffsetShift))), d);
                } else {
                    t = _mm256_mul_ps(_mm256_cvtepi32_ps(dot[i]), d);
                }
                acc[i][j] = _mm256_fmadd_ps(t, _mm256_set1_ps(xb[i]->d), acc[i][j]);
            }
        }
    }
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) rows.out[i][j] = hsum(acc[i][j]);
}

}  // namespace tessel::cpu::avx2
