// Packed micro-kernels, sve tier (SVE, vector-length agnostic): Q4_0, Q4_1, Q8_0 and IQ4_NL weights
// (formats q4_0x16, q4_1x16, q8_0x16, iq4_nlx16 of format.hpp) times Q8 activations in their GGUF
// blocks (Q8_0; Q4_1: Q8_1), Q4_K weights (q4_Kx16) times Q8_K activations, F16 weights (f16x16)
// times F32 activations, and a Rows kernel for F32 weights. The packed kernels read each group in
// chunks of weight rows (chunk_sve.hpp): one vector's 32-bit lanes, at most 16.
//
// Integer dots: svdot_lane_s32 adds, per 32-bit lane (= weight row), the 4 products of the lane's
// weight bytes with 4 activation quants picked from each 128-bit segment of a vector that repeats
// 16 quants (svld1rq), so 32 quants are two loads per activation row. Per block b of 32 elements
// (register r < 4: elements 4r.., low nibbles; r + 4: the high nibbles, 16 + 4r..):
//   Q4_0    signed codes - 8;  IQ4_NL  kvalues[code] (svtbl);  Q8_0  the int8 quants
//   Q4_1    codes 0..15, and the min adds m_w * s_x (the Q8_1 block's s = d_x * sum q_x)
// then acc += (d_w * d_x) * dot in f32 lanes. Q4_K, per super-block and weight row:
//   isum = sum_j scale_j * dot_j   (sub-block j of 32 elements: codes 0..15 times the quants)
//   msum = sum_j min_j * (bsums[2j] + bsums[2j+1])
//   acc += (d_w * d_x) * isum - (dmin_w * d_x) * msum
// with the 6-bit scales and mins of unpack_scale_min_k4 (quant/kquant_layout.hpp) taken per 32-bit
// lane from the 3 scale registers: s0 = bytes 0..3, s1 = 4..7, s2 = 8..11; sub-block j < 4 has
// scale s0.j & 63, min s1.j & 63; j >= 4 scale s2.(j-4) & 15 | (s0.(j-4) >> 6) << 4, min
// s2.(j-4) >> 4 | (s1.(j-4) >> 6) << 4. Integer sums are exact (|isum| <= 8 * 63 * 32 * 15 * 128).
// F16: per K-element the chunk's fp16 values are widened and FMA-ed with each row's broadcast
// activation; F32 Rows: the same on each 16-row group transposed once.
//
// The result of an output depends only on its inputs (never on the thread count, the call's column
// range or the vector length) and equals the other Arm kernels' bit for bit (neon_tiles.hpp): the same
// integer dots scaled in the same order, F16 / F32 one FMA chain in K order.
#include <algorithm>

#include "cpu/packed/chunk_sve.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/kquant_traits.hpp"
#include "cpu/packed/quant_layout.hpp"
#include "cpu/packed/row_tiles.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu::packed {
namespace {

using Iq4NlW = Weight<1, 16, DType::IQ4_NL, DType::Q8_0>;

/// The int8 weights of one nibble register (the chunk's bytes at p): lo = elements 4r.., hi =
/// 16 + 4r.. of each row, as codes - 8 (Q4_0), kvalues (IQ4_NL) or codes (Q4_1).
template <class W>
[[gnu::always_inline]] inline void nibbles(const uint8_t* p, svint8_t table, svint8_t& lo, svint8_t& hi) {
    const svbool_t all = svptrue_b8();
    const svuint8_t v = svld1_u8(chunk_pred_b8(), p);
    const svuint8_t l = svand_n_u8_x(all, v, 0x0f), h = svlsr_n_u8_x(all, v, 4);
    if constexpr (W::kWeight == DType::IQ4_NL) {
        lo = svtbl_s8(table, l);
        hi = svtbl_s8(table, h);
    } else if constexpr (W::kWeight == DType::Q4_0) {
        lo = svsub_n_s8_x(all, svreinterpret_s8_u8(l), 8);
        hi = svsub_n_s8_x(all, svreinterpret_s8_u8(h), 8);
    } else {
        lo = svreinterpret_s8_u8(l);
        hi = svreinterpret_s8_u8(h);
    }
}

/// MR activation rows (from row i0) times the chunk of weight rows c0.. of one group, all blocks.
template <class W, int MR>
void quant_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int64_t c0) {
    const svbool_t pg = chunk_pred(), all = svptrue_b8();
    const svint8_t table = W::kWeight == DType::IQ4_NL ? svld1_s8(svwhilelt_b8(0, 16), quant::kValuesIQ4NL) : svdup_n_s8(0);
    svfloat32_t acc0 = svdup_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t b = 0; b < a.k / 32; ++b) {
        const uint8_t* gb = group + b * W::kGroupBlockBytes;
        const uint8_t* qs = gb + 2 * W::kScales * kGroupRows + 4 * c0;
        svint8_t w0, w1, w2, w3, w4, w5, w6, w7;
        if constexpr (W::kQs == 32) {
            const svbool_t pb = chunk_pred_b8();
            const auto* q = reinterpret_cast<const int8_t*>(qs);
            w0 = svld1_s8(pb, q), w1 = svld1_s8(pb, q + 64), w2 = svld1_s8(pb, q + 128), w3 = svld1_s8(pb, q + 192);
            w4 = svld1_s8(pb, q + 256), w5 = svld1_s8(pb, q + 320), w6 = svld1_s8(pb, q + 384), w7 = svld1_s8(pb, q + 448);
        } else {
            nibbles<W>(qs, table, w0, w4);
            nibbles<W>(qs + 64, table, w1, w5);
            nibbles<W>(qs + 128, table, w2, w6);
            nibbles<W>(qs + 192, table, w3, w7);
        }
        const svfloat32_t dw = load_f16(pg, gb + 2 * c0);
        each_row<MR>([&](auto I) {
            svfloat32_t& acc = pick<I>(acc0, acc1, acc2, acc3);
            const uint8_t* x = a.lhs + (i0 + I) * a.lhs_stride + b * W::kLhsBlockBytes;
            const auto* xq = reinterpret_cast<const int8_t*>(x + W::kLhsHead);
            const svint8_t xa = svld1rq_s8(all, xq), xb = svld1rq_s8(all, xq + 16);
            svint32_t d = svdot_lane_s32(svdup_n_s32(0), w0, xa, 0);
            d = svdot_lane_s32(d, w1, xa, 1);
            d = svdot_lane_s32(d, w2, xa, 2);
            d = svdot_lane_s32(d, w3, xa, 3);
            d = svdot_lane_s32(d, w4, xb, 0);
            d = svdot_lane_s32(d, w5, xb, 1);
            d = svdot_lane_s32(d, w6, xb, 2);
            d = svdot_lane_s32(d, w7, xb, 3);
            acc = svmla_f32_x(pg, acc, svcvt_f32_s32_x(pg, d), svmul_n_f32_x(pg, dw, half_at(x)));
            if constexpr (W::kWeight == DType::Q4_1) acc = svmla_n_f32_x(pg, acc, load_f16(pg, gb + 2 * kGroupRows + 2 * c0), half_at(x + 2));
        });
    }
    each_row<MR>([&](auto I) { store_chunk(a, i0 + I, n0 + c0, pick<I>(acc0, acc1, acc2, acc3)); });
}

/// Runs tile(rows, i0, group, n0, c0) over the call: groups, their chunks, tiles of MR rows.
template <int MR, class Tile>
void each_chunk(const GemmArgs& a, size_t group_bytes, Tile&& tile) {
    const int64_t step = chunk_rows();
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const uint8_t* group = a.rhs + static_cast<size_t>(n0 / kGroupRows) * group_bytes;
        for (int64_t c0 = 0; c0 < kGroupRows && n0 + c0 < a.n; c0 += step)
            for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) { tile(rows, i0, group, n0, c0); });
    }
}

template <class W, int MR>
void quant_gemm(const GemmArgs& a) {
    each_chunk<MR>(a, static_cast<size_t>(a.k / 32 * W::kGroupBlockBytes), [&](auto rows, int64_t i0, const uint8_t* g, int64_t n0, int64_t c0) {
        quant_tile<W, decltype(rows)::value>(a, i0, g, n0, c0);
    });
}

constexpr int64_t kQ8KBlockBytes = 292;  ///< one Q8_K super-block of 256 elements

/// Byte `byte` (0..3) of each 32-bit lane of v.
inline svint32_t lane_byte(svbool_t pg, svuint32_t v, int byte) {
    return svreinterpret_s32_u32(svand_n_u32_x(pg, svlsr_n_u32_x(pg, v, static_cast<uint32_t>(8 * byte)), 0xff));
}

/// The integer dot of 4 nibble registers' low (lo) and high (hi) codes with 16 quants each,
/// xa for the low codes and xb for the high ones (register q at lane q).
[[gnu::always_inline]] inline void dots4(svint8_t l0, svint8_t l1, svint8_t l2, svint8_t l3, svint8_t h0, svint8_t h1, svint8_t h2,
                                         svint8_t h3, svint8_t xa, svint8_t xb, svint32_t& lo, svint32_t& hi) {
    lo = svdot_lane_s32(svdot_lane_s32(svdot_lane_s32(svdot_lane_s32(svdup_n_s32(0), l0, xa, 0), l1, xa, 1), l2, xa, 2), l3, xa, 3);
    hi = svdot_lane_s32(svdot_lane_s32(svdot_lane_s32(svdot_lane_s32(svdup_n_s32(0), h0, xb, 0), h1, xb, 1), h2, xb, 2), h3, xb, 3);
}

/// Q4_K: MR Q8_K activation rows (from row i0) times the chunk c0.. of one q4_Kx16 group, all
/// super-blocks.
template <int MR>
void q4k_tile(const GemmArgs& a, int64_t i0, const uint8_t* group, int64_t n0, int64_t c0) {
    using L = Q4KLayout;
    const svbool_t pg = chunk_pred(), pb = chunk_pred_b8(), all = svptrue_b8();
    svfloat32_t acc0 = svdup_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t sb = 0; sb < a.k / kSuper; ++sb) {
        const uint8_t* g = group + sb * L::kBytes;
        const auto scale_reg = [&](int s) { return svld1_u32(pg, reinterpret_cast<const uint32_t*>(g + L::kScales + 64 * s + 4 * c0)); };
        const svuint32_t s0 = scale_reg(0), s1 = scale_reg(1), s2 = scale_reg(2);
        const svuint32_t sc_lo = svand_n_u32_x(pg, s0, 0x3f3f3f3f);
        const svuint32_t sc_hi = svorr_u32_x(pg, svand_n_u32_x(pg, s2, 0x0f0f0f0f), svand_n_u32_x(pg, svlsr_n_u32_x(pg, s0, 2), 0x30303030));
        svint32_t is0 = svdup_n_s32(0), is1 = is0, is2 = is0, is3 = is0;
        for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c + 1 (high)
            const svuint32_t sc = c < 2 ? sc_lo : sc_hi;
            const svint32_t sl = lane_byte(pg, sc, 2 * c % 4), sh = lane_byte(pg, sc, 2 * c % 4 + 1);
            for (int h = 0; h < 2; ++h) {  // registers 8c + 4h .. 8c + 4h + 3: elements 64c + 16h .. and 64c + 32 + 16h ..
                const uint8_t* q = g + L::kQs + 64 * (8 * c + 4 * h) + 4 * c0;
                const auto lo = [&](int r) { return svreinterpret_s8_u8(svand_n_u8_x(all, svld1_u8(pb, q + 64 * r), 0x0f)); };
                const auto hi = [&](int r) { return svreinterpret_s8_u8(svlsr_n_u8_x(all, svld1_u8(pb, q + 64 * r), 4)); };
                const svint8_t l0 = lo(0), l1 = lo(1), l2 = lo(2), l3 = lo(3), h0 = hi(0), h1 = hi(1), h2 = hi(2), h3 = hi(3);
                each_row<MR>([&](auto I) {
                    const uint8_t* x = a.lhs + (i0 + I) * a.lhs_stride + sb * kQ8KBlockBytes + kQ8KQs + 64 * c + 16 * h;
                    const auto* xq = reinterpret_cast<const int8_t*>(x);
                    svint32_t dl, dh;
                    dots4(l0, l1, l2, l3, h0, h1, h2, h3, svld1rq_s8(all, xq), svld1rq_s8(all, xq + 32), dl, dh);
                    svint32_t& is = pick<I>(is0, is1, is2, is3);
                    is = svmla_s32_x(pg, svmla_s32_x(pg, is, dl, sl), dh, sh);
                });
            }
        }
        const svuint32_t mn_lo = svand_n_u32_x(pg, s1, 0x3f3f3f3f);
        const svuint32_t mn_hi =
            svorr_u32_x(pg, svand_n_u32_x(pg, svlsr_n_u32_x(pg, s2, 4), 0x0f0f0f0f), svand_n_u32_x(pg, svlsr_n_u32_x(pg, s1, 2), 0x30303030));
        const svfloat32_t dw = load_f16(pg, g + L::kD + 2 * c0), dmin = load_f16(pg, g + L::kDmin + 2 * c0);
        each_row<MR>([&](auto I) {
            const uint8_t* x = a.lhs + (i0 + I) * a.lhs_stride + sb * kQ8KBlockBytes;
            svint32_t ms = svdup_n_s32(0);
            for (int j = 0; j < 8; ++j)
                ms = svmla_n_s32_x(pg, ms, lane_byte(pg, j < 4 ? mn_lo : mn_hi, j % 4),
                                   i16_at(x + kQ8KBsums + 4 * j) + i16_at(x + kQ8KBsums + 4 * j + 2));
            const float dx = f32_at(x + kQ8KD);
            svfloat32_t& acc = pick<I>(acc0, acc1, acc2, acc3);
            acc = svmla_f32_x(pg, acc, svcvt_f32_s32_x(pg, pick<I>(is0, is1, is2, is3)), svmul_n_f32_x(pg, dw, dx));
            acc = svmls_f32_x(pg, acc, svcvt_f32_s32_x(pg, ms), svmul_n_f32_x(pg, dmin, dx));
        });
    }
    each_row<MR>([&](auto I) { store_chunk(a, i0 + I, n0 + c0, pick<I>(acc0, acc1, acc2, acc3)); });
}

template <int MR>
void q4k_gemm(const GemmArgs& a) {
    each_chunk<MR>(a, static_cast<size_t>(a.k / kSuper * Q4KLayout::kBytes), [&](auto rows, int64_t i0, const uint8_t* g, int64_t n0, int64_t c0) {
        q4k_tile<decltype(rows)::value>(a, i0, g, n0, c0);
    });
}

/// MR F32 activation rows (from row i0) times the chunk c0.. of 16 weight rows whose element e is
/// loaded by w(pg, e) (f16x16 group or transposed F32 rows): one FMA chain per output in K order,
/// as every Arm F16 / F32 kernel (neon_tiles.hpp), so the chains mix them bit for bit.
template <int MR, class LoadW>
[[gnu::always_inline]] inline void float_tile(const GemmArgs& a, int64_t i0, int64_t n0, int64_t c0, LoadW&& w_at) {
    const svbool_t pg = chunk_pred();
    svfloat32_t acc0 = svdup_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t e = 0; e < a.k; ++e) {
        const svfloat32_t w = w_at(pg, e);
        each_row<MR>([&](auto I) {
            svfloat32_t& acc = pick<I>(acc0, acc1, acc2, acc3);
            acc = svmla_n_f32_x(pg, acc, w, reinterpret_cast<const float*>(a.lhs + (i0 + I) * a.lhs_stride)[e]);
        });
    }
    each_row<MR>([&](auto I) { store_chunk(a, i0 + I, n0 + c0, pick<I>(acc0, acc1, acc2, acc3)); });
}

constexpr int kMr = 4;

template <int MR>
void f16_gemm(const GemmArgs& a) {
    each_chunk<MR>(a, static_cast<size_t>(kGroupRows * a.k * 2), [&](auto rows, int64_t i0, const uint8_t* g, int64_t n0, int64_t c0) {
        float_tile<decltype(rows)::value>(a, i0, n0, c0, [&](svbool_t pg, int64_t e) { return load_f16(pg, g + 32 * e + 2 * c0); });
    });
}

/// F32 Rows: each 16-row group of weight rows transposed once into wt[e * 16 + j] (rows past n
/// zero), then as the F16 kernel.
template <int MR>
void f32_rows_gemm(const GemmArgs& a) {
    thread_local UnitBuffer<float> wt;
    wt.resize(static_cast<size_t>(a.k * kGroupRows));
    const int64_t step = chunk_rows();
    for (int64_t n0 = 0; n0 < a.n; n0 += kGroupRows) {
        const int64_t nw = std::min<int64_t>(kGroupRows, a.n - n0);
        for (int64_t j = 0; j < kGroupRows; ++j) {
            const float* w = reinterpret_cast<const float*>(a.rhs + static_cast<size_t>(n0 + std::min(j, nw - 1)) * a.rhs_stride);
            for (int64_t e = 0; e < a.k; ++e) wt[static_cast<size_t>(e * kGroupRows + j)] = j < nw ? w[e] : 0.0f;
        }
        for (int64_t c0 = 0; c0 < nw; c0 += step)
            for_row_tiles<MR>(a.m, [&](auto rows, int64_t i0) {
                float_tile<decltype(rows)::value>(a, i0, n0, c0, [&](svbool_t pg, int64_t e) { return svld1_f32(pg, wt.data() + e * kGroupRows + c0); });
            });
    }
}

/// pack_lhs of the quantized kernels: each row as quant::quantize_row makes it (type T).
template <DType T>
void pack_q8(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const size_t row_bytes = static_cast<size_t>(dtype_row_bytes(T, k));
    for (int64_t i = 0; i < m; ++i)
        quant::quantize_row(T, reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride), dst + i * row_bytes, k);
}

template <class W>
constexpr Kernel quant_kernel(const char* name, const char* gemv_name) {
    return {name, gemv_name, CpuTier::Sve, false, W::kWeight, W::kLhs, kMr, 16, 4, W::kQs == 16 ? 2 : 1, kMr, 16, 1,
            pack_q8<W::kLhs>, quant_gemm<W, kMr>, quant_gemm<W, 1>};
}

constinit Kernel table[] = {
    quant_kernel<Q4_0W>("q4_0_q8_0_gemm_4x16_sve", "q4_0_q8_0_gemv_1x16_sve"),
    quant_kernel<Q4_1W>("q4_1_q8_1_gemm_4x16_sve", "q4_1_q8_1_gemv_1x16_sve"),
    quant_kernel<Q8_0W>("q8_0_q8_0_gemm_4x16_sve", "q8_0_q8_0_gemv_1x16_sve"),
    quant_kernel<Iq4NlW>("iq4_nl_q8_0_gemm_4x16_sve", "iq4_nl_q8_0_gemv_1x16_sve"),
    {"q4_K_q8_K_gemm_4x16_sve", "q4_K_q8_K_gemv_1x16_sve", CpuTier::Sve, false, DType::Q4_K, DType::Q8_K, kMr, 16, 4, 2, kMr, 16, 1,
     pack_q8<DType::Q8_K>, q4k_gemm<kMr>, q4k_gemm<1>},
    {"f16_f32_gemm_4x16_sve", "f16_f32_gemv_1x16_sve", CpuTier::Sve, false, DType::F16, DType::F32, kMr, 16, 2, 1, kMr, 16, 1,
     pack_f32_rows, f16_gemm<kMr>, f16_gemm<1>},
};

constexpr Kernel kRowsTable[] = {
    {"f32_f32_gemm_4x16_sve", "f32_f32_gemv_1x16_sve", CpuTier::Sve, false, DType::F32, DType::F32, kMr, 16, 0, 0, kMr, 16, 1,
     pack_f32_rows, f32_rows_gemm<kMr>, f32_rows_gemm<1>, LhsLayout::Blocks, nullptr, RhsLayout::Rows},
};

}  // namespace

constinit const std::span<Kernel> kSveKernels{table};
constinit const std::span<const Kernel> kSveRowsKernels{kRowsTable};

}  // namespace tessel::cpu::packed
