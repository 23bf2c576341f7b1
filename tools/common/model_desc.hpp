// A model's one-line description as llama.cpp prints it (llama_model_desc, llama-bench's
// model_type and "model" column): "<architecture> <size class> <file type>", e.g.
// "llama 256M Q4_1" for SmolLM2-135M (llama.cpp names llama models by block count).
//
//  - size class: llama.cpp's tables (src/models/<arch>.cpp), by block count. llama: 16, 22 -> 1B;
//    26, 28 -> 3B; 30 -> 256M; 32 -> 3B when the vocabulary has 49152 tokens, else 7B below 40000
//    tokens, else 8B; 36 -> 8B; 40 -> 13B; 48 -> 34B; 60 -> 30B; 80 -> 65B when head_count equals
//    head_count_kv, else 70B. gemma3: 18 -> 270M, 26 -> 1B, 32 -> 8B, 34 -> 4B, 48 -> 12B, 62 -> 27B.
//    qwen2: 24 -> 0.5B (n_embd 1024) or 1B, 28 -> 1.5B (n_embd 1536) or 7B, 32 -> 7B, 36 -> 3B,
//    40 -> 4B (20 heads) or 13B, 48 -> 14B, 64 -> 32B, 80 -> 70B. qwen3: 28 -> 0.6B (n_embd 1024)
//    or 1.7B, 36 -> 4B (n_embd 2560) or 8B, 40 -> 14B, 64 -> 32B. Anything else "?B".
//    Mixture-of-experts llama files (8 experts) are not classified.
//  - file type: the name of general.file_type (llama.cpp's llama_ftype values, e.g. 3 -> "Q4_1",
//    15 -> "Q4_K - Medium"); without that key, the most common tensor type (by count) named the
//    same way with the prefix "(guessed) ", e.g. "(guessed) Q8_0".
#pragma once

#include <cstdint>
#include <string>

#include "tessel/engine.hpp"
#include "tessel/gguf_file.hpp"

namespace tessel::tools {

/// llama.cpp's name of a file type (general.file_type), e.g. 3 -> "Q4_1"; "unknown, may not
/// work" for a value it does not define.
std::string file_type_name(uint32_t file_type);

/// llama.cpp's size class of a model (see above; from arch, n_layer, n_embd, n_vocab, n_head and
/// n_head_kv), e.g. "256M", or "?B".
std::string size_class(const ModelInfo& info);

/// "<arch> <size class> <file type>" for a loaded model (`info`) and the file it was loaded from.
std::string model_description(const GgufFile& file, const ModelInfo& info);

}  // namespace tessel::tools
