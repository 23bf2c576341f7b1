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
    long max_rss_kib = 0;  ///< the child's peak resident set (wait4's ru_maxrss), KiB
    double seconds = 0;    ///< wall time from start to exit
    /// The non-empty lines of err.
    std::vector<std::string> err_lines() const;
};

/// The whole contents of a file ("" when it cannot be read).
std::string read_all(const std::filesystem::path& p);

/// How to start the binary beyond its arguments.
struct CliOptions {
    std::string input;  ///< stdin
    /// Environment changes: NAME=value sets, a bare NAME unsets.
    std::vector<std::string> env;
    /// A command the binary runs under, e.g. {"prlimit", "--as=4294967296", "--"} (found on PATH).
    std::vector<std::string> wrapper;
};

/// Runs `tessel ARGS...` (posix_spawn, no shell) with stdout / stderr captured through files in a
/// private temporary folder (removed afterwards).
CliResult run_tessel(const std::vector<std::string>& args, const CliOptions& options);
/// The same with `input` on stdin and this process's environment.
CliResult run_tessel(const std::vector<std::string>& args, const std::string& input = "");

/// True when this build has a sanitizer (memory and time bounds do not hold there).
constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

}  // namespace tessel::test
