// Fast-kernel selection (src/cpu/kernels/kernel.hpp): the tier helpers agree with the tier
// definitions of core/cpu_features.hpp, and a capped feature set selects the kernels of the
// highest tier it keeps (x86 builds; the values of the kernels are checked by test-ops).
#include <gtest/gtest.h>

#include <string>

#include "core/cpu_features.hpp"
#include "cpu/kernels/kernel.hpp"
#include "graph/builder.hpp"
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
/// Name of the kernel selected for node dst under features f ("ref" if none).
std::string selected(const Tensor& dst, const CpuFeatures& f) {
    const cpu::FastKernel* k = cpu::select_kernel(dst, f);
    return k ? cpu::kernel_path_name(*k, dst) : "ref";
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
    EXPECT_EQ(selected(*gemm, cap_cpu_features(full, CpuTier::Scalar)), "ref");

    Tensor* half = build::mul_mat(g, g.new_tensor(DType::F16, {64, 16}, "h"), g.new_tensor(DType::F32, {64, 3}, "x3"));
    EXPECT_EQ(selected(*half, full), "f16_f32_gemm_2x8_avx512");
    EXPECT_EQ(selected(*half, cap_cpu_features(full, CpuTier::Avx512)), "f16_f32_gemm_2x8_avx512");
    EXPECT_EQ(selected(*half, cap_cpu_features(full, CpuTier::Avx2)), "f16_f32_gemm_1x1_avx2");
}
#endif

}  // namespace
