#include "model/blocks.hpp"

#include <cmath>

namespace tessel::model {

using namespace build;

ForwardInputs make_inputs(Graph& g, const Hparams& hp, const ForwardShape& s) {
    ForwardInputs in;
    in.tokens = g.new_tensor(DType::I32, {s.n_tokens}, "inp_tokens");
    in.pos = g.new_tensor(DType::I32, {s.n_tokens}, "inp_pos");
    in.kv_idx = g.new_tensor(DType::I64, {s.n_tokens}, "inp_kv_idx");
    in.out_ids = g.new_tensor(DType::I32, {s.n_out}, "inp_out_ids");
    // A mask leaf only where a layer reads it (a leaf no node reads gets no memory).
    bool any_swa = false, any_full = false;
    for (int64_t il = 0; il < hp.n_layer; ++il) (hp.is_swa(il) ? any_swa : any_full) = true;
    if (any_full) in.mask = g.new_tensor(DType::F16, {s.n_kv, s.n_tokens}, "inp_mask");
    if (any_swa) in.mask_swa = g.new_tensor(DType::F16, {s.n_kv, s.n_tokens}, "inp_mask_swa");
    for (Tensor* t : {in.tokens, in.pos, in.kv_idx, in.mask, in.out_ids, in.mask_swa})
        if (t) t->flags |= kFlagInput;
    return in;
}

Tensor* rms_norm_mul(ForwardCtx& c, Tensor* x, Tensor* weight) { return mul(c.g, rms_norm(c.g, x, c.hp.rms_eps), weight); }

Tensor* linear(ForwardCtx& c, Tensor* w, Tensor* x, Tensor* bias) {
    Tensor* y = mul_mat(c.g, w, x);
    return bias ? add(c.g, y, bias) : y;
}

Tensor* rope_layer(ForwardCtx& c, Tensor* x, int64_t il) {
    const Hparams& hp = c.hp;
    RopeParams p;
    p.n_dims = static_cast<int32_t>(hp.n_rot);
    p.mode = hp.rope_neox ? kRopeModeNeox : kRopeModeNorm;
    p.n_ctx_orig = static_cast<int32_t>(hp.n_ctx_train);
    p.freq_base = hp.is_swa(il) ? hp.rope_freq_base_swa : hp.rope_freq_base;
    p.freq_scale = hp.is_swa(il) ? 1.0f : hp.rope_freq_scale;
    return rope(c.g, x, c.in.pos, p, c.m.rope_freqs());
}

Tensor* attend(ForwardCtx& c, const KvLayer& kv, int64_t il, Tensor* q, Tensor* k, Tensor* v, float scale) {
    Graph& g = c.g;
    const Hparams& hp = c.hp;
    const int64_t D = hp.head_dim, H = hp.n_head, Hkv = hp.n_head_kv, T = c.s.n_tokens, n_kv = c.s.n_kv;
    // Write this ubatch's K and V into its cells; the views read below depend on the writes.
    Tensor* k_all = set_rows(g, kv.k, reshape(g, k, {D * Hkv, T}), c.in.kv_idx);
    Tensor* v_all = set_rows(g, kv.v, v, c.in.kv_idx);
    const uint64_t k_row = kv.k->nb[1], v_row = kv.v->nb[1];
    const uint64_t k_head = dtype_row_bytes(kv.k->type, D), v_head = dtype_row_bytes(kv.v->type, D);
    Tensor* kc = view_3d(g, k_all, D, n_kv, Hkv, k_row, k_head, 0);  // [D, n_kv, Hkv]
    Tensor* vc = view_3d(g, v_all, D, n_kv, Hkv, v_row, v_head, 0);
    Tensor* qp = permute(g, q, 0, 2, 1, 3);  // [D, T, H]
    Tensor* mask = hp.is_swa(il) ? c.in.mask_swa : c.in.mask;

    if (c.s.flash_attn) {
        Tensor* o = flash_attn_ext(g, qp, kc, vc, mask, scale);  // [D, H, T]
        return reshape(g, o, {D * H, T});
    }
    Tensor* kq = soft_max(g, mul_mat(g, kc, qp), scale, mask);  // [n_kv, T, H]
    Tensor* vt = cont(g, permute(g, vc, 1, 0, 2, 3));           // [n_kv, D, Hkv]
    Tensor* o = mul_mat(g, vt, kq);                             // [D, T, H]
    return cont(g, permute(g, o, 0, 2, 1, 3), {D * H, T});
}

void output_head(ForwardCtx& c, Tensor* x) {
    Graph& g = c.g;
    if (c.s.n_out != c.s.n_tokens) x = get_rows(g, x, c.in.out_ids);
    else c.in.out_ids = nullptr;  // every row wants logits: no gather
    Tensor* logits = mul_mat(g, c.m.output(), rms_norm_mul(c, x, c.m.output_norm()));  // [n_vocab, n_out]
    if (const float cap = c.hp.final_logit_softcap; cap > 0)
        logits = scale(g, unary(g, scale(g, logits, 1.0f / cap), UnaryOp::TANH), cap);
    logits->flags |= kFlagOutput;
    logits->name = "result_output";
    c.in.logits = logits;
    g.expand(logits);
}

}  // namespace tessel::model
