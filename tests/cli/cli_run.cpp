#include "cli_run.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace tessel::test {
std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> CliResult::err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string l; std::getline(in, l);)
        if (!l.empty()) lines.push_back(l);
    return lines;
}

CliResult run_tessel(const std::vector<std::string>& args, const std::string& input) {
    return run_tessel(args, CliOptions{input, {}, {}});
}

CliResult run_tessel(const std::vector<std::string>& args, const CliOptions& options) {
    static std::atomic<int> runs{0};
    const auto dir = std::filesystem::temp_directory_path() /
                     ("tessel-cli-run-" + std::to_string(::getpid()) + "-" + std::to_string(runs++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "stdin", std::ios::binary) << options.input;
    const std::string in = (dir / "stdin").string(), out = (dir / "stdout").string(), err = (dir / "stderr").string();

    std::vector<std::string> storage = options.wrapper;
    storage.push_back(TESSEL_CLI_PATH);
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_storage;
    for (char** e = environ; *e; ++e) {
        const std::string entry(*e), name = entry.substr(0, entry.find('='));
        bool changed = false;
        for (const std::string& c : options.env) changed |= c.substr(0, c.find('=')) == name;
        if (!changed) env_storage.push_back(entry);
    }
    for (const std::string& c : options.env)
        if (c.find('=') != std::string::npos) env_storage.push_back(c);
    std::vector<char*> envp;
    for (std::string& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    CliResult r;
    // A spawned child shares this process's memory map until it execs, and the kernel carries that
    // map's peak RSS into the child's ru_maxrss: reset the peak so the child reports its own.
    std::ofstream("/proc/self/clear_refs") << "5";
    const auto start = std::chrono::steady_clock::now();
    const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    if (rc == 0) {
        int status = 0;
        rusage ru{};
        wait4(pid, &status, 0, &ru);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        r.max_rss_kib = ru.ru_maxrss;
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        r.out = read_all(out);
        r.err = read_all(err);
    }
    std::filesystem::remove_all(dir);
    return r;
}

}  // namespace tessel::test
