// Packed micro-kernels, sme tier (aarch64 Scalable Matrix Extension): every weight type of the
// Arm tables (Q4_0, Q4_1, Q8_0, IQ4_NL, Q4_K and F16 packed, F32 as GGUF rows) times F32
// activations as outer products into the ZA array (outer_f32_sme.S, FMOPA).
//
// Per call, the activation rows are transposed once into tiles of L rows ([K][L] floats, L = the
// streaming vector's 32-bit lanes, padding rows zero); per 16-row weight group the weights are
// widened to f32 once ([K][16]: the packed group unpacked to its GGUF rows and dequantized by the
// reference, or the fp16 / f32 values themselves), and every row tile is one call of the core.
// The activations stay F32 (no Q8 rounding). The integer outer product (SMOPA) would do 4
// K-elements per instruction; QEMU 7.2 computes it wrong (odd rows and columns of the tile; see
// docs/arm.md), so it is not used.
//
// The matrix unit may be shared by cores: matrix_unit is set, so the driver runs these kernels on
// at most TESSEL_CPU_MATRIX_THREADS threads and the chain's next kernel (SVE or NEON) on the rest.
// min_m = 4: fewer rows run the vector kernels (an outer product of 1 row wastes the unit).
#include <algorithm>
#include <cstring>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/quant_layout.hpp"
#include "quant/quant.hpp"

extern "C" {
void tsl_sme_f32_tile(const float* xt, const float* wt, int64_t k, float* out);
int64_t tsl_sme_lanes(void);
}

namespace tessel::cpu::packed {
namespace {

struct Scratch {
    UnitBuffer<float> xt;    ///< the call's activation tiles, [tile][K][L]
    UnitBuffer<float> wt;    ///< one group's weights, [K][16]
    UnitBuffer<float> rows;  ///< one group dequantized row by row, [16][K]
    UnitBuffer<uint8_t> raw; ///< one group's GGUF rows
    UnitBuffer<float> out;   ///< one tile's result, [L][16]
};

/// The weights of the group holding columns n0.. as wt[e * 16 + j] (rows past n are zero).
template <DType T>
void widen_group(const GemmArgs& a, int64_t n0, Scratch& s) {
    const int64_t k = a.k;
    const int nw = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
    float* wt = s.wt.data();
    if constexpr (T == DType::F32) {
        for (int j = 0; j < 16; ++j) {
            const float* w = j < nw ? reinterpret_cast<const float*>(a.rhs + static_cast<size_t>(j) * a.rhs_stride) : nullptr;
            for (int64_t e = 0; e < k; ++e) wt[e * 16 + j] = w ? w[e] : 0.0f;
        }
    } else if constexpr (T == DType::F16) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * static_cast<size_t>(kGroupRows * k * 2);
        for (int64_t e = 0; e < k * 16; ++e) {
            __fp16 h;
            std::memcpy(&h, group + 2 * e, 2);
            wt[e] = static_cast<float>(h);
        }
    } else {
        const Format& f = *format_for(T);
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * f.group_bytes(k);
        const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(T, k));
        f.unpack(group, s.raw.data(), kGroupRows, k);
        for (int j = 0; j < 16; ++j) quant::dequantize_row(T, s.raw.data() + j * row_bytes, s.rows.data() + j * k, k);
        for (int j = 0; j < 16; ++j)
            for (int64_t e = 0; e < k; ++e) wt[e * 16 + j] = s.rows[static_cast<size_t>(j * k + e)];
    }
}

template <DType T>
void sme_gemm(const GemmArgs& a) {
    thread_local Scratch s;
    const int64_t L = tsl_sme_lanes(), k = a.k;
    const int64_t tiles = (a.m + L - 1) / L;
    s.xt.resize(static_cast<size_t>(tiles * k * L));
    s.wt.resize(static_cast<size_t>(k * 16));
    s.out.resize(static_cast<size_t>(L * 16));
    if constexpr (T != DType::F32 && T != DType::F16) {
        s.rows.resize(static_cast<size_t>(16 * k));
        s.raw.resize(static_cast<size_t>(16 * dtype_row_bytes(T, k)));
    }
    for (int64_t t = 0; t < tiles; ++t) {
        float* xt = s.xt.data() + t * k * L;
        for (int64_t i = 0; i < L; ++i) {
            const int64_t row = t * L + i;
            const float* x = row < a.m ? reinterpret_cast<const float*>(a.lhs + row * a.lhs_stride) : nullptr;
            for (int64_t e = 0; e < k; ++e) xt[e * L + i] = x ? x[e] : 0.0f;
        }
    }
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        GemmArgs g = a;
        if constexpr (T == DType::F32) g.rhs = a.rhs + static_cast<size_t>(n0) * a.rhs_stride;
        widen_group<T>(g, n0, s);
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        for (int64_t t = 0; t < tiles; ++t) {
            tsl_sme_f32_tile(s.xt.data() + t * k * L, s.wt.data(), k, s.out.data());
            for (int64_t i = 0; i < L && t * L + i < a.m; ++i)
                std::memcpy(reinterpret_cast<uint8_t*>(a.dst) + (t * L + i) * a.dst_stride + n0 * sizeof(float), s.out.data() + i * 16,
                            static_cast<size_t>(n_cols) * sizeof(float));
        }
    }
}

constexpr int64_t kMinM = 4;

constexpr Kernel packed(const char* name, const char* gemv_name, DType weight, int kr, int sr, void (*gemm)(const GemmArgs&)) {
    return Kernel{name, gemv_name, CpuTier::Sme, true, weight, DType::F32, 16, 16, kr, sr, 16, 16, kMinM, pack_f32_rows, gemm, gemm};
}

constinit Kernel table[] = {
    packed("q4_0_f32_gemm_Lx16_sme", "q4_0_f32_gemv_Lx16_sme", DType::Q4_0, 4, 2, sme_gemm<DType::Q4_0>),
    packed("q4_1_f32_gemm_Lx16_sme", "q4_1_f32_gemv_Lx16_sme", DType::Q4_1, 4, 2, sme_gemm<DType::Q4_1>),
    packed("q8_0_f32_gemm_Lx16_sme", "q8_0_f32_gemv_Lx16_sme", DType::Q8_0, 4, 1, sme_gemm<DType::Q8_0>),
    packed("iq4_nl_f32_gemm_Lx16_sme", "iq4_nl_f32_gemv_Lx16_sme", DType::IQ4_NL, 4, 2, sme_gemm<DType::IQ4_NL>),
    packed("q4_K_f32_gemm_Lx16_sme", "q4_K_f32_gemv_Lx16_sme", DType::Q4_K, 4, 2, sme_gemm<DType::Q4_K>),
    packed("f16_f32_gemm_Lx16_sme", "f16_f32_gemv_Lx16_sme", DType::F16, 2, 1, sme_gemm<DType::F16>),
};

constexpr Kernel rows_table[] = {
    {"f32_f32_gemm_Lx16_sme", "f32_f32_gemv_Lx16_sme", CpuTier::Sme, true, DType::F32, DType::F32, 16, 16, 0, 0, 16, 16, kMinM,
     pack_f32_rows, sme_gemm<DType::F32>, sme_gemm<DType::F32>, LhsLayout::Blocks, nullptr, RhsLayout::Rows},
};

}  // namespace

constinit const std::span<Kernel> kSmeKernels{table};
constinit const std::span<const Kernel> kSmeRowsKernels{rows_table};

}  // namespace tessel::cpu::packed
