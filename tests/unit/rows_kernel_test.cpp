// The Rows kernels of the CPU kernel table (src/cpu/packed/kernel.hpp) through the one
// matrix-product driver (packed/mul_mat.cpp): every chain ends with the reference kernel at every
// tier, a strided view of a weight (nb[1] larger than the row) gives what the same rows stored
// contiguously give and what the reference gives, and where the chain's reference kernel runs
// (TESSEL_CPU_ISA=scalar: ctest's rows_kernels.scalar) the backend equals ref bit for bit.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/packed/kernel.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "quant/quant.hpp"
#include "ref_test_util.hpp"
#include "support/host_graph.hpp"

namespace tessel {
namespace {

using cpu::packed::Kernel;
using cpu::packed::RhsLayout;

bool ends_with_ref(const std::string& s) { return s.size() > 4 && s.compare(s.size() - 4, 4, "_ref") == 0; }

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

TEST(RowsKernel, EveryChainEndsWithTheReferenceAtEveryTier) {
    CpuFeatures full;  // every feature of this architecture: each tier's tables, run or not
    full.arch = usable_cpu_features().arch;
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (fi.arch == full.arch) full.*fi.member = true;
    std::vector<CpuTier> tiers = {CpuTier::Scalar};
    for (CpuTier t : arch_tiers(full.arch)) tiers.push_back(t);
    int types = 0;
    for (uint32_t id = 0; id < kDTypeIdEnd; ++id) {
        const DTypeInfo* info = dtype_info_from_id(id);
        if (!info || !quant::has_dequantize(info->type)) continue;
        ++types;
        for (CpuTier tier : tiers) {
            const CpuFeatures f = cap_cpu_features(full, tier);
            const std::vector<const Kernel*> c = cpu::packed::chain(info->type, f);
            ASSERT_FALSE(c.empty()) << info->name << " at " << tier_name(tier);
            const Kernel& last = *c.back();
            EXPECT_EQ(last.tier, CpuTier::Scalar) << info->name;
            EXPECT_EQ(last.rhs_layout, RhsLayout::Rows) << info->name;
            EXPECT_EQ(last.lhs, DType::F32) << info->name;
            EXPECT_EQ(lower(last.name), lower(info->name) + "_f32_gemm_ref");
            EXPECT_EQ(lower(last.gemv_name), lower(info->name) + "_f32_gemv_ref");
            for (size_t i = 0; i + 1 < c.size(); ++i) EXPECT_NE(c[i]->tier, CpuTier::Scalar) << c[i]->name << ": only the last is scalar";
            if (tier == CpuTier::Scalar) {
                EXPECT_EQ(c.size(), 1u) << info->name << ": the scalar tier has only the reference";
            }
        }
    }
    EXPECT_GE(types, 20);  // F32, F16, BF16, the legacy quants, K-quants, IQ types
}

/// One MUL_MAT w · x run on the CPU backend (2 threads) and on the reference kernels, w a view of
/// every other row of a [K, 2N] weight (nb[1] = 2 rows), next to the same rows stored contiguously.
struct StridedCase {
    Graph g;
    Tensor *parent, *view, *packed_rows, *x, *y_view, *y_rows;
    StridedCase(DType t, int64_t K, int64_t N, int64_t M) {
        parent = g.new_tensor(t, {K, 2 * N}, "w2n");
        packed_rows = g.new_tensor(t, {K, N}, "w");
        x = g.new_tensor(DType::F32, {K, M}, "x");
        const uint64_t row = dtype_row_bytes(t, K);
        view = build::view_2d(g, parent, K, N, 2 * row, row);  // the odd rows
        y_view = build::mul_mat(g, view, x);
        y_rows = build::mul_mat(g, packed_rows, x);
        g.expand(y_view);
        g.expand(y_rows);
    }
};

std::vector<float> floats_of(const Tensor& t) {
    const auto* p = static_cast<const float*>(t.data);
    return {p, p + t.n_elements()};
}

/// Runs case c (weights and x random) on the backend, returns its outputs and the kernel name;
/// ref_out gets the reference's result for the strided view.
void run_case(StridedCase& c, std::vector<float>& view_out, std::vector<float>& rows_out, std::vector<float>& ref_out,
              std::string& kernel) {
    test::HostMemory mem(c.g);
    const int64_t K = c.parent->ne[0], N = c.packed_rows->ne[1];
    reftest::set_values(*c.parent, reftest::random_values(static_cast<size_t>(K * 2 * N), 17));
    const uint64_t row = dtype_row_bytes(c.parent->type, K);
    for (int64_t n = 0; n < N; ++n)
        std::memcpy(static_cast<uint8_t*>(c.packed_rows->data) + n * row, static_cast<const uint8_t*>(c.parent->data) + (2 * n + 1) * row, row);
    reftest::set_values(*c.x, reftest::random_values(static_cast<size_t>(c.x->n_elements()), 23));
    auto backend = cpu::cpu_device().init_backend({2});
    backend->graph_compute(c.g.nodes());
    view_out = floats_of(*c.y_view);
    rows_out = floats_of(*c.y_rows);
    kernel = backend->kernel_name(*c.y_view);
    test::run_reference(c.g, 1);
    ref_out = floats_of(*c.y_view);
}

TEST(RowsKernel, StridedViewWeightEqualsTheReference) {
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q6_K, DType::F16, DType::BF16, DType::F32})
        for (int64_t M : {1, 5}) {
            StridedCase c(t, 256, 40, M);
            std::vector<float> view_out, rows_out, ref_out;
            std::string kernel;
            run_case(c, view_out, rows_out, ref_out, kernel);
            SCOPED_TRACE(std::string(dtype_name(t)) + " M=" + std::to_string(M) + " " + kernel);
            EXPECT_NE(kernel, "ref");  // the driver's chain, not the op-level reference
            EXPECT_EQ(lower(kernel).rfind(lower(dtype_name(t)) + "_", 0), 0u);
            ASSERT_EQ(std::memcmp(view_out.data(), rows_out.data(), view_out.size() * sizeof(float)), 0)
                << "the strided view and the contiguous rows differ";
            if (ends_with_ref(kernel)) {
                EXPECT_EQ(std::memcmp(view_out.data(), ref_out.data(), view_out.size() * sizeof(float)), 0);
                continue;
            }
            double err = 0, norm = 0;  // fast kernels quantize the activations: NMSE against the reference
            for (size_t i = 0; i < ref_out.size(); ++i) {
                err += (view_out[i] - ref_out[i]) * static_cast<double>(view_out[i] - ref_out[i]);
                norm += ref_out[i] * static_cast<double>(ref_out[i]);
            }
            EXPECT_LT(err / norm, 1e-3);
        }
}

// At TESSEL_CPU_ISA=scalar (ctest rows_kernels.scalar) every chain holds only the reference
// kernel, and the backend's MUL_MAT and MUL_MAT_ID equal ref::compute bit for bit.
TEST(RowsKernel, ScalarTierEqualsTheReferenceBitForBit) {
    if (usable_tier() != CpuTier::Scalar) GTEST_SKIP() << "runs under TESSEL_CPU_ISA=scalar (ctest rows_kernels.scalar)";
    for (DType t : {DType::Q4_K, DType::Q8_0, DType::F16})
        for (int64_t M : {1, 7}) {
            StridedCase c(t, 512, 33, M);
            std::vector<float> view_out, rows_out, ref_out;
            std::string kernel;
            run_case(c, view_out, rows_out, ref_out, kernel);
            SCOPED_TRACE(std::string(dtype_name(t)) + " M=" + std::to_string(M));
            EXPECT_EQ(lower(kernel), lower(dtype_name(t)) + (M == 1 ? "_f32_gemv_ref" : "_f32_gemm_ref"));
            EXPECT_EQ(std::memcmp(view_out.data(), ref_out.data(), view_out.size() * sizeof(float)), 0);
        }
    // MUL_MAT_ID: 4 experts, 2 used per token, 3 tokens
    Graph g;
    Tensor* experts = g.new_tensor(DType::Q4_0, {64, 24, 4}, "experts");
    Tensor* x = g.new_tensor(DType::F32, {64, 2, 3}, "x");
    Tensor* ids = g.new_tensor(DType::I32, {2, 3}, "ids");
    Tensor* y = build::mul_mat_id(g, experts, x, ids);
    g.expand(y);
    test::HostMemory mem(g);
    reftest::set_values(*experts, reftest::random_values(static_cast<size_t>(experts->n_elements()), 3));
    reftest::set_values(*x, reftest::random_values(static_cast<size_t>(x->n_elements()), 4));
    const int32_t chosen[6] = {0, 3, 2, 0, 1, 3};
    std::memcpy(ids->data, chosen, sizeof chosen);
    auto backend = cpu::cpu_device().init_backend({2});
    backend->graph_compute(g.nodes());
    EXPECT_EQ(backend->kernel_name(*y), "q4_0_f32_gemm_ref");
    const std::vector<float> got = floats_of(*y);
    test::run_reference(g, 1);
    const std::vector<float> want = floats_of(*y);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace tessel
