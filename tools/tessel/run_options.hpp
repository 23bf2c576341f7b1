// Flags shared by the commands that load a model and decode (run, chat, perplexity), with
// llama.cpp's names and defaults.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "tessel/engine.hpp"
#include "tessel/sampling.hpp"

namespace tessel::cli {

struct ModelOptions {
    std::string model;         ///< -m; "" = $TESSEL_MODEL or the default model
    std::string device = "cpu";  ///< --device: cpu or npu (a registered device name, any case)
    int64_t n_ctx = 0;         ///< -c
    int n_threads = 0;         ///< -t
    int64_t n_batch = 2048;    ///< -b
    int64_t n_ubatch = 512;    ///< -ub
    std::string flash_attn = "auto";  ///< -fa on|off|auto
    std::string split_mode = "row";   ///< -sm none|row
    std::string type_k = "f16", type_v = "f16";
};

/// Registers -m, --device, -c, -t, -b, -ub, -fa, -sm, -ctk, -ctv and --no-packed on cmd.
void add_model_options(CLI::App& cmd, ModelOptions& o);
/// Accepts a --device name the backend registry resolves (cpu, npu, npu0, ...); else the registry's
/// message naming the devices there are (a flag error: exit 2).
CLI::Validator device_validator();
/// Registers -sm/--split-mode (none or row; llama.cpp's layer is refused: tessel splits a group by rows).
void add_split_mode_option(CLI::App& cmd, std::string& mode);
/// "none" -> SplitMode::None, else Row.
SplitMode split_mode_of(const std::string& mode);
/// Under mpirun with several ranks that split the rows (docs/npu.md, "A model across MPI ranks"), every
/// rank must decode the same tokens: `interactive` commands (chat, serve; their input reaches rank 0
/// only) and sampling with a random seed (`sampling`, when given) are flag errors naming the fix.
void check_mpi_ranks(const ModelOptions& o, const char* command, bool interactive, const SamplerParams* sampling = nullptr);
/// Ranks of the mpirun job this process is one of (OMPI_COMM_WORLD_SIZE, else PMI_SIZE), 1 outside one.
int mpi_ranks();
/// True in a rank other than 0 of an mpirun job: its reports (load, speed, where ops ran) are rank
/// 0's to print; its errors still print.
bool mpi_other_rank();
/// Registers --no-packed: weights stay in the CPU's plain buffer type (no CPU_PACKED).
void add_packing_flag(CLI::App& cmd);
/// Registers llama.cpp's sampling flags on cmd: --temp, --top-k, --top-p, --min-p, --typical,
/// --top-nsigma, --xtc-probability, --xtc-threshold, --repeat-penalty, --repeat-last-n,
/// --presence-penalty, --frequency-penalty, --dry-multiplier, --dry-base, --dry-allowed-length,
/// --dry-penalty-last-n, --dry-sequence-breaker, --mirostat, --mirostat-lr, --mirostat-ent,
/// -l/--logit-bias, --samplers, --sampling-seq, --seed. A malformed value is a flag error (exit
/// 2) naming the flag.
void add_sampling_options(CLI::App& cmd, SamplerParams& s);
/// The Sampler for `model`'s vocabulary. A --logit-bias token outside the vocabulary is a flag
/// error (CLI::ValidationError, exit 2); other bad values throw as Sampler's constructor.
Sampler make_sampler(const SamplerParams& s, const Model& model);

/// The whole contents of a text file given by a flag (-f). Throws tessel::Error(Io)
/// "<path>: cannot read: <reason>" or "<path>: not a regular file".
std::string read_text_file(const std::string& path);

/// A model loaded by a command, with how long loading took.
struct LoadedModel {
    std::shared_ptr<const Model> model;
    double seconds = 0.0;
    /// Prints "tessel: loaded FILE (arch, type, params, size) in S s" on stderr. Commands call it
    /// once their input has been checked, so bad input gives a single error line.
    void report() const;
};

/// Resolves the model path (-m, $TESSEL_MODEL, the cached default, fetched on first use) and
/// loads it. Throws tessel::Error naming the file when it cannot be loaded.
LoadedModel load_model(const ModelOptions& o);
/// Context parameters from the flags.
ContextParams context_params(const ModelOptions& o);

}  // namespace tessel::cli
