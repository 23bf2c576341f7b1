// `tessel bench`: prompt and generation throughput with llama-bench's method, flags and output
// (tools/common/bench.hpp for the measurement, tools/common/bench_report.hpp for the formats).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common/bench.hpp"
#include "common/bench_report.hpp"
#include "common/model_desc.hpp"
#include "common/model_fetch.hpp"
#include "run_options.hpp"
#include "tessel/device.hpp"
#include "tessel/engine.hpp"
#include "tessel/gguf_file.hpp"
#include "tessel/resources.hpp"
#include "tessel/system.hpp"

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
    std::string n_prompt = "512", n_gen = "128", threads, n_batch = "2048", n_ubatch = "512", flash_attn = "auto", split_mode = "row";
    std::vector<std::string> pg;  ///< -pg N,M
    int reps = 5;
    std::string output = "md", device = "cpu";
    bool progress = false;
};

/// The values of a list flag, each in [min, max]; a malformed list is a usage error (exit 2).
std::vector<int64_t> int_list(const std::string& text, const char* flag, int64_t min, int64_t max) {
    std::vector<int64_t> v;
    try {
        v = tools::parse_int_ranges(text, flag);
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
    tools::MarkdownColumns cols;
    size_t count = 0;

    /// Written before the first record, so an error before any test leaves stdout empty.
    void header() {
        if (format == "md") std::fputs(tools::bench_markdown_header(cols).c_str(), stdout);
        if (format == "csv") std::printf("%s\n", tools::bench_csv_header().c_str());
        if (format == "json") std::fputs("[\n", stdout);
    }
    void record(const tools::BenchRecord& r) {
        if (count == 0) header();
        if (format == "md") std::fputs(tools::bench_markdown_row(r, cols).c_str(), stdout);
        if (format == "csv") std::printf("%s\n", tools::bench_csv_row(r).c_str());
        if (format == "json") std::printf("%s%s", count ? ",\n" : "", tools::bench_json(r, 2).c_str());
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
    std::vector<tools::BenchTest> tests;
    std::vector<int64_t> threads, batches, ubatches;
    std::vector<int> fa;
    std::vector<std::string> split_modes;
};

/// The context of one test: n_prompt + n_gen cells, f16 KV cache; fa = 1 on, 0 off, -1 auto.
ContextParams test_context_params(const tools::BenchTest& test, int64_t n_ubatch, int fa, int n_threads, const std::string& sm = "row") {
    ContextParams cp;
    cp.split_mode = split_mode_of(sm);
    cp.n_ctx = test.n_prompt + test.n_gen;
    cp.n_ubatch = n_ubatch;
    cp.n_threads = n_threads;
    cp.flash_attn = fa == 1 ? FlashAttn::On : fa == 0 ? FlashAttn::Off : FlashAttn::Auto;
    return cp;
}

/// Every test of `grid` for the model at `path` loaded onto `device`.
void bench_model(const BenchOptions& o, const std::string& path, const std::string& device, const Grid& grid, std::mt19937& rng,
                 Printer& out) {
    auto model = Model::load(path, device);
    tools::BenchRecord base;
    base.build_commit = TESSEL_BUILD_COMMIT;
    base.build_number = TESSEL_BUILD_NUMBER;
    base.cpu_info = cpu_info().model;
    base.model_filename = path;
    const GgufFile file = GgufFile::open(path);  // the tensor table of the file just loaded
    base.model_type = tools::model_description(file, model->info());
    for (const GgufTensorInfo& t : file.tensors()) {
        base.model_size += t.bytes;
        base.model_n_params += static_cast<uint64_t>(t.n_elements());
    }
    base.device = device;
    base.backends.clear();  // the devices in priority order, e.g. "NPU0,CPU"
    for (const std::string& d : model_devices(*model)) base.backends += (base.backends.empty() ? "" : ",") + d;
    // Every test's context must fit before the first is measured (Context would refuse it later).
    for (int64_t nub : grid.ubatches)
        for (int f : grid.fa)
            for (const tools::BenchTest& test : grid.tests) try {
                    check_context_fits(*model, test_context_params(test, nub, f, 1));
                } catch (const Error& e) {
                    throw Error(e.code(), test.name() + ": " + e.what());
                }
    for (int64_t nb : grid.batches)
        for (int64_t nub : grid.ubatches)
            for (const std::string& sm : grid.split_modes)
            for (int f : grid.fa)
                for (int64_t nt : grid.threads)
                    for (const tools::BenchTest& test : grid.tests) {
                        tools::BenchRecord r = base;
                        r.n_batch = nb, r.n_ubatch = nub, r.flash_attn = f, r.n_threads = static_cast<int>(nt), r.split_mode = sm;
                        r.n_prompt = test.n_prompt, r.n_gen = test.n_gen;
                        r.test_time = tools::utc_timestamp();
                        Context ctx(model, test_context_params(test, nub, f, r.n_threads, sm));
                        tools::BenchProgress progress;
                        if (o.progress)
                            progress = [&](std::string_view phase, int rep) {
                                std::fprintf(stderr, "tessel bench: %s, %s, %s, %d threads: %s %d/%d\n", path.c_str(), device.c_str(),
                                             test.name().c_str(), r.n_threads, std::string(phase).c_str(), rep, o.reps);
                            };
                        r.samples_ns = tools::run_bench(ctx, *model, test, nb, o.reps, rng, progress);
                        out.record(r);
                    }
}

void bench(const BenchOptions& o) {
    Grid grid;
    std::vector<tools::BenchTest>& tests = grid.tests;
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
    grid.threads = o.threads.empty() ? std::vector<int64_t>{cpu_info().physical_cores} : int_list(o.threads, "-t", 1, tessel::kMaxThreads);
    grid.batches = int_list(o.n_batch, "-b", 1, kMaxTokens);
    grid.ubatches = int_list(o.n_ubatch, "-ub", 1, kMaxTokens);
    for (const std::string& v : split_commas(o.flash_attn)) grid.fa.push_back(flash_attn_value(v));
    for (const std::string& v : split_commas(o.split_mode)) {
        if (v != "none" && v != "row") throw CLI::ValidationError("--split-mode: " + v + " not in {none,row}");  // run's wording (CLI::IsMember)
        grid.split_modes.push_back(v);
    }
    std::vector<std::string> models;
    for (const std::string& m : o.models)
        for (const std::string& one : split_commas(m)) {
            if (one.empty()) throw CLI::ValidationError("-m: empty model name in '" + m + "'");
            models.push_back(one);
        }
    if (models.empty()) models.push_back(tools::resolve_model("").string());
    std::vector<std::string> devices;
    for (const std::string& d : split_commas(o.device)) {
        if (d.empty()) throw CLI::ValidationError("--device: empty device name in '" + o.device + "'");
        if (const std::string bad = device_validator()(d); !bad.empty())  // before anything is measured
            throw CLI::ValidationError("--device: " + bad);
        devices.push_back(d);
    }

    int backend_width = 10;  // "NPU[0-1],CPU" widens the column as llama-bench's would not
    for (const std::string& d : devices) {
        const std::string first = resolve_device(d);
        backend_width = std::max(backend_width, static_cast<int>(first.size() + (first == "CPU" ? 0 : 4)));
    }
    Printer out{o.output, {grid.batches.size() > 1 || grid.batches[0] != 2048, grid.ubatches.size() > 1 || grid.ubatches[0] != 512,
                           grid.split_modes.size() > 1 || grid.split_modes[0] != "row", grid.fa.size() > 1 || grid.fa[0] != -1,
                           backend_width}};
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
    cmd->add_option("-t,--threads", o->threads, "CPU thread counts: a list (default: physical cores; big ones only on big/little CPUs)");
    cmd->add_option("-b,--batch-size", o->n_batch, "Prompt tokens per decode call: a list")->capture_default_str();
    cmd->add_option("--ubatch-size", o->n_ubatch, "Tokens per forward graph: a list (also -ub)")->capture_default_str();
    cmd->add_option("--flash-attn", o->flash_attn, "Fused attention: a list of on, off, auto (also -fa)")->capture_default_str();
    cmd->add_option("--split-mode", o->split_mode,
                    "A device group's split: a list of none (its first member runs everything), row (each member its rows of every weight matmul) (also -sm)")
        ->capture_default_str();
    add_packing_flag(*cmd);
    cmd->add_option("-r,--repetitions", o->reps, "Timed repetitions per test")->check(CLI::Range(1, 1000000))->capture_default_str();
    cmd->add_option("-o,--output", o->output, "Output format: md, json or csv")->check(CLI::IsMember({"md", "json", "csv"}))->capture_default_str();
    cmd->add_option("--device", o->device, "Devices to run on, each a separate test: a list of cpu, npu (the NPU takes the ops it claims, the CPU the rest)")
        ->capture_default_str();
    cmd->add_flag("--progress", o->progress, "Report each warm-up and repetition on stderr");
    cmd->callback([o] { bench(*o); });
}

}  // namespace tessel::cli
