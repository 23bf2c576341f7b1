// Op builders for expert matrix products and attention (see op.hpp for each op's shapes and
// op_params). Like graph/builder.hpp, each builder checks its inputs and throws
// tessel::Error(InvalidArgument) naming the op and the tensors (describe()) when shapes, types
// or parameters do not fit.
#pragma once

#include <cstdint>

#include "graph/graph.hpp"

namespace tessel::build {

/// Mixture-of-experts product: experts [K, N, E] (any supported type), x F32/F16 [K, U, T] with
/// n_used % U == 0 (U = 1 broadcasts one activation row to every slot), ids I32 [n_used, T]
/// -> F32 [N, n_used, T]: y[:, e, t] = experts[ids[e, t]] · x[:, e % U, t].
/// An id outside [0, E) at compute time yields a zero column (no error: data is not known here).
Tensor* mul_mat_id(Graph& g, Tensor* experts, Tensor* x, Tensor* ids);

/// ROPE parameters (op_params of ROPE in op.hpp). The defaults are plain RoPE (no scaling).
struct RopeParams {
    int32_t n_dims = 0;               ///< rotated leading dims of each head: even, 0 < n_dims <= D
    int32_t mode = kRopeModeNorm;     ///< kRopeModeNorm (adjacent pairs) or kRopeModeNeox (halves)
    int32_t n_ctx_orig = 0;           ///< training context, needed (> 0) by YaRN (ext_factor != 0)
    float freq_base = 10000.0f;       ///< > 0
    float freq_scale = 1.0f;          ///< > 0; 1 / context-extension factor
    float ext_factor = 0.0f;          ///< YaRN extrapolation mix, 0 disables YaRN
    float attn_factor = 1.0f;         ///< magnitude scale of the rotated dims
    float beta_fast = 32.0f;          ///< YaRN: rotations where the ramp starts
    float beta_slow = 1.0f;           ///< YaRN: rotations where the ramp ends
};

/// Rotary embedding of x F32/F16 [D, H, T, B] at positions pos I32 [T]; optional freq_factors
/// F32 [>= n_dims/2] divide each pair's angle. Result has x's type and shape.
Tensor* rope(Graph& g, Tensor* x, Tensor* pos, const RopeParams& p, Tensor* freq_factors = nullptr);

/// Row softmax of x F32 [K, M, H, B] · scale + slope(h) · mask; optional mask F32/F16
/// [K, M', H', B'] (M' >= M, H % H' == 0, B % B' == 0), ALiBi for max_bias > 0 (>= 0), optional
/// sinks F32 [H]. Result F32 of x's shape.
Tensor* soft_max(Graph& g, Tensor* x, float scale = 1.0f, Tensor* mask = nullptr, float max_bias = 0.0f,
                 Tensor* sinks = nullptr);

/// Fused attention: q F32 [D, T, H, B], k [D, KV, H_kv, B_kv], v [Dv, KV, H_v, B_v] (any
/// supported type with packed rows, e.g. F32/F16/Q8_0; H and B multiples of the K/V head and
/// batch counts), optional mask F16/F32 [KV, T', M2, M3] (T' >= T), optional sinks F32 [H]
/// -> F32 [Dv, H, T, B]. softcap 0 disables logit soft-capping; max_bias 0 disables ALiBi.
Tensor* flash_attn_ext(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale, float max_bias = 0.0f,
                       float softcap = 0.0f, Tensor* sinks = nullptr);

}  // namespace tessel::build
