// The generic driver of the quantized matrix products MUL_MAT and MUL_MAT_ID, expanded once per
// micro-kernel in the per-ISA translation units that include it (one source, one expansion per
// tile and ISA). Everything here is a template on the micro-kernel type, so each expansion has
// internal linkage through its kernel type and no ISA-compiled code is shared between units.
//
// A micro-kernel type D provides:
//   static constexpr DType kWeight;          weight type (GGUF blocks, rows contiguous)
//   static constexpr DType kAct;             type the F32 activation rows are quantized to
//   static constexpr int kMr, kNr;           GEMM tile: kMr activation rows x kNr weight rows
//   static constexpr int kGemvNr;            GEMV (one activation row) tile: 1 x kGemvNr
//   static constexpr int kNStep;             weight rows per work item, a multiple of kNr and kGemvNr
//   static constexpr const char* kGemmName;  `<weight>_<act>_gemm_<mr>x<nr>_<isa>`
//   static constexpr const char* kGemvName;  `<weight>_<act>_gemv_1x<nr>_<isa>`
//   static bool usable(const CpuFeatures&);
//   template <int MR, int NR> static void tile(const uint8_t* w, size_t w_stride,
//                                              const TileRows<MR>& rows, int64_t n_blocks);
//     computes rows.out[i][j] = w_j . x_i for i < MR, j < NR, where weight row j starts at
//     w + j * w_stride and x_i = rows.x[i] (quantized to kAct), both n_blocks blocks long.
//
// Phases of a run: (1) every thread quantizes a contiguous share of the activation rows into the
// shared work buffer (quant::quantize_row, so the packed activations are the reference's);
// barrier; (2) work items (a chunk of D::kNStep weight rows of one weight matrix) are claimed from
// the pool's chunk counter, and each item runs every activation row that uses that matrix in
// tiles. Every output is computed by one tile call whose summation order does not depend on the
// thread count, so results are identical for any number of threads.
#pragma once

#include <cstring>
#include <vector>

#include "cpu/kernels/kernel.hpp"
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

/// Quantizes rows [begin, end) of a row set (row r read from src_at(r)) into dst (row_bytes each).
template <class SrcAt>
void quantize_rows(DType act, int64_t K, int64_t begin, int64_t end, SrcAt src_at, uint8_t* dst) {
    const uint64_t row_bytes = dtype_row_bytes(act, K);
    for (int64_t r = begin; r < end; ++r) quant::quantize_row(act, src_at(r), dst + r * row_bytes, K);
}

// ---- MUL_MAT: w [K, N, W2, W3], x F32 [K, M, B2, B3] -> dst F32 [N, M, B2, B3] ------------------

template <class D>
bool supports_mul_mat(const Tensor& dst) {
    if (dst.op != Op::MUL_MAT) return false;
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    const int64_t K = w->ne[0];
    return w->type == D::kWeight && x->type == DType::F32 && dst.type == DType::F32 &&
           K % static_cast<int64_t>(dtype_info(D::kWeight).block_size) == 0 && K % static_cast<int64_t>(dtype_info(D::kAct).block_size) == 0 &&
           w->nb[0] == dtype_info(D::kWeight).block_bytes && x->nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) &&
           dst.nb[1] % sizeof(float) == 0 && x->ne[2] % w->ne[2] == 0 && x->ne[3] % w->ne[3] == 0;
}

template <class D>
size_t mul_mat_work(const Tensor& dst, int) {
    const Tensor& x = *dst.src[1];
    return dtype_row_bytes(D::kAct, x.ne[0]) * static_cast<size_t>(x.ne[1] * x.ne[2] * x.ne[3]);
}

template <class D>
void run_mul_mat(Tensor& dst, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1], B2 = x.ne[2], B3 = x.ne[3];
    const int64_t r2 = B2 / w.ne[2], r3 = B3 / w.ne[3];
    const uint64_t xq_row = dtype_row_bytes(D::kAct, K);
    auto* xq = static_cast<uint8_t*>(work);
    const auto* xd = static_cast<const uint8_t*>(x.data);
    auto* dd = static_cast<uint8_t*>(dst.data);

    int64_t begin = 0, end = 0;
    thread_rows(M * B2 * B3, ctx, begin, end);
    quantize_rows(D::kAct, K, begin, end, [&](int64_t r) {
        const int64_t m = r % M, i2 = r / M % B2, i3 = r / (M * B2);
        return reinterpret_cast<const float*>(xd + m * x.nb[1] + i2 * x.nb[2] + i3 * x.nb[3]);
    }, xq);
    ctx.barrier();

    const int64_t chunks = (N + D::kNStep - 1) / D::kNStep;
    const int64_t n_blocks = K / static_cast<int64_t>(dtype_info(D::kWeight).block_size);
    ctx.for_chunks(chunks * B2 * B3, 1, [&](int64_t item, int64_t) {
        const int64_t c = item % chunks, i2 = item / chunks % B2, i3 = item / (chunks * B2);
        const int64_t n0 = c * D::kNStep, n_rows = std::min<int64_t>(D::kNStep, N - n0);
        const uint8_t* wrows = static_cast<const uint8_t*>(w.data) + n0 * w.nb[1] + (i2 / r2) * w.nb[2] + (i3 / r3) * w.nb[3];
        const uint8_t* xbatch = xq + (M * (i2 + B2 * i3)) * xq_row;
        uint8_t* obatch = dd + i2 * dst.nb[2] + i3 * dst.nb[3] + n0 * sizeof(float);
        run_item<D>(wrows, w.nb[1], n_rows, M, [&](int64_t m) { return xbatch + m * xq_row; },
                    [&](int64_t m) { return reinterpret_cast<float*>(obatch + m * dst.nb[1]); }, n_blocks);
    });
}

// ---- MUL_MAT_ID: experts [K, N, E], x F32 [K, U, T], ids I32 [E_used, T] -> dst F32 [N, E_used, T]

template <class D>
bool supports_mul_mat_id(const Tensor& dst) {
    if (dst.op != Op::MUL_MAT_ID) return false;
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    const Tensor* ids = dst.src[2];
    const int64_t K = w->ne[0];
    return w->type == D::kWeight && x->type == DType::F32 && dst.type == DType::F32 && ids->type == DType::I32 &&
           K % static_cast<int64_t>(dtype_info(D::kWeight).block_size) == 0 && K % static_cast<int64_t>(dtype_info(D::kAct).block_size) == 0 &&
           w->nb[0] == dtype_info(D::kWeight).block_bytes && x->nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) &&
           dst.nb[1] % sizeof(float) == 0 && w->ne[3] == 1 && x->ne[3] == 1 && ids->ne[1] == x->ne[2] &&
           ids->ne[0] % x->ne[1] == 0;
}

/// Work layout: quantized x rows (U * T of them), then the routing: per expert a count, then
/// the (slot, token) pairs routed to it, grouped by expert.
template <class D>
size_t mul_mat_id_work(const Tensor& dst, int) {
    const Tensor& x = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const size_t xq = dtype_row_bytes(D::kAct, x.ne[0]) * static_cast<size_t>(x.ne[1] * x.ne[2]);
    const size_t experts = static_cast<size_t>(dst.src[0]->ne[2]) + 1;
    return (xq + 63) / 64 * 64 + experts * sizeof(int64_t) + static_cast<size_t>(ids.ne[0] * ids.ne[1]) * 2 * sizeof(int32_t);
}

template <class D>
void run_mul_mat_id(Tensor& dst, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], U = x.ne[1];
    const uint64_t xq_row = dtype_row_bytes(D::kAct, K);
    auto* xq = static_cast<uint8_t*>(work);
    auto* starts = reinterpret_cast<int64_t*>(xq + (xq_row * U * x.ne[2] + 63) / 64 * 64);  // E + 1 offsets
    auto* pairs = reinterpret_cast<int32_t*>(starts + E + 1);                                // (slot, token)
    const auto* xd = static_cast<const uint8_t*>(x.data);
    auto* dd = static_cast<uint8_t*>(dst.data);
    auto out_col = [&](int64_t e, int64_t t) { return reinterpret_cast<float*>(dd + e * dst.nb[1] + t * dst.nb[2]); };

    int64_t begin = 0, end = 0;
    thread_rows(U * x.ne[2], ctx, begin, end);
    quantize_rows(D::kAct, K, begin, end, [&](int64_t r) {
        return reinterpret_cast<const float*>(xd + (r % U) * x.nb[1] + (r / U) * x.nb[2]);
    }, xq);
    if (ctx.ith == 0) route_experts(dst, starts, pairs);
    ctx.barrier();

    const int64_t chunks = (N + D::kNStep - 1) / D::kNStep;
    const int64_t n_blocks = K / static_cast<int64_t>(dtype_info(D::kWeight).block_size);
    ctx.for_chunks(chunks * E, 1, [&](int64_t item, int64_t) {
        const int64_t ex = item / chunks, n0 = item % chunks * D::kNStep, n_rows = std::min<int64_t>(D::kNStep, N - n0);
        const int32_t* routed = pairs + 2 * starts[ex];
        const int64_t count = starts[ex + 1] - starts[ex];
        if (count == 0) return;
        const uint8_t* wrows = static_cast<const uint8_t*>(w.data) + n0 * w.nb[1] + ex * w.nb[2];
        run_item<D>(wrows, w.nb[1], n_rows, count,
                    [&](int64_t i) { return xq + (routed[2 * i] % U + U * routed[2 * i + 1]) * xq_row; },
                    [&](int64_t i) { return out_col(routed[2 * i], routed[2 * i + 1]) + n0; }, n_blocks);
    });
}

/// The MUL_MAT and MUL_MAT_ID kernels of micro-kernel D.
template <class D>
constexpr FastKernel mul_mat_kernel() {
    return {D::kGemmName, D::usable, supports_mul_mat<D>, mul_mat_work<D>, run_mul_mat<D>, D::kGemvName};
}
template <class D>
constexpr FastKernel mul_mat_id_kernel() {
    return {D::kGemmName, D::usable, supports_mul_mat_id<D>, mul_mat_id_work<D>, run_mul_mat_id<D>, D::kGemvName};
}

/// One ISA's table (constant data): the MUL_MAT kernels of micro-kernels Ds, then their
/// MUL_MAT_ID kernels.
template <class... Ds>
inline constexpr FastKernel kKernelTable[] = {mul_mat_kernel<Ds>()..., mul_mat_id_kernel<Ds>()...};

}  // namespace tessel::cpu::mm
