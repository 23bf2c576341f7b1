// `tessel test-ops [test|perf|support]`: flags, their validation (bad values are one-line usage
// errors, exit 2) and dispatch to the modes. Any failed case makes the command exit 1.
#include <limits>
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "backend/registry.hpp"
#include "dev/commands.hpp"
#include "tessel/errors.hpp"
#include "test_ops.hpp"
#include "runtime/devices.hpp"

namespace tessel::cli::dev {
namespace {

struct RawOptions {
    std::string mode = "test";
    std::string backends, ops, types, threads;
    bool ci = false;
    uint32_t seed = 42;
    int reps = 0;
};

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t comma = s.find(',', start);
        const size_t end = comma == std::string::npos ? s.size() : comma;
        out.push_back(s.substr(start, end - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

std::string upper(std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

[[noreturn]] void bad(const std::string& flag, const std::string& what) { throw CLI::ValidationError(flag, what); }

test_ops::Options validate(const RawOptions& raw) {
    using test_ops::Mode;
    test_ops::Options opt;
    if (raw.mode == "test") opt.mode = Mode::Test;
    else if (raw.mode == "perf") opt.mode = Mode::Perf;
    else if (raw.mode == "support") opt.mode = Mode::Support;
    else bad("mode", "'" + raw.mode + "' is not one of test, perf, support");

    if (!raw.backends.empty()) {
        std::string known;
        for (Device* d : runtime::device_registry().devices()) known += (known.empty() ? "" : ", ") + d->name();
        for (const std::string& name : split_list(raw.backends)) {
            if (!runtime::device_registry().find(name)) bad("-b", "no backend named '" + name + "' (available: " + known + ")");
            opt.backends.push_back(name);
        }
    }
    if (!raw.ops.empty()) {
        const std::vector<test_ops::Case> cases = opt.mode == Mode::Perf ? test_ops::perf_cases() : test_ops::test_cases();
        for (const std::string& name : split_list(raw.ops)) {
            const std::string want = upper(name);
            Op found = Op::COUNT_;
            for (int i = 0; i < static_cast<int>(Op::COUNT_); ++i)
                if (want == op_name(static_cast<Op>(i))) found = static_cast<Op>(i);
            if (found == Op::COUNT_) bad("-o", "unknown op '" + name + "' (use names like MUL_MAT)");
            if (std::none_of(cases.begin(), cases.end(), [&](const test_ops::Case& c) { return c.op == found; }))
                bad("-o", std::string("no ") + (opt.mode == Mode::Perf ? "perf" : "test") + " cases for op " + want);
            opt.ops.push_back(found);
        }
    }
    if (!raw.types.empty()) {
        for (const std::string& name : split_list(raw.types)) {
            const auto t = dtype_from_name(name);
            if (!t) bad("-t", "unknown type '" + name + "' (use GGUF names like Q4_0)");
            opt.types.push_back(*t);
        }
    }
    if (!raw.threads.empty()) {
        for (const std::string& item : split_list(raw.threads)) {
            int n = 0;
            bool ok = !item.empty() && item.size() <= 4 && std::all_of(item.begin(), item.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
            if (ok) n = std::stoi(item);
            if (!ok || n < 1 || n > 1024) bad("--threads", "'" + item + "' is not a thread count (1..1024)");
            opt.threads.push_back(n);
        }
    }
    opt.ci = raw.ci;
    opt.seed = raw.seed;
    opt.reps = raw.reps;
    if (opt.mode != test_ops::Mode::Support) {  // -o/-t that select no case are a usage error
        try {
            test_ops::select_cases(opt.mode == test_ops::Mode::Perf ? test_ops::perf_cases() : test_ops::test_cases(), opt);
        } catch (const Error& e) {
            bad("-o/-t", e.what());
        }
    }
    return opt;
}

}  // namespace

void add_test_ops_command(CLI::App& app) {
    auto raw = std::make_shared<RawOptions>();
    CLI::App* cmd = app.add_subcommand("test-ops", "check every op of every backend against the reference kernels");
    cmd->group(kDeveloperGroup);
    cmd->add_option("mode", raw->mode, "test (default): compare with the reference; perf: time ops; support: op table");
    cmd->add_option("-b,--backend", raw->backends, "backends to test, comma-separated (default: all)");
    cmd->add_option("-o,--op", raw->ops, "ops to test, comma-separated (e.g. MUL_MAT,ROPE)");
    cmd->add_option("-t,--type", raw->types, "weight/input types, comma-separated GGUF names (e.g. Q4_0,F16)");
    cmd->add_flag("--ci", raw->ci, "a seeded subset of the cases, quick enough for CTest");
    cmd->add_option("--seed", raw->seed, "seed of the data and of the --ci subset (default 42)")
        ->check(CLI::Range(uint32_t{0}, std::numeric_limits<uint32_t>::max()));
    cmd->add_option("-r,--reps", raw->reps, "perf: runs per measurement (default: until ~0.2 s)")->check(CLI::Range(1, 1000000));
    cmd->add_option("--threads", raw->threads, "CPU thread counts, comma-separated (test default 1,2,4; perf: all cores)");
    cmd->callback([raw] {
        const test_ops::Options opt = validate(*raw);
        switch (opt.mode) {
            case test_ops::Mode::Test: {
                const int failed = test_ops::run_tests(opt);
                if (failed > 0)
                    throw Error(ErrorCode::InvalidArgument, "test-ops: " + std::to_string(failed) + " failure(s) (cases, or a backend that ran none)");
                break;
            }
            case test_ops::Mode::Perf: {
                const int errors = test_ops::run_perf(opt);
                if (errors > 0)
                    throw Error(ErrorCode::InvalidArgument, "test-ops perf: " + std::to_string(errors) + " case(s) ended in an error");
                break;
            }
            case test_ops::Mode::Support: test_ops::run_support(opt); break;
        }
    });
}

}  // namespace tessel::cli::dev
