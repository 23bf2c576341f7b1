// tessel's public API: load a model once, make contexts from it, decode batches, read logits.
//
//   auto model = tessel::Model::load("model.gguf");
//   tessel::Context ctx(model, {});
//   auto ids = model->tokenize("Hello", /*add_special=*/true, /*parse_special=*/false);
//   std::vector<tessel::BatchToken> batch;  // (token, position, sequence, wants logits)
//   for (int i = 0; i < (int)ids.size(); ++i) batch.push_back({ids[i], i, 0, i + 1 == (int)ids.size()});
//   ctx.decode(batch);
//   std::span<const float> logits = ctx.logits(0);  // n_vocab floats
//
// A model (hyper-parameters, weights in device buffers, vocabulary) is immutable after load and
// may be shared by several contexts, each with its own KV cache (several sequences) and
// compute buffers. Every failure caused by input throws tessel::Error (errors.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessel/errors.hpp"

namespace tessel {

namespace model { class Model; }
namespace vocab { class Tokenizer; }
namespace runtime { class Context; }

/// Facts about a loaded model.
struct ModelInfo {
    std::string arch;       ///< general.architecture, e.g. "llama"
    std::string name;       ///< general.name
    std::string file;       ///< path it was loaded from
    int64_t n_vocab = 0;    ///< tokens
    int64_t n_ctx_train = 0;  ///< training context, tokens
    int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0;
    int64_t n_params = 0;   ///< weight elements
    uint64_t size = 0;      ///< bytes of weight data
    std::string type;       ///< file type by majority of matrix weights, e.g. "Q4_1"
};

class Model {
public:
    /// Loads a GGUF model to run on `device`: "cpu", or "npu" (NPU0; or a registered name such
    /// as "npu1") with the CPU as the fallback for the nodes the NPU does not claim. Each weight is
    /// placed where the device that uses it reads it (model/weights.hpp). Throws tessel::Error:
    /// Io / Gguf* (file), Unsupported (architecture, tensor type, tokenizer), BadModel (missing or
    /// misshapen key/tensor), InvalidArgument (an unknown device name, listing the devices),
    /// Device (the NPU's runtime could not be started).
    static std::shared_ptr<const Model> load(const std::string& path, const std::string& device = "cpu");
    ~Model();

    const ModelInfo& info() const { return info_; }

    /// Token ids of `text`; add_special adds BOS/EOS as the model's tokenizer says;
    /// parse_special turns special-token text (e.g. "<|im_start|>") into those tokens.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;
    /// Bytes of one token (special tokens render as their text only when `special`).
    std::string token_to_piece(int32_t token, bool special = false) const;
    /// End-of-generation tokens (eos, eot, <|im_end|>, <|endoftext|>, ...).
    bool is_eog(int32_t token) const;
    int32_t bos() const;  ///< BOS id, or -1
    bool adds_bos() const;  ///< tokenize(..., add_special = true) prepends BOS
    /// tokenizer.chat_template, or "" when the file has none.
    std::string chat_template() const;

    // internal
    const model::Model& impl() const { return *impl_; }
    const vocab::Tokenizer& tokenizer() const { return *tok_; }
    std::shared_ptr<const model::Model> impl_ptr() const { return impl_; }

private:
    Model() = default;
    std::shared_ptr<const model::Model> impl_;
    std::unique_ptr<vocab::Tokenizer> tok_;
    ModelInfo info_;
};

enum class FlashAttn { Off, On, Auto };

struct ContextParams {
    int64_t n_ctx = 0;        ///< KV cells (tokens); 0: the model's training context capped at 4096
    int64_t n_ubatch = 512;   ///< tokens per forward graph (decode splits larger batches)
    int n_threads = 0;        ///< CPU threads; 0: the number of physical cores
    FlashAttn flash_attn = FlashAttn::Auto;  ///< Auto: fused attention (FLASH_ATTN_EXT)
    std::string type_k = "f16";  ///< KV cache types: f16, f32 or q8_0 (q8_0 V needs flash attention)
    std::string type_v = "f16";
};

/// One entry of a decode batch.
struct BatchToken {
    int32_t token = 0;
    int32_t pos = 0;      ///< position in its sequence, >= 0
    int32_t seq = 0;      ///< sequence id, 0..63
    bool logits = false;  ///< keep this entry's logits
};

class Context {
public:
    /// Throws tessel::Error(InvalidArgument) for bad parameters.
    Context(std::shared_ptr<const Model> model, const ContextParams& params);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    /// Decodes a batch (any number of tokens and sequences). Throws tessel::Error:
    /// InvalidArgument naming a bad entry (before anything runs), ContextFull when the cache
    /// has no free cells for the rest (the tokens decoded before stay in the cache).
    void decode(std::span<const BatchToken> batch);
    /// Logits (n_vocab floats) of the i-th entry of the last decode that asked for logits.
    std::span<const float> logits(size_t i) const;
    size_t n_outputs() const;

    int64_t n_ctx() const;  ///< cache size, tokens
    /// Removes positions [p0, p1) of sequence seq from the cache (p1 < 0: to the end; seq < 0: all).
    void seq_rm(int32_t seq, int32_t p0, int32_t p1);
    /// Makes sequence dst share positions [p0, p1) of src (p1 < 0: to the end).
    void seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1);
    /// Largest position of seq in the cache, or -1.
    int32_t seq_pos_max(int32_t seq) const;
    /// Empties the cache.
    void clear();
    bool flash_attn() const;
    /// Compute nodes (views excluded) of the last decoded graph per device name, in the order the
    /// devices run their first split, e.g. {{"NPU0", 575}}; empty before the first decode.
    std::vector<std::pair<std::string, int64_t>> graph_nodes_per_device() const;

    runtime::Context& impl() { return *impl_; }

private:
    std::shared_ptr<const Model> model_;
    std::unique_ptr<runtime::Context> impl_;
};

}  // namespace tessel
