// The NEON-family packed micro-kernels (aarch64), written once over a block-dot policy and
// expanded per ISA unit: packed_neon.cpp (plain NEON: widening multiplies), packed_dotprod.cpp
// (SDOT), packed_i8mm.cpp (SMMLA over row pairs; its 1-row kernel is the SDOT one); packed_sme.cpp
// scales its dots with the same functions. Internal linkage: every ISA unit keeps its own copy,
// built with its flags (see cpu/kernels/kernel.hpp on inline code in ISA units).
//
// Weights are the x16 packed formats of format.hpp. A 64-byte register of a group holds, for weight
// row j at bytes 4j..4j+3, four K-bytes of that row: as four 128-bit NEON vectors it is rows 0-3,
// 4-7, 8-11, 12-15, so a 4-byte dot product per 32-bit lane yields 4 output columns at once.
// Activations are the GGUF rows of the kernel's lhs type (LhsLayout::Blocks): Q8_0 (Q4_0, Q8_0 and
// IQ4_NL weights), Q8_1 (Q4_1), Q8_K (Q4_K), made by the reference quantizer; F32 for F16/F32 weights.
// Per 32-element block: acc += float(sum q_w * q_x) * (d_w * d_x), as the x86 kernels do;
//   Q4_0    q_w = code - 8; IQ4_NL q_w = kValuesIQ4NL[code]; Q8_0 the stored int8;
//   Q4_1    q_w = code (0..15), plus m_w * s_x (the Q8_1 block's s = d_x * sum q_x);
//   Q4_K    per 256-element super-block: d_x * (d_w * sum_s scale_s * dot_s - dmin_w * sum_s min_s * bsum_s)
//           (bsum_s: the Q8_K block's two 16-element sums of sub-block s).
// The result of an output depends only on its inputs (never on the thread count or column range),
// and every Arm kernel of a weight type gives the same bits (its chain mixes them: a prompt and a
// single token, the matrix unit and the threads beside it): quantized types scale their exact integer
// block dots through block_accumulate / q4k_accumulate below; F16 and F32 sum fused multiply-adds in
// K order.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "cpu/packed/kernel.hpp"
#include "cpu/packed/kquant_traits.hpp"
#include "cpu/packed/quant_layout.hpp"
#include "cpu/packed/row_tiles.hpp"
#include "quant/blocks.hpp"
#include "quant/kquant_layout.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu::packed {
namespace {

inline float f16_at(const uint8_t* p) {
    __fp16 h;
    std::memcpy(&h, p, 2);
    return static_cast<float>(h);
}
/// Four consecutive fp16 values at p as f32 lanes.
inline float32x4_t f16x4_at(const uint8_t* p) { return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p))); }

/// pack_lhs of the Q8 kernels: each F32 row quantized to GGUF Lhs blocks by the reference quantizer.
template <DType Lhs>
void pack_q8_rows(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const size_t row = static_cast<size_t>(dtype_row_bytes(Lhs, k));
    for (int64_t i = 0; i < m; ++i)
        quant::quantize_row(Lhs, reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride),
                            dst + static_cast<size_t>(i) * row, k);
}

/// The int8 weights of one 32-element block of a group: q[t][g] holds K-elements 4t..4t+3 of weight
/// rows 4g..4g+3 (row 4g+l in bytes 4l..4l+3), the lane layout of the format's registers.
struct BlockQuants {
    int8x16_t q[8][4];
};

/// A nibble vector as signed weights of type T.
template <DType T>
inline int8x16_t nibble_weights(uint8x16_t v) {
    if constexpr (T == DType::Q4_0) return vsubq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(8));
    else if constexpr (T == DType::IQ4_NL) return vqtbl1q_s8(vld1q_s8(quant::kValuesIQ4NL), v);
    else return vreinterpretq_s8_u8(v);  // Q4_1, Q4_K: the codes 0..15
}

/// Decodes the quant registers of one block (regs: 4 nibble registers, or 8 for Q8_0).
template <DType T>
inline void decode_block(const uint8_t* regs, BlockQuants& b) {
    if constexpr (T == DType::Q8_0) {
        for (int t = 0; t < 8; ++t)
            for (int g = 0; g < 4; ++g) b.q[t][g] = vld1q_s8(reinterpret_cast<const int8_t*>(regs + 64 * t + 16 * g));
    } else {
        // low nibbles of register r: elements 4r..4r+3; high nibbles: 16+4r..16+4r+3
        const uint8x16_t low = vdupq_n_u8(0x0f);
        for (int r = 0; r < 4; ++r)
            for (int g = 0; g < 4; ++g) {
                const uint8x16_t v = vld1q_u8(regs + 64 * r + 16 * g);
                b.q[r][g] = nibble_weights<T>(vandq_u8(v, low));
                b.q[r + 4][g] = nibble_weights<T>(vshrq_n_u8(v, 4));
            }
    }
}

/// The two sub-blocks 2c and 2c+1 of a q4_Kx16 super-block from its 8 registers 8c..8c+7 (low
/// nibbles: sub-block 2c, high: 2c+1).
inline void decode_q4k_pair(const uint8_t* regs, BlockQuants& lo, BlockQuants& hi) {
    const uint8x16_t low = vdupq_n_u8(0x0f);
    for (int q = 0; q < 8; ++q)
        for (int g = 0; g < 4; ++g) {
            const uint8x16_t v = vld1q_u8(regs + 64 * q + 16 * g);
            lo.q[q][g] = vreinterpretq_s8_u8(vandq_u8(v, low));
            hi.q[q][g] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        }
}

// A block-dot policy B, the tiles' first parameter, multiplies one decoded block by kRows
// activation rows at a time:
//   B::kRows                 activation rows per step (a tile of fewer rows repeats its last row)
//   B::prepare(q)            reorders a decoded block in place for dots, once per block
//   B::dots(q, x, d)         d[r][g] = the 4 int32 dots of weight rows 4g..4g+3 with the 32 int8
//                            activations at x[r], r < kRows

/// The block-dot policy of a lane-dot policy Dot (Dot::dot<L>(acc, w, x): acc + per 32-bit lane the
/// dot of w's 4 bytes with x's lane L): one activation row per step, the block as decoded.
template <class Dot>
struct Lanes {
    static constexpr int kRows = 1;
    static void prepare(BlockQuants&) {}
    [[gnu::always_inline]] static void dots(const BlockQuants& b, const int8_t* const* x, int32x4_t (*d)[4]) {
        const int8x16_t xl = vld1q_s8(x[0]), xh = vld1q_s8(x[0] + 16);
        for (int g = 0; g < 4; ++g) {
            int32x4_t s = vdupq_n_s32(0);
            [&]<int... L>(std::integer_sequence<int, L...>) {
                ((s = Dot::template dot<L>(s, b.q[L][g], xl), s = Dot::template dot<L>(s, b.q[L + 4][g], xh)), ...);
            }(std::make_integer_sequence<int, 4>{});
            d[0][g] = s;
        }
    }
};

/// The SDOT lane dot (by-element form: the activation lane selected in place, no broadcast). Needs
/// dotprod: instantiated by packed_dotprod.cpp and packed_i8mm.cpp only.
struct DotSdot {
    template <int L>
    static int32x4_t dot(int32x4_t acc, int8x16_t w, int8x16_t x) {
        return vdotq_laneq_s32(acc, w, x, L);
    }
};

inline float* out_row(const GemmArgs& a, int64_t i, int64_t n0) {
    return reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a.dst) + i * a.dst_stride) + n0;
}

/// Stores 16 columns (acc[g]: columns 4g..4g+3) into out[0 .. n_cols).
inline void store16(float* out, const float32x4_t (&acc)[4], int n_cols) {
    if (n_cols >= 16) {
        for (int g = 0; g < 4; ++g) vst1q_f32(out + 4 * g, acc[g]);
        return;
    }
    float tmp[16];
    for (int g = 0; g < 4; ++g) vst1q_f32(tmp + 4 * g, acc[g]);
    std::memcpy(out, tmp, static_cast<size_t>(n_cols) * sizeof(float));
}

/// Calls tile(i0, group, n0, n_cols) for every 16-row group of the call (group_bytes each).
template <class F>
inline void for_groups(const GemmArgs& a, size_t group_bytes, F&& tile) {
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        tile(group, n0, static_cast<int>(std::min<int64_t>(kGroupRows, a.n - n0)));
    }
}

/// acc[g] (columns 4g..4g+3) += one legacy-quant block's contribution from its integer dots d[g]:
/// gb = the group's block (scales first), blk = the activation row's Q8_0 / Q8_1 block. Every Arm
/// kernel of these types scales through here, so all of them (and the hybrid split between two of
/// them) give the same bits.
template <class W>
[[gnu::always_inline]] inline void block_accumulate(float32x4_t (&acc)[4], const int32x4_t (&d)[4], const float32x4_t (&dw)[4],
                                                    const uint8_t* gb, const uint8_t* blk) {
    const float dx = f16_at(blk);
    for (int g = 0; g < 4; ++g) acc[g] = vfmaq_f32(acc[g], vcvtq_f32_s32(d[g]), vmulq_n_f32(dw[g], dx));
    if constexpr (W::kWeight == DType::Q4_1) {
        const float sx = f16_at(blk + 2);
        for (int g = 0; g < 4; ++g) acc[g] = vfmaq_n_f32(acc[g], f16x4_at(gb + 2 * kGroupRows + 8 * g), sx);
    }
}

/// The fp16 d of the group block's 16 rows as 4 vectors.
inline void block_scales(const uint8_t* gb, float32x4_t (&dw)[4]) {
    for (int g = 0; g < 4; ++g) dw[g] = f16x4_at(gb + 8 * g);
}

/// The activation row of tile row i + r (r < R) in a tile of MR rows from i0: past the tile's last
/// row, the last row again (its results are not stored).
inline const uint8_t* tile_row(const GemmArgs& a, int64_t i0, int i, int r, int MR) {
    return a.lhs + (i0 + std::min(i + r, MR - 1)) * static_cast<int64_t>(a.lhs_stride);
}

/// MR activation rows (from i0) times one legacy-quant group over all blocks.
template <class B, class W, int MR>
void quant_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    const int64_t nb = a.k / 32;
    float32x4_t acc[MR][4];
    for (auto& r : acc)
        for (auto& v : r) v = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* gb = group + b * W::kGroupBlockBytes;
        BlockQuants q;
        decode_block<W::kWeight>(gb + 2 * W::kScales * kGroupRows, q);
        B::prepare(q);
        float32x4_t dw[4];
        block_scales(gb, dw);
        for (int i = 0; i < MR; i += B::kRows) {
            const uint8_t* blk[B::kRows];
            const int8_t* x[B::kRows];
            for (int r = 0; r < B::kRows; ++r) {
                blk[r] = tile_row(a, i0, i, r, MR) + b * W::kLhsBlockBytes;
                x[r] = reinterpret_cast<const int8_t*>(blk[r] + W::kLhsHead);
            }
            int32x4_t d[B::kRows][4];
            B::dots(q, x, d);
            for (int r = 0; r < B::kRows && i + r < MR; ++r) block_accumulate<W>(acc[i + r], d[r], dw, gb, blk[r]);
        }
    }
    for (int i = 0; i < MR; ++i) store16(out_row(a, i0 + i, n0), acc[i], n_cols);
}

template <class B, class W, int MR>
void quant_gemm(const GemmArgs& a) {
    for_groups(a, static_cast<size_t>(kGroupRows * (a.k / 32) * (2 * W::kScales + W::kQs)),
               [&](const uint8_t* group, int64_t n0, int n_cols) {
                   for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) {
                       quant_tile<B, W, decltype(rows)::value>(a, i0, group, n0, n_cols);
                   });
               });
}

using IQ4_NLW = Weight<1, 16, DType::IQ4_NL, DType::Q8_0>;

/// Per-row 6-bit scales and mins of one q4_Kx16 super-block: sc[s][j], mn[s][j] for sub-block s and
/// weight row j (row j's 12 scale bytes are bytes 4j..4j+3 of the three scale registers).
struct Q4KScales {
    int32_t sc[8][16], mn[8][16];
};
inline void q4k_scales(const uint8_t* sb, Q4KScales& out) {
    for (int j = 0; j < 16; ++j) {
        uint8_t packed[12];
        for (int l = 0; l < 12; ++l) packed[l] = sb[Q4KLayout::kScales + 64 * (l / 4) + 4 * j + l % 4];
        for (int s = 0; s < 8; ++s) {
            uint8_t scale, min;
            quant::kq::unpack_scale_min_k4(packed, s, scale, min);
            out.sc[s][j] = scale;
            out.mn[s][j] = min;
        }
    }
}

constexpr int64_t kQ8KBlockBytes = 4 + 256 + 32;  ///< one Q8_K block: f32 d, 256 quants, 16 int16 sums

/// One sub-block's integer dots d[g] into a super-block's sums: isum += scale * dot, msum += min *
/// (the activation's sum over the sub-block); x = the activation row's Q8_K block.
[[gnu::always_inline]] inline void q4k_sub_accumulate(int32x4_t (&isum)[4], int32x4_t (&msum)[4], const int32x4_t (&d)[4],
                                                      const Q4KScales& s, int sub, const uint8_t* x) {
    int16_t bs[2];
    std::memcpy(bs, x + kQ8KBsums + 4 * sub, 4);
    for (int g = 0; g < 4; ++g) {
        isum[g] = vmlaq_s32(isum[g], d[g], vld1q_s32(&s.sc[sub][4 * g]));
        msum[g] = vmlaq_n_s32(msum[g], vld1q_s32(&s.mn[sub][4 * g]), bs[0] + bs[1]);
    }
}

/// acc[g] += one super-block's contribution from its sums (gb: the group's super-block, x: the
/// activation row's Q8_K block). Shared by every Arm Q4_K kernel, as block_accumulate.
[[gnu::always_inline]] inline void q4k_accumulate(float32x4_t (&acc)[4], const int32x4_t (&isum)[4], const int32x4_t (&msum)[4],
                                                  const uint8_t* gb, const uint8_t* x) {
    float dx;
    std::memcpy(&dx, x + kQ8KD, 4);
    for (int g = 0; g < 4; ++g) {
        const float32x4_t dw = vmulq_n_f32(f16x4_at(gb + Q4KLayout::kD + 8 * g), dx);
        const float32x4_t dm = vmulq_n_f32(f16x4_at(gb + Q4KLayout::kDmin + 8 * g), dx);
        acc[g] = vfmaq_f32(acc[g], vcvtq_f32_s32(isum[g]), dw);
        acc[g] = vfmsq_f32(acc[g], vcvtq_f32_s32(msum[g]), dm);
    }
}

/// MR activation rows (from i0, Q8_K rows) times one q4_Kx16 group over all super-blocks.
template <class B, int MR>
void q4k_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int n_cols) {
    float32x4_t acc[MR][4];
    for (auto& r : acc)
        for (auto& v : r) v = vdupq_n_f32(0.0f);
    for (int64_t sb = 0; sb < a.k / kSuper; ++sb) {
        const uint8_t* gb = group + sb * Q4KLayout::kBytes;
        Q4KScales s;
        q4k_scales(gb, s);
        int32x4_t isum[MR][4], msum[MR][4];
        for (int i = 0; i < MR; ++i)
            for (int g = 0; g < 4; ++g) isum[i][g] = msum[i][g] = vdupq_n_s32(0);
        for (int c = 0; c < 4; ++c) {
            BlockQuants half[2];
            decode_q4k_pair(gb + Q4KLayout::kQs + 512 * c, half[0], half[1]);
            for (int h = 0; h < 2; ++h) {
                const int sub = 2 * c + h;
                B::prepare(half[h]);
                for (int i = 0; i < MR; i += B::kRows) {
                    const uint8_t* xs[B::kRows];
                    const int8_t* x[B::kRows];
                    for (int r = 0; r < B::kRows; ++r) {
                        xs[r] = tile_row(a, i0, i, r, MR) + sb * kQ8KBlockBytes;
                        x[r] = reinterpret_cast<const int8_t*>(xs[r] + kQ8KQs + 32 * sub);
                    }
                    int32x4_t d[B::kRows][4];
                    B::dots(half[h], x, d);
                    for (int r = 0; r < B::kRows && i + r < MR; ++r) q4k_sub_accumulate(isum[i + r], msum[i + r], d[r], s, sub, xs[r]);
                }
            }
        }
        for (int i = 0; i < MR; ++i) q4k_accumulate(acc[i], isum[i], msum[i], gb, a.lhs + (i0 + i) * a.lhs_stride + sb * kQ8KBlockBytes);
    }
    for (int i = 0; i < MR; ++i) store16(out_row(a, i0 + i, n0), acc[i], n_cols);
}

template <class B, int MR>
void q4k_gemm(const GemmArgs& a) {
    for_groups(a, static_cast<size_t>((a.k / kSuper) * Q4KLayout::kBytes), [&](const uint8_t* group, int64_t n0, int n_cols) {
        for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { q4k_tile<B, decltype(rows)::value>(a, i0, group, n0, n_cols); });
    });
}

}  // namespace
}  // namespace tessel::cpu::packed
