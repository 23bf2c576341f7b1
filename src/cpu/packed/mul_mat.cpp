#include "cpu/packed/mul_mat.hpp"
#include "core/env.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/kernels/kernel.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu::packed {
namespace {

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

bool contiguous_weight(const Tensor& w) {
    return w.nb[0] == dtype_info(w.type).block_bytes && w.nb[1] == dtype_row_bytes(w.type, w.ne[0]) &&
           w.nb[2] == w.nb[1] * static_cast<uint64_t>(w.ne[1]) && w.nb[3] == w.nb[2] * static_cast<uint64_t>(w.ne[2]);
}

/// A weight stored in CPU_PACKED that its Packed kernels can read.
bool weight_ok(const Tensor& w) {
    const Format* f = format_for(w.type);
    return f && !w.view_src && packable(*f, w.ne[0]) && contiguous_weight(w) &&
           !chain(w.type, usable_cpu_features(), RhsLayout::Packed).empty();
}

/// The Rows kernels of w's chain that serve K = w.ne[0] (a multiple of their activation block).
std::vector<const Kernel*> rows_chain(const Tensor& w) {
    std::vector<const Kernel*> out;
    for (const Kernel* k : chain(w.type, usable_cpu_features(), RhsLayout::Rows))
        if (w.ne[0] % static_cast<int64_t>(dtype_info(k->lhs).block_size) == 0) out.push_back(k);
    return out;
}

/// A weight read as its plain GGUF rows (any nb[1..3], views too) by a Rows kernel.
bool plain_ok(const Tensor& w) {
    const DTypeInfo& info = dtype_info(w.type);
    return !packed_of(w) && w.nb[0] == info.block_bytes && w.ne[0] % static_cast<int64_t>(info.block_size) == 0 &&
           !rows_chain(w).empty();
}

bool matmul_weight_ok(const Tensor& w) { return packed_of(w) ? weight_ok(w) : plain_ok(w); }

bool mul_mat_ok(const Tensor& dst) {
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    return w && x && matmul_weight_ok(*w) && x->type == DType::F32 && dst.type == DType::F32 && x->nb[0] == sizeof(float) &&
           dst.nb[0] == sizeof(float) && dst.nb[1] % sizeof(float) == 0 && x->ne[0] == w->ne[0] && dst.ne[0] == w->ne[1] &&
           x->ne[2] % w->ne[2] == 0 && x->ne[3] % w->ne[3] == 0;
}

bool get_rows_ok(const Tensor& dst) {
    const Tensor* w = dst.src[0];
    const Tensor* ids = dst.src[1];
    return w && ids && weight_ok(*w) && ids->type == DType::I32 && dst.type == DType::F32 && dst.nb[0] == sizeof(float) &&
           dst.ne[0] == w->ne[0] && dst.ne[1] == ids->ne[0] && dst.ne[2] == ids->ne[1] && dst.ne[3] == ids->ne[2] &&
           ids->ne[3] == 1 && w->ne[2] == ids->ne[1] && w->ne[3] == ids->ne[2];
}

bool mul_mat_id_ok(const Tensor& dst) {
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    const Tensor* ids = dst.src[2];
    return w && x && ids && matmul_weight_ok(*w) && x->type == DType::F32 && dst.type == DType::F32 && ids->type == DType::I32 &&
           x->nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) && dst.nb[1] % sizeof(float) == 0 && x->ne[0] == w->ne[0] &&
           dst.ne[0] == w->ne[1] && w->ne[3] == 1 && x->ne[3] == 1 && ids->ne[1] == x->ne[2] && ids->ne[0] % x->ne[1] == 0 &&
           dst.ne[1] == ids->ne[0] && dst.ne[2] == ids->ne[1];
}

/// Run-time packing: an F16 src0 that is not a stored weight (attention's K and V over the KV
/// cache: views with any row stride, grouped-query broadcast) is packed per op into the work
/// buffer when enough activation rows share each matrix to repay the packing.
constexpr int64_t kRuntimeMinRows = 16;

bool runtime_ok(const Tensor& dst) {
    const Tensor* w = dst.src[0];
    const Tensor* x = dst.src[1];
    if (dst.op != Op::MUL_MAT || !w || !x || w->type != DType::F16 || packed_of(*w) || w->nb[0] != sizeof(uint16_t)) return false;
    const Tensor& owner = w->view_src ? *w->view_src : *w;
    if ((owner.flags & kFlagWeight) || !packed_enabled()) return false;  // stored weights pack at load, or not at all
    const Format* f = format_for(DType::F16);
    return f && packable(*f, w->ne[0]) && !chain(DType::F16, usable_cpu_features(), RhsLayout::Packed).empty() &&
           x->ne[1] >= kRuntimeMinRows &&
           x->type == DType::F32 && dst.type == DType::F32 && x->nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) &&
           dst.nb[1] % sizeof(float) == 0 && x->ne[0] == w->ne[0] && dst.ne[0] == w->ne[1] && x->ne[2] % w->ne[2] == 0 &&
           x->ne[3] % w->ne[3] == 0;
}

/// Bytes of src0 packed at run time (every matrix).
size_t runtime_rhs_bytes(const Tensor& dst) {
    const Tensor& w = *dst.src[0];
    return packed_bytes(*format_for(w.type), w.ne[1], w.ne[0]) * static_cast<size_t>(w.ne[2] * w.ne[3]);
}

/// Bytes of one thread's scratch for run-time packing: one group of src0 rows, made contiguous.
size_t runtime_rows_bytes(const Tensor& dst) { return align64(static_cast<size_t>(kGroupRows * dst.src[0]->ne[0]) * sizeof(uint16_t)); }

/// Number of (matrix, 16-row group) items of run-time packing.
int64_t runtime_items(const Tensor& w) { return (w.ne[1] + kGroupRows - 1) / kGroupRows * w.ne[2] * w.ne[3]; }

/// Packs item `item` (runtime_items()) of src0 into rhs: the group's rows are copied to the calling
/// thread's contiguous scratch `rows` first (src0 rows may be strided), then packed.
void runtime_pack(const Tensor& w, uint8_t* rhs, uint8_t* rows, int64_t item) {
    const Format& f = *format_for(w.type);
    const int64_t K = w.ne[0], N = w.ne[1], groups = (N + kGroupRows - 1) / kGroupRows;
    const size_t row = static_cast<size_t>(K) * sizeof(uint16_t), matrix = packed_bytes(f, N, K);
    const int64_t g = item % groups, mat = item / groups, i2 = mat % w.ne[2], i3 = mat / w.ne[2];
    const int64_t n0 = g * kGroupRows, n = std::min(kGroupRows, N - n0);
    for (int64_t r = 0; r < n; ++r)
        std::memcpy(rows + static_cast<size_t>(r) * row,
                    static_cast<const uint8_t*>(w.data) + (n0 + r) * w.nb[1] + i2 * w.nb[2] + i3 * w.nb[3], row);
    f.pack(rows, rhs + static_cast<size_t>(mat) * matrix + group_offset(f, n0, K), n, K);
}

/// Activation rows per weight matrix: M of MUL_MAT; for MUL_MAT_ID the tokens (each expert sees
/// at most one row per token).
int64_t rows_per_matrix(const Tensor& dst) { return dst.op == Op::MUL_MAT_ID ? dst.src[2]->ne[1] : dst.src[1]->ne[1]; }

int64_t lhs_rows(const Tensor& dst) { return dst.src[1]->ne[1] * dst.src[1]->ne[2] * dst.src[1]->ne[3]; }

/// Ops with at most this many activation rows (decode) skip the shared packing phase: every
/// thread packs all rows into its own part of the work buffer (on its first chunk), which costs
/// less than a phase.
constexpr int64_t kPrivateRows = 4;

/// Rows per chunk when activation rows are packed or moved in a phase of their own: about four
/// chunks per thread.
int64_t row_chunk(int64_t rows, int nth) { return std::max<int64_t>(1, (rows + 4 * nth - 1) / (4 * nth)); }

void pack_rows(const Kernel& k, const Tensor& x, int64_t begin, int64_t end, uint8_t* lhs) {
    const int64_t M = x.ne[1], B2 = x.ne[2], K = x.ne[0];
    const size_t row = lhs_row_bytes(k, K);
    const auto* xd = static_cast<const uint8_t*>(x.data);
    for (int64_t r = begin; r < end;) {
        const int64_t m = r % M, i2 = r / M % B2, i3 = r / (M * B2);
        const int64_t run = std::min(end - r, M - m);  // rows of one batch: uniform stride nb[1]
        k.pack_lhs(reinterpret_cast<const float*>(xd + m * x.nb[1] + i2 * x.nb[2] + i3 * x.nb[3]), x.nb[1],
                   lhs + static_cast<size_t>(r) * row, run, K);
        r += run;
    }
}

/// Columns per chunk for N columns on nth threads, a multiple of step (the kernels' n_step): `mult`
/// steps (Tuning::chunk_mult) when non-zero, else about a quarter of a thread's share.
int64_t chunk_columns(int64_t N, int nth, int64_t mult, int64_t step) {
    const int64_t steps = (N + step - 1) / step;
    if (mult == 0) mult = std::max<int64_t>(1, steps / (4 * static_cast<int64_t>(nth)));
    return mult * step;
}

/// The column step of a plan: every kernel's calls start at a multiple of its n_step.
int64_t plan_step(const Plan& k) {
    return k.fallback ? std::lcm<int64_t>(k.main->n_step, k.fallback->n_step) : k.main->n_step;
}

/// MUL_MAT work layout: [run-time packed src0][per-thread row scratch][LHS: shared (main, then the
/// fallback's when separate) or one private area per thread] + 64 bytes (kernels may read a vector
/// past the last row's end).
void plan_mul_mat(const Tensor& dst, int nth, NodePlan& p) {
    const Tensor& w = *dst.src[0];
    const int64_t K = w.ne[0], rows = lhs_rows(dst);
    size_t at = 0;
    if (p.runtime) {  // run-time packing
        at = align64(runtime_rhs_bytes(dst));
        p.mm.rows = at;
        at += static_cast<size_t>(nth) * runtime_rows_bytes(dst);
    }
    p.mm.lhs = at;
    const Kernel& main = *p.kernels.main;
    if (p.private_lhs) {
        size_t n = lhs_packed_bytes(main, rows, K);
        if (p.kernels.fallback) n = std::max(n, lhs_packed_bytes(*p.kernels.fallback, rows, K));
        p.mm.lhs_per_thread = align64(n);
        at += static_cast<size_t>(nth) * p.mm.lhs_per_thread;
    } else {
        at += align64(lhs_packed_bytes(main, rows, K));
        p.mm.lhs_fallback = at;
        if (p.separate_lhs) at += align64(lhs_packed_bytes(*p.kernels.fallback, rows, K));
    }
    p.work = at + 64;
}

void run_mul_mat(Tensor& dst, const NodePlan& p, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1], B2 = x.ne[2], B3 = x.ne[3];
    const int64_t r2 = B2 / w.ne[2], r3 = B3 / w.ne[3];
    const Kernel& main = *p.kernels.main;
    const bool fallback = p.kernels.fallback && ctx.ith >= p.kernels.main_threads;
    const Kernel& mine = fallback ? *p.kernels.fallback : main;
    auto* base = static_cast<uint8_t*>(work);

    // Phase 1 (unless decode): run-time packing of src0 and the shared LHS, as one chunk loop.
    const int64_t rhs_items = p.runtime ? runtime_items(w) : 0;
    const int64_t rows = lhs_rows(dst), rows_per = row_chunk(rows, ctx.nth);
    const int64_t lhs_items = p.private_lhs ? 0 : (rows + rows_per - 1) / rows_per;
    if (rhs_items + lhs_items > 0) {
        ctx.for_chunks(rhs_items + lhs_items, 1, [&](int64_t item, int64_t) {
            if (item < rhs_items) {
                runtime_pack(w, base, base + p.mm.rows + static_cast<size_t>(ctx.ith) * runtime_rows_bytes(dst), item);
                return;
            }
            const int64_t begin = (item - rhs_items) * rows_per, end = std::min(rows, begin + rows_per);
            pack_rows(main, x, begin, end, base + p.mm.lhs);
            if (p.separate_lhs) pack_rows(*p.kernels.fallback, x, begin, end, base + p.mm.lhs_fallback);
        });
        ctx.barrier();
    }
    const uint8_t* slot = p.runtime ? base : fallback ? p.slot_fallback : p.slot_main;
    uint8_t* own = p.private_lhs ? base + p.mm.lhs + static_cast<size_t>(ctx.ith) * p.mm.lhs_per_thread : nullptr;
    bool own_packed = false;
    const uint8_t* lhs = own ? own : base + (fallback && p.separate_lhs ? p.mm.lhs_fallback : p.mm.lhs);

    // Phase 2: column chunks of every batch.
    const size_t lrow = lhs_row_bytes(mine, K);
    const size_t matrix_bytes = p.rows ? 0 : packed_bytes(*mine.format, N, K);
    const int64_t cols = p.cols;
    const int64_t chunks = (N + cols - 1) / cols;
    ctx.for_chunks(chunks * B2 * B3, 1, [&](int64_t item, int64_t) {
        if (own && !own_packed) {  // a few rows: this thread packs them for itself
            pack_rows(mine, x, 0, rows, own);
            own_packed = true;
        }
        const int64_t c = item % chunks, i2 = item / chunks % B2, i3 = item / (chunks * B2);
        const int64_t n0 = c * cols;
        GemmArgs a;
        a.lhs = lhs + static_cast<size_t>(M * (i2 + B2 * i3)) * lrow;
        a.lhs_stride = lrow;
        if (p.rows) {  // the weight's own rows: the only difference from a packed weight
            a.rhs = static_cast<const uint8_t*>(w.data) + (i2 / r2) * w.nb[2] + (i3 / r3) * w.nb[3] + n0 * w.nb[1];
            a.rhs_stride = w.nb[1];
        } else {
            const int64_t mat = (i2 / r2) + (i3 / r3) * w.ne[2];
            a.rhs = slot + static_cast<size_t>(mat) * matrix_bytes + group_offset(*mine.format, n0, K);
        }
        a.dst = reinterpret_cast<float*>(static_cast<uint8_t*>(dst.data) + i2 * dst.nb[2] + i3 * dst.nb[3]) + n0;
        a.dst_stride = dst.nb[1];
        a.m = M;
        a.n = std::min(cols, N - n0);
        a.k = K;
        (M == 1 ? mine.gemv : mine.gemm)(a);
    });
}

/// MUL_MAT_ID work layout (64-byte aligned parts): packed x rows (U * T), then per expert the start
/// of its routed (slot, token) pairs (E + 1 values), the pairs, the routed rows' packed LHS gathered
/// per expert, and their F32 outputs (pairs x N).
void plan_mul_mat_id(const Tensor& dst, NodePlan& p) {
    const Tensor& x = *dst.src[1];
    const Tensor& ids = *dst.src[2];
    const Kernel& k = *p.kernels.main;
    const int64_t K = x.ne[0], N = dst.src[0]->ne[1], E = dst.src[0]->ne[2];
    const int64_t n_pairs = ids.ne[0] * ids.ne[1];
    p.id.xq = 0;
    p.id.starts = p.id.xq + align64(lhs_packed_bytes(k, x.ne[1] * x.ne[2], K));
    p.id.pairs = p.id.starts + align64(sizeof(int64_t) * static_cast<size_t>(E + 1));
    p.id.gathered = p.id.pairs + align64(2 * sizeof(int32_t) * static_cast<size_t>(n_pairs));
    p.id.out = p.id.gathered + align64(lhs_packed_bytes(k, n_pairs, K));
    p.work = p.id.out + align64(sizeof(float) * static_cast<size_t>(n_pairs * N)) + 64;
}

void run_mul_mat_id(Tensor& dst, const NodePlan& p, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2], U = x.ne[1];
    const int64_t n_pairs = dst.src[2]->ne[0] * dst.src[2]->ne[1];
    const Kernel& k = *p.kernels.main;  // one kernel for all threads (no hybrid split here)
    auto* base = static_cast<uint8_t*>(work);
    uint8_t* xq = base + p.id.xq;
    auto* starts = reinterpret_cast<int64_t*>(base + p.id.starts);
    auto* pairs = reinterpret_cast<int32_t*>(base + p.id.pairs);
    uint8_t* gathered = base + p.id.gathered;
    auto* out = reinterpret_cast<float*>(base + p.id.out);
    const size_t lrow = lhs_row_bytes(k, K);
    auto dst_row = [&](int64_t e, int64_t t) { return reinterpret_cast<float*>(static_cast<uint8_t*>(dst.data) + e * dst.nb[1] + t * dst.nb[2]); };

    // Phase 1: pack x (row u + U * t) in row chunks; the last item routes the pairs by expert.
    const int64_t x_rows = U * x.ne[2], rows_per = row_chunk(x_rows, ctx.nth);
    const int64_t pack_items = (x_rows + rows_per - 1) / rows_per;
    ctx.for_chunks(pack_items + 1, 1, [&](int64_t item, int64_t) {
        if (item == pack_items) return route_experts(dst, starts, pairs);
        pack_rows(k, x, item * rows_per, std::min(x_rows, (item + 1) * rows_per), xq);
    });
    ctx.barrier();
    // Phase 2: gather each routed pair's activation row (starts[E] pairs are routed).
    const int64_t pairs_per = row_chunk(n_pairs, ctx.nth);
    ctx.for_chunks(n_pairs, pairs_per, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < std::min(end, starts[E]); ++i)
            std::memcpy(gathered + static_cast<size_t>(i) * lrow, xq + static_cast<size_t>(pairs[2 * i] % U + U * pairs[2 * i + 1]) * lrow, lrow);
    });
    ctx.barrier();
    // Phase 3: chunks of (expert, columns) into the scratch output.
    const uint8_t* slot = p.slot_main;
    const size_t matrix_bytes = p.rows ? 0 : packed_bytes(*k.format, N, K);
    const int64_t cols = p.cols;
    const int64_t chunks = (N + cols - 1) / cols;
    ctx.for_chunks(chunks * E, 1, [&](int64_t item, int64_t) {
        const int64_t ex = item / chunks, n0 = item % chunks * cols;
        const int64_t count = starts[ex + 1] - starts[ex];
        if (count == 0) return;
        GemmArgs a;
        a.lhs = gathered + static_cast<size_t>(starts[ex]) * lrow;
        a.lhs_stride = lrow;
        if (p.rows) {
            a.rhs = static_cast<const uint8_t*>(w.data) + ex * w.nb[2] + n0 * w.nb[1];
            a.rhs_stride = w.nb[1];
        } else {
            a.rhs = slot + static_cast<size_t>(ex) * matrix_bytes + group_offset(*k.format, n0, K);
        }
        a.dst = out + starts[ex] * N + n0;
        a.dst_stride = sizeof(float) * static_cast<size_t>(N);
        a.m = count;
        a.n = std::min(cols, N - n0);
        a.k = K;
        (count == 1 ? k.gemv : k.gemm)(a);
    });
    ctx.barrier();
    // Phase 4: scatter the outputs to their (slot, token) rows.
    ctx.for_chunks(n_pairs, pairs_per, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < std::min(end, starts[E]); ++i)
            std::memcpy(dst_row(pairs[2 * i], pairs[2 * i + 1]), out + i * N, sizeof(float) * static_cast<size_t>(N));
    });
}

/// GET_ROWS work: per thread the plain GGUF rows of one group (Format::unpack writes rows 0..j to
/// reach row j), which the row is then dequantized from.
size_t get_rows_scratch(const Tensor& w) { return align64(static_cast<size_t>(kGroupRows * dtype_row_bytes(w.type, w.ne[0]))); }

void run_get_rows(Tensor& dst, const NodePlan& p, ThreadContext& ctx, void* work) {
    const Tensor& w = *dst.src[0];
    const Tensor& ids = *dst.src[1];
    const Format& f = *p.rows_format;
    const uint8_t* slot = p.slot_main;
    const int64_t K = w.ne[0], N = w.ne[1];
    const size_t matrix_bytes = packed_bytes(f, N, K), row_bytes = static_cast<size_t>(dtype_row_bytes(w.type, K));
    uint8_t* plain = static_cast<uint8_t*>(work) + static_cast<size_t>(ctx.ith) * get_rows_scratch(w);
    const int64_t R = dst.ne[1], B2 = dst.ne[2], n = R * B2 * dst.ne[3];
    ctx.for_chunks(n, row_chunk(n, ctx.nth), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const int64_t i = r % R, b2 = r / R % B2, b3 = r / (R * B2);
            const int32_t id = *reinterpret_cast<const int32_t*>(static_cast<const uint8_t*>(ids.data) + i * ids.nb[0] + b2 * ids.nb[1] + b3 * ids.nb[2]);
            if (id < 0 || id >= N)
                throw Error(ErrorCode::InvalidArgument, "GET_ROWS: row id " + std::to_string(id) + " in " + describe(ids) +
                                                            " is outside [0, " + std::to_string(N) + ")");
            float* out = reinterpret_cast<float*>(static_cast<uint8_t*>(dst.data) + i * dst.nb[1] + b2 * dst.nb[2] + b3 * dst.nb[3]);
            const int64_t j = id % kGroupRows;
            f.unpack(slot + static_cast<size_t>(b2 + b3 * w.ne[2]) * matrix_bytes + group_offset(f, id - j, K), plain, j + 1, K);
            quant::dequantize_row(w.type, plain + static_cast<size_t>(j) * row_bytes, out, K);
        }
    });
}

}  // namespace

bool reads_packed(const Tensor& node) { return node.src[0] && packed_of(*node.src[0]) != nullptr; }

bool packs_at_run_time(const Tensor& node) { return runtime_ok(node); }

bool supports_node(const Tensor& node) {
    if (node.op == Op::MUL_MAT) return mul_mat_ok(node);
    if (node.op == Op::MUL_MAT_ID) return mul_mat_id_ok(node);
    if (node.op == Op::GET_ROWS) return get_rows_ok(node);
    return false;
}

bool serves(const Tensor& node) {
    if (reads_packed(node) || packs_at_run_time(node)) return true;
    return (node.op == Op::MUL_MAT || node.op == Op::MUL_MAT_ID) && supports_node(node);
}

namespace {
/// The kernels a matrix product (serves()) plans from: the Packed part of the weight type's chain
/// for a stored-packed or run-time packed weight, else the Rows kernels that serve its K.
std::vector<const Kernel*> candidates(const Tensor& node) {
    const Tensor& w = *node.src[0];
    if (reads_packed(node) || packs_at_run_time(node)) return chain(w.type, usable_cpu_features(), RhsLayout::Packed);
    return rows_chain(w);
}
}  // namespace

const Kernel& main_kernel(const Tensor& node) {
    return *plan(candidates(node), rows_per_matrix(node), 1, 0).main;
}

Tuning tuning_from_env() {
    Tuning t;
    t.matrix_cap = matrix_thread_cap();
    t.chunk_mult = static_cast<int64_t>(env::whole_number("TESSEL_CPU_CHUNK_MULT", 1, 65536, 0));
    return t;
}

NodePlan plan_node(const Tensor& node, int nth, const Tuning& tuning) {
    const bool stored = reads_packed(node), runtime = !stored && packs_at_run_time(node);
    if (stored && !supports_node(node))
        throw Error(ErrorCode::Unsupported, std::string(op_name(node.op)) + " " + describe(node) +
                                                " reads a CPU_PACKED weight in a form the packed path does not serve");
    if (!stored && !runtime && !serves(node))
        throw Error(ErrorCode::Unsupported, std::string(op_name(node.op)) + " " + describe(node) +
                                                " is not a matrix product the CPU kernel table serves");
    const Tensor& w = *node.src[0];
    NodePlan p;
    if (node.op == Op::GET_ROWS) {
        p.rows_format = packed_of(w)->formats[0];
        p.slot_main = slot_data(w, *p.rows_format);
        p.work = static_cast<size_t>(nth) * get_rows_scratch(w);
        return p;
    }
    const int plan_threads = node.op == Op::MUL_MAT_ID ? 1 : nth;  // MUL_MAT_ID: no hybrid split
    p.runtime = runtime;
    p.rows = !stored && !runtime;
    p.kernels = plan(candidates(node), rows_per_matrix(node), plan_threads, tuning.matrix_cap);
    p.separate_lhs = p.kernels.fallback && p.kernels.fallback->pack_lhs != p.kernels.main->pack_lhs;
    p.cols = chunk_columns(w.ne[1], nth, tuning.chunk_mult, plan_step(p.kernels));
    if (stored) {
        p.slot_main = slot_data(w, *p.kernels.main->format);
        if (p.kernels.fallback) p.slot_fallback = slot_data(w, *p.kernels.fallback->format);
    }
    if (node.op == Op::MUL_MAT_ID) {
        plan_mul_mat_id(node, p);
    } else {
        p.private_lhs = lhs_rows(node) <= kPrivateRows;
        plan_mul_mat(node, nth, p);
    }
    return p;
}

void run(Tensor& node, const NodePlan& plan, ThreadContext& ctx, void* work) {
    if (node.op == Op::MUL_MAT) run_mul_mat(node, plan, ctx, work);
    else if (node.op == Op::MUL_MAT_ID) run_mul_mat_id(node, plan, ctx, work);
    else run_get_rows(node, plan, ctx, work);
}

std::string kernel_name(const Tensor& node, const NodePlan& plan) {
    if (node.op == Op::GET_ROWS) return std::string(plan.rows_format->name) + "_get_rows";
    const bool gemv = rows_per_matrix(node) == 1;
    auto name = [&](const Kernel* k) { return std::string(gemv ? k->gemv_name : k->name); };
    return plan.kernels.fallback ? name(plan.kernels.main) + "+" + name(plan.kernels.fallback) : name(plan.kernels.main);
}

}  // namespace tessel::cpu::packed
