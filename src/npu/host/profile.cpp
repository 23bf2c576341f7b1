#include "npu/host/profile.hpp"

#include <utility>

#include "npu/host/backend.hpp"
#include "npu/host/session.hpp"
#include "npu/host/translate.hpp"

namespace tessel::npu {

size_t nodes_of_op(const std::string& name) {
    // ops of no graph node (an ALLREDUCE+ADD's ADD keeps its place as "ADD (fused)", one node)
    if (name == "FENCE" || name == "FENCE_WAIT" || name == "CPY_TENSOR" || name == "SET_TENSOR" || name == "GET_TENSOR" ||
        name == "ALLREDUCE" || name == "ALLREDUCE+ADD")
        return 0;
    // "A+B" is 2 nodes; "A xN" N; "A+B xN" (N fused pairs) 2N
    size_t copies = 1, end = name.size();
    if (const size_t x = name.rfind(" x"); x != std::string::npos && x + 2 < name.size()) {
        const std::string n = name.substr(x + 2);
        if (n.find_first_not_of("0123456789") == std::string::npos) {
            copies = static_cast<size_t>(std::stoul(n));
            end = x;
        }
    }
    size_t parts = 1;
    for (size_t i = 0; i < end; ++i) parts += name[i] == '+';
    return parts * copies;
}

std::vector<OpTiming> pair_profile(const std::vector<OpProfile>& records, const std::vector<const Tensor*>& nodes) {
    std::vector<OpTiming> out;
    out.reserve(records.size());
    size_t next = 0;
    bool in_order = true;
    for (const OpProfile& r : records) {
        OpTiming t;
        t.op = r.op;
        t.ns = r.record.stop_ns > r.record.start_ns ? r.record.stop_ns - r.record.start_ns : 0;
        const size_t n = nodes_of_op(r.op);
        const std::string first = r.op.substr(0, r.op.find_first_of("+ "));
        in_order = in_order && (n == 0 || (next + n <= nodes.size() && first == op_name(nodes[next]->op)));
        if (in_order) {
            t.nodes.assign(nodes.begin() + static_cast<std::ptrdiff_t>(next), nodes.begin() + static_cast<std::ptrdiff_t>(next + n));
            next += n;
        }
        out.push_back(std::move(t));
    }
    return out;
}

void NpuBackend::set_profiling(bool on) {
    profiling_ = on;
    profiled_nodes_.clear();
    session_.collect_profile(on);
}

void NpuBackend::note_profiled(const std::vector<Tensor*>& nodes) {
    for (const Tensor* n : nodes)
        if (!is_no_op(*n)) profiled_nodes_.push_back(n);
}

std::vector<OpTiming> NpuBackend::take_profile() {
    std::vector<OpTiming> out = pair_profile(session_.take_profile(), profiled_nodes_);
    profiled_nodes_.clear();
    return out;
}

}  // namespace tessel::npu
