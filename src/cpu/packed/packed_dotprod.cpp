// Packed micro-kernels, dotprod tier (aarch64 NEON with SDOT): the neon_tiles.hpp integer kernels
// (Q4_0, Q4_1, Q8_0, IQ4_NL, Q4_K) with one SDOT (neon_tiles.hpp's DotSdot) per 4 weight rows and
// 4 K-bytes.
#include "cpu/packed/neon_tiles.hpp"

namespace tessel::cpu::packed {
namespace {

constexpr int kMr = 4;
using D = Lanes<DotSdot>;

constinit Kernel table[] = {
    {"q4_0_q8_0_gemm_4x16_dotprod", "q4_0_q8_0_gemv_1x16_dotprod", CpuTier::Dotprod, false, DType::Q4_0, DType::Q8_0, kMr, 16, 4, 2, kMr,
     16, 1, pack_q8_rows<DType::Q8_0>, quant_gemm<D, Q4_0W, kMr>, quant_gemm<D, Q4_0W, 1>},
    {"q4_1_q8_1_gemm_4x16_dotprod", "q4_1_q8_1_gemv_1x16_dotprod", CpuTier::Dotprod, false, DType::Q4_1, DType::Q8_1, kMr, 16, 4, 2, kMr,
     16, 1, pack_q8_rows<DType::Q8_1>, quant_gemm<D, Q4_1W, kMr>, quant_gemm<D, Q4_1W, 1>},
    {"q8_0_q8_0_gemm_4x16_dotprod", "q8_0_q8_0_gemv_1x16_dotprod", CpuTier::Dotprod, false, DType::Q8_0, DType::Q8_0, kMr, 16, 4, 1, kMr,
     16, 1, pack_q8_rows<DType::Q8_0>, quant_gemm<D, Q8_0W, kMr>, quant_gemm<D, Q8_0W, 1>},
    {"iq4_nl_q8_0_gemm_4x16_dotprod", "iq4_nl_q8_0_gemv_1x16_dotprod", CpuTier::Dotprod, false, DType::IQ4_NL, DType::Q8_0, kMr, 16, 4, 2,
     kMr, 16, 1, pack_q8_rows<DType::Q8_0>, quant_gemm<D, IQ4_NLW, kMr>, quant_gemm<D, IQ4_NLW, 1>},
    {"q4_K_q8_K_gemm_4x16_dotprod", "q4_K_q8_K_gemv_1x16_dotprod", CpuTier::Dotprod, false, DType::Q4_K, DType::Q8_K, kMr, 16, 4, 2, kMr,
     16, 1, pack_q8_rows<DType::Q8_K>, q4k_gemm<D, kMr>, q4k_gemm<D, 1>},
};

}  // namespace

constinit const std::span<Kernel> kDotprodKernels{table};

}  // namespace tessel::cpu::packed
