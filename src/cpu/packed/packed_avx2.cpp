// Packed micro-kernels, avx2 tier (AVX2 + FMA + F16C): Q4_0, Q4_1 and Q8_0 weights (formats
// q4_0x16, q4_1x16, q8_0x16 of format.hpp) times Q8 activations, and F16 weights (f16x16) times
// F32 activations. A 64-byte packed register is two ymm halves: bytes 0..31 are weight rows 0..7,
// bytes 32..63 rows 8..15, so each half yields 8 output columns at once; no horizontal sums.
//
// Integer dots (no VNNI here): maddubs multiplies u8 x s8 and adds neighbouring pairs into s16,
// madd(., 1) adds those pairs into one s32 per 4-byte lane (= per weight row). Per activation row
// i and block b (32 elements):
// The activations come as scaled blocks (kernel.hpp's LhsLayout::Scaled, made once per op by
// pack_lhs): per block its quants, f32 d_x and aux. Per activation row i and block b (32 elements):
//   Q4_0  sum (code - 8) * q_x = sum code * q_x - 8 * sum q_x; the 8 maddubs of a block (codes
//         0..15, |q_x| <= 127: |pair| <= 3810) are added in s16 (<= 30480, no saturation) before
//         one madd; -8 * sum q_x is the block's aux.
//   Q4_1  sum code * q_x as above; the min adds m_w * s_x (s_x = fp16 d_x * sum q_x, the aux).
//   Q8_0  both sides are signed (the aux, the avx512vnni tier's -128 * sum q_x, is not used: a
//         q_w + 128 side would saturate s16 here). The sign trick makes the weight the unsigned
//         side: |q_w| * (q_x * sign q_w), pairs <= 128 * 127 * 2 = 32512, so each maddubs is
//         widened by madd right away.
// then acc += (d_w * d_x) * dot in float lanes.
//
// F16: per K-element, the group's 16 fp16 values are two cvtph conversions (rows 0..7, 8..15);
// each activation value x[i][k] is broadcast and FMA-ed into its row's two accumulators.
//
// The result of an output depends only on its inputs (never on the thread count or the call's
// column range).
#include <algorithm>
#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_traits.hpp"
#include "cpu/packed/lhs_avx2.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

__m256i bcast_i32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}
__m256 cvt8h(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
__m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

float* out_row(const GemmArgs& a, int64_t i, int64_t n0) {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + i * a.dst_stride) + n0;
}

/// Stores the 16 columns of acc (rows 0..7, 8..15) into out[0 .. n_cols).
void store16(float* out, const __m256 (&acc)[2], int n_cols) {
    if (n_cols >= 16) {
        _mm256_storeu_ps(out, acc[0]);
        _mm256_storeu_ps(out + 8, acc[1]);
        return;
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(out, _mm256_cmpgt_epi32(_mm256_set1_epi32(n_cols), lane), acc[0]);
    _mm256_maskstore_ps(out + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(n_cols - 8), lane), acc[1]);
}

/// Pins an integer sum in its register at this point of its chain: without it GCC 12 reorders the
/// unrolled chains into all products first (spilled to the stack), then add trees.
inline void in_register(__m256i& v) { asm("" : "+x"(v)); }

/// The s32 dots of one block for MR activation rows (x[i] = row i's quants of this block) against
/// the 16 weight rows of block `qs`: dot[i][h] holds rows 8h .. 8h+7.
template <class W, int MR>
[[gnu::always_inline]] inline void block_dots(const uint8_t* qs, const uint8_t* const (&x)[MR], __m256i (&dot)[MR][2]) {
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (W::kQs == 16) {
        const __m256i low = _mm256_set1_epi8(0x0f);
        __m256i d16[MR][2];
        for (int i = 0; i < MR; ++i) d16[i][0] = d16[i][1] = _mm256_setzero_si256();
        for (int r = 0; r < 4; ++r) {
            __m256i lo[2], hi[2];
            for (int h = 0; h < 2; ++h) {
                const __m256i v = load32(qs + 64 * r + 32 * h);
                lo[h] = _mm256_and_si256(v, low);
                hi[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
            }
            for (int i = 0; i < MR; ++i) {
                const __m256i xl = bcast_i32(x[i] + 4 * r), xh = bcast_i32(x[i] + 16 + 4 * r);
                for (int h = 0; h < 2; ++h) {
                    d16[i][h] = _mm256_add_epi16(d16[i][h], _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], xl), _mm256_maddubs_epi16(hi[h], xh)));
                    in_register(d16[i][h]);
                }
            }
        }
        for (int i = 0; i < MR; ++i)
            for (int h = 0; h < 2; ++h) dot[i][h] = _mm256_madd_epi16(d16[i][h], ones);
    } else {
        for (int i = 0; i < MR; ++i) dot[i][0] = dot[i][1] = _mm256_setzero_si256();
        for (int r = 0; r < 8; ++r) {
            __m256i w[2], aw[2];
            for (int h = 0; h < 2; ++h) {
                w[h] = load32(qs + 64 * r + 32 * h);
                aw[h] = _mm256_abs_epi8(w[h]);
            }
            for (int i = 0; i < MR; ++i) {
                const __m256i xv = bcast_i32(x[i] + 4 * r);
                for (int h = 0; h < 2; ++h) {
                    dot[i][h] = _mm256_add_epi32(dot[i][h], _mm256_madd_epi16(_mm256_maddubs_epi16(aw[h], _mm256_sign_epi8(xv, w[h])), ones));
                    in_register(dot[i][h]);
                }
            }
        }
    }
}

/// Bytes ahead of the current block whose weights the first row tile of a group asks for: with 4
/// activation rows a block's arithmetic is long enough that waiting on each new cache line would
/// add to it rather than overlap it (later row tiles find the group in cache).
constexpr int64_t kPrefetchAhead = 2560;

/// MR activation rows (starting at row i0) times one group (16 columns) over all blocks.
template <class W, int MR>
void quant_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    const uint8_t* row[MR];
    for (int i = 0; i < MR; ++i) row[i] = a.lhs + (i0 + i) * a.lhs_stride;
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const bool first = i0 == 0;
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * W::kGroupBlockBytes;
        if (first)
            for (int64_t l = 0; l < W::kGroupBlockBytes; l += 64) _mm_prefetch(reinterpret_cast<const char*>(gb + kPrefetchAhead + l), _MM_HINT_T0);
        const uint8_t* x[MR];
        for (int i = 0; i < MR; ++i) x[i] = row[i] + kScaledBlockBytes * b;
        __m256i dot[MR][2];
        block_dots<W, MR>(gb + 2 * W::kScales * kGroupRows, x, dot);
        const __m256 dw[2] = {cvt8h(gb), cvt8h(gb + 16)};
        for (int i = 0; i < MR; ++i) {
            const __m256 dx = _mm256_broadcast_ss(reinterpret_cast<const float*>(x[i] + kScaledD));
            for (int h = 0; h < 2; ++h) {
                __m256i s = dot[i][h];
                if constexpr (W::kWeight == DType::Q4_0) s = _mm256_add_epi32(s, bcast_i32(x[i] + kScaledAux));
                acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw[h], dx), acc[i][h]);
            }
            if constexpr (W::kWeight == DType::Q4_1) {
                const __m256 sx = _mm256_broadcast_ss(reinterpret_cast<const float*>(x[i] + kScaledAux));
                for (int h = 0; h < 2; ++h) acc[i][h] = _mm256_fmadd_ps(cvt8h(gb + 2 * kGroupRows + 16 * h), sx, acc[i][h]);
            }
        }
    }
    for (int i = 0; i < MR; ++i) store16(out_row(a, i0 + i, n0), acc[i], n_cols);
}

template <class W, int MR>
void quant_gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(kGroupRows * (a.k / 32) * (2 * W::kScales + W::kQs));
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { quant_tile<W, decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

/// MR F32 activation rows (starting at row i0) times one f16x16 group over all of K.
template <int MR>
void f16_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float* x[MR];
    for (int i = 0; i < MR; ++i) x[i] = reinterpret_cast<const float*>(a.lhs + (i0 + i) * a.lhs_stride);
    for (int64_t e = 0; e < a.k; ++e) {
        const __m256 w0 = cvt8h(group + 32 * e), w1 = cvt8h(group + 32 * e + 16);
        for (int i = 0; i < MR; ++i) {
            const __m256 xv = _mm256_broadcast_ss(x[i] + e);
            acc[i][0] = _mm256_fmadd_ps(w0, xv, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(w1, xv, acc[i][1]);
        }
    }
    for (int i = 0; i < MR; ++i) store16(out_row(a, i0 + i, n0), acc[i], n_cols);
}

constexpr int kF16Mr = 6;  // 12 accumulators + 2 weight vectors + 1 broadcast: the 16 ymm registers

void f16_gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(kGroupRows * a.k * 2);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<kF16Mr>(a.m, [&](auto rows, int64_t i0) { f16_tile<decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

/// One activation row: 4 K-elements per step into separate accumulators (8 independent FMA
/// chains), added at the end.
void f16_gemv(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(kGroupRows * a.k * 2);
    const float* x = reinterpret_cast<const float*>(a.lhs);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        __m256 acc[4][2];
        for (auto& c : acc) c[0] = c[1] = _mm256_setzero_ps();
        int64_t e = 0;
        for (; e + 4 <= a.k; e += 4)
            for (int u = 0; u < 4; ++u) {
                const __m256 xv = _mm256_broadcast_ss(x + e + u);
                acc[u][0] = _mm256_fmadd_ps(cvt8h(group + 32 * (e + u)), xv, acc[u][0]);
                acc[u][1] = _mm256_fmadd_ps(cvt8h(group + 32 * (e + u) + 16), xv, acc[u][1]);
            }
        for (; e < a.k; ++e) {
            const __m256 xv = _mm256_broadcast_ss(x + e);
            acc[0][0] = _mm256_fmadd_ps(cvt8h(group + 32 * e), xv, acc[0][0]);
            acc[0][1] = _mm256_fmadd_ps(cvt8h(group + 32 * e + 16), xv, acc[0][1]);
        }
        __m256 sum[2];
        for (int h = 0; h < 2; ++h) sum[h] = _mm256_add_ps(_mm256_add_ps(acc[0][h], acc[1][h]), _mm256_add_ps(acc[2][h], acc[3][h]));
        store16(out_row(a, 0, n0), sum, static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0)));
    }
}

void pack_q4_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q4_0W>>(x, x_stride, dst, m, k); }
void pack_q4_1(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q4_1W>>(x, x_stride, dst, m, k); }
void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q8_0W>>(x, x_stride, dst, m, k); }

constexpr int kMr = 4;

constexpr Kernel kQ4_0 = {"q4_0_q8_0_gemm_4x16_avx2", "q4_0_q8_0_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q4_0, DType::Q8_0,
                      kMr, 16, 4, 2, kMr, 16, 1, pack_q4_0, quant_gemm<Q4_0W, kMr>, quant_gemm<Q4_0W, 1>, LhsLayout::Scaled};
constexpr Kernel kQ4_1 = {"q4_1_q8_1_gemm_4x16_avx2", "q4_1_q8_1_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q4_1, DType::Q8_1,
                      kMr, 16, 4, 2, kMr, 16, 1, pack_q4_1, quant_gemm<Q4_1W, kMr>, quant_gemm<Q4_1W, 1>, LhsLayout::Scaled};
constexpr Kernel kQ8_0 = {"q8_0_q8_0_gemm_4x16_avx2", "q8_0_q8_0_gemv_1x16_avx2", CpuTier::Avx2, false, DType::Q8_0, DType::Q8_0,
                      kMr, 16, 4, 1, kMr, 16, 1, pack_q8_0, quant_gemm<Q8_0W, kMr>, quant_gemm<Q8_0W, 1>, LhsLayout::Scaled};
constexpr Kernel kF16 = {"f16_f32_gemm_6x16_avx2", "f16_f32_gemv_1x16_avx2", CpuTier::Avx2, false, DType::F16, DType::F32,
                     kF16Mr, 16, 2, 1, kF16Mr, 16, 1, pack_f32_rows, f16_gemm, f16_gemv};

constinit Kernel table[] = {kQ4_0, kQ4_1, kQ8_0, kF16};

}  // namespace

constinit const std::span<Kernel> kAvx2Kernels{table};

}  // namespace tessel::cpu::packed
