// Rows kernels (src/cpu/packed/kernel.hpp) of MUL_MAT and MUL_MAT_ID for plain GGUF rows of
// quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) with F32 activations, tier avx2
// (compiled with -mavx2 -mfma -mf16c; run only when the usable CPU features include AVX2, FMA and
// F16C). Activations are quantized to the type the weight pairs with (Q8_0, or Q8_1 for the types
// with a min: Q4_1, Q5_1); tiles are 4 activation rows x 2 weight rows (GEMM) or 1 x 4 (GEMV).
// The tile wrapper is mul_mat_driver.hpp, the tile quant_tile_avx2.hpp, the block decoders
// quant_decode_avx2.hpp.
#include "cpu/kernels/quant_tile_avx2.hpp"

namespace tessel::cpu {
namespace {

using namespace quant;

template <class Dec, class X, DType kW, DType kX>
struct Avx2Kernel {
    static constexpr DType kWeight = kW, kAct = kX;
    static constexpr int kMr = 4, kNr = 2, kGemvNr = 4, kNStep = 16;
    static constexpr CpuTier kTier = CpuTier::Avx2;
    template <int MR, int NR>
    static void tile(const uint8_t* w, size_t w_stride, const mm::TileRows<MR>& rows, int64_t n_blocks) {
        avx2::quant_tile<Dec, X, MR, NR>(w, w_stride, rows, n_blocks);
    }
};

struct Q8_0K : Avx2Kernel<avx2::DecQ8_0, block_q8_0, DType::Q8_0, DType::Q8_0> {
    static constexpr const char* kGemmName = "q8_0_q8_0_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "q8_0_q8_0_gemv_1x4_avx2";
};
struct Q4_0K : Avx2Kernel<avx2::DecQ4_0, block_q8_0, DType::Q4_0, DType::Q8_0> {
    static constexpr const char* kGemmName = "q4_0_q8_0_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "q4_0_q8_0_gemv_1x4_avx2";
};
struct Q4_1K : Avx2Kernel<avx2::DecQ4_1, block_q8_1, DType::Q4_1, DType::Q8_1> {
    static constexpr const char* kGemmName = "q4_1_q8_1_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "q4_1_q8_1_gemv_1x4_avx2";
};

struct Q5_0K : Avx2Kernel<avx2::DecQ5_0, block_q8_0, DType::Q5_0, DType::Q8_0> {
    static constexpr const char* kGemmName = "q5_0_q8_0_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "q5_0_q8_0_gemv_1x4_avx2";
};
struct Q5_1K : Avx2Kernel<avx2::DecQ5_1, block_q8_1, DType::Q5_1, DType::Q8_1> {
    static constexpr const char* kGemmName = "q5_1_q8_1_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "q5_1_q8_1_gemv_1x4_avx2";
};
struct IQ4_NLK : Avx2Kernel<avx2::DecIQ4_NL, block_q8_0, DType::IQ4_NL, DType::Q8_0> {
    static constexpr const char* kGemmName = "iq4_nl_q8_0_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "iq4_nl_q8_0_gemv_1x4_avx2";
};
struct MXFP4K : Avx2Kernel<avx2::DecMXFP4, block_q8_0, DType::MXFP4, DType::Q8_0> {
    static constexpr const char* kGemmName = "mxfp4_q8_0_gemm_4x2_avx2";
    static constexpr const char* kGemvName = "mxfp4_q8_0_gemv_1x4_avx2";
};

}  // namespace

namespace packed {
constinit const std::span<const Kernel> kAvx2RowsKernels{mm::kRowsTable<Q8_0K, Q4_0K, Q4_1K, Q5_0K, Q5_1K, IQ4_NLK, MXFP4K>};
}  // namespace packed

}  // namespace tessel::cpu
