// Kernel selection: the tier helpers of src/cpu/kernels/kernel.hpp agree with the tier definitions
// of core/cpu_features.hpp, and a capped feature set selects the kernels of the highest tier it
// keeps: the fast kernels of the other ops, and for matrix products over plain weight rows the
// Rows part of the weight type's chain (src/cpu/packed/kernel.hpp), down to its reference kernel
// at tier scalar (x86 builds; the values of the kernels are checked by test-ops).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/packed/kernel.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "graph/graph.hpp"

using namespace tessel;

namespace {

CpuFeatures full_x86() {
    CpuFeatures f;
    f.arch = CpuArch::X86;
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (fi.arch == CpuArch::X86) f.*fi.member = true;
    return f;
}

TEST(KernelSelect, TierHelpersFollowTheTierDefinitions) {
    const CpuFeatures full = full_x86();
    for (CpuTier t : arch_tiers(CpuArch::X86)) {
        const CpuFeatures f = cap_cpu_features(full, t);
        EXPECT_EQ(cpu::has_avx2_tier(f), tier_supported(f, CpuTier::Avx2)) << tier_name(t);
        EXPECT_EQ(cpu::has_avx512_tier(f), tier_supported(f, CpuTier::Avx512)) << tier_name(t);
        EXPECT_EQ(cpu::has_avx512vnni_tier(f), tier_supported(f, CpuTier::Avx512Vnni)) << tier_name(t);
    }
    CpuFeatures no_vnni = full;
    no_vnni.avx512vnni = false;
    EXPECT_TRUE(cpu::has_avx512_tier(no_vnni));
    EXPECT_FALSE(cpu::has_avx512vnni_tier(no_vnni));
}

#if defined(__x86_64__)
/// Name of the kernel selected for node dst under features f ("ref" if none): for MUL_MAT the
/// first Rows kernel of the weight type's chain (its GEMV name for one activation row).
std::string selected(const Tensor& dst, const CpuFeatures& f) {
    if (dst.op == Op::MUL_MAT) {
        const std::vector<const cpu::packed::Kernel*> c = cpu::packed::chain(dst.src[0]->type, f, cpu::packed::RhsLayout::Rows);
        if (c.empty()) return "ref";
        return dst.src[1]->ne[1] == 1 ? c.front()->gemv_name : c.front()->name;
    }
    const cpu::FastKernel* k = cpu::select_kernel(dst, f);
    return k ? k->name : "ref";
}

TEST(KernelSelect, HigherTiersWinWhereUsable) {
    Graph g;
    Tensor* w = g.new_tensor(DType::Q5_0, {256, 16}, "w");
    Tensor* gemm = build::mul_mat(g, w, g.new_tensor(DType::F32, {256, 8}, "x"));
    Tensor* gemv = build::mul_mat(g, w, g.new_tensor(DType::F32, {256, 1}, "x1"));
    const CpuFeatures full = full_x86();
    EXPECT_EQ(selected(*gemm, full), "q5_0_q8_0_gemm_4x8_avx512vnni");
    EXPECT_EQ(selected(*gemv, full), "q5_0_q8_0_gemv_1x8_avx512vnni");
    EXPECT_EQ(selected(*gemm, cap_cpu_features(full, CpuTier::Avx512Vnni)), "q5_0_q8_0_gemm_4x8_avx512vnni");
    EXPECT_EQ(selected(*gemm, cap_cpu_features(full, CpuTier::Avx512)), "q5_0_q8_0_gemm_4x2_avx2");
    EXPECT_EQ(selected(*gemv, cap_cpu_features(full, CpuTier::Avx2)), "q5_0_q8_0_gemv_1x4_avx2");
    EXPECT_EQ(selected(*gemm, cap_cpu_features(full, CpuTier::Scalar)), "q5_0_f32_gemm_ref");
    EXPECT_EQ(selected(*gemv, cap_cpu_features(full, CpuTier::Scalar)), "q5_0_f32_gemv_ref");

    Tensor* half = build::mul_mat(g, g.new_tensor(DType::F16, {64, 16}, "h"), g.new_tensor(DType::F32, {64, 3}, "x3"));
    EXPECT_EQ(selected(*half, full), "f16_f32_gemm_2x8_avx512");
    EXPECT_EQ(selected(*half, cap_cpu_features(full, CpuTier::Avx512)), "f16_f32_gemm_2x8_avx512");
    EXPECT_EQ(selected(*half, cap_cpu_features(full, CpuTier::Avx2)), "f16_f32_gemm_1x1_avx2");
    EXPECT_EQ(selected(*half, cap_cpu_features(full, CpuTier::Scalar)), "f16_f32_gemm_ref");

    Tensor* kq = g.new_tensor(DType::Q4_K, {256, 16}, "kq");
    Tensor* kq_gemm = build::mul_mat(g, kq, g.new_tensor(DType::F32, {256, 8}, "x8"));
    EXPECT_EQ(selected(*kq_gemm, full), "q4_K_q8_K_gemm_8x1_avx2");
    EXPECT_EQ(selected(*kq_gemm, cap_cpu_features(full, CpuTier::Scalar)), "q4_K_f32_gemm_ref");
}

// FLASH_ATTN_EXT: the tiled AVX-512 kernel takes every shape at tier avx512 and above (prompts
// and decode steps alike); capped at avx2, the AVX2 kernel does.
TEST(KernelSelect, FlashAttnOneKernelPerTier) {
    Graph g;
    auto attention = [&g](int64_t T, int64_t H, int64_t H_kv) {
        return build::flash_attn_ext(g, g.new_tensor(DType::F32, {64, T, H}, "q"), g.new_tensor(DType::F16, {64, 40, H_kv}, "k"),
                                     g.new_tensor(DType::F16, {64, 40, H_kv}, "v"), g.new_tensor(DType::F16, {40, T}, "mask"),
                                     0.125f);
    };
    const CpuFeatures full = full_x86();
    const CpuFeatures avx2 = cap_cpu_features(full, CpuTier::Avx2);
    // one kernel per tier for every shape, so a row's result does not depend on how many rows
    // share its ubatch (Context.UbatchSizeDoesNotChangeLogits)
    const Tensor* prompt = attention(6, 9, 3);   // 3 heads × 6 tokens = 18 rows per group
    const Tensor* decode = attention(1, 9, 3);   // 3 rows
    EXPECT_EQ(selected(*prompt, full), "flash_attn_ext_f32_tiled_avx512");
    EXPECT_EQ(selected(*decode, full), "flash_attn_ext_f32_tiled_avx512");
    EXPECT_EQ(selected(*prompt, avx2), "flash_attn_ext_f32_avx2");
    EXPECT_EQ(selected(*decode, avx2), "flash_attn_ext_f32_avx2");
}
#endif

}  // namespace
