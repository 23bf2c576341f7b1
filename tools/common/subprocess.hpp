// Running helper programs (python3 for the default-model fetch) without a shell: arguments are
// passed as a vector straight to posix_spawnp, so no text is ever parsed as shell syntax.
#pragma once

#include <string>
#include <vector>

namespace tessel::tools {

/// How a child process ended.
struct ExitStatus {
    bool exited = false;  ///< true: ended by exit() with `code`; false: killed by `signal`
    int code = 0;
    int signal = 0;

    bool ok() const { return exited && code == 0; }
    /// "exited with status 1" / "was killed by signal 9".
    std::string describe() const;
};

/// Runs argv[0] (looked up on $PATH) with `argv` and the current environment and waits for it.
/// The child's stdin and stderr are this process's; its stdout goes to this process's stderr,
/// so a helper's progress output never mixes with tessel's own stdout.
/// Throws tessel::Error(InvalidArgument) when argv is empty and tessel::Error(Io) when the
/// program cannot be started (e.g. "python3: not found on PATH").
ExitStatus run_process(const std::vector<std::string>& argv);

}  // namespace tessel::tools
