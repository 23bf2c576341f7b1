// tessel's developer tools: subcommands for the people working on tessel, not for running models.
// Unlike the user commands (../commands.hpp), which use the public API (include/tessel) only,
// these reach into the engine's internal headers (src/): backends and op graphs (test-ops), the
// quantizer (quantize), scheduler splits and intermediate tensors (trace), the NPU's device
// process (npu-device), CPU features and packed kernels (info --system / --kernels). They are
// built as the library target tessel_devtools and may change with the internals.
// `tessel --help` lists them under kDeveloperGroup.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace tessel::cli::dev {

/// The --help headings of the developer subcommands, and of developer options of user commands.
inline constexpr const char* kDeveloperGroup = "Developer tools (internal API, may change)";
inline constexpr const char* kDeveloperOptionsGroup = "Developer options (internal API, may change)";

/// Registers test-ops, quantize, trace, render-template and the hidden npu-device (below), in that order, in
/// kDeveloperGroup, and points the NPU's process link at this executable (/proc/self/exe), which
/// it starts as `tessel npu-device` unless TESSEL_NPU_DEVICE_EXE says otherwise.
void add_developer_commands(CLI::App& app);

/// `tessel test-ops [test|perf|support] [-b B] [-o OPS] [-t TYPES] [--ci] [--seed N] [-r N]
/// [--threads LIST]`: backend conformance against the reference kernels (docs/test-ops.md).
void add_test_ops_command(CLI::App& app);

/// `tessel quantize [--pure] [--allow-requantize] [-t N] IN OUT TYPE`: a copy of a model with its
/// weights quantized by llama-quantize's rules.
void add_quantize_command(CLI::App& app);

/// `tessel trace -f PROMPTS -o OUT.gguf [model flags]`: logits of teacher-forced prompts and every
/// node of a prompt and a decode graph with its inputs, for numerical checks (docs/trace.md).
void add_trace_command(CLI::App& app);

/// `tessel render-template TEMPLATE CONTEXT.json [--date YYYY-MM-DD]`: a Jinja template rendered
/// by tessel's interpreter with the JSON object's keys as variables, to stdout (the conformance
/// check against Python's jinja2, scripts/check_chat_templates.py).
void add_render_template_command(CLI::App& app);

/// `tessel npu-device --socket FD` (internal, hidden from --help): serves the NPU host runtime of
/// the parent process over the inherited Unix socket FD (npu::device_process_main).
void add_npu_device_command(CLI::App& app);

/// Adds `info`'s developer options to the info subcommand `info` (after its own, in
/// kDeveloperOptionsGroup): --system (this CPU: model, cores, ISA features detected / usable under
/// TESSEL_CPU_ISA, tiers), --kernels (the packed CPU kernels per weight type and which the chain
/// selects) and -t (threads for --kernels' plan); each excludes `file` and `full_arrays`.
/// Returns the handler info calls first: given info's --json, it prints what a developer option
/// asked for and returns true, or returns false when none was given.
std::function<bool(bool json)> add_info_developer_options(CLI::App& info, CLI::Option* file, CLI::Option* full_arrays);

}  // namespace tessel::cli::dev
