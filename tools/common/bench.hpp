// Throughput measurement the way llama.cpp's llama-bench does it (tools/llama-bench):
//
//  - a test is pp N (N prompt tokens), tg N (N generated tokens) or pp N + tg M;
//  - before the timed runs one warm-up run: the whole prompt, and one generated token;
//  - each timed repetition empties the KV cache, then decodes the prompt as random token ids in
//    chunks of n_batch (the first token is BOS when the model adds one; the last entry of each
//    chunk asks for logits), then the generated tokens one decode per token (the first is BOS
//    when the model adds one, later ones random), positions continuing after the prompt;
//  - a repetition's sample is its wall time in nanoseconds (std::chrono::steady_clock) and its
//    speed (n_prompt + n_gen) / time in tokens per second. Tokenization and sampling are never
//    timed: the token ids come from a fixed-seed generator, no logits are read.
// tessel's decode() returns when the results are computed, so no extra synchronization is needed.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/engine.hpp"

namespace tessel::tools {

/// One test: prompt processing, generation, or both.
struct BenchTest {
    int64_t n_prompt = 0;  ///< prompt tokens, decoded n_batch at a time
    int64_t n_gen = 0;     ///< generated tokens, one decode each

    /// llama-bench's test name: "pp512", "tg128" or "pp512+tg128".
    std::string name() const;
};

/// Mean and sample standard deviation (divisor n - 1) of a list of values.
struct SampleStats {
    double mean = 0.0;    ///< 0 for an empty list
    double stddev = 0.0;  ///< 0 for fewer than 2 values
};

/// Mean and sample standard deviation of `values`.
SampleStats sample_stats(std::span<const double> values);

/// Tokens per second of each sample: n_tokens · 1e9 / ns (a sample of 0 ns gives 0).
std::vector<double> tokens_per_second(std::span<const uint64_t> samples_ns, int64_t n_tokens);

/// Integers of a llama-bench list: comma-separated items `first[-last[(+|*)step]]`, e.g. "1,2",
/// "128-512*2" (128, 256, 512), "1-4+1" (1, 2, 3, 4); values >= 0. Throws
/// tessel::Error(InvalidArgument) naming `flag` for an empty list, a malformed item, a range
/// whose step does not grow, or a value above 2^31 - 1.
std::vector<int64_t> parse_int_ranges(std::string_view text, std::string_view flag);

/// Progress of a run: "warmup" or "rep", and the repetition (1-based; 0 for the warm-up).
using BenchProgress = std::function<void(std::string_view phase, int rep)>;

/// Runs `test` on `ctx` (which must hold at least n_prompt + n_gen cells): the warm-up, then
/// `reps` timed repetitions; returns one sample per repetition, nanoseconds. Random token ids
/// come from `rng`. Throws what Context::decode throws (tessel::Error), and
/// tessel::Error(InvalidArgument) for n_batch < 1, reps < 1 or a test with no tokens.
std::vector<uint64_t> run_bench(tessel::Context& ctx, const tessel::Model& model, const BenchTest& test, int64_t n_batch, int reps,
                                std::mt19937& rng, const BenchProgress& progress = {});

}  // namespace tessel::tools
