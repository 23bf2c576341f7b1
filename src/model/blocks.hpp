// Pieces of forward graphs that architectures share: the input leaves, norms, rope parameters,
// attention over the KV cache and the output head. Each architecture's file composes them in
// one function per block.
#pragma once

#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "model/model.hpp"

namespace tessel::model {

/// What every block builder of one forward graph reads.
struct ForwardCtx {
    Graph& g;
    const Model& m;
    const Hparams& hp;
    const ForwardShape& s;
    ForwardInputs& in;
};

/// Creates the input leaves of a graph of shape s (mask only when a layer attends to every
/// position, mask_swa only when a layer has a sliding window).
ForwardInputs make_inputs(Graph& g, const Hparams& hp, const ForwardShape& s);

/// RMS_NORM(x)·weight over ne[0] with the model's epsilon; weight F32 [ne0 of x] broadcasts.
Tensor* rms_norm_mul(ForwardCtx& c, Tensor* x, Tensor* weight);

/// x·wᵀ (+ bias when not nullptr): w [K, N], x [K, T], bias F32 [N] -> [N, T].
Tensor* linear(ForwardCtx& c, Tensor* w, Tensor* x, Tensor* bias = nullptr);

/// ROPE of layer il (the sliding-window base on sliding layers; NEOX or NORM as hp says; the
/// model's rope_freqs when it has one) of x [D, heads, T].
Tensor* rope_layer(ForwardCtx& c, Tensor* x, int64_t il);

/// Attention of layer il: writes k [D, Hkv, T] and v [Dkv, T] into the cache cells of this
/// ubatch, then q [D, H, T] attends over n_kv cells with the layer's mask (the sliding-window
/// mask on sliding layers), scores scaled by `scale`. Returns [D·H, T] (before the output
/// projection).
Tensor* attend(ForwardCtx& c, const KvLayer& kv, int64_t il, Tensor* q, Tensor* k, Tensor* v, float scale);

/// The output head: gathers the rows that want logits, output norm, output matrix, optional
/// soft-capping; sets in.logits (flagged output, named "result_output") and expands the graph.
void output_head(ForwardCtx& c, Tensor* x);

/// The llama graph (model/llama.cpp), which qwen2 and qwen3 share: optional Q/K/V biases and
/// q/k head norms are applied when the layer has them.
ForwardInputs build_llama(Graph& g, const Model& m, const std::vector<KvLayer>& kv, const ForwardShape& s);

}  // namespace tessel::model
