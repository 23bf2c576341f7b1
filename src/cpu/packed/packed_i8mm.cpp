// Packed micro-kernels, i8mm tier (aarch64 NEON with SMMLA): the neon_tiles.hpp integer kernels
// (Q4_0, Q4_1, Q8_0, IQ4_NL, Q4_K) over pairs of activation rows. One SMMLA multiplies a 2x8 int8
// activation operand (rows i, i+1: 8 K-bytes each) by two weight rows' 8 K-bytes and adds the 2x2
// int32 [x_i.w_a, x_i.w_b, x_{i+1}.w_a, x_{i+1}.w_b]: 32 multiply-adds per instruction against
// SDOT's 16, so two rows cost half the dotprod kernel's dot instructions. A single row gains
// nothing (half of each product is discarded): the GEMV is the dotprod kernel's code.
#include "cpu/packed/neon_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

/// Block-dot policy (neon_tiles.hpp) of SMMLA: two activation rows per step.
struct DotSmmla {
    static constexpr int kRows = 2;
    /// Pairs the K-chunks t = 2p, 2p+1 (elements 8p..8p+7): q[2p][g] becomes weight rows 4g, 4g+1
    /// with 8 K-bytes each, q[2p+1][g] rows 4g+2, 4g+3 (SMMLA's B operand).
    static void prepare(BlockQuants& b) {
        for (int p = 0; p < 4; ++p)
            for (int g = 0; g < 4; ++g) {
                const int32x4_t lo = vreinterpretq_s32_s8(b.q[2 * p][g]), hi = vreinterpretq_s32_s8(b.q[2 * p + 1][g]);
                b.q[2 * p][g] = vreinterpretq_s8_s32(vzip1q_s32(lo, hi));
                b.q[2 * p + 1][g] = vreinterpretq_s8_s32(vzip2q_s32(lo, hi));
            }
    }
    [[gnu::always_inline]] static void dots(const BlockQuants& b, const int8_t* const* x, int32x4_t (*d)[4]) {
        int8x16_t xa[4];  // rows x[0], x[1]: elements 8p..8p+7 each
        for (int p = 0; p < 4; ++p) xa[p] = vcombine_s8(vld1_s8(x[0] + 8 * p), vld1_s8(x[1] + 8 * p));
        for (int g = 0; g < 4; ++g) {
            // s[h] = [x0.w_a, x0.w_b, x1.w_a, x1.w_b] for weight rows a = 4g + 2h, b = a + 1
            int32x4_t s[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int p = 0; p < 4; ++p)
                for (int h = 0; h < 2; ++h) s[h] = vmmlaq_s32(s[h], xa[p], b.q[2 * p + h][g]);
            const int64x2_t s0 = vreinterpretq_s64_s32(s[0]), s1 = vreinterpretq_s64_s32(s[1]);
            d[0][g] = vreinterpretq_s32_s64(vzip1q_s64(s0, s1));  // row x[0]: columns 4g..4g+3
            d[1][g] = vreinterpretq_s32_s64(vzip2q_s64(s0, s1));  // row x[1]
        }
    }
};

constexpr int kMr = 4;
using D = DotSmmla;
using V = Lanes<DotSdot>;  // the GEMV

constinit Kernel table[] = {
    {"q4_0_q8_0_gemm_4x16_i8mm", "q4_0_q8_0_gemv_1x16_dotprod", CpuTier::I8mm, false, DType::Q4_0, DType::Q8_0, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_rows<DType::Q8_0>, quant_gemm<D, Q4_0W, kMr>, quant_gemm<V, Q4_0W, 1>},
    {"q4_1_q8_1_gemm_4x16_i8mm", "q4_1_q8_1_gemv_1x16_dotprod", CpuTier::I8mm, false, DType::Q4_1, DType::Q8_1, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_rows<DType::Q8_1>, quant_gemm<D, Q4_1W, kMr>, quant_gemm<V, Q4_1W, 1>},
    {"q8_0_q8_0_gemm_4x16_i8mm", "q8_0_q8_0_gemv_1x16_dotprod", CpuTier::I8mm, false, DType::Q8_0, DType::Q8_0, kMr, 16, 4, 1, kMr, 16, 1,
     pack_q8_rows<DType::Q8_0>, quant_gemm<D, Q8_0W, kMr>, quant_gemm<V, Q8_0W, 1>},
    {"iq4_nl_q8_0_gemm_4x16_i8mm", "iq4_nl_q8_0_gemv_1x16_dotprod", CpuTier::I8mm, false, DType::IQ4_NL, DType::Q8_0, kMr, 16, 4, 2, kMr,
     16, 1, pack_q8_rows<DType::Q8_0>, quant_gemm<D, IQ4_NLW, kMr>, quant_gemm<V, IQ4_NLW, 1>},
    {"q4_K_q8_K_gemm_4x16_i8mm", "q4_K_q8_K_gemv_1x16_dotprod", CpuTier::I8mm, false, DType::Q4_K, DType::Q8_K, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8_rows<DType::Q8_K>, q4k_gemm<D, kMr>, q4k_gemm<V, 1>},
};

}  // namespace

constinit const std::span<Kernel> kI8mmKernels{table};

}  // namespace tessel::cpu::packed
