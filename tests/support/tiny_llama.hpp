// A small GGUF with seeded random weights, for model and runtime tests: by default a llama of
// 2 blocks, n_embd 128, 4 heads of 32 over 2 KV heads (grouped-query attention), n_ff 256,
// vocabulary 160, training context 512, rope base 10000. `layout` gives it the keys and extra
// weights of qwen2 (Q/K/V biases), qwen3 (q/k norms) or gemma3 (q/k norms, post norms, a
// sliding window). No tokenizer unless asked
// for: `vocab` writes a synthetic one, `vocab_from` copies a real model's (at most one of the two).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "gguf/value.hpp"

namespace tessel::test {

struct TinyLlamaOptions {
    DType matrix_type = DType::Q8_0;  ///< type of the 2-D weights (norms stay F32); types without a
                                      ///< quantizer (integers) get seeded random bytes
    bool tied_output = false;         ///< omit output.weight (use token_embd)
    uint32_t seed = 7;
    std::string arch = "llama";    ///< general.architecture (the keys stay <layout>.*)
    std::string layout = "llama";  ///< llama, qwen2, qwen3 or gemma3: key prefix and weights
    int64_t n_swa = 0;             ///< gemma3: <layout>.attention.sliding_window (0: no key)
    std::string omit;            ///< name of a tensor to leave out ("" = none)
    /// A GGUF whose tokenizer.* keys are copied (vocabulary size = its token count), so CLI
    /// commands that tokenize can run; "" = no tokenizer, vocabulary 160.
    std::filesystem::path vocab_from;
    /// Also write a byte-level BPE vocabulary (tokenizer.ggml.*: model gpt2, tokens "t0".."t159",
    /// one merge, BOS 0 added), so the public tessel::Model API can load the file.
    bool vocab = false;
    int64_t n_embd = 128;        ///< a multiple of 4 (4 heads of n_embd / 4)
    int64_t n_ff = 256;
    int64_t n_head_kv = 2;       ///< 1, 2 or 4
    int64_t n_layer = 2;
    /// Metadata set last, replacing keys of the same name (e.g. a hyper-parameter's bad value).
    std::vector<gguf::KeyValue> overrides;
};

/// Writes the model to `path` (overwritten) and returns path.
std::filesystem::path write_tiny_llama(const std::filesystem::path& path, const TinyLlamaOptions& opt = {});

}  // namespace tessel::test
