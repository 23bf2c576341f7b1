// Op builders for element-wise ops, reductions, normalisation and the matrix product
// (data movement and views are in builder_data.cpp).
#include "graph/builder.hpp"

#include <cmath>

#include "tessel/errors.hpp"

namespace tessel::build {
namespace {

[[noreturn]] void fail(Op op, const std::string& what) {
    throw Error(ErrorCode::InvalidArgument, std::string(op_name(op)) + ": " + what);
}

bool can_broadcast(const Tensor& a, const Tensor& b) {
    for (int d = 0; d < kMaxDims; ++d)
        if (a.ne[d] % b.ne[d] != 0) return false;
    return true;
}

void require_float(Op op, const Tensor* t) {
    if (!t) fail(op, "missing source");
    if (t->type != DType::F32 && t->type != DType::F16) fail(op, describe(*t) + ": F32 or F16 expected");
}

Tensor* binary(Graph& g, Op op, Tensor* a, Tensor* b) {
    if (!can_broadcast(*a, *b)) fail(op, describe(*b) + " does not broadcast to " + describe(*a));
    require_float(op, a);
    require_float(op, b);
    return g.new_node(op, DType::F32, a->ne, {a, b});
}

// One-source element-wise or row op with an F32 result of a's shape.
Tensor* map(Graph& g, Op op, Tensor* a) {
    require_float(op, a);
    return g.new_node(op, DType::F32, a->ne, {a});
}

Tensor* norm_like(Graph& g, Op op, Tensor* x, float eps) {
    if (!(eps >= 0.0f)) fail(op, "eps must be >= 0");
    Tensor* t = map(g, op, x);
    t->set_op_param_f32(0, eps);
    return t;
}

Tensor* glu_impl(Graph& g, Tensor* a, Tensor* b, GluOp op, bool swapped) {
    if (static_cast<int32_t>(op) < 0 || op >= GluOp::COUNT_) fail(Op::GLU, "unknown GLU op");
    require_float(Op::GLU, a);
    std::array<int64_t, kMaxDims> ne = a->ne;
    if (b) {
        require_float(Op::GLU, b);
        if (a->ne != b->ne) fail(Op::GLU, describe(*a) + " and " + describe(*b) + " differ in shape");
    } else {
        if (a->ne[0] % 2 != 0) fail(Op::GLU, describe(*a) + ": ne[0] must be even to split in halves");
        ne[0] /= 2;
    }
    Tensor* t = b ? g.new_node(Op::GLU, DType::F32, ne, {a, b}) : g.new_node(Op::GLU, DType::F32, ne, {a});
    t->op_params[0] = static_cast<int32_t>(op);
    t->op_params[1] = swapped ? 1 : 0;
    if (op == GluOp::SWIGLU_OAI) {
        t->set_op_param_f32(2, 1.702f);
        t->set_op_param_f32(3, 7.0f);
    }
    return t;
}

}  // namespace

// ---- element-wise ---------------------------------------------------------------------------

Tensor* add(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::ADD, a, b); }
Tensor* sub(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::SUB, a, b); }
Tensor* mul(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::MUL, a, b); }
Tensor* div(Graph& g, Tensor* a, Tensor* b) { return binary(g, Op::DIV, a, b); }

Tensor* add_id(Graph& g, Tensor* a, Tensor* bias, Tensor* ids) {
    require_float(Op::ADD_ID, a);
    require_float(Op::ADD_ID, bias);
    if (ids->type != DType::I32) fail(Op::ADD_ID, describe(*ids) + ": I32 ids expected");
    if (bias->ne[0] != a->ne[0] || bias->ne[2] != 1 || bias->ne[3] != 1)
        fail(Op::ADD_ID, describe(*bias) + " is not a [" + std::to_string(a->ne[0]) + ", E] bias table for " +
                             describe(*a));
    if (ids->ne[0] != a->ne[1] || ids->ne[1] != a->ne[2] || ids->ne[2] != a->ne[3] || ids->ne[3] != 1)
        fail(Op::ADD_ID, describe(*ids) + " does not match the rows of " + describe(*a));
    return g.new_node(Op::ADD_ID, DType::F32, a->ne, {a, bias, ids});
}

Tensor* scale(Graph& g, Tensor* a, float s, float b) {
    Tensor* t = map(g, Op::SCALE, a);
    t->set_op_param_f32(0, s);
    t->set_op_param_f32(1, b);
    return t;
}

Tensor* clamp(Graph& g, Tensor* a, float lo, float hi) {
    if (!(lo <= hi)) fail(Op::CLAMP, "lo must be <= hi");
    Tensor* t = map(g, Op::CLAMP, a);
    t->set_op_param_f32(0, lo);
    t->set_op_param_f32(1, hi);
    return t;
}

Tensor* sqr(Graph& g, Tensor* a) { return map(g, Op::SQR, a); }
Tensor* sqrt(Graph& g, Tensor* a) { return map(g, Op::SQRT, a); }
Tensor* log(Graph& g, Tensor* a) { return map(g, Op::LOG, a); }

Tensor* unary(Graph& g, Tensor* a, UnaryOp op) {
    if (static_cast<int32_t>(op) < 0 || op >= UnaryOp::COUNT_) fail(Op::UNARY, "unknown unary op");
    Tensor* t = map(g, Op::UNARY, a);
    t->op_params[0] = static_cast<int32_t>(op);
    return t;
}

Tensor* glu(Graph& g, Tensor* a, GluOp op, bool swapped) { return glu_impl(g, a, nullptr, op, swapped); }
Tensor* glu_split(Graph& g, Tensor* a, Tensor* b, GluOp op) {
    if (!b) fail(Op::GLU, "glu_split needs a second source");
    return glu_impl(g, a, b, op, false);
}
Tensor* swiglu(Graph& g, Tensor* a) { return glu(g, a, GluOp::SWIGLU); }
Tensor* swiglu_split(Graph& g, Tensor* a, Tensor* b) { return glu_split(g, a, b, GluOp::SWIGLU); }
Tensor* geglu(Graph& g, Tensor* a) { return glu(g, a, GluOp::GEGLU); }
Tensor* geglu_split(Graph& g, Tensor* a, Tensor* b) { return glu_split(g, a, b, GluOp::GEGLU); }

Tensor* swiglu_oai(Graph& g, Tensor* a, Tensor* b, float alpha, float limit) {
    if (!std::isfinite(alpha) || !(limit >= 0.0f)) fail(Op::GLU, "SWIGLU_OAI needs a finite alpha and limit >= 0");
    Tensor* t = glu_impl(g, a, b, GluOp::SWIGLU_OAI, false);
    t->set_op_param_f32(2, alpha);
    t->set_op_param_f32(3, limit);
    return t;
}

// ---- reductions and normalisation -------------------------------------------------------------

Tensor* sum_rows(Graph& g, Tensor* a) {
    require_float(Op::SUM_ROWS, a);
    return g.new_node(Op::SUM_ROWS, DType::F32, {1, a->ne[1], a->ne[2], a->ne[3]}, {a});
}

Tensor* mean(Graph& g, Tensor* a) {
    require_float(Op::MEAN, a);
    return g.new_node(Op::MEAN, DType::F32, {1, a->ne[1], a->ne[2], a->ne[3]}, {a});
}

Tensor* argmax(Graph& g, Tensor* a) {
    require_float(Op::ARGMAX, a);
    if (a->ne[0] > INT32_MAX) fail(Op::ARGMAX, describe(*a) + ": rows longer than INT32_MAX");
    return g.new_node(Op::ARGMAX, DType::I32, {a->ne[1], a->ne[2], a->ne[3], 1}, {a});
}

Tensor* argsort(Graph& g, Tensor* a, SortOrder order) {
    require_float(Op::ARGSORT, a);
    if (order != SortOrder::Ascending && order != SortOrder::Descending) fail(Op::ARGSORT, "unknown sort order");
    if (a->ne[0] > INT32_MAX) fail(Op::ARGSORT, describe(*a) + ": rows longer than INT32_MAX");
    Tensor* t = g.new_node(Op::ARGSORT, DType::I32, a->ne, {a});
    t->op_params[0] = static_cast<int32_t>(order);
    return t;
}

Tensor* cumsum(Graph& g, Tensor* a) { return map(g, Op::CUMSUM, a); }

Tensor* norm(Graph& g, Tensor* x, float eps) { return norm_like(g, Op::NORM, x, eps); }
Tensor* rms_norm(Graph& g, Tensor* x, float eps) { return norm_like(g, Op::RMS_NORM, x, eps); }
Tensor* l2_norm(Graph& g, Tensor* x, float eps) { return norm_like(g, Op::L2_NORM, x, eps); }

// ---- matrix products --------------------------------------------------------------------------

Tensor* mul_mat(Graph& g, Tensor* w, Tensor* x) {
    if (w->ne[0] != x->ne[0])
        fail(Op::MUL_MAT, "inner dimensions differ: " + describe(*w) + " vs " + describe(*x));
    if (x->ne[2] % w->ne[2] != 0 || x->ne[3] % w->ne[3] != 0)
        fail(Op::MUL_MAT, describe(*w) + " batch dims do not broadcast over " + describe(*x));
    if (x->type != DType::F32 && x->type != DType::F16 && x->type != DType::BF16)
        fail(Op::MUL_MAT, describe(*x) + ": F32, F16 or BF16 activations expected");
    require_supported(w->type, w->name);
    return g.new_node(Op::MUL_MAT, DType::F32, {w->ne[1], x->ne[1], x->ne[2], x->ne[3]}, {w, x});
}

}  // namespace tessel::build
