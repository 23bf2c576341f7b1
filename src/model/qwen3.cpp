// qwen3: the llama graph (model/llama.cpp) with each query and key head RMS-normed (q_norm,
// k_norm) before NEOX rope; head_dim comes from attention.key_length (128 on Qwen3-0.6B,
// where n_embd / n_head is 64).
#include "model/blocks.hpp"

namespace tessel::model {
namespace {

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
    {"ffn_norm.weight", &L::ffn_norm, Dim::Embd, Dim::One, true, true},
    {"ffn_gate.weight", &L::w_gate, Dim::Embd, Dim::Ff, true, false},
    {"ffn_up.weight", &L::w_up, Dim::Embd, Dim::Ff, true, false},
    {"ffn_down.weight", &L::w_down, Dim::Ff, Dim::Embd, true, false},
};

void read_hparams(const KeyReader&, Hparams& hp) { hp.rope_neox = true; }

}  // namespace

extern const ArchSpec kArchQwen3{"qwen3", read_hparams, kModel, kLayer, build_llama};

}  // namespace tessel::model
