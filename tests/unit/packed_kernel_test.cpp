// Packed weight formats and micro-kernels (src/cpu/packed): pack -> unpack is the identity on
// GGUF bytes; every kernel this CPU can run, GEMM and GEMV, at odd shapes, against a float64 dot
// of the dequantized weights and the dequantized activations the reference quantizer makes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/fp16.hpp"
#include "cpu/packed/kernel.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu::packed {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

/// n rows of k elements of type t (quantized from normal values), GGUF bytes.
std::vector<uint8_t> random_rows(DType t, int64_t n, int64_t k, uint32_t seed) {
    const std::vector<float> f = random_floats(static_cast<size_t>(n * k), seed);
    std::vector<uint8_t> out(static_cast<size_t>(dtype_row_bytes(t, k) * n));
    quant::quantize_rows(t, f.data(), out.data(), n, k);
    return out;
}

TEST(PackedFormat, PackUnpackIsIdentityOnGgufBytes) {
    for (const Format& f : formats()) {
        for (int64_t n : {1, 15, 16, 17, 40}) {
            const int64_t k = f.weight == DType::F16 ? 37 : 3 * static_cast<int64_t>(dtype_info(f.weight).block_size);
            const std::vector<uint8_t> rows = random_rows(f.weight, n, k, static_cast<uint32_t>(n));
            std::vector<uint8_t> packed(packed_bytes(f, n, k), 0xAB);
            f.pack(rows.data(), packed.data(), n, k);
            EXPECT_NE(0, std::memcmp(rows.data(), packed.data(), std::min(rows.size(), packed.size())))
                << f.name << ": packing should reorder the bytes";
            std::vector<uint8_t> back(rows.size(), 0xCD);
            f.unpack(packed.data(), back.data(), n, k);
            EXPECT_EQ(rows, back) << f.name << " n=" << n;
        }
    }
}

/// Dequantized activation rows as the kernel sees them (the reference quantizer's blocks).
std::vector<double> reference_lhs(const Kernel& kern, const std::vector<float>& x, int64_t m, int64_t k) {
    std::vector<double> out(static_cast<size_t>(m * k));
    std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(kern.lhs, k)));
    std::vector<float> f(static_cast<size_t>(k));
    for (int64_t i = 0; i < m; ++i) {
        const float* row = x.data() + i * k;
        if (kern.lhs == DType::F32) {
            std::copy(row, row + k, f.begin());
        } else {
            quant::quantize_row(kern.lhs, row, q.data(), k);
            quant::dequantize_row(kern.lhs, q.data(), f.data(), k);
        }
        for (int64_t e = 0; e < k; ++e) out[static_cast<size_t>(i * k + e)] = f[static_cast<size_t>(e)];
    }
    return out;
}

/// Q4_1 x Q8_1 as ggml defines it: a block's min term is m_w * s_x, where s_x = fp16(d_x * sum q_x)
/// is stored in the Q8_1 block, instead of m_w * d_x * sum q_x. Returns the difference for one
/// Q4_1 weight row against one activation row.
double q8_1_min_correction(const uint8_t* w_row, const float* x_row, int64_t k) {
    std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(DType::Q8_1, k)));
    quant::quantize_row(DType::Q8_1, x_row, q.data(), k);
    double diff = 0;
    for (int64_t b = 0; b < k / 32; ++b) {
        const uint8_t* xb = q.data() + b * 36;
        const uint8_t* wb = w_row + b * 20;
        uint16_t dh, sh, mh;
        std::memcpy(&dh, xb, 2), std::memcpy(&sh, xb + 2, 2), std::memcpy(&mh, wb + 2, 2);
        int sum = 0;
        for (int e = 0; e < 32; ++e) sum += static_cast<int8_t>(xb[4 + e]);
        diff += static_cast<double>(fp16_to_fp32(mh)) * (static_cast<double>(fp16_to_fp32(sh)) - static_cast<double>(fp16_to_fp32(dh)) * sum);
    }
    return diff;
}

void check_kernel(const Kernel& kern, int64_t m, int64_t n, int64_t k, uint32_t seed) {
    SCOPED_TRACE(std::string(kern.name) + " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
    const Format& f = *kern.format;
    const std::vector<uint8_t> rows = random_rows(f.weight, n, k, seed);
    std::vector<uint8_t> packed(rhs_packed_bytes(kern, n, k));
    f.pack(rows.data(), packed.data(), n, k);
    const std::vector<float> x = random_floats(static_cast<size_t>(m * k), seed + 1);
    std::vector<uint8_t> lhs(lhs_packed_bytes(kern, m, k) + 64);
    kern.pack_lhs(x.data(), static_cast<size_t>(k) * sizeof(float), lhs.data(), m, k);

    const std::vector<double> xr = reference_lhs(kern, x, m, k);
    std::vector<float> w(static_cast<size_t>(k));
    std::vector<double> want(static_cast<size_t>(m * n)), scale(static_cast<size_t>(m * n));
    for (int64_t j = 0; j < n; ++j) {
        quant::dequantize_row(f.weight, rows.data() + j * dtype_row_bytes(f.weight, k), w.data(), k);
        for (int64_t i = 0; i < m; ++i) {
            double s = 0, a = 0;
            for (int64_t e = 0; e < k; ++e) {
                s += w[static_cast<size_t>(e)] * xr[static_cast<size_t>(i * k + e)];
                a += std::fabs(w[static_cast<size_t>(e)] * xr[static_cast<size_t>(i * k + e)]);
            }
            if (kern.lhs == DType::Q8_1) s += q8_1_min_correction(rows.data() + j * dtype_row_bytes(f.weight, k), x.data() + i * k, k);
            want[static_cast<size_t>(i * n + j)] = s;
            scale[static_cast<size_t>(i * n + j)] = a;
        }
    }
    // output with one spare column per row, which must stay untouched
    const int64_t ld = n + 1;
    std::vector<float> out(static_cast<size_t>(m * ld), -7.0f);
    const GemmArgs args{lhs.data(), lhs_row_bytes(kern, k), packed.data(), out.data(), static_cast<size_t>(ld) * sizeof(float), m, n, k};
    (m == 1 ? kern.gemv : kern.gemm)(args);
    // Quantized kernels sum each block exactly in integers and only k / 32 block terms in float.
    // F32 activations (F16 weights) are summed term by term in float: the bound of a float sum of
    // k products is k * 2^-24 * sum |terms| (Higham, recursive summation, first order).
    const double rel = kern.lhs == DType::F32 ? std::max(2e-6, static_cast<double>(k) * 0x1p-24) : 2e-6;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            const size_t o = static_cast<size_t>(i * n + j);
            ASSERT_NEAR(out[static_cast<size_t>(i * ld + j)], want[o], rel * scale[o] + 1e-6) << "row " << i << " col " << j;
        }
        ASSERT_EQ(out[static_cast<size_t>(i * ld + n)], -7.0f) << "column past n written, row " << i;
    }
}

// Usable features: a run under TESSEL_CPU_ISA=<tier> covers exactly the kernels of that tier and
// below (ctest's packed_kernels.avx2 runs these tests capped at avx2).
TEST(PackedKernel, EveryUsableKernelMatchesTheFloat64Dot) {
    const CpuFeatures& f = usable_cpu_features();
    int ran = 0;
    for (const Kernel* kern : all_kernels()) {
        if (!usable(*kern, f) || kern->rhs_layout != RhsLayout::Packed) continue;  // Rows kernels: rows_kernel_test.cpp
        ++ran;
        const int64_t kmin = static_cast<int64_t>(dtype_info(kern->format->weight).block_size);  // 1, 32 or 256
        // every row-tile height of the register tiles (up to 9 rows), full tiles plus tails, and
        // column counts that end inside a 16-row group
        for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 33, 64})
            for (int64_t n : {1, 16, 21, 50}) check_kernel(*kern, m, n, kmin == 1 ? 19 : 3 * kmin, static_cast<uint32_t>(m * 100 + n));
        check_kernel(*kern, 5, 16, kmin, 9);   // K at the smallest legal size
        check_kernel(*kern, 2, 33, 1024, 10);  // longer K
        check_kernel(*kern, 3, 40, 1536, 12);  // K of SmolLM2's ffn_down (6 K-quant super-blocks)
        check_kernel(*kern, 20, 80, 4096, 11);  // long K: the AMX Q4 kernels unpack these 5 groups in 2 batches
    }
    if (tier_supported(f, CpuTier::Avx2) || tier_supported(f, CpuTier::Neon)) {
        EXPECT_GT(ran, 0);
    }
}

// Non-finite activations (a broken model or a fuzzed file makes them) run without undefined
// behaviour (the sanitizer tree runs this), poison only their own row, and an infinite one makes
// every output of its row non-finite. Row 0 is finite, row 1 holds a NaN, row 2 an inf; row 0 of
// the three-row call must equal row 0 computed alone.
TEST(PackedKernel, NonFiniteActivationsStayInTheirRow) {
    const CpuFeatures& f = usable_cpu_features();
    int ran = 0;
    for (const Kernel* kern : all_kernels()) {
        if (!usable(*kern, f) || !quant::has_quantize(kern->weight)) continue;  // weights made by quantizing
        ++ran;
        SCOPED_TRACE(kern->name);
        const int64_t kmin = static_cast<int64_t>(dtype_info(kern->weight).block_size);
        const int64_t m = 3, n = 16, k = kmin == 1 ? 64 : 2 * kmin;
        const std::vector<uint8_t> rows = random_rows(kern->weight, n, k, 21);
        std::vector<uint8_t> rhs = rows;
        size_t rhs_stride = 0;
        if (kern->rhs_layout == RhsLayout::Packed) {
            rhs.assign(rhs_packed_bytes(*kern, n, k), 0);
            kern->format->pack(rows.data(), rhs.data(), n, k);
        } else {
            rhs_stride = static_cast<size_t>(dtype_row_bytes(kern->weight, k));
        }
        std::vector<float> x = random_floats(static_cast<size_t>(m * k), 22);
        x[static_cast<size_t>(k + 5)] = std::nanf("");
        x[static_cast<size_t>(2 * k + k / 2)] = INFINITY;
        const size_t lrow = lhs_row_bytes(*kern, k);
        auto run = [&](int64_t first, int64_t rows_n) {
            std::vector<uint8_t> lhs(lhs_packed_bytes(*kern, rows_n, k) + 64);
            kern->pack_lhs(x.data() + first * k, static_cast<size_t>(k) * sizeof(float), lhs.data(), rows_n, k);
            std::vector<float> out(static_cast<size_t>(rows_n * n));
            GemmArgs a{lhs.data(), lrow, rhs.data(), out.data(), static_cast<size_t>(n) * sizeof(float), rows_n, n, k};
            a.rhs_stride = rhs_stride;
            (rows_n == 1 ? kern->gemv : kern->gemm)(a);
            return out;
        };
        const std::vector<float> all = run(0, m), row0 = run(0, 1), row2 = run(2, 1);
        for (int64_t j = 0; j < n; ++j) {
            EXPECT_TRUE(std::isfinite(all[static_cast<size_t>(j)])) << "row 0 col " << j;
            // (float-activation kernels may sum a row in another order in a taller tile)
            EXPECT_NEAR(all[static_cast<size_t>(j)], row0[static_cast<size_t>(j)], 1e-5 * std::fabs(row0[static_cast<size_t>(j)]) + 1e-6)
                << "row 0 col " << j;
            EXPECT_FALSE(std::isfinite(all[static_cast<size_t>(2 * n + j)])) << "row 2 (inf) col " << j;
            EXPECT_FALSE(std::isfinite(row2[static_cast<size_t>(j)])) << "row 2 alone col " << j;
        }
    }
    EXPECT_GT(ran, 0);  // the reference kernels run everywhere
}

/// The reference quantizer's blocks (quant::quantize_rows of kern.lhs) in kern's LHS layout: the
/// blocks themselves, or scaled blocks (kernel.hpp's LhsLayout::Scaled) with aux as the layout
/// defines it for kern's weight type.
std::vector<uint8_t> reference_packing(const Kernel& kern, const std::vector<float>& x, int64_t m, int64_t k) {
    std::vector<uint8_t> blocks(static_cast<size_t>(dtype_row_bytes(kern.lhs, k) * m));
    quant::quantize_rows(kern.lhs, x.data(), blocks.data(), m, k);
    if (kern.lhs_layout == LhsLayout::Blocks) return blocks;
    const int64_t nb = k / 32, head = kern.lhs == DType::Q8_1 ? 4 : 2;
    std::vector<uint8_t> out(lhs_packed_bytes(kern, m, k));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* blk = blocks.data() + (i * nb + b) * (head + 32);
            uint8_t* sb = out.data() + (i * nb + b) * 40;
            std::memcpy(sb, blk + head, 32);
            uint16_t h;
            std::memcpy(&h, blk, 2);
            const float d = fp16_to_fp32(h);
            std::memcpy(sb + 32, &d, 4);
            int32_t sum = 0;
            for (int e = 0; e < 32; ++e) sum += static_cast<int8_t>(blk[head + e]);
            if (kern.lhs == DType::Q8_1) {
                std::memcpy(&h, blk + 2, 2);
                const float s = fp16_to_fp32(h);
                std::memcpy(sb + 36, &s, 4);
            } else {
                const int32_t c = (kern.weight == DType::Q4_0 ? -8 : kern.weight == DType::Q5_0 ? -16 : -128) * sum;
                std::memcpy(sb + 36, &c, 4);
            }
        }
    return out;
}

TEST(PackedKernel, LhsPackingEqualsTheReferenceQuantizer) {
    for (const Kernel* kern : all_kernels()) {
        if (!usable(*kern, usable_cpu_features()) || kern->lhs == DType::F32) continue;
        const int64_t m = 3, k = 256;
        std::vector<float> x = random_floats(static_cast<size_t>(m * k), 5);
        // row 2's first block has absmax 127, so d = 1 and x / d is exact: half-way values are
        // ties, which round away from zero
        x[2 * k] = 127.0f;
        for (int64_t j = 1; j < 32; ++j) x[static_cast<size_t>(2 * k + j)] = (j % 2 ? -0.5f : 0.5f) + static_cast<float>(j - 16);
        const std::vector<uint8_t> want = reference_packing(*kern, x, m, k);
        std::vector<uint8_t> got(lhs_packed_bytes(*kern, m, k));
        ASSERT_EQ(want.size(), got.size()) << kern->name;
        kern->pack_lhs(x.data(), static_cast<size_t>(k) * sizeof(float), got.data(), m, k);
        // a Blocks kernel may bias the quants by 128 (unsigned activations); undo it before comparing
        const size_t head = kern->lhs == DType::Q8_1 ? 4 : 2, block = head + 32;
        if (kern->lhs_layout == LhsLayout::Blocks && got[head] != want[head]) {
            for (size_t b = 0; b < got.size(); b += block)
                for (size_t q = 0; q < 32; ++q) got[b + head + q] ^= 0x80;
        }
        EXPECT_EQ(want, got) << kern->name;
    }
}

#if defined(__aarch64__)
/// kern's output for m activation rows x and the weight (packed: in kern's format; rows: GGUF rows).
std::vector<float> run_kernel(const Kernel& kern, const std::vector<uint8_t>& rows, const std::vector<float>& x, int64_t m, int64_t n, int64_t k) {
    std::vector<uint8_t> packed;
    const uint8_t* rhs = rows.data();
    if (kern.rhs_layout == RhsLayout::Packed) {
        packed.resize(rhs_packed_bytes(kern, n, k));
        kern.format->pack(rows.data(), packed.data(), n, k);
        rhs = packed.data();
    }
    std::vector<uint8_t> lhs(lhs_packed_bytes(kern, m, k) + 64);
    kern.pack_lhs(x.data(), static_cast<size_t>(k) * sizeof(float), lhs.data(), m, k);
    std::vector<float> out(static_cast<size_t>(m * n), -7.0f);
    GemmArgs args{lhs.data(), lhs_row_bytes(kern, k), rhs, out.data(), static_cast<size_t>(n) * sizeof(float), m, n, k};
    args.rhs_stride = static_cast<size_t>(dtype_row_bytes(kern.weight, k));
    (m == 1 ? kern.gemv : kern.gemm)(args);
    return out;
}

// A chain mixes its kernels: the first with min_m <= M serves a product, a matrix-unit kernel shares
// the columns with the next vector kernel (hybrid split), and a prompt and a single token must give
// the same logits. So on Arm every usable kernel of a weight type (but the reference) gives the same
// bits (neon_tiles.hpp), at every row count.
TEST(PackedKernel, ArmKernelsOfATypeAgreeBitForBit) {
    const CpuFeatures& f = usable_cpu_features();
    int compared = 0;
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::IQ4_NL, DType::Q4_K, DType::F16, DType::F32}) {
        std::vector<const Kernel*> kernels;
        for (const Kernel* kern : chain(t, f))
            if (kern->tier != CpuTier::Scalar) kernels.push_back(kern);
        if (kernels.size() < 2) continue;
        const int64_t block = static_cast<int64_t>(dtype_info(t).block_size);
        for (int64_t m : {1, 3, 5, 17})
            for (int64_t k : {block == 1 ? int64_t{37} : 2 * block, block == 1 ? int64_t{300} : 9 * block}) {
                const int64_t n = 21;
                const std::vector<uint8_t> rows = random_rows(t, n, k, static_cast<uint32_t>(m + k));
                const std::vector<float> x = random_floats(static_cast<size_t>(m * k), static_cast<uint32_t>(m * k));
                const std::vector<float> want = run_kernel(*kernels[0], rows, x, m, n, k);
                for (size_t c = 1; c < kernels.size(); ++c) {
                    const std::vector<float> got = run_kernel(*kernels[c], rows, x, m, n, k);
                    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                        << kernels[0]->name << " vs " << kernels[c]->name << " m=" << m << " k=" << k;
                }
            }
        ++compared;
    }
    if (tier_supported(f, CpuTier::Dotprod)) {
        EXPECT_GT(compared, 0);
    }
}
#endif

}  // namespace
}  // namespace tessel::cpu::packed
