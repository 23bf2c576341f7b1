// Packed micro-kernels, avx512vnni tier: Q4_0, Q4_1 and Q8_0 weights (formats q4_0x16, q4_1x16,
// q8_0x16 of format.hpp) times Q8 activations, with vpdpbusd (u8 x s8 -> s32, 4 products per
// 32-bit lane). One 64-byte packed register holds 4 K-bytes of each of 16 weight rows, so a
// vpdpbusd against one broadcast 4-byte group of an activation row adds 4 products to all 16
// output columns at once; no horizontal sums anywhere.
//
// Per activation row i, block b (32 elements), the integer dot of the 16 columns:
//   Q4_0  sum (code - 8) * q_x = vpdpbusd(codes, q_x) - 8 * sum q_x   (sum q_x per row and block is
//         computed once per call)
//   Q4_1  sum code * q_x; the min adds m_w * s_x (s_x = d_x * sum q_x, kept in the Q8_1 block)
//   Q8_0  weights are signed, so the activation takes the unsigned side: its packed LHS stores
//         q_x + 128, and sum (q_x + 128) * q_w - 128 * sum q_w = sum q_x * q_w
// then acc += (d_w * d_x) * dot in float lanes. The result of an output depends only on its
// inputs (never on the thread count or the call's column range).
#include "cpu/packed/lhs_avx512.hpp"  // first: it includes <immintrin.h> with g++'s false warnings silenced

#include <algorithm>
#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_traits.hpp"

namespace tessel::cpu::packed {
namespace {


/// The 8 operand registers of one block of a group: register r covers K-elements 4r .. 4r+3.
template <class W>
void load_block(const uint8_t* qs, __m512i (&op)[8]) {
    if constexpr (W::kQs == 16) {
        const __m512i low = _mm512_set1_epi8(0x0f);
        for (int r = 0; r < 4; ++r) {
            const __m512i v = _mm512_loadu_si512(qs + 64 * r);
            op[r] = _mm512_and_si512(v, low);
            op[r + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
    } else {
        for (int r = 0; r < 8; ++r) op[r] = _mm512_loadu_si512(qs + 64 * r);
    }
}

/// MR activation rows (starting at row i0) times one group (16 columns) over all blocks.
template <class W, int MR>
void tile(const GemmArgs& a, const RowPrep& p, int64_t i0, const uint8_t* group, float* const* out, int n_cols) {
    const int64_t nb = a.k / 32;
    __m512 acc[MR];
    for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
    const uint8_t* x[MR];
    for (int i = 0; i < MR; ++i) x[i] = a.lhs + (i0 + i) * a.lhs_stride + W::kLhsHead;
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * W::kGroupBlockBytes;
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
        __m512i op[8];
        load_block<W>(gb + 2 * W::kScales * kGroupRows, op);
        __m512i base = _mm512_setzero_si512();
        if constexpr (W::kWeight == DType::Q8_0) {  // -128 * sum q_w per column
            const __m512i c128 = _mm512_set1_epi8(static_cast<char>(0x80));
            for (int r = 0; r < 8; ++r) base = _mm512_dpbusd_epi32(base, c128, op[r]);
            base = _mm512_sub_epi32(_mm512_setzero_si512(), base);
        }
        for (int i = 0; i < MR; ++i) {
            const uint8_t* xb = x[i] + b * W::kLhsBlockBytes;
            __m512i dot = base;
            if constexpr (W::kWeight == DType::Q4_0) dot = _mm512_set1_epi32(p.corr[static_cast<size_t>((i0 + i) * nb + b)]);
            for (int r = 0; r < 8; ++r) {
                const __m512i xv = _mm512_set1_epi32(i32_at(xb + 4 * r));
                dot = W::kWeight == DType::Q8_0 ? _mm512_dpbusd_epi32(dot, xv, op[r]) : _mm512_dpbusd_epi32(dot, op[r], xv);
            }
            const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(p.d[static_cast<size_t>((i0 + i) * nb + b)]));
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[i]);
            if constexpr (W::kWeight == DType::Q4_1) {
                const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 2 * kGroupRows)));
                acc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(half_at(xb - 2)), acc[i]);
            }
        }
    }
    const __mmask16 mask = n_cols >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_cols) - 1);
    for (int i = 0; i < MR; ++i) _mm512_mask_storeu_ps(out[i], mask, acc[i]);
}

template <class W, int MR>
void gemm(const GemmArgs& a) {
    thread_local RowPrep prep;
    prepare<W>(a, prep);
    const size_t group_bytes = static_cast<size_t>(kGroupRows * (a.k / 32) * (2 * W::kScales + W::kQs));
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        auto out_row = [&](int64_t i) { return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + i * a.dst_stride) + n0; };
        int64_t i = 0;
        for (; i + MR <= a.m; i += MR) {
            float* out[MR];
            for (int r = 0; r < MR; ++r) out[r] = out_row(i + r);
            tile<W, MR>(a, prep, i, group, out, n_cols);
        }
        for (; i < a.m; ++i) {
            float* out[1] = {out_row(i)};
            tile<W, 1>(a, prep, i, group, out, n_cols);
        }
    }
}

template <class W>
void gemv(const GemmArgs& a) { gemm<W, 1>(a); }

void pack_q8_0(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false, 0>(x, x_stride, dst, m, k); }
void pack_q8_0_biased(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<false, 0x80>(x, x_stride, dst, m, k); }
void pack_q8_1(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) { quantize_q8_rows<true, 0>(x, x_stride, dst, m, k); }

constexpr int kMr = 4;

constexpr Kernel kQ4_0 = {"q4_0_q8_0_gemm_4x16_avx512vnni", "q4_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q4_0, DType::Q8_0, kMr, 16, 4, 2, kMr, 16, 1, pack_q8_0, gemm<Q4_0W, kMr>, gemv<Q4_0W>};
constexpr Kernel kQ4_1 = {"q4_1_q8_1_gemm_4x16_avx512vnni", "q4_1_q8_1_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q4_1, DType::Q8_1, kMr, 16, 4, 2, kMr, 16, 1, pack_q8_1, gemm<Q4_1W, kMr>, gemv<Q4_1W>};
constexpr Kernel kQ8_0 = {"q8_0_q8_0_gemm_4x16_avx512vnni", "q8_0_q8_0_gemv_1x16_avx512vnni", CpuTier::Avx512Vnni, false,
                      DType::Q8_0, DType::Q8_0, kMr, 16, 4, 1, kMr, 16, 1, pack_q8_0_biased, gemm<Q8_0W, kMr>, gemv<Q8_0W>};

constinit Kernel table[] = {kQ4_0, kQ4_1, kQ8_0};

}  // namespace

constinit const std::span<Kernel> kAvx512VnniKernels{table};

}  // namespace tessel::cpu::packed
