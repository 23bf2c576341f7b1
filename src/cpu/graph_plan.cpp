#include "cpu/graph_plan.hpp"

#include <algorithm>
#include <string>

#include "core/cpu_features.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu {
namespace {

/// Bytes of the node's output and inputs.
size_t node_bytes(const Tensor& node) {
    size_t bytes = node.n_bytes();
    for (const Tensor* s : node.src)
        if (s) bytes += s->n_bytes();
    return bytes;
}

}  // namespace

void plan_graph(const std::vector<Tensor*>& nodes, int nth, const packed::Tuning& tuning, GraphPlan& out) {
    const CpuFeatures& features = usable_cpu_features();
    out.nodes.clear();
    out.steps.clear();
    out.work = 0;
    out.parallel = false;
    for (Tensor* node : nodes) {
        if (op_is_view(node->op)) continue;
        PlannedNode n;
        n.node = node;
        n.solo = nth == 1 || node_bytes(*node) < kSoloBytes;
        const int threads = n.solo ? 1 : nth;
        n.parts = n.solo ? 1 : nth * kPartsPerThread;
        size_t work = 0;
        if (packed::serves(*node)) {
            n.path = PlannedNode::Path::Packed;
            n.packed = packed::plan_node(*node, threads, tuning);
            work = n.packed.work;
        } else if (const FastKernel* k = select_kernel(*node, features)) {
            n.path = PlannedNode::Path::Fast;
            n.kernel = k;
            work = k->work_size(*node, n.parts);
        }
        out.work = std::max(out.work, work);
        const auto index = static_cast<uint32_t>(out.nodes.size());
        if (n.solo && !out.steps.empty() && out.steps.back().solo) out.steps.back().end = index + 1;
        else out.steps.push_back({index, index + 1, n.solo});
        out.parallel = out.parallel || !n.solo;
        out.nodes.push_back(n);
    }
}

std::string planned_kernel_name(const PlannedNode& n) {
    switch (n.path) {
    case PlannedNode::Path::Packed: return packed::kernel_name(*n.node, n.packed);
    case PlannedNode::Path::Fast: return n.kernel->name;
    case PlannedNode::Path::Reference: break;
    }
    return "ref";
}

}  // namespace tessel::cpu
