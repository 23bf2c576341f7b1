// tessel: one CLI binary with subcommands: the user commands (commands.hpp, public API only) and
// the developer tools (dev/commands.hpp, internal headers).
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "dev/commands.hpp"
#include "run_options.hpp"
#include "tessel/errors.hpp"
#include "tessel/system.hpp"

namespace {

// llama.cpp's multi-letter single-dash flags, which CLI11 would read as clusters of one-letter
// flags: rewritten to their long names before parsing.
constexpr std::pair<std::string_view, const char*> kDashAliases[] = {
    {"-ub", "--ubatch-size"}, {"-fa", "--flash-attn"}, {"-ctk", "--cache-type-k"},
    {"-ctv", "--cache-type-v"}, {"-sys", "--system-prompt"},
    {"-pg", "--pg"}, {"-cnv", "--conversation"}, {"-no-cnv", "--no-conversation"}, {"-sp", "--special"},
    {"-jf", "--json-schema-file"}, {"-np", "--parallel"}, {"-sm", "--split-mode"},
};

std::vector<std::string> rewrite_aliases(int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        for (const auto& [alias, name] : kDashAliases)
            if (a == alias) a = name;
        args.push_back(std::move(a));
    }
    std::reverse(args.begin(), args.end());  // CLI11 parses a vector from the back
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    // Under mpirun every rank runs the same command and computes its part (docs/npu.md, "A model
    // across MPI ranks"); rank 0 alone writes the command's output.
    if (tessel::cli::mpi_other_rank())
        if (!std::freopen("/dev/null", "w", stdout)) return 1;
    CLI::App app{"tessel: LLM inference engine for heterogeneous edge hardware"};
    app.require_subcommand(1);
    tessel::cli::add_info_command(app);
    tessel::cli::add_run_commands(app);
    tessel::cli::add_perplexity_command(app);
    tessel::cli::add_tokenize_command(app);
    tessel::cli::add_bench_command(app);
    tessel::cli::add_profile_command(app);
#ifdef TESSEL_WITH_SERVER
    tessel::cli::add_serve_command(app);
#endif
    tessel::cli::dev::add_developer_commands(app);
    try {
        // Every TESSEL_* setting the library reads later, so a bad value is reported before any
        // command runs (docs/config.md). TESSEL_MODEL is read only by the commands that load a model.
        tessel::check_environment();
        app.name("tessel");
        std::vector<std::string> args = rewrite_aliases(argc, argv);
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help
        std::fprintf(stderr, "tessel: error: %s (see tessel --help)\n", e.what());
        return 2;
    } catch (const tessel::Error& e) {
        // A bad TESSEL_* value is a setting the user gave, like a flag: exit 2 (README).
        std::fprintf(stderr, "tessel: error: %s\n", e.what());
        return e.code() == tessel::ErrorCode::Environment ? 2 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tessel: internal error: %s\n", e.what());
        return 2;
    }
    // Output goes to scripts (--json): a failed write (full disk, closed pipe) is an error.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "tessel: error: cannot write output: %s\n", std::strerror(errno));
        return 1;
    }
    return 0;
}
