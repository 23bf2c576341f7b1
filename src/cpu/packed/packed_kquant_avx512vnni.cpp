// Packed micro-kernels, avx512vnni tier: Q4_K, Q5_K and Q6_K weights (formats q4_Kx16, q5_Kx16,
// q6_Kx16 of format.hpp) times Q8_K activations, with vpdpbusd (u8 weight code x s8 activation, 4 products
// per 32-bit lane = per weight row). Per activation row i and super-block (256 elements):
//   Q4_K  value = d * sc_j * code - dmin * m_j for sub-block j (32 elements). Per sub-block an
//         integer dot of the codes, times sc_j (vpmulld), summed; the mins need only the
//         activation's sums per sub-block (two of Q8_K's bsums of 16: m_j is put in both 16-bit
//         halves of its lane, and vpdpwssd against the bsum pair gives m_j * (bsum_2j + bsum_2j+1)).
//         acc += d_x * (d_w * sum sc_j dot_j - dmin_w * sum m_j bsum_j), the mins summed after the
//         dots so that MR = 8 rows' sums and accumulators fit in the 32 zmm registers.
//   Q5_K  as Q4_K, the code's bit 4 taken from the qh registers (codes <= 31).
//   Q6_K  value = d * sc_s * (code - 32) for 16-element group s (int8 sc_s): each group's dot
//         starts at -32 * bsum_s, is multiplied by sc_s and summed; acc += d_x * d_w * sum.
// The 6-bit scale/min bytes of Q4_K are unpacked for the 16 rows at once (the rows' 12 bytes are 3
// registers); the codes of a sub-block are built once and shared by the MR rows. The
// result of an output depends only on its inputs (never on the thread count or column range).
// The loops over sub-blocks and registers are unrolled (GCC unroll pragmas): their shift counts
// and offsets become immediates.
#include "cpu/packed/scaled_tile_avx512vnni.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>
#include <type_traits>

#include "cpu/packed/kquant_traits.hpp"
#include "cpu/packed/lhs_q8k_avx2.hpp"

namespace tessel::cpu::packed {
namespace {

__m512i load64(const uint8_t* p) { return _mm512_loadu_si512(p); }
__m512i srl32(__m512i v, int n) { return _mm512_srl_epi32(v, _mm_cvtsi32_si128(n)); }
__m512i sll32(__m512i v, int n) { return _mm512_sll_epi32(v, _mm_cvtsi32_si128(n)); }
int16_t i16_at(const uint8_t* p) {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

/// MR Q8_K activation rows (from row i0) times one q4_Kx16 or q5_Kx16 group (layout L) over all
/// super-blocks.
template <class L, int MR>
void q45k_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, float* const* out, int n_cols) {
    const __m512i m3f = _mm512_set1_epi8(0x3f), m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    const __m512i mff = _mm512_set1_epi32(0xff), bit4 = _mm512_set1_epi8(0x10);
    __m512 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < a.k / kSuper; ++sb) {
        const uint8_t* g = group + sb * L::kBytes;
        const __m512i s0 = load64(g + L::kScales), s1 = load64(g + L::kScales + 64), s2 = load64(g + L::kScales + 128);
        // per row lane: bytes of scales 0..3 / 4..7 and mins 0..3 / 4..7 (ggml's 6-bit packing)
        const __m512i sc[2] = {_mm512_and_si512(s0, m3f), _mm512_or_si512(_mm512_and_si512(s2, m0f), _mm512_and_si512(srl32(s0, 2), m30))};
        const __m512i mn[2] = {_mm512_and_si512(s1, m3f), _mm512_or_si512(_mm512_and_si512(srl32(s2, 4), m0f), _mm512_and_si512(srl32(s1, 2), m30))};
        const uint8_t* x[MR];
        for (int i = 0; i < MR; ++i) x[i] = a.lhs + (i0 + i) * a.lhs_stride + sb * kQ8KBytes;
        __m512i isum[MR];
        for (int i = 0; i < MR; ++i) isum[i] = _mm512_setzero_si512();
        #pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {
            const __m512i scj = _mm512_and_si512(srl32(sc[j / 4], 8 * (j % 4)), mff);
            __m512i op[8];
            #pragma GCC unroll 16
            for (int q = 0; q < 8; ++q) {
                op[q] = _mm512_and_si512(srl32(load64(g + L::kQs + 64 * (8 * (j / 2) + q)), 4 * (j % 2)), m0f);
                if constexpr (L::kFifthBit) {  // bit j of qh register q -> bit 4
                    const __m512i qh = load64(g + L::kQh + 64 * q);
                    op[q] = _mm512_or_si512(op[q], _mm512_and_si512(j <= 4 ? sll32(qh, 4 - j) : srl32(qh, j - 4), bit4));
                }
            }
            #pragma GCC unroll 16
            for (int i = 0; i < MR; ++i) {
                const uint8_t* xq = x[i] + kQ8KQs + 32 * j;
                __m512i dot = _mm512_setzero_si512();
                #pragma GCC unroll 16
                for (int q = 0; q < 8; ++q) dot = dpbusd_bcast(dot, op[q], xq + 4 * q);
                isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(dot, scj));
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + L::kD)));
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(f32_at(x[i] + kQ8KD))), _mm512_cvtepi32_ps(isum[i]), acc[i]);
        // the mins after the codes, so their per-row sums need no registers during the dots
        __m512i msum[MR];
        for (int i = 0; i < MR; ++i) msum[i] = _mm512_setzero_si512();
        #pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {
            const __m512i mnj = _mm512_and_si512(srl32(mn[j / 4], 8 * (j % 4)), mff);
            const __m512i mn2 = _mm512_or_si512(mnj, _mm512_slli_epi32(mnj, 16));  // m_j in both 16-bit halves
            #pragma GCC unroll 16
            for (int i = 0; i < MR; ++i) msum[i] = _mm512_dpwssd_epi32(msum[i], mn2, _mm512_set1_epi32(i32_at(x[i] + kQ8KBsums + 4 * j)));
        }
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + L::kDmin)));
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) acc[i] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, _mm512_set1_ps(f32_at(x[i] + kQ8KD))), _mm512_cvtepi32_ps(msum[i]), acc[i]);
    }
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(out[i], mask, acc[i]);
}

/// MR Q8_K activation rows (from row i0) times one q6_Kx16 group over all super-blocks.
template <int MR>
void q6k_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, float* const* out, int n_cols) {
    const __m512i m0f = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < a.k / kSuper; ++sb) {
        const uint8_t* g = group + sb * Q6KLayout::kBytes;
        const uint8_t* x[MR];
        for (int i = 0; i < MR; ++i) x[i] = a.lhs + (i0 + i) * a.lhs_stride + sb * kQ8KBytes;
        __m512i isum[MR];
        for (int i = 0; i < MR; ++i) isum[i] = _mm512_setzero_si512();
        #pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {  // sub-block of 32: elements 128 h + 32 gg + 4 q + t
            const int h = j / 4, gg = j % 4;
            __m512i op[8];
            #pragma GCC unroll 16
            for (int q = 0; q < 8; ++q) {
                const __m512i ql = load64(g + Q6KLayout::kQl + 64 * (16 * h + 8 * (gg % 2) + q));
                const __m512i qh = load64(g + Q6KLayout::kQh + 64 * (8 * h + q));
                const __m512i hi2 = 2 * gg <= 4 ? sll32(qh, 4 - 2 * gg) : srl32(qh, 2 * gg - 4);  // bits 2gg, 2gg+1 -> 4, 5
                op[q] = _mm512_or_si512(_mm512_and_si512(srl32(ql, 4 * (gg / 2)), m0f), _mm512_and_si512(hi2, m30));
            }
            #pragma GCC unroll 16
            for (int half = 0; half < 2; ++half) {
                const int s = 2 * j + half;  // scale group of 16 elements
                const __m512i scv = load64(g + Q6KLayout::kScales + 64 * (s / 4));
                const __m512i scs = _mm512_srai_epi32(sll32(scv, 8 * (3 - s % 4)), 24);  // int8 scale s, sign-extended
                for (int i = 0; i < MR; ++i) {
                    const uint8_t* xq = x[i] + kQ8KQs + 16 * s;
                    __m512i dot = _mm512_set1_epi32(-32 * i16_at(x[i] + kQ8KBsums + 2 * s));
                    #pragma GCC unroll 16
                    for (int q = 0; q < 4; ++q) dot = dpbusd_bcast(dot, op[4 * half + q], xq + 4 * q);
                    isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(dot, scs));
                }
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + Q6KLayout::kD)));
        for (int i = 0; i < MR; ++i)
            acc[i] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(f32_at(x[i] + kQ8KD))), _mm512_cvtepi32_ps(isum[i]), acc[i]);
    }
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(out[i], mask, acc[i]);
}

/// Q4_K, Q5_K (layouts Q4KLayout, Q5KLayout) or Q6_K (Q6KLayout) weights.
template <class L, int MR>
void gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(a.k / kSuper) * L::kBytes;
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) {
            constexpr int R = decltype(rows)::value;
            float* out[R];
            for (int r = 0; r < R; ++r) out[r] = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + r) * a.dst_stride) + n0;
            if constexpr (std::is_same_v<L, Q6KLayout>) q6k_tile<R>(a, i0, group, out, n_cols);
            else q45k_tile<L, R>(a, i0, group, out, n_cols);
        });
    }
}

void pack_q8_k(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8k_rows(x, x_stride, dst, m, k); }

constexpr int kMr = 8;

constinit Kernel table[] = {
    {"q4_K_q8_K_gemm_8x16_avx512vnni", "q4_K_q8_K_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::Q4_K, DType::Q8_K, kMr, 16,
     4, 2, kMr, 16, 1, pack_q8_k, gemm<Q4KLayout, kMr>, gemm<Q4KLayout, 1>},
    {"q5_K_q8_K_gemm_8x16_avx512vnni", "q5_K_q8_K_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::Q5_K, DType::Q8_K, kMr, 16,
     4, 2, kMr, 16, 1, pack_q8_k, gemm<Q5KLayout, kMr>, gemm<Q5KLayout, 1>},
    {"q6_K_q8_K_gemm_8x16_avx512vnni", "q6_K_q8_K_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::Q6_K, DType::Q8_K, kMr, 16,
     4, 2, kMr, 16, 1, pack_q8_k, gemm<Q6KLayout, kMr>, gemm<Q6KLayout, 1>},
};

}  // namespace

constinit const std::span<Kernel> kKquantAvx512VnniKernels{table};

}  // namespace tessel::cpu::packed
