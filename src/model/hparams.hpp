// Hyper-parameters of a decoder-only transformer, read from GGUF metadata (`<arch>.*` keys as
// llama.cpp writes them; key names from gguf-py's `Keys.LLM` / `Keys.Attention` / `Keys.Rope`).
#pragma once

#include <cstdint>
#include <string>

#include "gguf/reader.hpp"

namespace tessel::model {

struct Hparams {
    std::string arch;          ///< general.architecture, e.g. "llama"
    std::string name;          ///< general.name ("" when absent)
    int64_t n_vocab = 0;       ///< rows of token_embd
    int64_t n_ctx_train = 0;   ///< <arch>.context_length, tokens
    int64_t n_embd = 0;        ///< <arch>.embedding_length
    int64_t n_layer = 0;       ///< <arch>.block_count
    int64_t n_head = 0;        ///< <arch>.attention.head_count
    int64_t n_head_kv = 0;     ///< <arch>.attention.head_count_kv (default: n_head)
    int64_t n_ff = 0;          ///< <arch>.feed_forward_length
    int64_t head_dim = 0;      ///< <arch>.attention.key_length (default: n_embd / n_head)
    int64_t n_rot = 0;         ///< <arch>.rope.dimension_count (default: head_dim)
    float rms_eps = 1e-5f;     ///< <arch>.attention.layer_norm_rms_epsilon
    float rope_freq_base = 10000.0f;  ///< <arch>.rope.freq_base
    float rope_freq_scale = 1.0f;     ///< 1 / <arch>.rope.scaling.factor (linear scaling only)

    int64_t n_embd_kv() const { return head_dim * n_head_kv; }  ///< K (or V) elements per token
};

/// Reads the hyper-parameters of `file` (named in errors). Throws tessel::Error(Unsupported)
/// "unknown architecture X" for an architecture other than llama, and tessel::Error(BadModel)
/// naming the file and key when a required key is missing, has the wrong type or an impossible
/// value: an integer key outside 1..2^40 (context_length: ..2^31-1), head_count not dividing
/// embedding_length, head_count x key_length above 2^40, a float key that is not a finite float > 0.
Hparams read_hparams(const gguf::File& file);

}  // namespace tessel::model
