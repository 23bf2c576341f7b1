// Rows kernels (src/cpu/packed/kernel.hpp) of MUL_MAT and MUL_MAT_ID for plain GGUF rows of
// super-block weights (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) with F32 activations quantized to
// Q8_K, tier avx2 (compiled with -mavx2 -mfma -mf16c; run only when the usable CPU features
// include AVX2, FMA and F16C). K is a multiple of 256 (the chain's reference kernel serves other
// K). Tiles are 8 activation rows x 1 weight row (GEMM: the weight block is decoded once for 8
// rows) or 1 x 4 (GEMV). The tile wrapper is mul_mat_driver.hpp, the tile kquant_tile_avx2.hpp.
#include "cpu/kernels/kquant_tile_avx2.hpp"

namespace tessel::cpu {
namespace {

template <class Dec, DType kW>
struct KQuantKernel {
    static constexpr DType kWeight = kW, kAct = DType::Q8_K;
    static constexpr int kMr = 8, kNr = 1, kGemvNr = 4, kNStep = 16;
    static constexpr CpuTier kTier = CpuTier::Avx2;
    template <int MR, int NR>
    static void tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
        avx2::kquant_tile<Dec, MR, NR>(w, w_stride, rows, n_blocks);
    }
};

struct Q2_KK : KQuantKernel<avx2::DecQ2_K, DType::Q2_K> {
    static constexpr const char* kGemmName = "q2_K_q8_K_gemm_8x1_avx2";
    static constexpr const char* kGemvName = "q2_K_q8_K_gemv_1x4_avx2";
};
struct Q3_KK : KQuantKernel<avx2::DecQ3_K, DType::Q3_K> {
    static constexpr const char* kGemmName = "q3_K_q8_K_gemm_8x1_avx2";
    static constexpr const char* kGemvName = "q3_K_q8_K_gemv_1x4_avx2";
};
struct Q4_KK : KQuantKernel<avx2::DecQ4_K, DType::Q4_K> {
    static constexpr const char* kGemmName = "q4_K_q8_K_gemm_8x1_avx2";
    static constexpr const char* kGemvName = "q4_K_q8_K_gemv_1x4_avx2";
};
struct Q5_KK : KQuantKernel<avx2::DecQ5_K, DType::Q5_K> {
    static constexpr const char* kGemmName = "q5_K_q8_K_gemm_8x1_avx2";
    static constexpr const char* kGemvName = "q5_K_q8_K_gemv_1x4_avx2";
};
struct Q6_KK : KQuantKernel<avx2::DecQ6_K, DType::Q6_K> {
    static constexpr const char* kGemmName = "q6_K_q8_K_gemm_8x1_avx2";
    static constexpr const char* kGemvName = "q6_K_q8_K_gemv_1x4_avx2";
};
struct IQ4_XSK : KQuantKernel<avx2::DecIQ4_XS, DType::IQ4_XS> {
    static constexpr const char* kGemmName = "iq4_xs_q8_K_gemm_8x1_avx2";
    static constexpr const char* kGemvName = "iq4_xs_q8_K_gemv_1x4_avx2";
};

}  // namespace

namespace packed {
constinit const std::span<const Kernel> kAvx2KquantRowsKernels{mm::kRowsTable<Q2_KK, Q3_KK, Q4_KK, Q5_KK, Q6_KK, IQ4_XSK>};
}  // namespace packed

}  // namespace tessel::cpu
