// Fusion patterns and the choice of the next device op (fusion.hpp).
#include "npu/host/fusion.hpp"

#include "npu/host/buffer.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

FusionGraph::FusionGraph(const std::vector<Tensor*>& nodes) : nodes_(nodes) {
    for (const Tensor* n : nodes)
        for (const Tensor* s : n->src) {
            if (!s) continue;
            ++readers_[s];
            if (s->view_src) ++readers_[s->view_src];  // reading a view reads its storage owner
        }
}

size_t FusionGraph::next_op(size_t i) const {
    while (i < nodes_.size() && is_no_op(*nodes_[i])) ++i;
    return i;
}

bool FusionGraph::sole_reader(const Tensor& t) const {
    if (t.view_src || (t.flags & (kFlagOutput | kFlagSplitOutput))) return false;
    const auto it = readers_.find(&t);
    return it != readers_.end() && it->second == 1;
}

namespace {

bool plain_float(const Tensor& t) { return (t.type == DType::F32 || t.type == DType::F16) && !reads_tiled(t); }

/// True when `add` is ADD(mm, bias) with bias an F32 row [N] the matmul kernel adds (ops_matmul.c).
bool bias_add(const Tensor& add, const Tensor& mm) {
    if (add.op != Op::ADD || add.src[0] != &mm || add.type != DType::F32 || add.ne != mm.ne) return false;
    const Tensor* b = add.src[1];
    return b && b != &mm && b->type == DType::F32 && !reads_tiled(*b) && b->nb[0] == 4 && b->ne[0] == mm.ne[0] &&
           b->ne[1] == 1 && b->ne[2] == 1 && b->ne[3] == 1;
}

/// The bias ADD right after MUL_MAT node `i` when it may be fused (the matmul's only reader), or
/// nodes().size().
size_t bias_after(const FusionContext& ctx, size_t i) {
    const auto& nodes = ctx.graph.nodes();
    const Tensor& mm = *nodes[i];
    if (!(ctx.kinds & kFuseMatmulBias) || mm.op != Op::MUL_MAT || !ctx.graph.sole_reader(mm)) return nodes.size();
    const size_t j = ctx.graph.next_op(i + 1);
    if (j == nodes.size() || !bias_add(*nodes[j], mm) || !device_supports(*nodes[j], ctx.budget)) return nodes.size();
    return j;
}

/// Name of a fused op: the members' ops joined by '+', e.g. "RMS_NORM+MUL".
std::string joined(const std::vector<const Tensor*>& nodes) {
    std::string s;
    for (const Tensor* n : nodes) {
        if (!s.empty()) s += '+';
        s += op_name(n->op);
    }
    return s;
}

FusedOp start(const FusionContext& ctx, const std::vector<size_t>& members) {
    FusedOp f;
    for (size_t i : members) f.nodes.push_back(ctx.graph.nodes()[i]);
    f.op = translate(*f.nodes.front(), ctx.budget);
    f.params = f.nodes.front()->op_params.data();
    return f;
}

// ---- RMS_NORM / NORM + MUL -------------------------------------------------------------------

bool match_norm_mul(const FusionContext& ctx, size_t first, std::vector<size_t>& members) {
    const auto& nodes = ctx.graph.nodes();
    const Tensor& norm = *nodes[first];
    if ((norm.op != Op::RMS_NORM && norm.op != Op::NORM) || norm.type != DType::F32 || !ctx.graph.sole_reader(norm))
        return false;
    const size_t j = ctx.graph.next_op(first + 1);
    if (j == nodes.size()) return false;
    const Tensor& mul = *nodes[j];
    if (mul.op != Op::MUL || mul.ne != norm.ne || !device_supports(mul, ctx.budget)) return false;
    // MUL(norm, w) with w broadcast along rows; MUL(w, norm) only with w of the same shape
    const Tensor* w = mul.src[0] == &norm ? mul.src[1] : mul.src[0];
    if (!w || w == &norm || (mul.src[0] != &norm && mul.src[1] != &norm) || !plain_float(*w) || w->ne[0] != norm.ne[0])
        return false;
    for (int d = 1; d < kMaxDims; ++d)
        if (w->ne[d] < 1 || norm.ne[d] % w->ne[d] != 0) return false;
    members = {first, j};
    return true;
}

FusedOp emit_norm_mul(const FusionContext& ctx, const std::vector<size_t>& members) {
    FusedOp f = start(ctx, members);
    const Tensor& norm = *f.nodes[0];
    const Tensor& mul = *f.nodes[1];
    f.op.srcs = {operand(*norm.src[0]), operand(mul.src[0] == &norm ? *mul.src[1] : *mul.src[0])};
    f.op.dsts = {operand(mul)};
    f.name = joined(f.nodes);
    return f;
}

// ---- MUL_MAT + ADD ---------------------------------------------------------------------------

bool match_matmul_bias(const FusionContext& ctx, size_t first, std::vector<size_t>& members) {
    const size_t j = bias_after(ctx, first);
    if (j == ctx.graph.nodes().size()) return false;
    members = {first, j};
    return true;
}

FusedOp emit_matmul_bias(const FusionContext& ctx, const std::vector<size_t>& members) {
    FusedOp f = start(ctx, members);
    f.op.srcs.push_back(operand(*f.nodes[1]->src[1]));  // src2: the bias
    f.op.dsts = {operand(*f.nodes[1])};
    f.name = joined(f.nodes);
    return f;
}

// ---- MUL_MATs sharing their activations ------------------------------------------------------

/// Outputs one fused op holds (ops_matmul.c: MUL_MAT with a bias slot each, MUL_MAT_ID by dst count).
size_t max_outputs(Op op) { return op == Op::MUL_MAT ? 5 : TSL_NPU_MAX_DST; }

/// True when matmul b may join a: same op, activations (and ids), weight type, layout, K, batch
/// dims and planned kernel.
bool shares_activations(const FusionContext& ctx, const Tensor& a, const Tensor& b) {
    if (b.op != a.op || b.src[1] != a.src[1] || (a.op == Op::MUL_MAT_ID && b.src[2] != a.src[2])) return false;
    const Tensor& wa = *a.src[0];
    const Tensor& wb = *b.src[0];
    if (wb.type != wa.type || stored_tiled(wb) != stored_tiled(wa) || wb.ne[0] != wa.ne[0] || wb.ne[2] != wa.ne[2] ||
        wb.ne[3] != wa.ne[3])
        return false;
    return device_supports(b, ctx.budget) && plan_matmul_kernel(b, ctx.budget) == plan_matmul_kernel(a, ctx.budget);
}

/// members: per output its matmul and, when fused, its bias ADD right after it.
bool match_shared_matmul(const FusionContext& ctx, size_t first, std::vector<size_t>& members) {
    const auto& nodes = ctx.graph.nodes();
    const Tensor& a = *nodes[first];
    if (a.op != Op::MUL_MAT && a.op != Op::MUL_MAT_ID) return false;
    std::vector<size_t> found;
    size_t outputs = 0;
    for (size_t i = first; i < nodes.size() && outputs < max_outputs(a.op);) {
        if (i != first && !shares_activations(ctx, a, *nodes[i])) break;
        found.push_back(i);
        ++outputs;
        const size_t bias = bias_after(ctx, i);
        if (bias != nodes.size()) found.push_back(bias);
        i = ctx.graph.next_op((bias != nodes.size() ? bias : i) + 1);
    }
    if (outputs < 2) return false;
    members = std::move(found);
    return true;
}

FusedOp emit_shared_matmul(const FusionContext& ctx, const std::vector<size_t>& members) {
    FusedOp f = start(ctx, members);
    const bool id = f.nodes[0]->op == Op::MUL_MAT_ID;
    f.op.dsts.clear();
    size_t outputs = 0;
    bool biased = false;
    for (size_t m = 0; m < f.nodes.size(); ++m) {
        const Tensor& mm = *f.nodes[m];
        const Tensor* add = m + 1 < f.nodes.size() && f.nodes[m + 1]->op == Op::ADD ? f.nodes[m + 1] : nullptr;
        const size_t o = outputs++;
        // weight o: src[0], then MUL_MAT src[1 + 2o] (bias src[2 + 2o]), MUL_MAT_ID src[2 + o]
        const size_t wslot = o == 0 ? 0 : id ? 2 + o : 1 + 2 * o;
        if (f.op.srcs.size() < wslot + 1) f.op.srcs.resize(wslot + 1);
        f.op.srcs[wslot] = operand(*mm.src[0]);
        if (add) {
            const size_t bslot = 2 + 2 * o;
            if (f.op.srcs.size() < bslot + 1) f.op.srcs.resize(bslot + 1);
            f.op.srcs[bslot] = operand(*add->src[1]);
            biased = true;
            ++m;
        }
        f.op.dsts.push_back(operand(add ? *add : mm));
    }
    f.name = op_name(f.nodes[0]->op);
    if (biased) f.name += "+ADD";
    f.name += " x" + std::to_string(outputs);
    return f;
}

/// True when no output of op d overlaps another output or an input (by bytes of one buffer): the
/// fused op writes its outputs while reading its inputs, which the node order did one at a time.
bool disjoint_outputs(const DeviceOp& d) {
    auto overlap = [](const Operand& a, const Operand& b) {
        return a.tensor && b.tensor && a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
    };
    for (size_t i = 0; i < d.dsts.size(); ++i) {
        for (size_t j = i + 1; j < d.dsts.size(); ++j)
            if (overlap(d.dsts[i], d.dsts[j])) return false;
        for (const Operand& s : d.srcs)
            if (overlap(d.dsts[i], s)) return false;
    }
    return true;
}

}  // namespace

const std::vector<FusionPattern>& fusion_patterns() {
    static const std::vector<FusionPattern> table = {
        {kFuseSharedMatmul, match_shared_matmul, emit_shared_matmul},
        {kFuseMatmulBias, match_matmul_bias, emit_matmul_bias},
        {kFuseNormMul, match_norm_mul, emit_norm_mul},
    };
    return table;
}

FusedOp next_device_op(const FusionContext& ctx, size_t first, const std::function<bool(const DeviceOp&)>& fits, size_t* next) {
    std::vector<size_t> members;
    for (const FusionPattern& p : fusion_patterns()) {
        if (!(ctx.kinds & p.kind) || !p.match(ctx, first, members)) continue;
        FusedOp f = p.emit(ctx, members);
        if (!disjoint_outputs(f.op) || !fits(f.op)) continue;
        *next = members.back() + 1;
        return f;
    }
    FusedOp f;
    const Tensor& node = *ctx.graph.nodes()[first];
    f.op = translate(node, ctx.budget);
    f.name = op_name(node.op);
    f.nodes = {&node};
    f.params = node.op_params.data();
    *next = first + 1;
    return f;
}

}  // namespace tessel::npu
