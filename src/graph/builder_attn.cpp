#include "graph/builder_attn.hpp"

#include <cmath>
#include <string>

#include "tessel/errors.hpp"

namespace tessel::build {
namespace {

[[noreturn]] void fail(Op op, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, std::string(op_name(op)) + ": " + what);
}

void require_input(Op op, const Tensor* t, const char* role) {
    if (!t) fail(op, std::string(role) + " is missing");
}

void require_type(Op op, const Tensor& t, std::initializer_list<DType> allowed, const char* expected) {
    for (DType d : allowed)
        if (t.type == d) return;
    fail(op, describe(t) + ": " + expected + " expected");
}

bool is_vector(const Tensor& t) { return t.ne[1] == 1 && t.ne[2] == 1 && t.ne[3] == 1; }

void require_finite(Op op, float v, const char* name) {
    if (!std::isfinite(v)) fail(op, std::string(name) + " must be finite");
}

// Weights read by rows: a supported type whose blocks are packed along ne[0].
void require_weight(Op op, const Tensor& w) {
    require_supported(w.type, w.name);
    if (dtype_info(w.type).quantized && w.nb[0] != dtype_info(w.type).block_bytes)
        fail(op, describe(w) + ": quantized rows must be contiguous");
}

}  // namespace

Tensor* mul_mat_id(Graph& g, Tensor* experts, Tensor* x, Tensor* ids) {
    constexpr Op op = Op::MUL_MAT_ID;
    require_input(op, experts, "experts");
    require_input(op, x, "x");
    require_input(op, ids, "ids");
    require_type(op, *ids, {DType::I32}, "I32 expert ids");
    require_type(op, *x, {DType::F32, DType::F16}, "F32 or F16 activations");
    require_weight(op, *experts);
    if (experts->ne[3] != 1 || x->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1)
        fail(op, "experts and x must be 3-D and ids 2-D: " + describe(*experts) + ", " + describe(*x) + ", " +
                     describe(*ids));
    if (experts->ne[0] != x->ne[0])
        fail(op, "inner dimensions differ: " + describe(*experts) + " vs " + describe(*x));
    if (ids->ne[1] != x->ne[2])
        fail(op, "token counts differ: " + describe(*ids) + " vs " + describe(*x));
    if (ids->ne[0] % x->ne[1] != 0)
        fail(op, describe(*x) + " rows per token must divide the used experts of " + describe(*ids));
    return g.new_node(op, DType::F32, {experts->ne[1], ids->ne[0], ids->ne[1], 1}, {experts, x, ids});
}

Tensor* rope(Graph& g, Tensor* x, Tensor* pos, const RopeParams& p, Tensor* freq_factors) {
    constexpr Op op = Op::ROPE;
    require_input(op, x, "x");
    require_input(op, pos, "positions");
    require_type(op, *x, {DType::F32, DType::F16}, "F32 or F16");
    require_type(op, *pos, {DType::I32}, "I32 positions");
    if (!is_vector(*pos) || pos->ne[0] != x->ne[2])
        fail(op, describe(*pos) + " must hold one position per token of " + describe(*x));
    if (p.mode != kRopeModeNorm && p.mode != kRopeModeNeox)
        fail(op, "mode " + std::to_string(p.mode) + " is not NORM (0) or NEOX (2)");
    if (p.n_dims <= 0 || p.n_dims % 2 != 0 || p.n_dims > x->ne[0])
        fail(op, "n_dims " + std::to_string(p.n_dims) + " must be even and in 1.." + std::to_string(x->ne[0]) +
                     " for " + describe(*x));
    for (float f : {p.freq_base, p.freq_scale, p.ext_factor, p.attn_factor, p.beta_fast, p.beta_slow})
        require_finite(op, f, "every float parameter");
    if (!(p.freq_base > 0.0f) || !(p.freq_scale > 0.0f)) fail(op, "freq_base and freq_scale must be > 0");
    if (p.n_ctx_orig < 0 || (p.ext_factor != 0.0f && p.n_ctx_orig == 0))
        fail(op, "n_ctx_orig must be >= 0, and > 0 when ext_factor (YaRN) is set");
    if (freq_factors) {
        require_type(op, *freq_factors, {DType::F32}, "F32 freq factors");
        if (!is_vector(*freq_factors) || freq_factors->ne[0] < p.n_dims / 2)
            fail(op, describe(*freq_factors) + " must hold n_dims/2 = " + std::to_string(p.n_dims / 2) + " factors");
    }
    Tensor* t = g.new_node(op, x->type, x->ne, {x, pos, freq_factors});
    t->op_params[1] = p.n_dims;
    t->op_params[2] = p.mode;
    t->op_params[4] = p.n_ctx_orig;
    t->set_op_param_f32(5, p.freq_base);
    t->set_op_param_f32(6, p.freq_scale);
    t->set_op_param_f32(7, p.ext_factor);
    t->set_op_param_f32(8, p.attn_factor);
    t->set_op_param_f32(9, p.beta_fast);
    t->set_op_param_f32(10, p.beta_slow);
    return t;
}

namespace {

// Mask [K, M', H', B'] for scores [K, M, H, B]: same K, M' >= M, H' | H, B' | B.
void check_mask(Op op, const Tensor& mask, int64_t K, int64_t M, int64_t H, int64_t B, const Tensor& of) {
    require_type(op, mask, {DType::F32, DType::F16}, "F32 or F16 mask");
    if (mask.ne[0] != K || mask.ne[1] < M || H % mask.ne[2] != 0 || B % mask.ne[3] != 0)
        fail(op, describe(mask) + " does not fit " + describe(of) + " (needs [" + std::to_string(K) + ", >= " +
                     std::to_string(M) + ", divisor of " + std::to_string(H) + ", divisor of " + std::to_string(B) + "])");
}

void check_sinks(Op op, const Tensor& sinks, int64_t H) {
    require_type(op, sinks, {DType::F32}, "F32 sinks");
    if (!is_vector(sinks) || sinks.ne[0] != H)
        fail(op, describe(sinks) + " must hold one sink per head (" + std::to_string(H) + ")");
}

}  // namespace

Tensor* soft_max(Graph& g, Tensor* x, float scale, Tensor* mask, float max_bias, Tensor* sinks) {
    constexpr Op op = Op::SOFT_MAX;
    require_input(op, x, "x");
    require_type(op, *x, {DType::F32}, "F32");
    require_finite(op, scale, "scale");
    require_finite(op, max_bias, "max_bias");
    if (max_bias < 0.0f) fail(op, "max_bias must be >= 0");
    if (mask) check_mask(op, *mask, x->ne[0], x->ne[1], x->ne[2], x->ne[3], *x);
    if (sinks) check_sinks(op, *sinks, x->ne[2]);
    Tensor* t = g.new_node(op, DType::F32, x->ne, {x, mask, sinks});
    t->set_op_param_f32(0, scale);
    t->set_op_param_f32(1, max_bias);
    return t;
}

Tensor* flash_attn_ext(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale, float max_bias,
                       float softcap, Tensor* sinks) {
    constexpr Op op = Op::FLASH_ATTN_EXT;
    require_input(op, q, "q");
    require_input(op, k, "k");
    require_input(op, v, "v");
    require_type(op, *q, {DType::F32}, "F32 queries");
    require_weight(op, *k);
    require_weight(op, *v);
    const int64_t T = q->ne[1], H = q->ne[2], B = q->ne[3], KV = k->ne[1];
    if (k->ne[0] != q->ne[0]) fail(op, "head dims differ: " + describe(*q) + " vs " + describe(*k));
    if (v->ne[1] != KV) fail(op, "K and V lengths differ: " + describe(*k) + " vs " + describe(*v));
    if (H % k->ne[2] != 0 || B % k->ne[3] != 0 || H % v->ne[2] != 0 || B % v->ne[3] != 0)
        fail(op, "K/V heads and batches must divide those of " + describe(*q) + ": " + describe(*k) + ", " +
                     describe(*v));
    for (float f : {scale, max_bias, softcap}) require_finite(op, f, "scale, max_bias and softcap");
    if (max_bias < 0.0f || softcap < 0.0f) fail(op, "max_bias and softcap must be >= 0");
    if (mask) check_mask(op, *mask, KV, T, H, B, *k);
    if (sinks) check_sinks(op, *sinks, H);
    Tensor* t = g.new_node(op, DType::F32, {v->ne[0], H, T, B}, {q, k, v, mask, sinks});
    t->set_op_param_f32(0, scale);
    t->set_op_param_f32(1, max_bias);
    t->set_op_param_f32(2, softcap);
    return t;
}

}  // namespace tessel::build
