// Subcommands of the tessel CLI. Each add_*_command registers its options and a callback on
// the app; callbacks throw tessel::Error on bad input, which main() prints on one line.
#pragma once

#include <CLI/CLI.hpp>

namespace tessel::cli {

/// `tessel info FILE [--json] [--full-arrays]`: GGUF metadata and tensor table.
void add_info_command(CLI::App& app);

/// `tessel tokenize -m FILE -p TEXT [--ids] [--no-bos] [--special]`: a vocabulary's tokens for a
/// prompt, as `id -> 'piece'` lines or (--ids) one `[id, ...]` line.
void add_tokenize_command(CLI::App& app);

/// `tessel test-ops [test|perf|support] [-b B] [-o OPS] [-t TYPES] [--ci] [--seed N] [-r N]
/// [--threads LIST]`: backend conformance against the reference kernels (docs/test-ops.md).
void add_test_ops_command(CLI::App& app);

/// `tessel run [-m FILE] (-p PROMPT | -f FILE) [-n N] [--chat] ...` and `tessel chat [-m FILE] ...`.
void add_run_commands(CLI::App& app);

/// `tessel perplexity [-m FILE] -f TEXT [-c 512] [-b N]`.
void add_perplexity_command(CLI::App& app);

/// `tessel bench [-m FILE]... [-p LIST] [-n LIST] [-pg P,N] [-t LIST] [-b LIST] [-ub LIST]
/// [-fa LIST] [-r N] [-o md|json|csv] [--device LIST] [--progress]`: llama-bench's measurement.
void add_bench_command(CLI::App& app);
/// `tessel quantize [--pure] [--allow-requantize] [-t N] IN OUT TYPE`: a copy of a model with its
/// weights quantized by llama-quantize's rules.
void add_quantize_command(CLI::App& app);

/// `tessel trace -f PROMPTS -o OUT.gguf [model flags]`: logits of teacher-forced prompts and every
/// node of a prompt and a decode graph with its inputs, for numerical checks (docs/trace.md).
void add_trace_command(CLI::App& app);

/// `tessel npu-device --socket FD` (internal, hidden from --help): serves the NPU host runtime of
/// the parent process over the inherited Unix socket FD (npu::device_process_main).
void add_npu_device_command(CLI::App& app);

}  // namespace tessel::cli
