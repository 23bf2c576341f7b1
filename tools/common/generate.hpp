// Text generation on one sequence: decode a prompt in batches, then sample one token per step
// until an end-of-generation token, the token budget, or the end of the context.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace tessel::tools {

enum class StopReason { EndOfGeneration, TokenLimit, ContextFull, StopString };

struct GenerateParams {
    int64_t n_predict = -1;  ///< tokens to generate; < 0: until end of generation or context
    int64_t n_batch = 2048;  ///< prompt tokens handed to one decode() call (>= 1)
    int32_t seq = 0;         ///< sequence to extend
    /// Generation stops once the generated text ends with one of these (llama.cpp's
    /// -r/--reverse-prompt); the tokens that completed it are kept and passed to on_token.
    std::vector<std::string> stop_strings;
};

struct GenerateStats {
    int64_t n_prompt = 0;     ///< prompt tokens decoded
    int64_t n_generated = 0;  ///< tokens sampled (the end-of-generation token not counted)
    double t_prompt = 0.0;    ///< seconds spent decoding the prompt
    double t_generate = 0.0;  ///< seconds spent sampling and decoding generated tokens
    StopReason stop = StopReason::EndOfGeneration;
};

/// Throws tessel::Error(InvalidArgument) "prompt is N tokens, the context has room for M (raise
/// -c)" when n_prompt tokens do not fit in ctx after n_past cached ones.
void require_prompt_fits(const tessel::Context& ctx, int64_t n_past, size_t n_prompt);

/// Appends `prompt` to sequence p.seq at positions n_past.. (n_past is advanced past every
/// token that enters the cache), then samples; on_token(id) is called for every generated token
/// except the end-of-generation one. Stops at end of generation, after p.n_predict tokens, when
/// the context is full, or when the text ends with one of p.stop_strings. Throws tessel::Error(InvalidArgument) when the prompt does
/// not fit in the context ("prompt is N tokens, the context has room for M"), before decoding.
GenerateStats generate(tessel::Context& ctx, const Model& model, Sampler& sampler, std::span<const int32_t> prompt,
                       int32_t& n_past, const GenerateParams& p, const std::function<void(int32_t)>& on_token);

}  // namespace tessel::tools
