// Packed micro-kernels, avx512vnni tier: IQ4_NL weights (format iq4_nlx16 of format.hpp, the
// q4_0x16 layout) times Q8_0 activations. A nibble indexes the non-linear table kvalues (int8,
// -127..113; quant/blocks.hpp), so one vpshufb per register maps 64 nibbles to signed weights.
// Weights are signed, so the activation takes vpdpbusd's unsigned side as in the Q8_0 kernel: its
// packed LHS stores q_x + 128, and sum (q_x + 128) * w - 128 * sum w = sum q_x * w (-128 * sum w
// per column once per block, shared by the MR rows). Then acc += (d_w * d_x) * dot in float
// lanes. The result of an output depends only on its inputs.
#include "cpu/packed/lhs_avx512.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_traits.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int64_t kBlockBytes = kGroupRows * 18;  ///< one block of a group: d[16], 4 nibble registers
constexpr int64_t kLhsBlock = 34;                 ///< fp16 d + 32 biased quants

/// kvalues in each 128-bit lane (vpshufb indexes within a lane).
__m512i kvalues() {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}

/// MR activation rows (from row i0) times one group (16 columns) over all blocks.
template <int MR>
void tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    const __m512i table = kvalues(), low = _mm512_set1_epi8(0x0f), c128 = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * kBlockBytes;
        __m512i op[8];
        __m512i base = _mm512_setzero_si512();
        for (int r = 0; r < 4; ++r) {
            const __m512i v = _mm512_loadu_si512(gb + 2 * kGroupRows + 64 * r);
            op[r] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low));
            op[r + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
        }
        for (int r = 0; r < 8; ++r) base = _mm512_dpbusd_epi32(base, c128, op[r]);
        base = _mm512_sub_epi32(_mm512_setzero_si512(), base);  // -128 * sum w per column
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
        for (int i = 0; i < MR; ++i) {
            const uint8_t* xb = a.lhs + (i0 + i) * a.lhs_stride + b * kLhsBlock;
            __m512i dot = base;
            for (int r = 0; r < 8; ++r) dot = _mm512_dpbusd_epi32(dot, _mm512_set1_epi32(i32_at(xb + 2 + 4 * r)), op[r]);
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(half_at(xb))), acc[i]);
        }
    }
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    for (int i = 0; i < MR; ++i)
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + i) * a.dst_stride) + n0, mask, acc[i]);
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

void pack_q8_0_biased(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false, 0x80>(x, x_stride, dst, m, k); }

constexpr int kMr = 6;

constinit Kernel table[] = {
    {"iq4_nl_q8_0_gemm_6x16_avx512vnni", "iq4_nl_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::IQ4_NL, DType::Q8_0,
     kMr, 16, 4, 2, kMr, 16, 1, pack_q8_0_biased, gemm<kMr>, gemm<1>},
};

}  // namespace

constinit const std::span<Kernel> kIq4nlAvx512VnniKernels{table};

}  // namespace tessel::cpu::packed
