// Packed micro-kernels, avx2 tier (AVX2 + FMA + F16C): Q5_0 weights (format q5_0x16 of
// format.hpp) times Q8_0 activations as scaled blocks (kernel.hpp's LhsLayout::Scaled, made once
// per op by pack_lhs). A 64-byte packed register is two ymm halves (weight rows
// 0..7 and 8..15), each yielding 8 output columns; no horizontal sums.
//
// Per group and block the 5-bit codes of the 16 rows are decoded once into 512 bytes of scratch
// (nibbles, plus bit 4 from the qh register: vpshufb copies a row's qh byte into its lane's 4
// bytes, a compare against the byte's bit sets 0x10), then read by the MR activation rows.
// Integer dot per row and block: maddubs (u8 code x s8 q_x, pairs <= 2 * 31 * 127 = 7874), four of
// them added in s16 (<= 31496, no saturation) before madd widens to s32; sum (code - 16) * q_x
// = that - 16 * sum q_x (the scaled block's aux). Then acc += (d_w * d_x) * dot in float
// lanes. The result of an output depends only on its inputs.
#include <algorithm>
#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/lhs_avx2.hpp"
#include "cpu/packed/q5_traits.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

__m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
__m256 cvt8h(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

/// Decodes block `gb` into codes[r] (64 bytes as a packed register): r = 0..3 elements 4r..,
/// r + 4 elements 16 + 4r..
void q5_block(const uint8_t* gb, uint8_t (&codes)[8][64]) {
    const __m256i low = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    for (int h = 0; h < 2; ++h) {
        const __m256i qh = load32(gb + kQ5Head + 32 * h);
        for (int r = 0; r < 4; ++r) {
            const __m256i v = load32(gb + kQ5Head + 64 * (r + 1) + 32 * h);
            const __m256i bits = _mm256_set1_epi32(qh_bits(r));
            const __m256i lo_h = _mm256_and_si256(_mm256_shuffle_epi8(qh, _mm256_broadcastsi128_si256(qh_select(r / 2))), bits);
            const __m256i hi_h = _mm256_and_si256(_mm256_shuffle_epi8(qh, _mm256_broadcastsi128_si256(qh_select(2 + r / 2))), bits);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low), _mm256_and_si256(_mm256_cmpeq_epi8(lo_h, bits), bit4));
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), low), _mm256_and_si256(_mm256_cmpeq_epi8(hi_h, bits), bit4));
            _mm256_store_si256(reinterpret_cast<__m256i*>(codes[r] + 32 * h), lo);
            _mm256_store_si256(reinterpret_cast<__m256i*>(codes[r + 4] + 32 * h), hi);
        }
    }
}

/// MR activation rows (from row i0) times one group (16 columns) over all blocks.
template <int MR>
void tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    alignas(32) uint8_t codes[8][64];
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * kQ5BlockBytes;
        q5_block(gb, codes);
        const __m256 dw[2] = {cvt8h(gb), cvt8h(gb + 16)};
        for (int i = 0; i < MR; ++i) {
            const uint8_t* xb = a.lhs + (i0 + i) * a.lhs_stride + b * kScaledBlockBytes;
            __m256i dot[2];
            for (int h = 0; h < 2; ++h) dot[h] = _mm256_set1_epi32(i32_at(xb + kScaledAux));
            for (int pass = 0; pass < 2; ++pass) {  // registers 2 pass, 2 pass + 1 and their high halves
                __m256i d16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
                for (int r = 2 * pass; r < 2 * pass + 2; ++r) {
                    const __m256i xl = _mm256_set1_epi32(i32_at(xb + 4 * r)), xh = _mm256_set1_epi32(i32_at(xb + 16 + 4 * r));
                    for (int h = 0; h < 2; ++h)
                        d16[h] = _mm256_add_epi16(d16[h], _mm256_add_epi16(_mm256_maddubs_epi16(load32(codes[r] + 32 * h), xl),
                                                                           _mm256_maddubs_epi16(load32(codes[r + 4] + 32 * h), xh)));
                }
                for (int h = 0; h < 2; ++h) dot[h] = _mm256_add_epi32(dot[h], _mm256_madd_epi16(d16[h], ones));
            }
            const __m256 dx = _mm256_broadcast_ss(reinterpret_cast<const float*>(xb + kScaledD));
            for (int h = 0; h < 2; ++h) acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[h]), _mm256_mul_ps(dw[h], dx), acc[i][h]);
        }
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 0; i < MR; ++i) {
        float* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + i) * a.dst_stride) + n0;
        for (int h = 0; h < 2; ++h)
            _mm256_maskstore_ps(out + 8 * h, _mm256_cmpgt_epi32(_mm256_set1_epi32(n_cols - 8 * h), lane), acc[i][h]);
    }
}

template <int MR>
void gemm(const GemmArgs& a) {
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * q5_group_bytes(a.k);
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { tile<decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<16>(x, x_stride, dst, m, k); }

constexpr int kMr = 4;  // 8 accumulators + 2 weight scales + the dot registers of one row

constinit Kernel table[] = {
    {"q5_0_q8_0_gemm_4x16_avx2", "q5_0_q8_0_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q5_0, DType::Q8_0, kMr, 16, 4, 2, kMr, 16,
     1, pack_q8_0, gemm<kMr>, gemm<1>, LhsLayout::Scaled},
};

}  // namespace

constinit const std::span<Kernel> kQ5Avx2Kernels{table};

}  // namespace tessel::cpu::packed
