// The architecture table: per architecture (general.architecture) its own hyper-parameter keys,
// the weights it reads (GGUF tensor names as llama.cpp's `LLM_TENSOR_*`, shapes in terms of the
// hyper-parameters, required or optional) and the function that builds its forward graph.
// Adding an architecture is one file (its spec and graph) plus one line of the table (arch.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.hpp"
#include "model/hparams.hpp"

namespace tessel::model {

class Model;

/// Weights of one transformer block, the union over architectures (nullptr where an
/// architecture has none). Shapes in ne order; E = n_embd, D = head_dim, Dq = n_head·D,
/// Dkv = n_head_kv·D, F = n_ff.
struct LayerWeights {
    Tensor* attn_norm = nullptr;       ///< F32 [E]
    Tensor* wq = nullptr;              ///< [E, Dq]
    Tensor* wk = nullptr;              ///< [E, Dkv]
    Tensor* wv = nullptr;              ///< [E, Dkv]
    Tensor* bq = nullptr;              ///< F32 [Dq] (qwen2)
    Tensor* bk = nullptr;              ///< F32 [Dkv] (qwen2)
    Tensor* bv = nullptr;              ///< F32 [Dkv] (qwen2)
    Tensor* q_norm = nullptr;          ///< F32 [D], RMS norm of each query head (qwen3, gemma3)
    Tensor* k_norm = nullptr;          ///< F32 [D], RMS norm of each key head (qwen3, gemma3)
    Tensor* wo = nullptr;              ///< [Dq, E]
    Tensor* attn_post_norm = nullptr;  ///< F32 [E], norm of the attention output (gemma3)
    Tensor* ffn_norm = nullptr;        ///< F32 [E]
    Tensor* w_gate = nullptr;          ///< [E, F]
    Tensor* w_up = nullptr;            ///< [E, F]
    Tensor* w_down = nullptr;          ///< [F, E]
    Tensor* ffn_post_norm = nullptr;   ///< F32 [E], norm of the feed-forward output (gemma3)
};

/// Weights outside the blocks.
struct ModelWeights {
    Tensor* tok_embd = nullptr;     ///< [E, n_vocab]
    Tensor* output_norm = nullptr;  ///< F32 [E]
    Tensor* output = nullptr;       ///< [E, n_vocab]; absent in the file = tied to tok_embd
    Tensor* rope_freqs = nullptr;   ///< F32 [n_rot / 2], per-pair divisors of the rope angle
                                    ///< (llama 3.x rope scaling; absent = none)
};

/// A dimension of a weight in terms of the hyper-parameters.
enum class Dim : uint8_t { One, Embd, HeadDim, Q, Kv, Ff, Vocab, RopePairs };

/// One weight an architecture reads: its GGUF name (after "blk.N." for block weights), the
/// slot it fills, its shape, whether the file must have it and whether it must be F32.
template <class Slots>
struct WeightSpec {
    const char* name;
    Tensor* Slots::*slot;
    Dim ne0, ne1;
    bool required;
    bool f32;
};

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

/// The input leaves of a forward graph (created by the builder; the caller fills them).
struct ForwardInputs {
    Tensor* tokens = nullptr;   ///< I32 [n_tokens]
    Tensor* pos = nullptr;      ///< I32 [n_tokens], positions for ROPE
    Tensor* kv_idx = nullptr;   ///< I64 [n_tokens], cache cell each token's K/V is written to
    Tensor* mask = nullptr;     ///< F16 [n_kv, n_tokens]: 0 where token t may attend cell c, else
                                ///< -inf (nullptr when every layer has a sliding window)
    Tensor* mask_swa = nullptr; ///< F16 [n_kv, n_tokens], the same within the sliding window
                                ///< (Hparams::n_swa); nullptr when no layer has one
    Tensor* out_ids = nullptr;  ///< I32 [n_out], ubatch rows whose logits are wanted (nullptr
                                ///< when n_out = n_tokens: every row, in order)
    Tensor* logits = nullptr;   ///< F32 [n_vocab, n_out], the output
};

/// Builds the forward graph of a model on g for shape s over the cache tensors kv (one per
/// layer). Throws tessel::Error(InvalidArgument) from the op builders when shapes do not fit.
using BuildForward = ForwardInputs (*)(Graph& g, const Model& m, const std::vector<KvLayer>& kv, const ForwardShape& s);

struct ArchSpec {
    std::string_view name;  ///< general.architecture
    /// Reads the architecture's own keys after the common ones (nullptr: none).
    void (*read_hparams)(const KeyReader& keys, Hparams& hp);
    std::span<const WeightSpec<ModelWeights>> model_weights;
    std::span<const WeightSpec<LayerWeights>> layer_weights;
    BuildForward build;
    /// The chat format (a `--chat-template` name) of this architecture's models, used when a
    /// file has no tokenizer.chat_template ("" : none).
    std::string_view chat_format = "";
};

/// The table's entry for `arch`. Throws tessel::Error(Unsupported) "<file>: unknown
/// architecture 'X' (supported: ...)".
const ArchSpec& find_arch(std::string_view arch, const std::string& file);
/// Every architecture of the table, in table order.
std::span<const ArchSpec* const> architectures();

}  // namespace tessel::model
