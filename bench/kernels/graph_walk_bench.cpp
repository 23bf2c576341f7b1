// The CPU backend's per-step overhead: the default model's single-token decode graph, planned as
// the backend plans it (graph_plan.hpp) for 2 threads, walked with every kernel replaced by a no-op,
// so an iteration costs only the hand-overs between threads. `GraphWalk/per_split` is the backend's
// way (one pool run per graph_compute, a barrier between steps); `GraphWalk/per_node` the way before
// it (one pool run per node, run_solo for solo nodes). Real time per iteration = per decode step.
// Registered statically (this file alone adds them). The model must be in tessel's cache (run
// `tessel run -p hi` once); otherwise each benchmark reports an error.
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>

#include "common/model_fetch.hpp"
#include "cpu/graph_plan.hpp"
#include "cpu/threadpool.hpp"
#include "runtime/context.hpp"
#include "runtime/engine_access.hpp"
#include "tessel/engine.hpp"

namespace tessel::bench {
namespace {

constexpr int kThreads = 2;

/// The decode graph of the default model after a prompt and one step, and its plan.
struct DecodeGraph {
    std::shared_ptr<const Model> model;
    std::unique_ptr<Context> ctx;
    cpu::GraphPlan plan;

    DecodeGraph() {
        model = Model::load((tools::model_cache_dir() / tools::default_model_source().file_name).string(), "cpu");
        ContextParams p;
        p.n_ctx = 512;
        p.n_threads = 1;
        ctx = std::make_unique<Context>(model, p);
        const BatchToken prompt[] = {{1, 0, 0, false}, {2, 1, 0, true}};
        ctx->decode(prompt);
        const BatchToken step{3, 2, 0, true};
        ctx->decode(std::span<const BatchToken>(&step, 1));
        const auto& splits = runtime::EngineAccess::context(*ctx).scheduler().splits();
        cpu::plan_graph(splits.front().nodes, kThreads, cpu::packed::tuning_from_env(), plan);
    }
};

DecodeGraph& decode_graph() {
    static std::unique_ptr<DecodeGraph> g;
    if (!g) g = std::make_unique<DecodeGraph>();
    return *g;
}

/// Claims the node's work as the CPU backend does (its parts, or the one solo chunk) and does nothing.
void no_op(const cpu::PlannedNode& n, cpu::ThreadContext& ctx) {
    ctx.parts(n.parts, [&](cpu::ThreadContext&) { benchmark::DoNotOptimize(n.node); });
}

void bench_walk(benchmark::State& state, bool per_split) {
    try {
        const cpu::GraphPlan& plan = decode_graph().plan;
        cpu::ThreadPool pool(kThreads);
        for (auto _ : state) {
            if (per_split) {
                pool.run([&](cpu::ThreadContext& ctx) { cpu::walk(plan, ctx, no_op); });
                continue;
            }
            for (const cpu::PlannedNode& n : plan.nodes) {
                auto one = [&](cpu::ThreadContext& ctx) { no_op(n, ctx); };
                if (n.solo) pool.run_solo(one);
                else pool.run(one);
            }
        }
        state.counters["nodes"] = static_cast<double>(plan.nodes.size());
        state.counters["steps"] = static_cast<double>(plan.steps.size());
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
    }
}

BENCHMARK_CAPTURE(bench_walk, per_node, false)->Name("GraphWalk/per_node")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(bench_walk, per_split, true)->Name("GraphWalk/per_split")->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessel::bench
