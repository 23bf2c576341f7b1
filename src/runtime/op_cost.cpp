#include "runtime/op_cost.hpp"

namespace tessel::runtime {

double node_bytes(const Tensor& node) {
    if (op_is_view(node.op)) return 0;
    const double out = static_cast<double>(node.n_bytes());
    if (node.op == Op::GET_ROWS && node.src[0] && node.src[1]) {
        // the gathered rows in the table's type: out's rows x the table's row bytes
        const Tensor& table = *node.src[0];
        const double row = table.ne[1] ? static_cast<double>(table.n_bytes()) / static_cast<double>(table.n_elements() / table.ne[0]) : 0;
        return static_cast<double>(node.n_elements() / node.ne[0]) * row + static_cast<double>(node.src[1]->n_bytes()) + out;
    }
    double bytes = out;
    for (const Tensor* s : node.src)
        if (s) bytes += static_cast<double>(s->n_bytes());
    return bytes;
}

double node_flops(const Tensor& node) {
    if (op_is_view(node.op)) return 0;
    const double out = static_cast<double>(node.n_elements());
    if ((node.op == Op::MUL_MAT || node.op == Op::MUL_MAT_ID) && node.src[0]) return 2.0 * static_cast<double>(node.src[0]->ne[0]) * out;
    if (node.op == Op::FLASH_ATTN_EXT && node.src[0] && node.src[1] && node.src[2]) {
        const Tensor &q = *node.src[0], &k = *node.src[1], &v = *node.src[2];
        return 2.0 * static_cast<double>(q.ne[0] + v.ne[0]) * static_cast<double>(k.ne[1]) *
               static_cast<double>(q.ne[1] * q.ne[2] * q.ne[3]);
    }
    return out;
}

OpProfile op_profile(const OpTiming& t, const std::string& device) {
    OpProfile p;
    p.op = t.op;
    p.device = device;
    p.ms = static_cast<double>(t.ns) / 1e6;
    for (const Tensor* n : t.nodes) {
        p.bytes += node_bytes(*n);
        p.flops += node_flops(*n);
    }
    return p;
}

}  // namespace tessel::runtime
