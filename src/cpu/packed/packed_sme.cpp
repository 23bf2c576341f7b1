// Packed micro-kernels, sme tier (aarch64 Scalable Matrix Extension): every weight type of the
// Arm tables (Q4_0, Q4_1, Q8_0, IQ4_NL, Q4_K and F16 packed, F32 as GGUF rows) as outer products
// into the ZA array (outer_f32_sme.S, FMOPA), with the same activations and the same bits as the
// vector kernels of the chain, so the matrix unit and the threads beside it (the hybrid split) and
// prompts and single tokens all agree.
//
// Quantized weights: the activations are the vector kernels' Q8 rows (pack_q8_rows). Per call they
// are widened to f32 once, in tiles of L rows per 32-element block ([block][32][L], L = the
// streaming vector's 32-bit lanes, padding rows zero); per 16-row weight group the weight quants
// are widened once ([block][32][16]). The core sums each block's 32 products in f32: products of
// int8 values and their sums (< 2^24) are exact, so a block's dot equals the integer dot, and the
// dots are scaled by neon_tiles.hpp's block_accumulate / q4k_accumulate exactly as the vector
// kernels scale theirs. (The integer outer product SMOPA would skip the widening; QEMU 7.2 computes
// it wrong, see docs/arm.md, so CI could not check it.)
// F16 / F32 weights: F32 activations, one FMOPA per K-element in K order, as the NEON kernels'
// fused multiply-adds in K order.
//
// The matrix unit may be shared by cores: matrix_unit is set, so the driver runs these kernels on
// at most TESSEL_CPU_MATRIX_THREADS threads and the chain's next kernel (SVE or NEON) on the rest.
// min_m = 4: fewer rows run the vector kernels (an outer product of 1 row wastes the unit).
#include "cpu/packed/neon_tiles.hpp"

extern "C" {
void tsl_sme_f32_steps(const float* xt, const float* wt, int64_t k, int64_t steps, float* out);
int64_t tsl_sme_lanes(void);
}

namespace tessel::cpu::packed {
namespace {

struct Scratch {
    UnitBuffer<float> xt;   ///< the call's activation tiles
    UnitBuffer<float> wt;   ///< one group's weights
    UnitBuffer<float> out;  ///< one tile's products, [steps][L][16]
};

/// Grows s for a call of m rows, K = k, L lanes, `steps` products per tile of `k_step` elements.
void reserve(Scratch& s, int64_t m, int64_t k, int64_t lanes, int64_t steps) {
    const int64_t tiles = (m + lanes - 1) / lanes;
    s.xt.resize(static_cast<size_t>(tiles * k * lanes));
    s.wt.resize(static_cast<size_t>(k * 16));
    s.out.resize(static_cast<size_t>(steps * lanes * 16));
}

/// The quants of block q (decoded) as f32 into wt[e * 16 + j] for its 32 elements.
void widen_block(const BlockQuants& q, float* wt) {
    for (int t = 0; t < 8; ++t)
        for (int g = 0; g < 4; ++g) {
            int8_t v[16];
            vst1q_s8(v, q.q[t][g]);
            for (int l = 0; l < 4; ++l)
                for (int u = 0; u < 4; ++u) wt[(4 * t + u) * 16 + 4 * g + l] = v[4 * l + u];
        }
}

/// Offset of quant e (0 .. k-1) in a packed activation row of lhs type `lhs`.
template <DType Lhs>
size_t quant_offset(int64_t e) {
    if constexpr (Lhs == DType::Q8_K) return static_cast<size_t>(e / 256 * kQ8KBlockBytes + kQ8KQs + e % 256);
    else return static_cast<size_t>(e / 32 * (Lhs == DType::Q8_1 ? 36 : 34) + (Lhs == DType::Q8_1 ? 4 : 2) + e % 32);
}

/// The call's Q8 activation quants as f32 tiles: xt[((t * nb + b) * 32 + u) * L + i] = q of row
/// t * L + i, element 32 b + u (zero past row m).
template <DType Lhs>
void widen_lhs(const GemmArgs& a, int64_t lanes, float* xt) {
    const int64_t nb = a.k / 32, tiles = (a.m + lanes - 1) / lanes;
    for (int64_t t = 0; t < tiles; ++t)
        for (int64_t i = 0; i < lanes; ++i) {
            const int64_t row = t * lanes + i;
            const int8_t* x = row < a.m ? reinterpret_cast<const int8_t*>(a.lhs + row * a.lhs_stride) : nullptr;
            for (int64_t e = 0; e < nb * 32; ++e) xt[(t * nb * 32 + e) * lanes + i] = x ? x[quant_offset<Lhs>(e)] : 0.0f;
        }
}

/// The dots of block b, activation row i of a tile, columns 4g..4g+3, back as integers (exact).
inline void tile_dots(const float* out, int64_t lanes, int64_t b, int64_t i, int32x4_t (&d)[4]) {
    for (int g = 0; g < 4; ++g) d[g] = vcvtq_s32_f32(vld1q_f32(out + (b * lanes + i) * 16 + 4 * g));
}

template <class W>
void sme_quant_gemm(const GemmArgs& a) {
    thread_local Scratch s;
    const int64_t lanes = tsl_sme_lanes(), nb = a.k / 32, tiles = (a.m + lanes - 1) / lanes;
    reserve(s, a.m, a.k, lanes, nb);
    widen_lhs<W::kLhs>(a, lanes, s.xt.data());
    for_groups(a, static_cast<size_t>(kGroupRows * nb * (2 * W::kScales + W::kQs)), [&](const uint8_t* group, int64_t n0, int n_cols) {
        for (int64_t b = 0; b < nb; ++b) {
            BlockQuants q;
            decode_block<W::kWeight>(group + b * W::kGroupBlockBytes + 2 * W::kScales * kGroupRows, q);
            widen_block(q, s.wt.data() + b * 32 * 16);
        }
        for (int64_t t = 0; t < tiles; ++t) {
            tsl_sme_f32_steps(s.xt.data() + t * a.k * lanes, s.wt.data(), 32, nb, s.out.data());
            for (int64_t i = 0; i < lanes && t * lanes + i < a.m; ++i) {
                const uint8_t* row = a.lhs + (t * lanes + i) * a.lhs_stride;
                float32x4_t acc[4];
                for (auto& v : acc) v = vdupq_n_f32(0.0f);
                for (int64_t b = 0; b < nb; ++b) {
                    const uint8_t* gb = group + b * W::kGroupBlockBytes;
                    int32x4_t d[4];
                    tile_dots(s.out.data(), lanes, b, i, d);
                    float32x4_t dw[4];
                    block_scales(gb, dw);
                    block_accumulate<W>(acc, d, dw, gb, row + b * W::kLhsBlockBytes);
                }
                store16(out_row(a, t * lanes + i, n0), acc, n_cols);
            }
        }
    });
}

void sme_q4k_gemm(const GemmArgs& a) {
    thread_local Scratch s;
    thread_local UnitBuffer<Q4KScales> scales;
    const int64_t lanes = tsl_sme_lanes(), nb = a.k / 32, ns = a.k / kSuper, tiles = (a.m + lanes - 1) / lanes;
    reserve(s, a.m, a.k, lanes, nb);
    scales.resize(static_cast<size_t>(ns));
    widen_lhs<DType::Q8_K>(a, lanes, s.xt.data());
    for_groups(a, static_cast<size_t>(ns * Q4KLayout::kBytes), [&](const uint8_t* group, int64_t n0, int n_cols) {
        for (int64_t sb = 0; sb < ns; ++sb) {
            const uint8_t* gb = group + sb * Q4KLayout::kBytes;
            q4k_scales(gb, scales[static_cast<size_t>(sb)]);
            for (int c = 0; c < 4; ++c) {
                BlockQuants half[2];
                decode_q4k_pair(gb + Q4KLayout::kQs + 512 * c, half[0], half[1]);
                for (int h = 0; h < 2; ++h) widen_block(half[h], s.wt.data() + (sb * 8 + 2 * c + h) * 32 * 16);
            }
        }
        for (int64_t t = 0; t < tiles; ++t) {
            tsl_sme_f32_steps(s.xt.data() + t * a.k * lanes, s.wt.data(), 32, nb, s.out.data());
            for (int64_t i = 0; i < lanes && t * lanes + i < a.m; ++i) {
                const uint8_t* row = a.lhs + (t * lanes + i) * a.lhs_stride;
                float32x4_t acc[4];
                for (auto& v : acc) v = vdupq_n_f32(0.0f);
                for (int64_t sb = 0; sb < ns; ++sb) {
                    const uint8_t* x = row + sb * kQ8KBlockBytes;
                    int32x4_t isum[4], msum[4];
                    for (int g = 0; g < 4; ++g) isum[g] = msum[g] = vdupq_n_s32(0);
                    // sub-blocks in the vector kernels' order: 2c, 2c+1 for c = 0..3
                    for (int sub = 0; sub < 8; ++sub) {
                        int32x4_t d[4];
                        tile_dots(s.out.data(), lanes, sb * 8 + sub, i, d);
                        q4k_sub_accumulate(isum, msum, d, scales[static_cast<size_t>(sb)], sub, x);
                    }
                    q4k_accumulate(acc, isum, msum, group + sb * Q4KLayout::kBytes, x);
                }
                store16(out_row(a, t * lanes + i, n0), acc, n_cols);
            }
        }
    });
}

/// F16 (packed f16x16) or F32 (rows) weights: one product over all of K per tile.
template <DType T>
void sme_float_gemm(const GemmArgs& a) {
    thread_local Scratch s;
    const int64_t lanes = tsl_sme_lanes(), k = a.k, tiles = (a.m + lanes - 1) / lanes;
    reserve(s, a.m, k, lanes, 1);
    float* xt = s.xt.data();
    for (int64_t t = 0; t < tiles; ++t)
        for (int64_t i = 0; i < lanes; ++i) {
            const int64_t row = t * lanes + i;
            const float* x = row < a.m ? reinterpret_cast<const float*>(a.lhs + row * a.lhs_stride) : nullptr;
            for (int64_t e = 0; e < k; ++e) xt[(t * k + e) * lanes + i] = x ? x[e] : 0.0f;
        }
    float* wt = s.wt.data();
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const int n_cols = static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0));
        if constexpr (T == DType::F32) {
            for (int j = 0; j < 16; ++j) {
                const auto* w = reinterpret_cast<const float*>(a.rhs + static_cast<size_t>(n0 + std::min(j, n_cols - 1)) * a.rhs_stride);
                for (int64_t e = 0; e < k; ++e) wt[e * 16 + j] = j < n_cols ? w[e] : 0.0f;
            }
        } else {
            const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * static_cast<size_t>(kGroupRows * k * 2);
            for (int64_t e = 0; e < k * 16; e += 4) vst1q_f32(wt + e, f16x4_at(group + 2 * e));
        }
        for (int64_t t = 0; t < tiles; ++t) {
            tsl_sme_f32_steps(xt + t * k * lanes, wt, k, 1, s.out.data());
            for (int64_t i = 0; i < lanes && t * lanes + i < a.m; ++i)
                std::memcpy(out_row(a, t * lanes + i, n0), s.out.data() + i * 16, static_cast<size_t>(n_cols) * sizeof(float));
        }
    }
}

constexpr int64_t kMinM = 4;

constexpr Kernel quant(const char* name, const char* gemv_name, DType weight, DType lhs, int sr,
                       void (*pack)(const float*, size_t, uint8_t*, int64_t, int64_t), void (*gemm)(const GemmArgs&)) {
    return Kernel{name, gemv_name, CpuTier::Sme, true, weight, lhs, 16, 16, 4, sr, 16, 16, kMinM, pack, gemm, gemm};
}

constinit Kernel table[] = {
    quant("q4_0_q8_0_gemm_Lx16_sme", "q4_0_q8_0_gemv_Lx16_sme", DType::Q4_0, DType::Q8_0, 2, pack_q8_rows<DType::Q8_0>, sme_quant_gemm<Q4_0W>),
    quant("q4_1_q8_1_gemm_Lx16_sme", "q4_1_q8_1_gemv_Lx16_sme", DType::Q4_1, DType::Q8_1, 2, pack_q8_rows<DType::Q8_1>, sme_quant_gemm<Q4_1W>),
    quant("q8_0_q8_0_gemm_Lx16_sme", "q8_0_q8_0_gemv_Lx16_sme", DType::Q8_0, DType::Q8_0, 1, pack_q8_rows<DType::Q8_0>, sme_quant_gemm<Q8_0W>),
    quant("iq4_nl_q8_0_gemm_Lx16_sme", "iq4_nl_q8_0_gemv_Lx16_sme", DType::IQ4_NL, DType::Q8_0, 2, pack_q8_rows<DType::Q8_0>,
          sme_quant_gemm<IQ4_NLW>),
    quant("q4_K_q8_K_gemm_Lx16_sme", "q4_K_q8_K_gemv_Lx16_sme", DType::Q4_K, DType::Q8_K, 2, pack_q8_rows<DType::Q8_K>, sme_q4k_gemm),
    {"f16_f32_gemm_Lx16_sme", "f16_f32_gemv_Lx16_sme", CpuTier::Sme, true, DType::F16, DType::F32, 16, 16, 2, 1, 16, 16, kMinM, pack_f32_rows,
     sme_float_gemm<DType::F16>, sme_float_gemm<DType::F16>},
};

constexpr Kernel rows_table[] = {
    {"f32_f32_gemm_Lx16_sme", "f32_f32_gemv_Lx16_sme", CpuTier::Sme, true, DType::F32, DType::F32, 16, 16, 0, 0, 16, 16, kMinM,
     pack_f32_rows, sme_float_gemm<DType::F32>, sme_float_gemm<DType::F32>, LhsLayout::Blocks, nullptr, RhsLayout::Rows},
};

}  // namespace

constinit const std::span<Kernel> kSmeKernels{table};
constinit const std::span<const Kernel> kSmeRowsKernels{rows_table};

}  // namespace tessel::cpu::packed
