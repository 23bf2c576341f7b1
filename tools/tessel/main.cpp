// tessel: one CLI binary with subcommands (see commands.hpp).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "tessel/errors.hpp"

int main(int argc, char** argv) {
    CLI::App app{"tessel: LLM inference engine for heterogeneous edge hardware"};
    app.require_subcommand(1);
    tessel::cli::add_info_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const tessel::Error& e) {
        std::fprintf(stderr, "tessel: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tessel: internal error: %s\n", e.what());
        return 2;
    }
    return 0;
}
