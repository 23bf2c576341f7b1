// Running the tessel binary of this build (TESSEL_CLI_PATH) from tests, as a user would.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tessel::test {

/// What a run of the binary did.
struct CliResult {
    int exit_code = -1;  ///< exit status; 128 + signal when killed; -1 when it could not start
    std::string out, err;
    /// The non-empty lines of err.
    std::vector<std::string> err_lines() const;
};

/// The whole contents of a file ("" when it cannot be read).
std::string read_all(const std::filesystem::path& p);

/// Runs `tessel ARGS...` (posix_spawn, no shell) with `input` on stdin and stdout / stderr
/// captured through files in a private temporary folder (removed afterwards).
CliResult run_tessel(const std::vector<std::string>& args, const std::string& input = "");

}  // namespace tessel::test
