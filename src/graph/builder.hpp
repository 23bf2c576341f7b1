// Op builders: create graph nodes with the field's semantics (see op.hpp for each op's shapes).
// Each builder checks its inputs and throws tessel::Error(InvalidArgument) naming the op and the
// tensors (describe()) when shapes or types do not fit.
#pragma once

#include "graph/graph.hpp"

namespace tessel::build {

/// a + broadcast(b) (likewise sub, mul, div): F32 result of a's shape; b's dims must divide a's.
Tensor* add(Graph& g, Tensor* a, Tensor* b);
Tensor* sub(Graph& g, Tensor* a, Tensor* b);
Tensor* mul(Graph& g, Tensor* a, Tensor* b);
Tensor* div(Graph& g, Tensor* a, Tensor* b);

/// a * s + b element-wise.
Tensor* scale(Graph& g, Tensor* a, float s, float b = 0.0f);

/// Element-wise unary function.
Tensor* unary(Graph& g, Tensor* a, UnaryOp op);

/// x / sqrt(mean(x²) + eps) over each row of x (ne[0]).
Tensor* rms_norm(Graph& g, Tensor* x, float eps);

/// y = x · wᵀ: w [K, N, B2, B3] (any supported type), x F32 [K, M, B2', B3'] -> F32 [N, M, B2', B3'].
/// Requires equal K and B2' % B2 == 0, B3' % B3 == 0.
Tensor* mul_mat(Graph& g, Tensor* w, Tensor* x);

/// Rows `ids` (I32 [n]) of table [K, R] -> F32 [K, n].
Tensor* get_rows(Graph& g, Tensor* table, Tensor* ids);

/// View of contiguous a with a new shape of the same element count.
Tensor* reshape(Graph& g, Tensor* a, std::initializer_list<int64_t> ne);

/// View with axes permuted: source axis i becomes destination axis axes[i] (a permutation of 0..3).
Tensor* permute(Graph& g, Tensor* a, int ax0, int ax1, int ax2, int ax3);

/// View with ne[0] and ne[1] swapped.
Tensor* transpose(Graph& g, Tensor* a);

/// Contiguous copy of a (possibly non-contiguous) tensor.
Tensor* cont(Graph& g, Tensor* a);

}  // namespace tessel::build
