// The quantized tile kernels over plain GGUF weight rows as Rows kernels of the CPU kernel table
// (src/cpu/packed/kernel.hpp; the driver of MUL_MAT and MUL_MAT_ID is src/cpu/packed/mul_mat.cpp),
// expanded once per micro-kernel in the per-ISA translation units that include it (one source,
// one expansion per tile and ISA). Everything here is a template on the micro-kernel type, so each
// expansion has internal linkage through its kernel type and no ISA-compiled code is shared
// between units.
//
// A micro-kernel type D provides:
//   static constexpr DType kWeight;          weight type (GGUF blocks; rows at any stride)
//   static constexpr DType kAct;             type the F32 activation rows are quantized to
//   static constexpr int kMr, kNr;           GEMM tile: kMr activation rows x kNr weight rows
//   static constexpr int kGemvNr;            GEMV (one activation row) tile: 1 x kGemvNr
//   static constexpr int kNStep;             the n_step: chunks of the driver hold whole steps; a multiple of kNr and kGemvNr
//   static constexpr const char* kGemmName;  `<weight>_<act>_gemm_<mr>x<nr>_<isa>`
//   static constexpr const char* kGemvName;  `<weight>_<act>_gemv_1x<nr>_<isa>`
//   static constexpr CpuTier kTier;          lowest tier that can run it
//   template <int MR, int NR> static void tile(const uint8_t* w, size_t w_stride,
//                                              const TileRows<MR>& rows, int64_t n_blocks);
//     computes rows.out[i][j] = w_j . x_i for i < MR, j < NR, where weight row j starts at
//     w + j * w_stride and x_i = rows.x[i] (quantized to kAct), both n_blocks blocks long.
//
// The driver packs the activation rows with pack_lhs<D> (quant::quantize_row, so the packed
// activations are the reference's) and calls gemm<D> per column chunk (whole kNStep steps of one
// weight matrix), which runs every activation row of the call in tiles (run_item). Every output is
// computed by one tile call whose summation order does not depend on the thread count or the
// chunk, so results are identical for any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cpu/kernels/kernel.hpp"
#include "cpu/packed/kernel.hpp"
#include "quant/quant.hpp"

namespace tessel::cpu::mm {

/// The activation rows of one tile and their output rows (each pointing at the tile's first
/// output column).
template <int MR>
struct TileRows {
    const uint8_t* x[MR];
    float* out[MR];
};

/// Runs the tiles of one item: weight rows [0, n_rows) starting at w (stride w_stride) against
/// activation rows 0..M-1, given by x_at(m) (quantized row) and out_at(m) (output row at the
/// item's first column).
template <class D, class XAt, class OutAt>
void run_item(const uint8_t* w, size_t w_stride, int64_t n_rows, int64_t M, XAt x_at, OutAt out_at, int64_t n_blocks) {
    auto row_tiles = [&]<int MR>(const TileRows<MR>& base, auto nr_tag) {
        constexpr int NR = decltype(nr_tag)::value;
        int64_t n = 0;
        for (; n + NR <= n_rows; n += NR) {
            TileRows<MR> r = base;
            for (int i = 0; i < MR; ++i) r.out[i] += n;
            D::template tile<MR, NR>(w + n * w_stride, w_stride, r, n_blocks);
        }
        for (; n < n_rows; ++n) {
            TileRows<MR> r = base;
            for (int i = 0; i < MR; ++i) r.out[i] += n;
            D::template tile<MR, 1>(w + n * w_stride, w_stride, r, n_blocks);
        }
    };
    static_assert(D::kNStep % D::kNr == 0 && D::kNStep % D::kGemvNr == 0, "an item holds whole tiles");
    int64_t m = 0;
    if (M >= D::kMr) {
        for (; m + D::kMr <= M; m += D::kMr) {
            TileRows<D::kMr> r;
            for (int i = 0; i < D::kMr; ++i) r.x[i] = x_at(m + i), r.out[i] = out_at(m + i);
            row_tiles(r, std::integral_constant<int, D::kNr>{});
        }
    }
    for (; m < M; ++m) {
        const TileRows<1> r{{x_at(m)}, {out_at(m)}};
        row_tiles(r, std::integral_constant<int, D::kGemvNr>{});
    }
}

/// pack_lhs of D: each F32 row quantized to D::kAct (quant::quantize_row, the reference's
/// packing), one GGUF row after the other (LhsLayout::Blocks).
template <class D>
void pack_lhs(const float* x, size_t x_stride, uint8_t* dst, int64_t m, int64_t k) {
    const uint64_t row = dtype_row_bytes(D::kAct, k);
    for (int64_t i = 0; i < m; ++i)
        quant::quantize_row(D::kAct, reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(x) + i * x_stride), dst + i * row, k);
}

/// gemm and gemv of D: the tiles of one call (weight rows a.rhs + j * a.rhs_stride, j < a.n)
/// against its a.m activation rows.
template <class D>
void gemm(const packed::GemmArgs& a) {
    const int64_t n_blocks = a.k / static_cast<int64_t>(dtype_info(D::kWeight).block_size);
    auto* out = reinterpret_cast<uint8_t*>(a.dst);
    run_item<D>(a.rhs, a.rhs_stride, a.n, a.m, [&](int64_t m) { return a.lhs + m * a.lhs_stride; },
                [&](int64_t m) { return reinterpret_cast<float*>(out + m * a.dst_stride); }, n_blocks);
}

/// The Rows kernel of micro-kernel D (kernel.hpp).
template <class D>
constexpr packed::Kernel rows_kernel() {
    return {D::kGemmName, D::kGemvName, D::kTier, false, D::kWeight, D::kAct, D::kMr, D::kNr, 0, 0, D::kMr, D::kNStep, 1,
            pack_lhs<D>, gemm<D>, gemm<D>, packed::LhsLayout::Blocks, nullptr, packed::RhsLayout::Rows};
}

/// One ISA's table of Rows kernels (constant data).
template <class... Ds>
inline constexpr packed::Kernel kRowsTable[] = {rows_kernel<Ds>()...};

}  // namespace tessel::cpu::mm
