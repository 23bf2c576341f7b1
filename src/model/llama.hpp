// The llama architecture's forward graph (one ubatch of tokens, any mix of sequences).
//
// Per block: h = RMS_NORM(x)·attn_norm; q, k, v = MUL_MAT(wq|wk|wv, h); ROPE (NORM mode) on q
// and k; k and v written into the KV cache rows of this ubatch's cells (SET_ROWS); attention of
// q over the cache view of n_kv cells with the mask (FLASH_ATTN_EXT, or MUL_MAT + SOFT_MAX +
// MUL_MAT); x += MUL_MAT(wo, attn); h = RMS_NORM(x)·ffn_norm; x += MUL_MAT(w_down,
// SWIGLU(MUL_MAT(w_gate, h), MUL_MAT(w_up, h))). Then the rows that want logits are gathered
// (GET_ROWS), normed and multiplied by the output matrix.
#pragma once

#include <vector>

#include "graph/graph.hpp"
#include "model/model.hpp"

namespace tessel::model {

/// KV-cache tensors of one layer: K and V [n_embd_kv, kv_size] (row = cell), F16 or Q8_0.
struct KvLayer {
    Tensor* k = nullptr;
    Tensor* v = nullptr;
};

/// Shapes of one forward graph; tensors with equal shapes give graphs with equal uids.
struct ForwardShape {
    int64_t n_tokens = 0;  ///< tokens of the ubatch
    int64_t n_kv = 0;      ///< cache cells attended to (a padded prefix of the cache)
    int64_t n_out = 0;     ///< tokens that want logits
    bool flash_attn = true;
};

/// The input leaves of a forward graph (created by build_llama; the caller fills them).
struct ForwardInputs {
    Tensor* tokens = nullptr;  ///< I32 [n_tokens]
    Tensor* pos = nullptr;     ///< I32 [n_tokens], positions for ROPE
    Tensor* kv_idx = nullptr;  ///< I64 [n_tokens], cache cell each token's K/V is written to
    Tensor* mask = nullptr;    ///< F16 [n_kv, n_tokens]: 0 where token t may attend cell c, else -inf
    Tensor* out_ids = nullptr; ///< I32 [n_out], ubatch rows whose logits are wanted (nullptr
                               ///< when n_out = n_tokens: every row, in order)
    Tensor* logits = nullptr;  ///< F32 [n_vocab, n_out], the output
};

/// Builds the forward graph of `m` on g for shape s over the cache tensors kv (one per layer).
/// Throws tessel::Error(InvalidArgument) from the op builders when shapes do not fit.
ForwardInputs build_llama(Graph& g, const Model& m, const std::vector<KvLayer>& kv, const ForwardShape& s);

}  // namespace tessel::model
