// Hyper-parameters of a decoder-only transformer, read from GGUF metadata (`<arch>.*` keys as
// llama.cpp writes them; key names from gguf-py's `Keys.LLM` / `Keys.Attention` / `Keys.Rope`).
// The keys every architecture shares are read here; an architecture's own keys by its entry of
// the architecture table (model/arch.hpp) through a KeyReader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
    bool rope_neox = false;           ///< rotate halves of each head (NEOX) instead of adjacent pairs
    /// Scale of q·k before the softmax; 0 means 1 / sqrt(head_dim).
    float attn_scale = 0.0f;
    /// Sliding-window attention: a token sees the n_swa positions up to its own on the layers
    /// swa_layers marks (0: no sliding window; gemma3.attention.sliding_window).
    int64_t n_swa = 0;
    std::vector<bool> swa_layers;        ///< per layer, true = sliding window (empty: none)
    float rope_freq_base_swa = 10000.0f; ///< rope base of the sliding-window layers
    /// Logits become cap·tanh(logits / cap) (0: off; <arch>.final_logit_softcapping).
    float final_logit_softcap = 0.0f;

    int64_t n_embd_kv() const { return head_dim * n_head_kv; }  ///< K (or V) elements per token
    bool is_swa(int64_t il) const { return n_swa > 0 && swa_layers[static_cast<size_t>(il)]; }
};

/// Reads `<arch>.<suffix>` keys of one file, checking types and ranges; every error is a
/// tessel::Error(BadModel) naming the file and the key.
class KeyReader {
public:
    KeyReader(const gguf::File& file, std::string arch) : f_(file), prefix_(std::move(arch) + ".") {}
    /// The key `<arch>.suffix`, or nullptr when absent.
    const gguf::Value* find(const std::string& suffix) const;
    /// An integer key in [1, hi]; `fallback` when absent and not required.
    int64_t integer(const std::string& suffix, int64_t fallback, bool required, int64_t hi) const;
    /// A float key, finite and in [lo, hi]; `fallback` when absent.
    float real(const std::string& suffix, float fallback, double lo, double hi) const;
    /// Throws Error(BadModel) "<file>: what".
    [[noreturn]] void bad(const std::string& what) const;
    const std::string& prefix() const { return prefix_; }
    const gguf::File& file() const { return f_; }

private:
    const gguf::File& f_;
    std::string prefix_;
};

/// Reads the hyper-parameters of `file` (named in errors). Throws tessel::Error(Unsupported)
/// "unknown architecture X" for an architecture missing from the table (model/arch.hpp), and
/// tessel::Error(BadModel) naming the file and key when a required key is missing, has the wrong
/// type or an impossible value: an integer outside its range (context_length up to 2^24 tokens,
/// embedding_length and head_count x key_length up to 2^18, block_count and head_count up to
/// 2^12, key_length up to 2^14), head_count not dividing embedding_length, a float that is not
/// finite or outside its range (rms epsilon 1e-30..1, rope.freq_base 1..1e12,
/// rope.scaling.factor 1/1024..1024), and the architecture's own keys as its entry says.
Hparams read_hparams(const gguf::File& file);

}  // namespace tessel::model
