// The user subcommands of the tessel CLI. Each add_*_command registers its options and a callback
// on the app; callbacks throw tessel::Error on bad input, which main() prints on one line. They
// use tessel's public API only (include/tessel, and tools/common built on it); the developer
// tools, which use internal headers, are declared in dev/commands.hpp.
#pragma once

#include <CLI/CLI.hpp>

namespace tessel::cli {

/// `tessel info FILE [--json] [--full-arrays]`: GGUF metadata and tensor table (with the
/// developer options of dev::add_info_developer_options).
void add_info_command(CLI::App& app);

/// `tessel tokenize -m FILE -p TEXT [--ids] [--no-bos] [--no-parse-special]`: a vocabulary's tokens for a
/// prompt, as `id -> 'piece'` lines or (--ids) one `[id, ...]` line.
void add_tokenize_command(CLI::App& app);

/// `tessel run [-m FILE] (-p PROMPT | -f FILE) [-n N] [--chat | --no-chat] ...` and `tessel chat [-m FILE] ...`.
void add_run_commands(CLI::App& app);

/// `tessel perplexity [-m FILE] -f TEXT [-c 512] [-b N]`.
void add_perplexity_command(CLI::App& app);

/// `tessel bench [-m FILE]... [-p LIST] [-n LIST] [-pg P,N] [-t LIST] [-b LIST] [-ub LIST]
/// [-fa LIST] [-r N] [-o md|json|csv] [--device LIST] [--progress]`: llama-bench's measurement.
void add_bench_command(CLI::App& app);

/// `tessel profile [-m FILE] [--device npu|cpu] [-p TEXT] [-n N]`: per-op tables (count, total ms,
/// % of step, GB/s, GFLOP/s) of the prompt as one graph and of a decode step (mean of N).
void add_profile_command(CLI::App& app);

#ifdef TESSEL_WITH_SERVER
/// `tessel serve [-m FILE] [--host H] [--port P] [-np N] [--queue N] [--api-key KEY] ...`: the
/// OpenAI-compatible HTTP server (tools/server, docs/server.md).
void add_serve_command(CLI::App& app);
#endif

}  // namespace tessel::cli
