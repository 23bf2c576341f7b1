// gemma3: per block
//   x += post_norm(wo · attention(rope(qnorm(wq·h))·s, rope(knorm(wk·h)), wv·h))   h = norm(x)
//   x += post_norm(w_down · GEGLU(w_gate·h, w_up·h))                                 h = norm(x)
// after an embedding scaled by sqrt(n_embd). NEOX rope; sliding-window layers (five of every six
// by default) see the last n_swa positions and use the local rope base, the others all positions
// and the global base. Queries are scaled by s before attention (1/sqrt(head_dim); the 62-layer
// 27B model uses 1/sqrt(n_embd/n_head)); logits are soft-capped when the file says so.
// Norm weights are stored with gemma's +1 already added by the converter.
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
};

constexpr WeightSpec<L> kLayer[] = {
    {"attn_norm.weight", &L::attn_norm, Dim::Embd, Dim::One, true, true},
    {"attn_q.weight", &L::wq, Dim::Embd, Dim::Q, true, false},
    {"attn_k.weight", &L::wk, Dim::Embd, Dim::Kv, true, false},
    {"attn_v.weight", &L::wv, Dim::Embd, Dim::Kv, true, false},
    {"attn_q_norm.weight", &L::q_norm, Dim::HeadDim, Dim::One, true, true},
    {"attn_k_norm.weight", &L::k_norm, Dim::HeadDim, Dim::One, true, true},
    {"attn_output.weight", &L::wo, Dim::Q, Dim::Embd, true, false},
    {"post_attention_norm.weight", &L::attn_post_norm, Dim::Embd, Dim::One, true, true},
    {"ffn_norm.weight", &L::ffn_norm, Dim::Embd, Dim::One, true, true},
    {"ffn_gate.weight", &L::w_gate, Dim::Embd, Dim::Ff, true, false},
    {"ffn_up.weight", &L::w_up, Dim::Embd, Dim::Ff, true, false},
    {"ffn_down.weight", &L::w_down, Dim::Ff, Dim::Embd, true, false},
    {"post_ffw_norm.weight", &L::ffn_post_norm, Dim::Embd, Dim::One, true, true},
};

constexpr int64_t kDefaultSwaPattern = 6;  // every 6th layer is global (llama.cpp's default)

void read_hparams(const KeyReader& k, Hparams& hp) {
    hp.rope_neox = true;
    hp.attn_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_layer == 62 ? hp.n_embd / hp.n_head : hp.head_dim));
    hp.final_logit_softcap = k.real("final_logit_softcapping", 0.0f, 0.0, 1e6);
    hp.n_swa = k.integer("attention.sliding_window", 0, false, int64_t{1} << 24);
    if (hp.n_swa == 0) return;
    hp.rope_freq_base_swa = k.real("rope.freq_base_swa", 10000.0f, 1.0, 1e12);
    hp.swa_layers.assign(static_cast<size_t>(hp.n_layer), false);
    const std::string key = k.prefix() + "attention.sliding_window_pattern";
    const gguf::Value* pattern = k.find("attention.sliding_window_pattern");
    if (pattern && pattern->type() == gguf::ValueType::ARRAY) {  // one flag per layer
        if (pattern->array_type() != gguf::ValueType::BOOL || pattern->array_size() != static_cast<size_t>(hp.n_layer))
            k.bad("key " + key + " must be a bool per layer (" + std::to_string(hp.n_layer) + "), found " + pattern->to_string());
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[static_cast<size_t>(il)] = pattern->at(static_cast<size_t>(il)).as_bool();
        return;
    }
    const int64_t n = k.integer("attention.sliding_window_pattern", kDefaultSwaPattern, false, int64_t{1} << 12);
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[static_cast<size_t>(il)] = il % n < n - 1;
}

Tensor* attention(ForwardCtx& c, const LayerWeights& w, const KvLayer& kv, int64_t il, Tensor* h) {
    const int64_t D = c.hp.head_dim, T = c.s.n_tokens;
    Tensor* q = rms_norm_mul(c, reshape(c.g, linear(c, w.wq, h), {D, c.hp.n_head, T}), w.q_norm);
    Tensor* k = rms_norm_mul(c, reshape(c.g, linear(c, w.wk, h), {D, c.hp.n_head_kv, T}), w.k_norm);
    q = scale(c.g, rope_layer(c, q, il), c.hp.attn_scale);
    k = rope_layer(c, k, il);
    Tensor* v = linear(c, w.wv, h);
    return linear(c, w.wo, attend(c, kv, il, q, k, v, 1.0f));
}

Tensor* feed_forward(ForwardCtx& c, const LayerWeights& w, Tensor* h) {
    return linear(c, w.w_down, geglu_split(c.g, linear(c, w.w_gate, h), linear(c, w.w_up, h)));
}

ForwardInputs build(Graph& g, const Model& m, const std::vector<KvLayer>& kv, const ForwardShape& s) {
    ForwardInputs in = make_inputs(g, m.hparams(), s);
    ForwardCtx c{g, m, m.hparams(), s, in};
    Tensor* x = scale(g, get_rows(g, m.tok_embd(), in.tokens), std::sqrt(static_cast<float>(c.hp.n_embd)));  // [E, T]
    for (int64_t il = 0; il < c.hp.n_layer; ++il) {
        const LayerWeights& w = m.layer(il);
        Tensor* a = attention(c, w, kv[static_cast<size_t>(il)], il, rms_norm_mul(c, x, w.attn_norm));
        x = add(g, x, rms_norm_mul(c, a, w.attn_post_norm));
        Tensor* f = feed_forward(c, w, rms_norm_mul(c, x, w.ffn_norm));
        x = add(g, x, rms_norm_mul(c, f, w.ffn_post_norm));
    }
    output_head(c, x);
    return in;
}

}  // namespace

extern const ArchSpec kArchGemma3{"gemma3", read_hparams, kModel, kLayer, build, "gemma"};

}  // namespace tessel::model
