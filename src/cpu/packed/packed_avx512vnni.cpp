// Packed micro-kernels, avx512vnni tier: Q4_0, Q4_1 and Q8_0 weights (formats q4_0x16, q4_1x16,
// q8_0x16 of format.hpp) times Q8 activations, with vpdpbusd (u8 x s8 -> s32, 4 products per
// 32-bit lane). One 64-byte packed register holds 4 K-bytes of each of 16 weight rows, so a
// vpdpbusd against one broadcast 4-byte group of an activation row adds 4 products to all 16
// output columns at once; no horizontal sums anywhere.
//
// Register tile: kMr activation rows x 16 columns. Each weight register is loaded (and unpacked)
// once per block and reused by the kMr rows, whose 4-byte activation groups are embedded
// broadcast operands of vpdpbusd; kMr integer dots and kMr float accumulators stay in zmm.
// The weights are the unsigned operand, the activations the signed one, and the activations come
// as scaled blocks (kernel.hpp's LhsLayout::Scaled, made once per op by pack_lhs): per block its
// quants, its f32 d_x and the integer the dot starts from, so a call has no preparation pass.
// Per activation row i, block b (32 elements), the integer dot of the 16 columns:
//   Q4_0  sum (code - 8) * q_x = vpdpbusd(codes, q_x) starting from aux = -8 * sum q_x
//   Q4_1  sum code * q_x; the min adds m_w * s_x (s_x: the scaled block's aux, the Q8_1 block's s)
//   Q8_0  the weights get +128 (xor 0x80) to be unsigned: sum (q_w + 128) * q_x starting from
//         aux = -128 * sum q_x
// then acc += (d_w * d_x) * dot in float lanes. Every output is computed by the same sequence of
// operations whatever the tile it falls in, so it depends only on its inputs (never on the
// thread count or the call's column range); the GEMV is the 1-row tile.
#include "cpu/packed/scaled_tile_avx512vnni.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>

namespace tessel::cpu::packed {
namespace {

/// MR activation rows (starting at row i0) times one group (16 columns) over all blocks.
template <class W, int MR>
void tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    const uint8_t* row[MR];
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) row[i] = a.lhs + (i0 + i) * a.lhs_stride;
    __m512 acc[MR];
    #pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * W::kGroupBlockBytes;
        const uint8_t* qs = gb + 2 * W::kScales * kGroupRows;
        const uint8_t* x[MR];
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) x[i] = row[i] + b * kScaledBlockBytes;
        __m512i dot[MR];
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) dot[i] = kScaledCorr<W> ? _mm512_set1_epi32(i32_at(x[i] + kScaledAux)) : _mm512_setzero_si512();
        if constexpr (W::kQs == 16) {
            const __m512i low = _mm512_set1_epi8(0x0f);
            #pragma GCC unroll 16
            for (int r = 0; r < 4; ++r) {
                const __m512i v = _mm512_loadu_si512(qs + 64 * r);
                const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
                #pragma GCC unroll 16
                for (int i = 0; i < MR; ++i) {
                    dot[i] = dpbusd_bcast(dot[i], lo, x[i] + 4 * r);
                    dot[i] = dpbusd_bcast(dot[i], hi, x[i] + 16 + 4 * r);
                }
            }
        } else {
            const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
            #pragma GCC unroll 16
            for (int r = 0; r < 8; ++r) {
                const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(qs + 64 * r), bias);
                #pragma GCC unroll 16
                for (int i = 0; i < MR; ++i) dot[i] = dpbusd_bcast(dot[i], w, x[i] + 4 * r);
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
        #pragma GCC unroll 16
        for (int i = 0; i < MR; ++i)
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[i]), _mm512_mul_ps(dw, _mm512_set1_ps(f32_at(x[i] + kScaledD))), acc[i]);
        if constexpr (W::kWeight == DType::Q4_1) {
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

template <class W, int MR>
void gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>(kGroupRows * (a.k / 32) * (2 * W::kScales + W::kQs));
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { tile<W, decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

void pack_q4_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q4_0W>>(x, x_stride, dst, m, k); }
void pack_q4_1(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q4_1W>>(x, x_stride, dst, m, k); }
void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_scaled<kScaledCorr<Q8_0W>>(x, x_stride, dst, m, k); }

constexpr int kMr = 8;

constexpr Kernel kQ4_0 = {"q4_0_q8_0_gemm_8x16_avx512vnni", "q4_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q4_0, DType::Q8_0, kMr, 16, 4, 2, kMr, 16, 1, pack_q4_0, gemm<Q4_0W, kMr>, gemm<Q4_0W, 1>, LhsLayout::Scaled};
constexpr Kernel kQ4_1 = {"q4_1_q8_1_gemm_8x16_avx512vnni", "q4_1_q8_1_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q4_1, DType::Q8_1, kMr, 16, 4, 2, kMr, 16, 1, pack_q4_1, gemm<Q4_1W, kMr>, gemm<Q4_1W, 1>, LhsLayout::Scaled};
constexpr Kernel kQ8_0 = {"q8_0_q8_0_gemm_8x16_avx512vnni", "q8_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q8_0, DType::Q8_0, kMr, 16, 4, 1, kMr, 16, 1, pack_q8_0, gemm<Q8_0W, kMr>, gemm<Q8_0W, 1>, LhsLayout::Scaled};

constinit Kernel table[] = {kQ4_0, kQ4_1, kQ8_0};

}  // namespace

constinit const std::span<Kernel> kAvx512VnniKernels{table};

}  // namespace tessel::cpu::packed
