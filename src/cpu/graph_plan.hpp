// The CPU backend's plan of a graph: how each node runs and how the pool's threads walk them.
//
// plan_graph() decides, once per graph (the backend caches plans by graph_uid), for every node
// that computes something (views compute nothing): the path (the matrix-product driver of
// cpu/packed for MUL_MAT / MUL_MAT_ID it serves and packed GET_ROWS, a fast kernel, the reference
// kernel) with the kernel or the driver's NodePlan, the work-buffer bytes, whether the node runs
// solo (by one thread: it touches fewer than kSoloBytes) and, for fast and reference kernels,
// how many parts its (ith, nth) split has (kPartsPerThread per thread). Consecutive nodes become
// steps: one parallel node, or a run of solo nodes. walk() is what every thread of the one pool
// run per graph_compute executes: the steps in order, each ended by a barrier (the pool's phases,
// threadpool.hpp); a solo step is one chunk, whichever thread claims it runs its nodes alone; a
// fast or reference node's parts are chunks; the packed driver claims its own chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/kernels/kernel.hpp"
#include "cpu/packed/mul_mat.hpp"
#include "cpu/threadpool.hpp"
#include "graph/tensor.hpp"

namespace tessel::cpu {

/// Parts per thread of a parallel fast or reference node: its kernel splits rows by (part, parts),
/// and threads claim parts, so a slow thread takes fewer.
inline constexpr int kPartsPerThread = 4;

/// Nodes that touch fewer bytes than this run on thread 0 alone: handing a few microseconds of
/// work to the workers costs more than it saves (decode-time norms, element-wise ops, RoPE and
/// cache writes), and every hand-over is a chance to wait for a descheduled worker on a busy
/// machine.
inline constexpr size_t kSoloBytes = 64 * 1024;

/// How one node runs.
struct PlannedNode {
    enum class Path : uint8_t { Reference, Fast, Packed };
    Tensor* node = nullptr;
    Path path = Path::Reference;
    bool solo = false;                   ///< runs on one thread (ctx.nth = 1)
    int parts = 1;                       ///< Path::Fast / Reference: parts of the (ith, nth) split
    const FastKernel* kernel = nullptr;  ///< Path::Fast
    packed::NodePlan packed;             ///< Path::Packed
};

/// Planned nodes [begin, end) run as one step: one node on every thread, or (solo) a run of
/// solo nodes on one thread.
struct Step {
    uint32_t begin = 0, end = 0;
    bool solo = false;
};

struct GraphPlan {
    std::vector<PlannedNode> nodes;
    std::vector<Step> steps;
    size_t work = 0;        ///< work-buffer bytes: the largest node's (steps never overlap)
    bool parallel = false;  ///< some step needs every thread (else the walk runs on thread 0 alone)
};

/// Plans `nodes` for a pool of nth threads into `out` (its vectors reused). Throws
/// Error(Unsupported) for a node that reads a CPU_PACKED weight in a form the packed path does
/// not serve, and what packed::plan_node throws.
void plan_graph(const std::vector<Tensor*>& nodes, int nth, const packed::Tuning& tuning, GraphPlan& out);

/// The name of the kernel a planned node runs ("ref": the reference kernel).
std::string planned_kernel_name(const PlannedNode& n);

/// Runs plan `g` on the thread of ctx (called on every thread of one pool run, or on one thread
/// with an alone() context when !g.parallel): run_node(const PlannedNode&, ThreadContext&) per
/// node, see the file comment. run_node must claim a parallel node's work through ctx (parts or
/// chunks); solo nodes get an alone() context.
template <class RunNode>
void walk(const GraphPlan& g, ThreadContext& ctx, RunNode&& run_node) {
    for (const Step& st : g.steps) {
        if (st.solo) {
            ctx.for_chunks(1, 1, [&](int64_t, int64_t) {
                for (uint32_t i = st.begin; i < st.end; ++i) {
                    ThreadContext one = ctx.alone();
                    run_node(g.nodes[i], one);
                }
            });
        } else {
            run_node(g.nodes[st.begin], ctx);
        }
        ctx.barrier();
    }
}

/// walk() that also times (profiling, CpuBackend::set_profiling): every node of a solo step on
/// the thread that runs it into node_ns[i], and thread 0 stores now_ns() after each step's
/// barrier into step_end_ns[s] (both sized by the caller: nodes, steps).
template <class RunNode, class Clock>
void walk_timed(const GraphPlan& g, ThreadContext& ctx, RunNode&& run_node, Clock&& now_ns, uint64_t* node_ns,
                uint64_t* step_end_ns) {
    for (size_t s = 0; s < g.steps.size(); ++s) {
        const Step& st = g.steps[s];
        if (st.solo) {
            ctx.for_chunks(1, 1, [&](int64_t, int64_t) {
                for (uint32_t i = st.begin; i < st.end; ++i) {
                    ThreadContext one = ctx.alone();
                    const uint64_t t0 = now_ns();
                    run_node(g.nodes[i], one);
                    node_ns[i] = now_ns() - t0;
                }
            });
        } else {
            run_node(g.nodes[st.begin], ctx);
        }
        ctx.barrier();
        if (ctx.ith == 0) step_end_ns[s] = now_ns();
    }
}

}  // namespace tessel::cpu
