// Reference kernels for the matrix products MUL_MAT and MUL_MAT_ID (semantics in graph/op.hpp).
//
// Numerics: each weight row is dequantized to float with the reference dequantizer, each
// activation row is read as float (F32, or F16/BF16 widened exactly), and every dot product is
// accumulated in double (dot_f64: four running sums in a fixed order). The float×float
// products are exact in double, so the only rounding is the double summation and the final
// store to float: this is the exact truth for the given weights, to float precision. Fast kernels (which quantize activations and sum in lower
// precision) are judged against it by NMSE, not bit equality.
//
// Threads split the output by blocks of weight rows: a block of kRowBlock weight rows is
// dequantized once and dotted with every activation row that uses it. Each output element is
// computed by exactly one thread in the same order, so results are identical for any count.
#include <algorithm>
#include <vector>

#include "cpu/ref/ref.hpp"
#include "cpu/ref/tensor_util.hpp"

namespace tessel::cpu::ref {
namespace {

constexpr int64_t kRowBlock = 16;

bool is_float_activation(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }


// ---- MUL_MAT ---------------------------------------------------------------------------------
// w [K, N, B2, B3], x [K, M, B2', B3'] -> dst [N, M, B2', B3']. Weight batch (i2 / (B2'/B2),
// i3 / (B3'/B3)) serves activation batch (i2, i3): consecutive activation batches share a
// weight matrix (grouped-query attention: K/V head h serves query heads h*r .. h*r+r-1).

bool supports_mul_mat(const Tensor& dst) {
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    if (!w || !x) return false;
    if (dst.type != DType::F32 || !rows_readable(*w) || !is_float_activation(x->type)) return false;
    if (w->ne[0] != x->ne[0]) return false;
    if (x->ne[2] % w->ne[2] != 0 || x->ne[3] % w->ne[3] != 0) return false;
    return dst.ne[0] == w->ne[1] && dst.ne[1] == x->ne[1] && dst.ne[2] == x->ne[2] && dst.ne[3] == x->ne[3];
}

void run_mul_mat(Tensor& dst, ThreadContext& ctx) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1];
    const int64_t r2 = x.ne[2] / w.ne[2], r3 = x.ne[3] / w.ne[3];
    const int64_t blocks_per_batch = (N + kRowBlock - 1) / kRowBlock;
    const int64_t n_items = blocks_per_batch * x.ne[2] * x.ne[3];

    std::vector<float> wrows(static_cast<size_t>(kRowBlock * K));
    std::vector<float> xrow(static_cast<size_t>(K));
    const Range mine = thread_range(n_items, ctx);
    for (int64_t item = mine.begin; item < mine.end; ++item) {
        const int64_t blk = item % blocks_per_batch;
        const int64_t i2 = (item / blocks_per_batch) % x.ne[2];
        const int64_t i3 = item / (blocks_per_batch * x.ne[2]);
        const int64_t n0 = blk * kRowBlock, n1 = std::min(N, n0 + kRowBlock);
        for (int64_t n = n0; n < n1; ++n) load_row(w, elem_ptr(w, 0, n, i2 / r2, i3 / r3), &wrows[(n - n0) * K]);
        for (int64_t m = 0; m < M; ++m) {
            load_row(x, elem_ptr(x, 0, m, i2, i3), xrow.data());
            for (int64_t n = n0; n < n1; ++n) {
                auto* out = reinterpret_cast<float*>(elem_ptr(dst, n, m, i2, i3));
                *out = static_cast<float>(dot_f64(&wrows[(n - n0) * K], xrow.data(), K));
            }
        }
    }
}

// ---- MUL_MAT_ID ------------------------------------------------------------------------------
// experts [K, N, E], x [K, U, T], ids I32 [n_used, T] -> dst [N, n_used, T]:
// dst[:, e, t] = experts[ids[e, t]] · x[:, e % U, t]. An id outside [0, E) cannot be rejected
// before the data is known, so its output column is filled with zeros (documented in op.hpp).

bool supports_mul_mat_id(const Tensor& dst) {
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    const Tensor* ids = dst.src[2];
    if (!w || !x || !ids) return false;
    if (dst.type != DType::F32 || !rows_readable(*w) || !is_float_activation(x->type) || ids->type != DType::I32)
        return false;
    if (w->ne[3] != 1 || x->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1) return false;
    if (w->ne[0] != x->ne[0] || ids->ne[1] != x->ne[2] || ids->ne[0] % x->ne[1] != 0) return false;
    return dst.ne[0] == w->ne[1] && dst.ne[1] == ids->ne[0] && dst.ne[2] == ids->ne[1] && dst.ne[3] == 1;
}

int32_t id_at(const Tensor& ids, int64_t e, int64_t t) { return *reinterpret_cast<const int32_t*>(elem_ptr(ids, e, t)); }

void run_mul_mat_id(Tensor& dst, ThreadContext& ctx) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2];
    const int64_t n_used = ids.ne[0], T = ids.ne[1], U = x.ne[1];

    // (slot e, token t) pairs routed to each expert, in (t, e) order; every thread builds the
    // same lists (cheap) so no barrier is needed.
    struct Pair {
        int64_t e, t;
    };
    std::vector<std::vector<Pair>> routed(static_cast<size_t>(E));
    std::vector<Pair> invalid;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < n_used; ++e) {
            const int32_t id = id_at(ids, e, t);
            (id >= 0 && id < E ? routed[static_cast<size_t>(id)] : invalid).push_back({e, t});
        }

    const int64_t blocks_per_expert = (N + kRowBlock - 1) / kRowBlock;
    const int64_t n_items = blocks_per_expert * E;
    std::vector<float> wrows(static_cast<size_t>(kRowBlock * K));
    std::vector<float> xrow(static_cast<size_t>(K));
    const Range mine = thread_range(n_items, ctx);
    for (int64_t item = mine.begin; item < mine.end; ++item) {
        const int64_t ex = item / blocks_per_expert;
        const auto& pairs = routed[static_cast<size_t>(ex)];
        if (pairs.empty()) continue;
        const int64_t n0 = (item % blocks_per_expert) * kRowBlock, n1 = std::min(N, n0 + kRowBlock);
        for (int64_t n = n0; n < n1; ++n) load_row(w, elem_ptr(w, 0, n, ex), &wrows[(n - n0) * K]);
        for (const Pair& p : pairs) {
            load_row(x, elem_ptr(x, 0, p.e % U, p.t), xrow.data());
            for (int64_t n = n0; n < n1; ++n)
                *reinterpret_cast<float*>(elem_ptr(dst, n, p.e, p.t)) = static_cast<float>(dot_f64(&wrows[(n - n0) * K], xrow.data(), K));
        }
    }
    const Range bad = thread_range(static_cast<int64_t>(invalid.size()), ctx);
    for (int64_t i = bad.begin; i < bad.end; ++i)
        for (int64_t n = 0; n < N; ++n) *reinterpret_cast<float*>(elem_ptr(dst, n, invalid[i].e, invalid[i].t)) = 0.0f;
}

}  // namespace

void register_matmul_ops(KernelTable& t) {
    t.set(Op::MUL_MAT, supports_mul_mat, run_mul_mat);
    t.set(Op::MUL_MAT_ID, supports_mul_mat_id, run_mul_mat_id);
}

}  // namespace tessel::cpu::ref
