// The CPU backend's plan of a graph: how each node runs and how the pool's threads walk them.
//
// plan_graph() decides, once per graph (the backend caches plans by graph_uid), for every node
// that computes something (views compute nothing): the path (the matrix-product driver of
// cpu/packed for MUL_MAT / MUL_MAT_ID it serves and packed GET_ROWS, a fast kernel, the reference
// kernel) with the kernel or the driver's NodePlan, the work-buffer bytes, and whether the
// node runs solo (on thread 0 alone: it touches fewer than kSoloBytes). Consecutive nodes become
// steps: one parallel node, or a run of solo nodes. walk() is what every thread of the one pool
// run per graph_compute executes: the steps in order, one barrier between two steps (which also
// restarts the chunk counter, so each node's chunk loop starts at chunk 0); in a solo step thread
// 0 runs the nodes alone while the other threads wait at the next barrier.
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
    bool solo = false;                   ///< runs on thread 0 alone (ctx.nth = 1)
    const FastKernel* kernel = nullptr;  ///< Path::Fast
    packed::NodePlan packed;             ///< Path::Packed
};

/// Planned nodes [begin, end) run as one step: one node on every thread, or (solo) a run of
/// solo nodes on thread 0.
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

/// Runs plan `g` on the thread of ctx (called on every thread of one pool run, or on thread 0
/// alone when !g.parallel): run_node(const PlannedNode&, ThreadContext&) per node, see the file
/// comment.
template <class RunNode>
void walk(const GraphPlan& g, ThreadContext& ctx, RunNode&& run_node) {
    for (size_t s = 0; s < g.steps.size(); ++s) {
        const Step& st = g.steps[s];
        if (s > 0) ctx.barrier();
        if (!st.solo) {
            run_node(g.nodes[st.begin], ctx);
            continue;
        }
        if (ctx.ith != 0) continue;  // on to the next barrier
        for (uint32_t i = st.begin; i < st.end; ++i) {
            ThreadContext one = ctx.alone();
            run_node(g.nodes[i], one);
        }
    }
}

}  // namespace tessel::cpu
