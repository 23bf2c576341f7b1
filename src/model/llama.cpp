#include "model/llama.hpp"

#include <cmath>

#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"

namespace tessel::model {
namespace {

using namespace build;

struct Ctx {
    Graph& g;
    const Hparams& hp;
    const ForwardShape& s;
    ForwardInputs& in;
};

Tensor* norm(Ctx& c, Tensor* x, Tensor* weight) { return mul(c.g, rms_norm(c.g, x, c.hp.rms_eps), weight); }

RopeParams rope_params(const Hparams& hp) {
    RopeParams p;
    p.n_dims = static_cast<int32_t>(hp.n_rot);
    p.mode = kRopeModeNorm;
    p.n_ctx_orig = static_cast<int32_t>(hp.n_ctx_train);
    p.freq_base = hp.rope_freq_base;
    p.freq_scale = hp.rope_freq_scale;
    return p;
}

/// Self-attention of one block: h [E, T] -> [E, T] (before the output projection).
Tensor* attention(Ctx& c, const LayerWeights& w, const KvLayer& kv, Tensor* h) {
    Graph& g = c.g;
    const Hparams& hp = c.hp;
    const int64_t D = hp.head_dim, H = hp.n_head, Hkv = hp.n_head_kv, T = c.s.n_tokens, n_kv = c.s.n_kv;
    Tensor* q = rope(g, reshape(g, mul_mat(g, w.wq, h), {D, H, T}), c.in.pos, rope_params(hp));
    Tensor* k = rope(g, reshape(g, mul_mat(g, w.wk, h), {D, Hkv, T}), c.in.pos, rope_params(hp));
    Tensor* v = mul_mat(g, w.wv, h);

    // Write this ubatch's K and V into its cells; the views read below depend on the writes.
    Tensor* k_all = set_rows(g, kv.k, reshape(g, k, {D * Hkv, T}), c.in.kv_idx);
    Tensor* v_all = set_rows(g, kv.v, v, c.in.kv_idx);
    const uint64_t k_row = kv.k->nb[1], v_row = kv.v->nb[1];
    const uint64_t k_head = dtype_row_bytes(kv.k->type, D), v_head = dtype_row_bytes(kv.v->type, D);
    Tensor* kc = view_3d(g, k_all, D, n_kv, Hkv, k_row, k_head, 0);  // [D, n_kv, Hkv]
    Tensor* vc = view_3d(g, v_all, D, n_kv, Hkv, v_row, v_head, 0);
    Tensor* qp = permute(g, q, 0, 2, 1, 3);  // [D, T, H]
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));

    if (c.s.flash_attn) {
        Tensor* o = flash_attn_ext(g, qp, kc, vc, c.in.mask, scale);  // [D, H, T]
        return reshape(g, o, {D * H, T});
    }
    Tensor* kq = soft_max(g, mul_mat(g, kc, qp), scale, c.in.mask);     // [n_kv, T, H]
    Tensor* vt = cont(g, permute(g, vc, 1, 0, 2, 3));                   // [n_kv, D, Hkv]
    Tensor* o = mul_mat(g, vt, kq);                                     // [D, T, H]
    return cont(g, permute(g, o, 0, 2, 1, 3), {D * H, T});
}

Tensor* feed_forward(Ctx& c, const LayerWeights& w, Tensor* h) {
    Graph& g = c.g;
    return mul_mat(g, w.w_down, swiglu_split(g, mul_mat(g, w.w_gate, h), mul_mat(g, w.w_up, h)));
}

}  // namespace

ForwardInputs build_llama(Graph& g, const Model& m, const std::vector<KvLayer>& kv, const ForwardShape& s) {
    const Hparams& hp = m.hparams();
    ForwardInputs in;
    in.tokens = g.new_tensor(DType::I32, {s.n_tokens}, "inp_tokens");
    in.pos = g.new_tensor(DType::I32, {s.n_tokens}, "inp_pos");
    in.kv_idx = g.new_tensor(DType::I64, {s.n_tokens}, "inp_kv_idx");
    in.mask = g.new_tensor(DType::F16, {s.n_kv, s.n_tokens}, "inp_mask");
    in.out_ids = g.new_tensor(DType::I32, {s.n_out}, "inp_out_ids");
    for (Tensor* t : {in.tokens, in.pos, in.kv_idx, in.mask, in.out_ids}) t->flags |= kFlagInput;
    Ctx c{g, hp, s, in};

    Tensor* x = get_rows(g, m.tok_embd(), in.tokens);  // [E, T]
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights& w = m.layer(il);
        x = add(g, x, mul_mat(g, w.wo, attention(c, w, kv[static_cast<size_t>(il)], norm(c, x, w.attn_norm))));
        x = add(g, x, feed_forward(c, w, norm(c, x, w.ffn_norm)));
    }
    if (s.n_out != s.n_tokens) x = get_rows(g, x, in.out_ids);
    else in.out_ids = nullptr;  // every row wants logits: no gather
    in.logits = mul_mat(g, m.output(), norm(c, x, m.output_norm()));  // [n_vocab, n_out]
    in.logits->flags |= kFlagOutput;
    in.logits->name = "result_output";
    g.expand(in.logits);
    return in;
}

}  // namespace tessel::model
