// A loaded model: hyper-parameters and weights, placed in a device's buffers once and shared by
// every context made from it (contexts own their KV cache and compute buffers, never weights).
//
// Tensor names are GGUF's (llama.cpp's `LLM_TENSOR_*` names): token_embd, output_norm, output
// (absent: tied to token_embd), blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
// ffn_gate, ffn_up, ffn_down}.weight.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/reader.hpp"
#include "model/hparams.hpp"

namespace tessel::model {

/// Weights of one transformer block (shapes in ne order; E = n_embd, Dq = n_head·head_dim,
/// Dkv = n_head_kv·head_dim, F = n_ff).
struct LayerWeights {
    Tensor* attn_norm = nullptr;  ///< F32 [E]
    Tensor* wq = nullptr;         ///< [E, Dq]
    Tensor* wk = nullptr;         ///< [E, Dkv]
    Tensor* wv = nullptr;         ///< [E, Dkv]
    Tensor* wo = nullptr;         ///< [Dq, E]
    Tensor* ffn_norm = nullptr;   ///< F32 [E]
    Tensor* w_gate = nullptr;     ///< [E, F]
    Tensor* w_up = nullptr;       ///< [E, F]
    Tensor* w_down = nullptr;     ///< [F, E]
};

/// What Model::load does besides the default (every weight loaded, no progress reports).
struct LoadOptions {
    /// Read the metadata only, for tokenizing: hparams() holds general.architecture and
    /// general.name (when present) and nothing else; no hyper-parameter, tensor or weight is
    /// checked, placed or read, so a vocab-only file (tokenizer.* keys, no tensors) of any
    /// architecture loads.
    bool vocab_only = false;
    /// Called with the fraction of weight bytes loaded, 0 before the first weight is read, then
    /// after each weight, 1 after the last; returning false cancels the load
    /// (Error(Cancelled) naming the file). Not called with vocab_only.
    std::function<bool(float)> progress;
};

class Model {
public:
    /// Opens and validates `path`, reads the hyper-parameters, checks every tensor the
    /// architecture needs (present, shape, a supported float or quantized type) and loads the weights into buffers
    /// of `devices` (priority order, a CPU device last: Registry::run_devices; the buffer type
    /// per weight chosen by choose_weight_buffer_type from the nodes of a one-token graph that
    /// read it). Contexts run on the same devices. Throws tessel::Error: Io / Gguf* for the file,
    /// Unsupported for an unknown architecture or tensor type, BadModel naming a missing or
    /// misshapen tensor or key, InvalidArgument when `devices` does not end with a CPU device,
    /// Cancelled when options.progress returned false.
    static std::shared_ptr<const Model> load(const std::string& path, std::vector<Device*> devices, const LoadOptions& options = {});

    const Hparams& hparams() const { return hp_; }
    const gguf::File& file() const { return file_; }
    /// The devices the model runs on, priority order, the CPU last.
    const std::vector<Device*>& devices() const { return devs_; }
    const LayerWeights& layer(int64_t i) const { return layers_[static_cast<size_t>(i)]; }
    Tensor* tok_embd() const { return tok_embd_; }       ///< [E, n_vocab]
    Tensor* output_norm() const { return output_norm_; } ///< F32 [E]
    Tensor* output() const { return output_; }           ///< [E, n_vocab] (token_embd when tied)
    /// False for a model loaded with LoadOptions::vocab_only (no weights: it cannot run).
    bool has_weights() const { return !tensors_.empty(); }
    /// Bytes of weight data in device buffers.
    size_t weight_bytes() const;
    /// Number of weight elements (parameters).
    int64_t n_params() const;

    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
    ~Model();

private:
    Model(gguf::File file, std::vector<Device*> devices);
    Tensor* weight(const std::string& name, std::initializer_list<int64_t> ne, bool f32_only = false);
    void place_and_load(const std::function<bool(float)>& progress);

    gguf::File file_;
    std::vector<Device*> devs_;
    Hparams hp_;
    std::deque<Tensor> tensors_;  // the weight tensors (stable addresses)
    std::vector<LayerWeights> layers_;
    Tensor* tok_embd_ = nullptr;
    Tensor* output_norm_ = nullptr;
    Tensor* output_ = nullptr;
    std::vector<std::unique_ptr<Buffer>> buffers_;
};

}  // namespace tessel::model
