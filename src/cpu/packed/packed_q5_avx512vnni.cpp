// Packed micro-kernels, avx512vnni tier: Q5_0 weights (format q5_0x16 of format.hpp) times Q8_0
// activations with vpdpbusd, as the Q4_0 kernels of packed_avx512vnni.cpp do, plus the fifth bit.
//
// A block's 8 operand registers (K-elements 4r..4r+3 and 16+4r..16+4r+3 of 16 rows) are built
// once per block and shared by the MR activation rows: nibbles masked out of the 4 quant
// registers, then the high bit of each byte from the qh register (vpshufb copies a row's qh byte
// into its lane's 4 bytes, vptestmb picks the byte's bit, a masked add sets bit 4). The 5-bit codes
// are unsigned: sum (code - 16) * q_x = vpdpbusd(codes, q_x) - 16 * sum q_x, the latter once per
// call per row and block. Then acc += (d_w * d_x) * dot in float lanes. The result of an output
// depends only on its inputs (never on the thread count or the call's column range).
#include "cpu/packed/lhs_avx512.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/q5_traits.hpp"
#include "cpu/packed/row_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

/// The 8 operand registers of block `gb` of a group: op[r] = elements 4r.., op[r + 4] = 16 + 4r..
void q5_block(const uint8_t* gb, __m512i (&op)[8]) {
    const __m512i qh = _mm512_loadu_si512(gb + kQ5Head);
    const __m512i low = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
    for (int r = 0; r < 4; ++r) {
        const __m512i v = _mm512_loadu_si512(gb + kQ5Head + 64 * (r + 1));
        const __m512i bits = _mm512_set1_epi32(qh_bits(r));
        const __m512i lo_h = _mm512_shuffle_epi8(qh, _mm512_broadcast_i32x4(qh_select(r / 2)));
        const __m512i hi_h = _mm512_shuffle_epi8(qh, _mm512_broadcast_i32x4(qh_select(2 + r / 2)));
        const __m512i lo = _mm512_and_si512(v, low), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        op[r] = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(lo_h, bits), lo, bit4);
        op[r + 4] = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(hi_h, bits), hi, bit4);
    }
}

/// MR activation rows (from row i0) times one group (16 columns) over all blocks.
template <int MR>
void tile(const GemmArgs& a, const Q5Prep& p, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    __m512 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * kQ5BlockBytes;
        __m512i op[8];
        q5_block(gb, op);
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
        for (int i = 0; i < MR; ++i) {
            const size_t o = static_cast<size_t>((i0 + i) * nb + b);
            const uint8_t* xb = a.lhs + (i0 + i) * a.lhs_stride + b * kQ8_0Block + 2;
            __m512i dot = _mm512_set1_epi32(p.corr[o]);
            for (int r = 0; r < 8; ++r) dot = _mm512_dpbusd_epi32(dot, op[r], _mm512_set1_epi32(i32_at(xb + 4 * r)));
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_set1_ps(p.d[o])), acc[i]);
        }
    }
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    for (int i = 0; i < MR; ++i)
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + (i0 + i) * a.dst_stride) + n0, mask, acc[i]);
}

template <int MR>
void gemm(const GemmArgs& a) {
    thread_local Q5Prep prep;
    q5_prepare(a, prep);
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * q5_group_bytes(a.k);
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { tile<decltype(rows)::value>(a, prep, i0, group, n0, n_cols); });
    }
}

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false, 0>(x, x_stride, dst, m, k); }

constexpr int kMr = 6;  // 8 operand + 6 accumulator + 6 dot registers: the block decode is shared by more rows

constinit Kernel table[] = {
    {"q5_0_q8_0_gemm_6x16_avx512vnni", "q5_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false, DType::Q5_0, DType::Q8_0,
     kMr, 16, 4, 2, kMr, 16, 1, pack_q8_0, gemm<kMr>, gemm<1>},
};

}  // namespace

constinit const std::span<Kernel> kQ5Avx512VnniKernels{table};

}  // namespace tessel::cpu::packed
