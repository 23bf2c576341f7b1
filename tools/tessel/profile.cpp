// `tessel profile`: where a device's time goes. Runs the prompt as one graph (once untimed, as a
// warm-up, then again) and N greedy decode steps with per-op timing on (Context::set_profiling),
// then prints a table per phase: each op (by name and device) with its count, total ms, share of
// the phase's op time, GB/s and GFLOP/s from the shapes of its nodes. The decode table is the
// mean of the N steps.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "run_options.hpp"
#include "tessel/engine.hpp"
#include "tessel/errors.hpp"

namespace tessel::cli {
namespace {

struct ProfileOptions {
    ModelOptions model;
    std::string prompt = "The quick brown fox jumps over the lazy dog. Once upon a time,";
    int n_gen = 8;
};

/// One row of a table: the ops of one name on one device, summed over the decodes it covers.
struct Row {
    std::string op, device;
    int64_t count = 0;
    double ms = 0, bytes = 0, flops = 0;
};

void add_rows(std::map<std::pair<std::string, std::string>, Row>& rows, const std::vector<OpProfile>& ops) {
    for (const OpProfile& p : ops) {
        Row& r = rows[{p.device, p.op}];
        r.op = p.op, r.device = p.device;
        ++r.count;
        r.ms += p.ms, r.bytes += p.bytes, r.flops += p.flops;
    }
}

/// The table of `rows` summed over `steps` decodes, per decode, largest time first.
void print_table(const char* title, const std::map<std::pair<std::string, std::string>, Row>& rows, int steps) {
    std::vector<Row> sorted;
    double total = 0;
    for (const auto& [key, r] : rows) {
        sorted.push_back(r);
        total += r.ms;
    }
    std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
    std::printf("%s: %.3f ms of ops per step\n", title, total / steps);
    std::printf("%-24s %-6s %7s %10s %7s %8s %9s\n", "op", "device", "count", "total ms", "% step", "GB/s", "GFLOP/s");
    for (const Row& r : sorted) {
        const double s = r.ms / 1e3;
        auto rate = [&](double v) {
            char buf[32] = "-";
            if (v > 0 && s > 0) std::snprintf(buf, sizeof buf, "%.2f", v / s / 1e9);
            return std::string(buf);
        };
        char line[160];
        std::snprintf(line, sizeof line, "%-24s %-6s %7lld %10.3f %7.1f %8s %9s", r.op.c_str(), r.device.c_str(),
                      static_cast<long long>((r.count + steps / 2) / steps), r.ms / steps, total > 0 ? 100.0 * r.ms / total : 0.0,
                      rate(r.bytes).c_str(), rate(r.flops).c_str());
        std::printf("%s\n", line);
    }
    std::printf("\n");
}

int32_t greedy(std::span<const float> logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

void profile(const ProfileOptions& o) {
    const LoadedModel loaded = load_model(o.model);
    const std::shared_ptr<const Model>& model = loaded.model;
    const std::vector<int32_t> tokens = model->tokenize(o.prompt, true, true);
    if (tokens.empty()) throw Error(ErrorCode::InvalidArgument, "-p: the prompt has no tokens");
    loaded.report();
    ContextParams cp = context_params(o.model);
    const int64_t needed = static_cast<int64_t>(tokens.size()) + o.n_gen;
    if (cp.n_ctx == 0) cp.n_ctx = needed;
    cp.n_ubatch = std::max<int64_t>(cp.n_ubatch, static_cast<int64_t>(tokens.size()));  // the prompt is one graph
    Context ctx(model, cp);
    if (ctx.n_ctx() < needed)
        throw Error(ErrorCode::InvalidArgument, "-c: " + std::to_string(ctx.n_ctx()) + " cells cannot hold the prompt (" +
                                                    std::to_string(tokens.size()) + " tokens) and -n " + std::to_string(o.n_gen));
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], static_cast<int32_t>(i), 0, i + 1 == tokens.size()});
    ctx.decode(batch);  // a warm-up: the first graph pays for first touches of weights and buffers
    ctx.clear();
    ctx.set_profiling(true);
    ctx.decode(batch);
    std::map<std::pair<std::string, std::string>, Row> prompt_rows, decode_rows;
    add_rows(prompt_rows, ctx.last_profile());
    int32_t next = greedy(ctx.logits(0));
    for (int i = 0; i < o.n_gen; ++i) {
        const BatchToken one{next, static_cast<int32_t>(tokens.size()) + i, 0, true};
        ctx.decode(std::span<const BatchToken>(&one, 1));
        add_rows(decode_rows, ctx.last_profile());
        next = greedy(ctx.logits(0));
    }
    const std::string prompt_title = "prompt (" + std::to_string(tokens.size()) + " tokens, one graph)";
    print_table(prompt_title.c_str(), prompt_rows, 1);
    if (o.n_gen > 0) print_table(("decode (mean of " + std::to_string(o.n_gen) + " steps)").c_str(), decode_rows, o.n_gen);
}

}  // namespace

void add_profile_command(CLI::App& app) {
    auto o = std::make_shared<ProfileOptions>();
    CLI::App* cmd = app.add_subcommand("profile", "Per-op time of a prompt and of a decode step on a device (count, ms, %, GB/s, GFLOP/s)");
    add_model_options(*cmd, o->model);
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text (tokenized with special tokens parsed)")->capture_default_str();
    cmd->add_option("-n,--n-predict", o->n_gen, "Decode steps to time (greedy)")->check(CLI::Range(0, 100000))->capture_default_str();
    cmd->callback([o] { profile(*o); });
}

}  // namespace tessel::cli
