// Packed micro-kernels, avx2 tier (AVX2 + FMA + F16C): Q4_K, Q5_K and Q6_K weights (formats
// q4_Kx16, q5_Kx16, q6_Kx16 of format.hpp) times Q8_K activations; the arithmetic of packed_kquant_avx512vnni.cpp
// with maddubs + madd in place of vpdpbusd. A 64-byte packed register is two ymm halves (weight
// rows 0..7 and 8..15), each yielding 8 output columns.
//
// Per group and super-block the 16 rows' codes (4096 bytes) and scales (and Q4_K mins, each in
// both 16-bit halves of its lane) are decoded once into scratch, then read by the MR activation
// rows. s16 bounds: Q5_K codes <= 31, maddubs pairs <= 2 * 31 * 127 = 7874, four are added
// (<= 31496) before each madd (Q4_K likewise); Q6_K codes <= 63, pairs <= 16002, two are added
// (<= 32004) before each madd.
// The result of an output depends only on its inputs.
// The loops over sub-blocks and registers are unrolled (GCC unroll pragmas): their shift counts
// and offsets become immediates.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/kquant_traits.hpp"
#include "cpu/packed/lhs_q8k_avx2.hpp"
#include "cpu/packed/quant_traits.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

__m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
__m256i load32(const int32_t* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
__m256i srl32(__m256i v, int n) { return _mm256_srl_epi32(v, _mm_cvtsi32_si128(n)); }
__m256i sll32(__m256i v, int n) { return _mm256_sll_epi32(v, _mm_cvtsi32_si128(n)); }
__m256 cvt8h(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
float f32_at(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}
int16_t i16_at(const uint8_t* p) {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

/// One super-block of a group, decoded: codes[j][q] is the register of K-elements 32 j + 4 q ..
/// + 3 of the 16 rows; scale[s] (and Q4_K's min2[j]) the rows' int32 lanes.
struct Decoded {
    alignas(32) uint8_t codes[8][8][64];
    alignas(32) int32_t scale[16][16];
    alignas(32) int32_t min2[8][16];
};

/// Q4_K or Q5_K (layout L).
template <class L>
void decode_q45k(const uint8_t* g, Decoded& d) {
    const __m256i m3f = _mm256_set1_epi8(0x3f), m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30), mff = _mm256_set1_epi32(0xff);
    const __m256i bit4 = _mm256_set1_epi8(0x10);
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) {
        const __m256i s0 = load32(g + L::kScales + 32 * h), s1 = load32(g + L::kScales + 64 + 32 * h), s2 = load32(g + L::kScales + 128 + 32 * h);
        const __m256i sc[2] = {_mm256_and_si256(s0, m3f), _mm256_or_si256(_mm256_and_si256(s2, m0f), _mm256_and_si256(srl32(s0, 2), m30))};
        const __m256i mn[2] = {_mm256_and_si256(s1, m3f), _mm256_or_si256(_mm256_and_si256(srl32(s2, 4), m0f), _mm256_and_si256(srl32(s1, 2), m30))};
        #pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {
            _mm256_store_si256(reinterpret_cast<__m256i*>(d.scale[j] + 8 * h), _mm256_and_si256(srl32(sc[j / 4], 8 * (j % 4)), mff));
            const __m256i m = _mm256_and_si256(srl32(mn[j / 4], 8 * (j % 4)), mff);
            _mm256_store_si256(reinterpret_cast<__m256i*>(d.min2[j] + 8 * h), _mm256_or_si256(m, _mm256_slli_epi32(m, 16)));
            #pragma GCC unroll 16
            for (int q = 0; q < 8; ++q) {
                __m256i c = _mm256_and_si256(srl32(load32(g + L::kQs + 64 * (8 * (j / 2) + q) + 32 * h), 4 * (j % 2)), m0f);
                if constexpr (L::kFifthBit) {  // bit j of qh register q -> bit 4
                    const __m256i qh = load32(g + L::kQh + 64 * q + 32 * h);
                    c = _mm256_or_si256(c, _mm256_and_si256(j <= 4 ? sll32(qh, 4 - j) : srl32(qh, j - 4), bit4));
                }
                _mm256_store_si256(reinterpret_cast<__m256i*>(d.codes[j][q] + 32 * h), c);
            }
        }
    }
}

void decode_q6k(const uint8_t* g, Decoded& d) {
    const __m256i m0f = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    #pragma GCC unroll 16
    for (int h = 0; h < 2; ++h) {
        #pragma GCC unroll 16
        for (int s = 0; s < 16; ++s)
            _mm256_store_si256(reinterpret_cast<__m256i*>(d.scale[s] + 8 * h),
                               _mm256_srai_epi32(sll32(load32(g + Q6KLayout::kScales + 64 * (s / 4) + 32 * h), 8 * (3 - s % 4)), 24));
        #pragma GCC unroll 16
        for (int j = 0; j < 8; ++j) {  // elements 128 hb + 32 gg + 4 q + t
            const int hb = j / 4, gg = j % 4;
            #pragma GCC unroll 16
            for (int q = 0; q < 8; ++q) {
                const __m256i ql = load32(g + Q6KLayout::kQl + 64 * (16 * hb + 8 * (gg % 2) + q) + 32 * h);
                const __m256i qh = load32(g + Q6KLayout::kQh + 64 * (8 * hb + q) + 32 * h);
                const __m256i hi2 = 2 * gg <= 4 ? sll32(qh, 4 - 2 * gg) : srl32(qh, 2 * gg - 4);  // bits 2gg, 2gg+1 -> 4, 5
                _mm256_store_si256(reinterpret_cast<__m256i*>(d.codes[j][q] + 32 * h),
                                   _mm256_or_si256(_mm256_and_si256(srl32(ql, 4 * (gg / 2)), m0f), _mm256_and_si256(hi2, m30)));
            }
        }
    }
}

/// MR Q8_K activation rows (from row i0) times one group over all super-blocks.
template <class L, int MR>
void tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    constexpr bool kQ6 = std::is_same_v<L, Q6KLayout>;
    const __m256i ones = _mm256_set1_epi16(1);
    thread_local Decoded d;
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < a.k / kSuper; ++sb) {
        const uint8_t* g = group + sb * L::kBytes;
        if constexpr (kQ6) decode_q6k(g, d);
        else decode_q45k<L>(g, d);
        const __m256 dw[2] = {cvt8h(g + L::kD), cvt8h(g + L::kD + 16)};
        for (int i = 0; i < MR; ++i) {
            const uint8_t* x = a.lhs + (i0 + i) * a.lhs_stride + sb * kQ8KBytes;
            __m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()}, msum[2] = {isum[0], isum[1]};
            if constexpr (kQ6) {
                #pragma GCC unroll 16
                for (int s = 0; s < 16; ++s) {
                    const uint8_t* xq = x + kQ8KQs + 16 * s;
                    __m256i dot[2];
                    #pragma GCC unroll 16
                    for (int h = 0; h < 2; ++h) dot[h] = _mm256_set1_epi32(-32 * i16_at(x + kQ8KBsums + 2 * s));
                    #pragma GCC unroll 16
                    for (int p = 0; p < 2; ++p) {
                        const __m256i x0 = _mm256_set1_epi32(i32_at(xq + 8 * p)), x1 = _mm256_set1_epi32(i32_at(xq + 8 * p + 4));
                        const uint8_t* c0 = d.codes[s / 2][4 * (s % 2) + 2 * p];
                        #pragma GCC unroll 16
                        for (int h = 0; h < 2; ++h) {
                            const __m256i d16 = _mm256_add_epi16(_mm256_maddubs_epi16(load32(c0 + 32 * h), x0), _mm256_maddubs_epi16(load32(c0 + 64 + 32 * h), x1));
                            dot[h] = _mm256_add_epi32(dot[h], _mm256_madd_epi16(d16, ones));
                        }
                    }
                    #pragma GCC unroll 16
                    for (int h = 0; h < 2; ++h) isum[h] = _mm256_add_epi32(isum[h], _mm256_mullo_epi32(dot[h], load32(d.scale[s] + 8 * h)));
                }
            } else {
                #pragma GCC unroll 16
                for (int j = 0; j < 8; ++j) {
                    const uint8_t* xq = x + kQ8KQs + 32 * j;
                    __m256i dot[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
                    #pragma GCC unroll 16
                    for (int p = 0; p < 2; ++p) {  // 4 maddubs per madd: Q5_K's s16 bound
                        __m256i d16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
                        #pragma GCC unroll 16
                        for (int q = 4 * p; q < 4 * p + 4; ++q) {
                            const __m256i xv = _mm256_set1_epi32(i32_at(xq + 4 * q));
                            #pragma GCC unroll 16
                            for (int h = 0; h < 2; ++h) d16[h] = _mm256_add_epi16(d16[h], _mm256_maddubs_epi16(load32(d.codes[j][q] + 32 * h), xv));
                        }
                        #pragma GCC unroll 16
                        for (int h = 0; h < 2; ++h) dot[h] = _mm256_add_epi32(dot[h], _mm256_madd_epi16(d16[h], ones));
                    }
                    const __m256i bs = _mm256_set1_epi32(i32_at(x + kQ8KBsums + 4 * j));
                    #pragma GCC unroll 16
                    for (int h = 0; h < 2; ++h) {
                        isum[h] = _mm256_add_epi32(isum[h], _mm256_mullo_epi32(dot[h], load32(d.scale[j] + 8 * h)));
                        msum[h] = _mm256_add_epi32(msum[h], _mm256_madd_epi16(load32(d.min2[j] + 8 * h), bs));
                    }
                }
            }
            const __m256 dx = _mm256_set1_ps(f32_at(x + kQ8KD));
            #pragma GCC unroll 16
            for (int h = 0; h < 2; ++h) {
                acc[i][h] = _mm256_fmadd_ps(_mm256_mul_ps(dw[h], dx), _mm256_cvtepi32_ps(isum[h]), acc[i][h]);
                if constexpr (!kQ6) {
                    const __m256 dmin = cvt8h(g + L::kDmin + 16 * h);
                    acc[i][h] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, dx), _mm256_cvtepi32_ps(msum[h]), acc[i][h]);
                }
            }
        }
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 0; i < MR; ++i) {
        float* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + i) * a.dst_stride) + n0;
        #pragma GCC unroll 16
        for (int h = 0; h < 2; ++h) _mm256_maskstore_ps(out + 8 * h, _mm256_cmpgt_epi32(_mm256_set1_epi32(n_cols - 8 * h), lane), acc[i][h]);
    }
}

/// Q4_K, Q5_K (layouts Q4KLayout, Q5KLayout) or Q6_K (Q6KLayout) weights.
template <class L, int MR>
void gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(a.k / kSuper) * L::kBytes;
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { tile<L, decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

void pack_q8_k(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8k_rows(x, x_stride, dst, m, k); }

constexpr int kMr = 4;

constinit Kernel table[] = {
    {"q4_K_q8_K_gemm_4x16_avx2", "q4_K_q8_K_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q4_K, DType::Q8_K, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_k, gemm<Q4KLayout, kMr>, gemm<Q4KLayout, 1>},
    {"q5_K_q8_K_gemm_4x16_avx2", "q5_K_q8_K_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q5_K, DType::Q8_K, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_k, gemm<Q5KLayout, kMr>, gemm<Q5KLayout, 1>},
    {"q6_K_q8_K_gemm_4x16_avx2", "q6_K_q8_K_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q6_K, DType::Q8_K, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_k, gemm<Q6KLayout, kMr>, gemm<Q6KLayout, 1>},
};

}  // namespace

constinit const std::span<Kernel> kKquantAvx2Kernels{table};

}  // namespace tessel::cpu::packed
