// `tessel bench`: prompt and generation throughput with llama-bench's method, flags and output
// (runtime/bench.hpp for the measurement, runtime/bench_report.hpp for the formats).
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "commands.hpp"
#include "run_options.hpp"
#include "core/cpu_features.hpp"
#include "cpu/threadpool.hpp"
#include "backend/registry.hpp"
#include "model/model.hpp"
#include "runtime/bench.hpp"
#include "runtime/context.hpp"
#include "runtime/bench_report.hpp"
#include "runtime/model_desc.hpp"
#include "runtime/model_fetch.hpp"

#ifndef TESSEL_BUILD_COMMIT
#define TESSEL_BUILD_COMMIT "unknown"
#endif
#ifndef TESSEL_BUILD_NUMBER
#define TESSEL_BUILD_NUMBER 0
#endif

namespace tessel::cli {
namespace {

constexpr uint32_t kTokenSeed = 1234;
constexpr int64_t kMaxTokens = int64_t{1} << 24;  // -p, -n, -b, -ub: the longest context a model may declare  // random token ids: fixed, so runs decode the same tokens

struct BenchOptions {
    std::vector<std::string> models;  ///< -m, each possibly a comma list
    std::string n_prompt = "512", n_gen = "128", threads, n_batch = "2048", n_ubatch = "512", flash_attn = "auto";
    std::vector<std::string> pg;  ///< -pg N,M
    int reps = 5;
    std::string output = "md", device = "cpu";
    bool progress = false;
};

/// The values of a list flag, each in [min, max]; a malformed list is a usage error (exit 2).
std::vector<int64_t> int_list(const std::string& text, const char* flag, int64_t min, int64_t max) {
    std::vector<int64_t> v;
    try {
        v = runtime::parse_int_ranges(text, flag);
    } catch (const Error& e) {
        throw CLI::ValidationError(e.what());
    }
    for (int64_t x : v)
        if (x < min || x > max)
            throw CLI::ValidationError(std::string(flag) + ": " + std::to_string(x) + " is outside " + std::to_string(min) + ".." +
                                       std::to_string(max));
    return v;
}

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma - start));
        if (comma == std::string::npos) return out;
        start = comma + 1;
    }
}

/// -fa values: on/off/auto as run's flag, or llama-bench's 1/0/-1 (and its synonyms).
int flash_attn_value(const std::string& v) {
    if (v == "on" || v == "1" || v == "true" || v == "enabled") return 1;
    if (v == "off" || v == "0" || v == "false" || v == "disabled") return 0;
    if (v == "auto" || v == "-1") return -1;
    throw CLI::ValidationError("-fa: '" + v + "' is not on, off or auto (or 1, 0, -1)");
}

struct Printer {
    std::string format;
    runtime::MarkdownColumns cols;
    size_t count = 0;

    /// Written before the first record, so an error before any test leaves stdout empty.
    void header() {
        if (format == "md") std::fputs(runtime::bench_markdown_header(cols).c_str(), stdout);
        if (format == "csv") std::printf("%s\n", runtime::bench_csv_header().c_str());
        if (format == "json") std::fputs("[\n", stdout);
    }
    void record(const runtime::BenchRecord& r) {
        if (count == 0) header();
        if (format == "md") std::fputs(runtime::bench_markdown_row(r, cols).c_str(), stdout);
        if (format == "csv") std::printf("%s\n", runtime::bench_csv_row(r).c_str());
        if (format == "json") std::printf("%s%s", count ? ",\n" : "", runtime::bench_json(r, 2).c_str());
        std::fflush(stdout);
        ++count;
    }
    void footer() {
        if (format == "md") std::printf("\nbuild: %s (%d)\n", TESSEL_BUILD_COMMIT, TESSEL_BUILD_NUMBER);
        if (count == 0) header();
        if (format == "json") std::fputs(count ? "\n]\n" : "]\n", stdout);
    }
};

/// The loops of one model on one device (an entry of --device): the grid of the other flags.
struct Grid {
    std::vector<runtime::BenchTest> tests;
    std::vector<int64_t> threads, batches, ubatches;
    std::vector<int> fa;
};

/// Every test of `grid` for the model at `path` loaded onto `device`.
void bench_model(const BenchOptions& o, const std::string& path, const std::string& device, const Grid& grid, std::mt19937& rng,
                 Printer& out) {
    auto model = Model::load(path, device);
    runtime::BenchRecord base;
    base.build_commit = TESSEL_BUILD_COMMIT;
    base.build_number = TESSEL_BUILD_NUMBER;
    base.cpu_info = cpu_features().model;
    base.model_filename = path;
    base.model_type = runtime::model_description(model->impl().file(), model->impl().hparams());
    for (const gguf::TensorInfo& t : model->impl().file().tensors()) {
        base.model_size += t.size;
        base.model_n_params += static_cast<uint64_t>(t.n_elements());
    }
    base.device = device;
    base.backends.clear();  // the devices in priority order, e.g. "NPU0,CPU"
    for (const Device* d : model->impl().devices()) base.backends += (base.backends.empty() ? "" : ",") + d->name();
    // Every test's context must fit before the first is measured (Context would refuse it later).
    for (int64_t nub : grid.ubatches)
        for (int f : grid.fa)
            for (const runtime::BenchTest& test : grid.tests) try {
                    runtime::check_context_fits(model->impl().hparams(), test.n_prompt + test.n_gen, nub, f != 0, DType::F16, DType::F16);
                } catch (const Error& e) {
                    throw Error(e.code(), test.name() + ": " + e.what());
                }
    for (int64_t nb : grid.batches)
        for (int64_t nub : grid.ubatches)
            for (int f : grid.fa)
                for (int64_t nt : grid.threads)
                    for (const runtime::BenchTest& test : grid.tests) {
                        runtime::BenchRecord r = base;
                        r.n_batch = nb, r.n_ubatch = nub, r.flash_attn = f, r.n_threads = static_cast<int>(nt);
                        r.n_prompt = test.n_prompt, r.n_gen = test.n_gen;
                        r.test_time = runtime::utc_timestamp();
                        ContextParams cp;
                        cp.n_ctx = test.n_prompt + test.n_gen;
                        cp.n_ubatch = nub;
                        cp.n_threads = r.n_threads;
                        cp.flash_attn = f == 1 ? FlashAttn::On : f == 0 ? FlashAttn::Off : FlashAttn::Auto;
                        Context ctx(model, cp);
                        runtime::BenchProgress progress;
                        if (o.progress)
                            progress = [&](std::string_view phase, int rep) {
                                std::fprintf(stderr, "tessel bench: %s, %s, %s, %d threads: %s %d/%d\n", path.c_str(), device.c_str(),
                                             test.name().c_str(), r.n_threads, std::string(phase).c_str(), rep, o.reps);
                            };
                        r.samples_ns = runtime::run_bench(ctx, *model, test, nb, o.reps, rng, progress);
                        out.record(r);
                    }
}

void bench(const BenchOptions& o) {
    Grid grid;
    std::vector<runtime::BenchTest>& tests = grid.tests;
    for (int64_t p : int_list(o.n_prompt, "-p", 0, kMaxTokens))
        if (p > 0) tests.push_back({p, 0});
    for (int64_t n : int_list(o.n_gen, "-n", 0, kMaxTokens))
        if (n > 0) tests.push_back({0, n});
    for (const std::string& pg : o.pg) {
        const std::vector<std::string> parts = split_commas(pg);
        if (parts.size() != 2) throw CLI::ValidationError("-pg: '" + pg + "' is not PROMPT,GEN");
        const int64_t p = int_list(parts[0], "-pg", 0, kMaxTokens).at(0), n = int_list(parts[1], "-pg", 0, kMaxTokens).at(0);
        if (p + n > 0) tests.push_back({p, n});
    }
    if (tests.empty()) throw CLI::ValidationError("nothing to measure: -p and -n are both 0 (and no -pg)");
    grid.threads = o.threads.empty() ? std::vector<int64_t>{cpu::default_thread_count()} : int_list(o.threads, "-t", 1, 1024);
    grid.batches = int_list(o.n_batch, "-b", 1, kMaxTokens);
    grid.ubatches = int_list(o.n_ubatch, "-ub", 1, kMaxTokens);
    for (const std::string& v : split_commas(o.flash_attn)) grid.fa.push_back(flash_attn_value(v));
    std::vector<std::string> models;
    for (const std::string& m : o.models)
        for (const std::string& one : split_commas(m)) {
            if (one.empty()) throw CLI::ValidationError("-m: empty model name in '" + m + "'");
            models.push_back(one);
        }
    if (models.empty()) models.push_back(runtime::resolve_model("").string());
    std::vector<std::string> devices;
    for (const std::string& d : split_commas(o.device)) {
        if (d.empty()) throw CLI::ValidationError("--device: empty device name in '" + o.device + "'");
        if (const std::string bad = device_validator()(d); !bad.empty())  // before anything is measured
            throw CLI::ValidationError("--device: " + bad);
        devices.push_back(d);
    }

    Printer out{o.output, {grid.batches.size() > 1 || grid.batches[0] != 2048, grid.ubatches.size() > 1 || grid.ubatches[0] != 512,
                           grid.fa.size() > 1 || grid.fa[0] != -1}};
    std::mt19937 rng(kTokenSeed);
    for (const std::string& path : models)
        for (const std::string& device : devices)
            bench_model(o, path, device, grid, rng, out);
    out.footer();
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto o = std::make_shared<BenchOptions>();
    CLI::App* cmd = app.add_subcommand("bench", "Prompt (pp) and generation (tg) tokens/s, llama-bench's method and output");
    cmd->add_option("-m,--model", o->models, "GGUF model file(s): repeat or comma-separate (default: $TESSEL_MODEL, else the default model)");
    cmd->add_option("-p,--n-prompt", o->n_prompt, "Prompt lengths, tokens: a list like 128,512 or 128-512*2 (0: no pp test)")->capture_default_str();
    cmd->add_option("-n,--n-gen", o->n_gen, "Generated tokens: a list (0: no tg test)")->capture_default_str();
    cmd->add_option("--pg", o->pg, "A combined test PROMPT,GEN (pp then tg, timed together; also -pg; repeatable)");
    cmd->add_option("-t,--threads", o->threads, "CPU thread counts: a list (default: physical cores)");
    cmd->add_option("-b,--batch-size", o->n_batch, "Prompt tokens per decode call: a list")->capture_default_str();
    cmd->add_option("--ubatch-size", o->n_ubatch, "Tokens per forward graph: a list (also -ub)")->capture_default_str();
    cmd->add_option("--flash-attn", o->flash_attn, "Fused attention: a list of on, off, auto (also -fa)")->capture_default_str();
    add_packing_flag(*cmd);
    cmd->add_option("-r,--repetitions", o->reps, "Timed repetitions per test")->check(CLI::Range(1, 1000000))->capture_default_str();
    cmd->add_option("-o,--output", o->output, "Output format: md, json or csv")->check(CLI::IsMember({"md", "json", "csv"}))->capture_default_str();
    cmd->add_option("--device", o->device, "Devices to run on, each a separate test: a list of cpu, npu (the NPU takes the ops it claims, the CPU the rest)")
        ->capture_default_str();
    cmd->add_flag("--progress", o->progress, "Report each warm-up and repetition on stderr");
    cmd->callback([o] { bench(*o); });
}

}  // namespace tessel::cli
