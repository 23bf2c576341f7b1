// Packed micro-kernels, neon tier (aarch64 Advanced SIMD, no dot-product instructions): the
// neon_tiles.hpp kernels with 4-byte dots made of widening multiplies (SMULL, pairwise adds into
// 32-bit lanes), F16 weights (f16x16) and F32 weights (their GGUF rows) times F32 activations.
//
// Integer dot: the products of a weight vector (rows r..r+3, 4 bytes each) with one activation lane
// broadcast are int16 (|q_w| <= 128, |q_x| <= 127), a pairwise add keeps 2 per row (<= 32512, no
// overflow), and SADALP adds those pairs into the row's 32-bit lane.
#include "cpu/packed/neon_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

struct DotMull {
    template <int L>
    static int32x4_t dot(int32x4_t acc, int8x16_t w, int8x16_t x) {
        const int8x16_t xb = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), L));
        const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(xb));
        const int16x8_t hi = vmull_high_s8(w, xb);
        return vpadalq_s16(acc, vpaddq_s16(lo, hi));
    }
};

/// MR F32 activation rows (from i0) times one f16x16 group over all of K.
template <int MR>
void f16_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    float32x4_t acc[MR][4];
    for (auto& r : acc)
        for (auto& v : r) v = vdupq_n_f32(0.0f);
    const float* x[MR];
    for (int i = 0; i < MR; ++i) x[i] = reinterpret_cast<const float*>(a.lhs + (i0 + i) * a.lhs_stride);
    for (int64_t e = 0; e < a.k; ++e) {
        float32x4_t w[4];
        for (int g = 0; g < 4; ++g) w[g] = f16x4_at(group + 32 * e + 8 * g);
        for (int i = 0; i < MR; ++i)
            for (int g = 0; g < 4; ++g) acc[i][g] = vfmaq_n_f32(acc[i][g], w[g], x[i][e]);
    }
    for (int i = 0; i < MR; ++i) store16(out_row(a, i0 + i, n0), acc[i], n_cols);
}

template <int MR>
void f16_gemm(const GemmArgs& a) {
    for_groups(a, static_cast<size_t>(kGroupRows * a.k * 2), [&](const uint8_t* group, int64_t n0, int n_cols) {
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { f16_tile<decltype(rows)::value>(a, i0, group, n0, n_cols); });
    });
}

/// MR F32 activation rows (from i0) times the nw (1..4) F32 weight rows from n0, the 4 weight rows
/// in the lanes of one accumulator per activation row: 4x4 blocks of the rows are transposed into
/// K-columns, so every output is a chain of fused multiply-adds in K order (the order of the F16 and
/// SME kernels).
template <int MR>
void f32_tile(const GemmArgs& a, int64_t i0, int64_t n0, int nw) {
    const float* w[4];
    for (int j = 0; j < 4; ++j) w[j] = reinterpret_cast<const float*>(a.rhs + static_cast<size_t>(n0 + std::min(j, nw - 1)) * a.rhs_stride);
    const float* x[MR];
    for (int i = 0; i < MR; ++i) x[i] = reinterpret_cast<const float*>(a.lhs + (i0 + i) * a.lhs_stride);
    float32x4_t acc[MR];
    for (auto& v : acc) v = vdupq_n_f32(0.0f);
    int64_t e = 0;
    for (; e + 4 <= a.k; e += 4) {
        const float32x4x2_t t01 = vtrnq_f32(vld1q_f32(w[0] + e), vld1q_f32(w[1] + e));
        const float32x4x2_t t23 = vtrnq_f32(vld1q_f32(w[2] + e), vld1q_f32(w[3] + e));
        const float32x4_t col[4] = {vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])),
                                    vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])),
                                    vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])),
                                    vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]))};
        for (int u = 0; u < 4; ++u)
            for (int i = 0; i < MR; ++i) acc[i] = vfmaq_n_f32(acc[i], col[u], x[i][e + u]);
    }
    for (; e < a.k; ++e) {
        const float c[4] = {w[0][e], w[1][e], w[2][e], w[3][e]};
        const float32x4_t col = vld1q_f32(c);
        for (int i = 0; i < MR; ++i) acc[i] = vfmaq_n_f32(acc[i], col, x[i][e]);
    }
    for (int i = 0; i < MR; ++i) {
        float out[4];
        vst1q_f32(out, acc[i]);
        std::memcpy(out_row(a, i0 + i, n0), out, static_cast<size_t>(nw) * sizeof(float));
    }
}

template <int MR>
void f32_gemm(const GemmArgs& a) {
    for (int64_t n0 = 0; n0 < a.n; n0 += 4) {
        const int nw = static_cast<int>(std::min<int64_t>(4, a.n - n0));
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { f32_tile<decltype(rows)::value>(a, i0, n0, nw); });
    }
}

constexpr int kMr = 4;
using D = Lanes<DotMull>;

constinit Kernel table[] = {
    {"q4_0_q8_0_gemm_4x16_neon", "q4_0_q8_0_gemv_1x16_neon", CpuTier::Neon, false, DType::Q4_0, DType::Q8_0, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_rows<DType::Q8_0>, quant_gemm<D, Q4_0W, kMr>, quant_gemm<D, Q4_0W, 1>},
    {"q4_1_q8_1_gemm_4x16_neon", "q4_1_q8_1_gemv_1x16_neon", CpuTier::Neon, false, DType::Q4_1, DType::Q8_1, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_rows<DType::Q8_1>, quant_gemm<D, Q4_1W, kMr>, quant_gemm<D, Q4_1W, 1>},
    {"q8_0_q8_0_gemm_4x16_neon", "q8_0_q8_0_gemv_1x16_neon", CpuTier::Neon, false, DType::Q8_0, DType::Q8_0, kMr, 16, 4, 1, kMr, 16, 1,
     pack_q8_rows<DType::Q8_0>, quant_gemm<D, Q8_0W, kMr>, quant_gemm<D, Q8_0W, 1>},
    {"iq4_nl_q8_0_gemm_4x16_neon", "iq4_nl_q8_0_gemv_1x16_neon", CpuTier::Neon, false, DType::IQ4_NL, DType::Q8_0, kMr, 16, 4, 2, kMr, 16,
     1, pack_q8_rows<DType::Q8_0>, quant_gemm<D, IQ4_NLW, kMr>, quant_gemm<D, IQ4_NLW, 1>},
    {"q4_K_q8_K_gemm_4x16_neon", "q4_K_q8_K_gemv_1x16_neon", CpuTier::Neon, false, DType::Q4_K, DType::Q8_K, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_rows<DType::Q8_K>, q4k_gemm<D, kMr>, q4k_gemm<D, 1>},
    {"f16_f32_gemm_4x16_neon", "f16_f32_gemv_1x16_neon", CpuTier::Neon, false, DType::F16, DType::F32, kMr, 16, 2, 1, kMr, 16, 1,
     pack_f32_rows, f16_gemm<kMr>, f16_gemm<1>},
};

constexpr Kernel rows_table[] = {
    {"f32_f32_gemm_4x4_neon", "f32_f32_gemv_1x4_neon", CpuTier::Neon, false, DType::F32, DType::F32, kMr, 4, 0, 0, kMr, 16, 1,
     pack_f32_rows, f32_gemm<kMr>, f32_gemm<1>, LhsLayout::Blocks, nullptr, RhsLayout::Rows},
};

}  // namespace

constinit const std::span<Kernel> kNeonKernels{table};
constinit const std::span<const Kernel> kNeonRowsKernels{rows_table};

}  // namespace tessel::cpu::packed
