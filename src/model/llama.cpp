// llama (and llama 3.x): per block
//   x += wo · attention(rope(wq·h), rope(wk·h), wv·h)      h = RMS_NORM(x)·attn_norm
//   x += w_down · SWIGLU(w_gate·h, w_up·h)                 h = RMS_NORM(x)·ffn_norm
// with NORM rope (adjacent pairs); llama 3.x rope scaling arrives as the rope_freqs tensor.
// The same graph serves qwen2 (Q/K/V biases added) and qwen3 (each q and k head RMS-normed
// before rope): the block builders add what a model's weights have.
#include <cmath>

#include "model/blocks.hpp"

namespace tessel::model {
namespace {

using namespace build;
using L = LayerWeights;
using M = ModelWeights;

constexpr WeightSpec<M> kModel[] = {
    {"token_embd.weight", &M::tok_embd, Dim::Embd, Dim::Vocab, true, false},
    {"output_norm.weight", &M::output_norm, Dim::Embd, Dim::One, true, true},
    {"output.weight", &M::output, Dim::Embd, Dim::Vocab, false, false},
    {"rope_freqs.weight", &M::rope_freqs, Dim::RopePairs, Dim::One, false, true},
};

constexpr WeightSpec<L> kLayer[] = {
    {"attn_norm.weight", &L::attn_norm, Dim::Embd, Dim::One, true, true},
    {"attn_q.weight", &L::wq, Dim::Embd, Dim::Q, true, false},
    {"attn_k.weight", &L::wk, Dim::Embd, Dim::Kv, true, false},
    {"attn_v.weight", &L::wv, Dim::Embd, Dim::Kv, true, false},
    {"attn_output.weight", &L::wo, Dim::Q, Dim::Embd, true, false},
    {"ffn_norm.weight", &L::ffn_norm, Dim::Embd, Dim::One, true, true},
    {"ffn_gate.weight", &L::w_gate, Dim::Embd, Dim::Ff, true, false},
    {"ffn_up.weight", &L::w_up, Dim::Embd, Dim::Ff, true, false},
    {"ffn_down.weight", &L::w_down, Dim::Ff, Dim::Embd, true, false},
};

Tensor* attention(ForwardCtx& c, const LayerWeights& w, const KvLayer& kv, int64_t il, Tensor* h) {
    const int64_t D = c.hp.head_dim, T = c.s.n_tokens;
    Tensor* q = reshape(c.g, linear(c, w.wq, h, w.bq), {D, c.hp.n_head, T});
    Tensor* k = reshape(c.g, linear(c, w.wk, h, w.bk), {D, c.hp.n_head_kv, T});
    if (w.q_norm) q = rms_norm_mul(c, q, w.q_norm);
    if (w.k_norm) k = rms_norm_mul(c, k, w.k_norm);
    q = rope_layer(c, q, il);
    k = rope_layer(c, k, il);
    Tensor* v = linear(c, w.wv, h, w.bv);
    return linear(c, w.wo, attend(c, kv, il, q, k, v, 1.0f / std::sqrt(static_cast<float>(D))));
}

Tensor* feed_forward(ForwardCtx& c, const LayerWeights& w, Tensor* h) {
    return linear(c, w.w_down, swiglu_split(c.g, linear(c, w.w_gate, h), linear(c, w.w_up, h)));
}

}  // namespace

ForwardInputs build_llama(Graph& g, const Model& m, const std::vector<KvLayer>& kv, const ForwardShape& s) {
    ForwardInputs in = make_inputs(g, m.hparams(), s);
    ForwardCtx c{g, m, m.hparams(), s, in};
    Tensor* x = get_rows(g, m.tok_embd(), in.tokens);  // [E, T]
    for (int64_t il = 0; il < c.hp.n_layer; ++il) {
        const LayerWeights& w = m.layer(il);
        x = add(g, x, attention(c, w, kv[static_cast<size_t>(il)], il, rms_norm_mul(c, x, w.attn_norm)));
        x = add(g, x, feed_forward(c, w, rms_norm_mul(c, x, w.ffn_norm)));
    }
    output_head(c, x);
    return in;
}

extern const ArchSpec kArchLlama{"llama", nullptr, kModel, kLayer, build_llama};

}  // namespace tessel::model
