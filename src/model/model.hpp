// A loaded model: hyper-parameters and weights, placed in a device's buffers once and shared by
// every context made from it (contexts own their KV cache and compute buffers, never weights).
//
// Which weights a model has, their names and shapes, and its forward graph come from its
// architecture's entry of the table (model/arch.hpp).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/reader.hpp"
#include "model/arch.hpp"
#include "model/hparams.hpp"

namespace tessel::model {

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
    /// architecture's table entry lists (present when required, shape, a supported float or
    /// quantized type, F32 where it says so) and loads the weights into buffers
    /// of `devices` (priority order, a CPU device last: Registry::run_devices; the buffer type
    /// per weight chosen by choose_weight_buffer_type from the nodes of a one-token graph that
    /// read it). Contexts run on the same devices. Throws tessel::Error: Io / Gguf* for the file,
    /// Unsupported for an unknown architecture or tensor type, BadModel naming a missing or
    /// misshapen tensor or key, InvalidArgument when `devices` does not end with a CPU device,
    /// Cancelled when options.progress returned false.
    static std::shared_ptr<const Model> load(const std::string& path, std::vector<Device*> devices, const LoadOptions& options = {});

    const Hparams& hparams() const { return hp_; }
    /// The architecture's table entry (nullptr for a model loaded with LoadOptions::vocab_only).
    const ArchSpec* arch() const { return arch_; }
    const gguf::File& file() const { return file_; }
    /// The devices the model runs on, priority order, the CPU last.
    const std::vector<Device*>& devices() const { return devs_; }
    const LayerWeights& layer(int64_t i) const { return layers_[static_cast<size_t>(i)]; }
    Tensor* tok_embd() const { return w_.tok_embd; }       ///< [E, n_vocab]
    Tensor* output_norm() const { return w_.output_norm; } ///< F32 [E]
    Tensor* output() const { return w_.output; }           ///< [E, n_vocab] (token_embd when tied)
    Tensor* rope_freqs() const { return w_.rope_freqs; }   ///< F32 [n_rot / 2] or nullptr
    /// Builds the forward graph of shape s over the cache tensors kv (one per layer) with the
    /// architecture's builder. Throws tessel::Error(InvalidArgument) when shapes do not fit.
    ForwardInputs build_forward(Graph& g, const std::vector<KvLayer>& kv, const ForwardShape& s) const;
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
    /// The weight `name` of shape ne (ne1 = 1 for a vector), or nullptr when the file lacks an
    /// optional one.
    Tensor* weight(const std::string& name, int64_t ne0, int64_t ne1, bool required, bool f32_only);
    int64_t dim(Dim d) const;
    void place_and_load(const std::function<bool(float)>& progress);

    gguf::File file_;
    std::vector<Device*> devs_;
    Hparams hp_;
    std::deque<Tensor> tensors_;  // the weight tensors (stable addresses)
    const ArchSpec* arch_ = nullptr;
    ModelWeights w_;
    std::vector<LayerWeights> layers_;
    std::vector<std::unique_ptr<Buffer>> buffers_;
};

}  // namespace tessel::model
