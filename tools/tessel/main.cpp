// tessel: one CLI, subcommands.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tessel/errors.hpp"

int main(int argc, char** argv) {
    CLI::App app{"tessel: LLM inference engine for heterogeneous edge hardware"};
    app.require_subcommand(1);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    return 0;
}
