// Packed micro-kernels, avx2 tier (AVX2 + FMA + F16C): IQ4_NL weights (format iq4_nlx16 of
// format.hpp, the q4_0x16 layout) times Q8_0 activations. Per group and block the 16 rows'
// nibbles are mapped to their int8 kvalues (vpshufb against the table) into 512 bytes of scratch,
// then read by the MR activation rows. Both sides are signed: the sign trick makes the weight the
// unsigned side, |w| * (q_x * sign w), maddubs pairs <= 2 * 127 * 127 = 32258, so each maddubs is
// widened by madd right away. Then acc += (d_w * d_x) * dot in float lanes. The result of an
// output depends only on its inputs.
#include <algorithm>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/lhs_avx2.hpp"
#include "cpu/packed/quant_traits.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int64_t kBlockBytes = kGroupRows * 18;  ///< one block of a group: d[16], 4 nibble registers
constexpr int64_t kLhsBlock = 34;                 ///< fp16 d + 32 quants

__m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
__m256 cvt8h(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

/// MR activation rows (from row i0) times one group (16 columns) over all blocks.
template <int MR>
void tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    const __m256i table = _mm256_broadcastsi128_si256(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
    const __m256i low = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    __m256 acc[MR][2];
    for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    alignas(32) uint8_t w[8][64];  // register r: elements 4r.. (r < 4) or 16 + 4 (r - 4)..
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * kBlockBytes;
        for (int r = 0; r < 4; ++r)
            for (int h = 0; h < 2; ++h) {
                const __m256i v = load32(gb + 2 * kGroupRows + 64 * r + 32 * h);
                _mm256_store_si256(reinterpret_cast<__m256i*>(w[r] + 32 * h), _mm256_shuffle_epi8(table, _mm256_and_si256(v, low)));
                _mm256_store_si256(reinterpret_cast<__m256i*>(w[r + 4] + 32 * h),
                                   _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), low)));
            }
        const __m256 dw[2] = {cvt8h(gb), cvt8h(gb + 16)};
        for (int i = 0; i < MR; ++i) {
            const uint8_t* xb = a.lhs + (i0 + i) * a.lhs_stride + b * kLhsBlock;
            __m256i dot[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            for (int r = 0; r < 8; ++r) {
                const __m256i xv = _mm256_set1_epi32(i32_at(xb + 2 + 4 * r));
                for (int h = 0; h < 2; ++h) {
                    const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(w[r] + 32 * h));
                    dot[h] = _mm256_add_epi32(dot[h], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(wv), _mm256_sign_epi8(xv, wv)), ones));
                }
            }
            const __m256 dx = _mm256_set1_ps(half_at(xb));
            for (int h = 0; h < 2; ++h) acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[h]), _mm256_mul_ps(dw[h], dx), acc[i][h]);
        }
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int i = 0; i < MR; ++i) {
        float* out = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + i) * a.dst_stride) + n0;
        for (int h = 0; h < 2; ++h) _mm256_maskstore_ps(out + 8 * h, _mm256_cmpgt_epi32(_mm256_set1_epi32(n_cols - 8 * h), lane), acc[i][h]);
    }
}

template <int MR>
void gemm(const GemmArgs& a) {
    const size_t group_bytes = static_cast<size_t>((a.k / 32) * kBlockBytes);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { tile<decltype(rows)::value>(a, i0, group, n0, n_cols); });
    }
}

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false>(x, x_stride, dst, m, k); }

constexpr int kMr = 4;

constinit Kernel table[] = {
    {"iq4_nl_q8_0_gemm_4x16_avx2", "iq4_nl_q8_0_gemv_1x16_avx2", CpuTier::Avx2, false, DType::IQ4_NL, DType::Q8_0, kMr, 16, 4, 2, kMr,
     16, 1, pack_q8_0, gemm<kMr>, gemm<1>},
};

}  // namespace

constinit const std::span<Kernel> kIq4nlAvx2Kernels{table};

}  // namespace tessel::cpu::packed
