// Op builders: create graph nodes with the field's semantics (see op.hpp for each op's shapes).
// Each builder checks its inputs and throws tessel::Error(InvalidArgument) naming the op and the
// tensors (describe()) when shapes or types do not fit.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "graph/graph.hpp"

namespace tessel::build {

// ---- element-wise (builder.cpp) ------------------------------------------------------------
// Sources may be F32 or F16 (and strided); results are F32 of the first source's shape.

/// a + broadcast(b) (likewise sub, mul, div): F32 result of a's shape; b's dims must divide a's.
Tensor* add(Graph& g, Tensor* a, Tensor* b);
Tensor* sub(Graph& g, Tensor* a, Tensor* b);
Tensor* mul(Graph& g, Tensor* a, Tensor* b);
Tensor* div(Graph& g, Tensor* a, Tensor* b);

/// MoE bias: a [K, E_used, T] + bias [K, E] row ids[e, t] (ids I32 [E_used, T]) -> F32 of a's shape.
Tensor* add_id(Graph& g, Tensor* a, Tensor* bias, Tensor* ids);

/// a * s + b element-wise.
Tensor* scale(Graph& g, Tensor* a, float s, float b = 0.0f);

/// min(max(a, lo), hi) element-wise; requires lo <= hi.
Tensor* clamp(Graph& g, Tensor* a, float lo, float hi);

/// a², √a, ln a element-wise.
Tensor* sqr(Graph& g, Tensor* a);
Tensor* sqrt(Graph& g, Tensor* a);
Tensor* log(Graph& g, Tensor* a);

/// Element-wise unary function.
Tensor* unary(Graph& g, Tensor* a, UnaryOp op);

/// Gated linear unit of one source a [2K, ...] -> F32 [K, ...]: f(first half) * second half, or
/// f(second half) * first half when swapped. SWIGLU_OAI uses alpha 1.702 and limit 7 here; see
/// swiglu_oai() to choose them.
Tensor* glu(Graph& g, Tensor* a, GluOp op, bool swapped = false);
/// Gated linear unit of two sources of one shape: f(a) * b -> F32 of a's shape.
Tensor* glu_split(Graph& g, Tensor* a, Tensor* b, GluOp op);
Tensor* swiglu(Graph& g, Tensor* a);
Tensor* swiglu_split(Graph& g, Tensor* a, Tensor* b);
Tensor* geglu(Graph& g, Tensor* a);
Tensor* geglu_split(Graph& g, Tensor* a, Tensor* b);
/// SWIGLU_OAI: x = min(x, limit), g = clamp(g, -limit, limit), x * sigmoid(alpha * x) * (g + 1);
/// two-source form when b is given, else the halves of a.
Tensor* swiglu_oai(Graph& g, Tensor* a, Tensor* b, float alpha, float limit);

// ---- reductions and normalisation (builder.cpp) ---------------------------------------------
// Sources F32 or F16 (strided allowed); results F32 unless stated.

/// [K, ...] -> [1, ...]: sum (mean) of each row.
Tensor* sum_rows(Graph& g, Tensor* a);
Tensor* mean(Graph& g, Tensor* a);

/// [K, R, B2, B3] -> I32 [R, B2, B3]: index of each row's first largest value.
Tensor* argmax(Graph& g, Tensor* a);

/// Order of ARGSORT (op_params[0]).
enum class SortOrder : int32_t { Ascending = 0, Descending = 1 };
/// [K, ...] -> I32 [K, ...]: per-row indices that sort the row (stable).
Tensor* argsort(Graph& g, Tensor* a, SortOrder order = SortOrder::Ascending);

/// Inclusive prefix sum along ne[0].
Tensor* cumsum(Graph& g, Tensor* a);

/// (x - mean) / sqrt(var + eps) over each row of x (ne[0]).
Tensor* norm(Graph& g, Tensor* x, float eps);
/// x / sqrt(mean(x²) + eps) over each row of x (ne[0]).
Tensor* rms_norm(Graph& g, Tensor* x, float eps);
/// x / max(‖x‖₂, eps) over each row of x (ne[0]).
Tensor* l2_norm(Graph& g, Tensor* x, float eps);

// ---- matrix products (builder.cpp) ----------------------------------------------------------

/// y = x · wᵀ: w [K, N, B2, B3] (any supported type), x F32/F16/BF16 [K, M, B2', B3'] -> F32 [N, M, B2', B3'].
/// Requires equal K and B2' % B2 == 0, B3' % B3 == 0.
Tensor* mul_mat(Graph& g, Tensor* w, Tensor* x);

// ---- data movement (builder_data.cpp) -------------------------------------------------------

/// Rows of table [K, R, B2, B3] (any type with a reference dequantizer) chosen by ids
/// I32 [n, B2, B3] -> F32 [K, n, B2, B3] (an I32 table gives I32, copied exactly).
Tensor* get_rows(Graph& g, Tensor* table, Tensor* ids);

/// Writes rows (F32/F16 [K, n, B2, B3]) into rows ids (I64/I32 [n, C2, C3], B2 % C2 == 0,
/// B3 % C3 == 0) of dst [K, R, B2, B3] (any type with a reference quantizer), converting to dst's
/// type. Returns a view of dst that computes the write; dst keeps its other rows.
Tensor* set_rows(Graph& g, Tensor* dst, Tensor* rows, Tensor* ids);

/// Copies src into dst's storage converted to dst's type (same element count, matched in ne
/// order; when either type is block-quantized, same ne[0] and rows are matched). Returns a view
/// of dst that computes the copy.
Tensor* cpy(Graph& g, Tensor* src, Tensor* dst);

/// New contiguous tensor of a's shape converted to `type` (a CPY node).
Tensor* cast(Graph& g, Tensor* a, DType type);

/// Contiguous copy of a (possibly non-contiguous) tensor.
Tensor* cont(Graph& g, Tensor* a);
/// Contiguous copy of a with a new shape of the same element count (elements in ne order).
Tensor* cont(Graph& g, Tensor* a, std::initializer_list<int64_t> ne);

/// Copy of a with the same shape and type.
Tensor* dup(Graph& g, Tensor* a);

/// a and b (same plain type, equal dims except `dim`) joined along dim 0..3.
Tensor* concat(Graph& g, Tensor* a, Tensor* b, int dim);

/// a (plain type) tiled to shape ne; each dim of ne must be a multiple of a's.
Tensor* repeat(Graph& g, Tensor* a, std::initializer_list<int64_t> ne);
/// a tiled to the shape of `like`.
Tensor* repeat(Graph& g, Tensor* a, const Tensor* like);

/// a (plain type) with p_d zeros appended to each dim d.
Tensor* pad(Graph& g, Tensor* a, int p0, int p1 = 0, int p2 = 0, int p3 = 0);
/// a with lp_d zeros before and rp_d zeros after each dim d.
Tensor* pad_ext(Graph& g, Tensor* a, int lp0, int rp0, int lp1 = 0, int rp1 = 0, int lp2 = 0, int rp2 = 0,
                int lp3 = 0, int rp3 = 0);

/// Tensor of a's shape and type (F32, F16 or BF16) with every element = value.
Tensor* fill(Graph& g, Tensor* a, float value);

/// a [K, 1, B2, B3] (F32/F16/BF16) -> [K, K, B2, B3] with a on the diagonal, zeros elsewhere.
Tensor* diag(Graph& g, Tensor* a);

/// Square a [N, N, ...] (F32/F16/BF16) keeping one triangle (element [col, row] kept when
/// col < row for LOWER, <= for LOWER_DIAG, > for UPPER, >= for UPPER_DIAG), zeros elsewhere.
Tensor* tri(Graph& g, Tensor* a, TriType type);

// ---- views (builder_data.cpp): no computation, share a's storage ----------------------------

/// View of contiguous a with a new shape of the same element count.
Tensor* reshape(Graph& g, Tensor* a, std::initializer_list<int64_t> ne);

/// View of a at byte `offset` with shape ne and byte strides nb1.. (nb0 is a's element/block
/// size). Must lie inside a's storage; for a block type ne0 must be a multiple of the block.
Tensor* view_1d(Graph& g, Tensor* a, int64_t ne0, uint64_t offset);
Tensor* view_2d(Graph& g, Tensor* a, int64_t ne0, int64_t ne1, uint64_t nb1, uint64_t offset);
Tensor* view_3d(Graph& g, Tensor* a, int64_t ne0, int64_t ne1, int64_t ne2, uint64_t nb1, uint64_t nb2,
                uint64_t offset);
Tensor* view_4d(Graph& g, Tensor* a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint64_t nb1, uint64_t nb2,
                uint64_t nb3, uint64_t offset);

/// View with axes permuted: source axis i becomes destination axis axes[i] (a permutation of 0..3).
Tensor* permute(Graph& g, Tensor* a, int ax0, int ax1, int ax2, int ax3);

/// View with ne[0] and ne[1] swapped.
Tensor* transpose(Graph& g, Tensor* a);

}  // namespace tessel::build
