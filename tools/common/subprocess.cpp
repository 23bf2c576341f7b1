#include "common/subprocess.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tessel/errors.hpp"

extern char** environ;

namespace tessel::tools {

std::string ExitStatus::describe() const {
    // 127 is what a child reports when exec failed after a plain fork, as under QEMU user mode.
    if (exited && code == 127) return "exited with status 127 (program not found or not executable)";
    if (exited) return std::string("exited with status ") + std::to_string(code);
    return std::string("was killed by signal ") + std::to_string(signal);
}

namespace {

// posix_spawn file actions, released on every path out of run_process.
class FileActions {
public:
    FileActions() { ok_ = posix_spawn_file_actions_init(&fa_) == 0; }
    ~FileActions() {
        if (ok_) posix_spawn_file_actions_destroy(&fa_);
    }
    FileActions(const FileActions&) = delete;
    FileActions& operator=(const FileActions&) = delete;
    bool ok() const { return ok_; }
    posix_spawn_file_actions_t* get() { return &fa_; }

private:
    posix_spawn_file_actions_t fa_{};
    bool ok_ = false;
};

}  // namespace

ExitStatus run_process(const std::vector<std::string>& argv) {
    if (argv.empty()) throw Error(ErrorCode::InvalidArgument, "run_process: empty argument list");
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    FileActions actions;
    if (!actions.ok() || posix_spawn_file_actions_adddup2(actions.get(), STDERR_FILENO, STDOUT_FILENO) != 0)
        throw Error(ErrorCode::Io, argv[0] + ": cannot set up process file actions");
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, argv[0].c_str(), actions.get(), nullptr, args.data(), environ);
    if (rc == ENOENT) throw Error(ErrorCode::Io, argv[0] + ": not found on PATH");
    if (rc != 0) throw Error(ErrorCode::Io, argv[0] + ": cannot start: " + std::strerror(rc));

    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) throw Error(ErrorCode::Io, argv[0] + ": waitpid failed: " + std::strerror(errno));
    }
    ExitStatus st;
    if (WIFEXITED(status)) {
        st.exited = true;
        st.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        st.signal = WTERMSIG(status);
    }
    return st;
}

}  // namespace tessel::tools
