#include "npu/host/allreduce.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "core/log.hpp"
#include "npu/host/backend.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/fusion.hpp"
#include "npu/host/session.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorCode::InvalidArgument, "all-reduce: " + what); }

constexpr uint64_t kStepBytes = 8 << 10;

uint32_t device_mode(AllReduceMode mode) { return mode == AllReduceMode::Elements ? TSL_NPU_ALLREDUCE_1D : TSL_NPU_ALLREDUCE_2D; }

// The kparams of a planned all-reduce op: the header's scratch, then tsl_npu_allreduce_kparams.
std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> allreduce_kparams(const AllReducePlan& plan) {
    std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> kp{};
    const tsl_npu_kparams_header h{static_cast<uint32_t>(plan.scratch), 0};
    const tsl_npu_allreduce_kparams body{plan.block, 0};
    std::memcpy(kp.data(), &h, sizeof h);
    std::memcpy(kp.data() + TSL_NPU_KPARAMS_BODY, &body, sizeof body);
    return kp;
}

bool overlap(const Operand& a, const Operand& b) {
    return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

}  // namespace

AllReducePlan plan_allreduce(const Tensor& t, AllReduceMode mode, size_t n, size_t rank, bool fused, const DeviceBudget& budget) {
    const uint32_t dmode = device_mode(mode);
    const uint64_t count = mode == AllReduceMode::Elements ? static_cast<uint64_t>(t.n_elements()) : static_cast<uint64_t>(t.n_rows());
    uint64_t lo = 0, hi = count;
    if (!fused) tsl_npu_allreduce_share(count, static_cast<uint32_t>(n), static_cast<uint32_t>(rank), dmode, &lo, &hi);
    const uint32_t threads = std::max<uint32_t>(1, budget.n_threads);
    const uint64_t per_thread = std::max<uint64_t>(1, (hi - lo + threads - 1) / threads);
    const uint64_t unit = tsl_npu_allreduce_unit_bytes(dmode, t.ne[0]);
    const uint64_t least = mode == AllReduceMode::Elements ? 128 : 1;
    // A step's buffer stays within kStepBytes (two per worker stay in a core's cache on the virtual NPU).
    const uint64_t cap = std::max<uint64_t>(least, kStepBytes / unit / least * least);
    uint64_t block = std::min(cap, (per_thread + least - 1) / least * least);
    const uint64_t fitting = budget.vtcm_bytes / (2 * unit * threads);  // units per buffer the budget allows
    if (block > fitting) block = fitting / least * least;
    const auto scratch = tsl_npu_allreduce_scratch(dmode, t.ne[0], static_cast<uint32_t>(block), threads);
    if (block < least || scratch > UINT32_MAX)
        throw Error(ErrorCode::Unsupported, "all-reduce of " + describe(t) + ": two VTCM buffers of " + std::to_string(least) +
                                                (least == 1 ? " row" : " elements") + " per worker (" + std::to_string(threads) +
                                                " workers) need " + std::to_string(2 * least * unit * threads) + " bytes; the device has " +
                                                std::to_string(budget.vtcm_bytes));
    return {static_cast<uint32_t>(block), scratch};
}

Communicator::Communicator(std::span<Backend* const> streams) {
    if (streams.size() < 2 || streams.size() > 4) bad(std::to_string(streams.size()) + " ranks; a communicator has 2 to 4");
    for (size_t r = 0; r < streams.size(); ++r) {
        auto* b = dynamic_cast<NpuBackend*>(streams[r]);
        if (!b) bad("rank " + std::to_string(r) + " is not an NPU stream");
        for (NpuBackend* other : ranks_)
            if (other->session().shares_device_with(b->session()))
                bad("rank " + std::to_string(r) + " (" + b->session().name() + ") and " + other->session().name() +
                    " run on one device runtime, which runs one batch at a time: each rank needs a device of its own");
        ranks_.push_back(b);
    }
    // Every rank's device reads the peers' fences.
    for (NpuBackend* a : ranks_)
        for (NpuBackend* b : ranks_)
            if (a != b) a->session().map_peer_fences(b->session());
}

void Communicator::allreduce(std::span<Tensor* const> tensors, AllReduceMode mode, AllReduceUse use) {
    const size_t n = ranks_.size();
    if (tensors.size() != n) bad(std::to_string(tensors.size()) + " tensors for " + std::to_string(n) + " ranks");
    std::vector<Operand> operands;
    for (size_t r = 0; r < n; ++r) {
        const Tensor& t = *tensors[r];
        const std::string which = "rank " + std::to_string(r) + "'s tensor " + describe(t);
        if (t.type != DType::F32) bad(which + ": F32 expected");
        if (t.ne != tensors[0]->ne) bad(which + ": the shape of rank 0's, " + describe(*tensors[0]) + ", expected");
        if (mode == AllReduceMode::Elements ? !t.is_contiguous() : t.nb[0] != sizeof(float)) bad(which + ": contiguous rows expected");
        const NpuBuffer* buf = npu_buffer_of(t);
        if (!buf || tiled_of(t)) bad(which + ": not in NPU memory");
        if (&buf->device() != &ranks_[r]->device()) bad(which + ": not in " + ranks_[r]->device().name() + "'s memory");
        operands.push_back(operand(t));
    }
    std::vector<AllReducePlan> plans;
    for (size_t r = 0; r < n; ++r) plans.push_back(plan_allreduce(*tensors[0], mode, n, r, false, budget_of(ranks_[r]->session().hwinfo())));
    for (size_t r = 0; r < n; ++r) {
        for (size_t p = 0; p < n; ++p) npu_buffer_of(*tensors[r])->map_on(ranks_[p]->session());
        ranks_[r]->release_allreduce();  // an earlier all-reduce still waiting is sent first
    }
    std::vector<std::pair<uint32_t, uint64_t>> entry(n), exit(n);
    for (size_t r = 0; r < n; ++r) {
        entry[r] = ranks_[r]->session().next_fence();
        exit[r] = ranks_[r]->session().next_fence();
    }
    int32_t params[TSL_NPU_OP_PARAMS];
    const auto fences = [&](size_t r, const std::vector<std::pair<uint32_t, uint64_t>>& f) {
        NpuBackend& s = *ranks_[r];
        fence_params(params, f[r].first, f[r].second);
        s.enqueue(TSL_NPU_OP_FENCE, "FENCE", {}, {s.session().fence_operand()}, params);
        for (size_t p = 0; p < n; ++p)
            if (p != r) {
                fence_params(params, f[p].first, f[p].second);
                s.enqueue(TSL_NPU_OP_FENCE_WAIT, "FENCE_WAIT", {ranks_[p]->session().fence_operand()}, {}, params);
            }
    };
    std::vector<PendingAllReduce::Rank> pending(n);
    bool in_open_batches = true;
    for (size_t r = 0; r < n; ++r) {
        fences(r, entry);
        for (int32_t& p : params) p = 0;
        params[0] = static_cast<int32_t>(r);
        params[1] = static_cast<int32_t>(n);
        params[2] = static_cast<int32_t>(device_mode(mode));
        const auto kp = allreduce_kparams(plans[r]);
        pending[r].stream = ranks_[r];
        pending[r].op = ranks_[r]->enqueue(TSL_NPU_OP_ALLREDUCE, "ALLREDUCE", {}, operands, params, kp.data());
        pending[r].tensor = operands[r];
        const uint64_t sent = ranks_[r]->session().last_seq();
        fences(r, exit);
        in_open_batches = in_open_batches && ranks_[r]->session().last_seq() == sent;
    }
    if (use == AllReduceUse::NextAdd && in_open_batches) {
        const auto p = std::make_shared<PendingAllReduce>(mode, std::move(pending));
        for (NpuBackend* s : ranks_) s->hold_allreduce(p);
        return;
    }
    for (NpuBackend* s : ranks_) s->send();
}

size_t PendingAllReduce::rank_of(const NpuBackend& stream) const {
    for (size_t r = 0; r < ranks_.size(); ++r)
        if (ranks_[r].stream == &stream) return r;
    return ranks_.size();
}

bool PendingAllReduce::accepts(size_t r, const Tensor& add, const FusionGraph& graph) {
    if (r >= ranks_.size() || add.op != Op::ADD || add.type != DType::F32) return false;
    Rank& k = ranks_[r];
    const Tensor& x = *k.tensor.tensor;
    const auto is_x = [&](const Tensor* t) { return t == &x || (t && t->data == x.data && t->ne == x.ne && t->nb == x.nb && t->type == x.type); };
    const int xi = is_x(add.src[0]) ? 0 : is_x(add.src[1]) ? 1 : -1;
    if (xi < 0 || !graph.sole_reader(*add.src[xi])) return false;
    const Tensor& a = *add.src[1 - xi];
    if (a.type != DType::F32 || a.nb[0] != sizeof(float) || add.ne != x.ne || add.nb[0] != sizeof(float) || a.ne[0] != x.ne[0]) return false;
    if (mode_ == AllReduceMode::Elements) {
        if (a.ne != x.ne || !a.is_contiguous() || !add.is_contiguous()) return false;
    } else {
        for (int i = 1; i < kMaxDims; ++i)
            if (a.ne[i] != 1 && a.ne[i] != x.ne[i]) return false;
    }
    const NpuBuffer* abuf = npu_buffer_of(a);
    const NpuBuffer* obuf = npu_buffer_of(add);
    if (!abuf || !obuf || tiled_of(a) || tiled_of(add)) return false;
    const Operand addend = operand(a), out = operand(add);
    for (const Rank& p : ranks_)
        if (overlap(out, p.tensor)) return false;
    if (overlap(out, addend) && (out.offset != addend.offset || a.ne != add.ne || a.nb != add.nb)) return false;
    AllReducePlan plan;
    try {
        plan = plan_allreduce(x, mode_, ranks_.size(), r, true, budget_of(k.stream->session().hwinfo()));
    } catch (const Error&) {
        return false;  // the ranks' ALLREDUCE ops fit; the fused op does not: no fusion
    }
    k.addend = addend;
    k.out = out;
    k.fused_kparams = allreduce_kparams(plan);
    return true;
}

void PendingAllReduce::offer(size_t r, const Tensor& add, uint32_t add_op) {
    ranks_[r].add = &add;
    ranks_[r].add_op = add_op;
}

void PendingAllReduce::release() {
    const bool fuse = std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& k) { return k.add != nullptr; });
    for (Rank& k : ranks_) {
        if (!fuse) break;
        // The ALLREDUCE becomes the fused op (the ranks' tensors and the addend in, the ADD's output
        // out); the ADD, queued after the exit fences, becomes a NOP that keeps its node's place.
        OpBatch& b = k.stream->batch_;
        std::vector<Operand> srcs;
        for (const Rank& p : ranks_) srcs.push_back(p.tensor);
        srcs.push_back(k.addend);
        int32_t params[TSL_NPU_OP_PARAMS];
        std::memcpy(params, b.op(k.op).params, sizeof params);
        b.rewrite(k.op, TSL_NPU_OP_ALLREDUCE_ADD, "ALLREDUCE+ADD", srcs, {k.out}, params);
        std::memcpy(b.op(k.op).kparams, k.fused_kparams.data(), k.fused_kparams.size());
        b.rewrite(k.add_op, TSL_NPU_OP_NOP, "ADD (fused)", {}, {}, nullptr);
        k.stream->last_kernels_[k.add] = "ALLREDUCE+ADD";
        if (k.stream->session().config().verbose)
            tessel::logf(LogLevel::Debug, "npu: %s ALLREDUCE+ADD fused (op %u, ADD %s)", k.stream->session().name().c_str(), k.op,
                         describe(*k.add).c_str());
    }
    for (Rank& k : ranks_) k.stream->pending_allreduce_.reset();
    std::exception_ptr first;
    for (Rank& k : ranks_) {
        try {
            k.stream->send();
        } catch (...) {
            if (!first) first = std::current_exception();
        }
    }
    if (first) std::rethrow_exception(first);
}

void allreduce_api_free(AllReduceComm* comm) { delete comm; }

void allreduce_api_call(AllReduceComm* comm, Tensor* const* tensors, int n, int mode) {
    if (mode < 0 || (mode & ~(1 | kAllReduceNextAdd)))
        bad("mode " + std::to_string(mode) + "; 0 (elements) or 1 (rows), plus " + std::to_string(kAllReduceNextAdd) +
            " when the sums go only to the next graph's ADD, expected");
    comm->allreduce(std::span<Tensor* const>(tensors, n < 0 ? 0 : static_cast<size_t>(n)), static_cast<AllReduceMode>(mode & 1),
                    (mode & kAllReduceNextAdd) ? AllReduceUse::NextAdd : AllReduceUse::Tensors);
}

const AllReduceApi& allreduce_api() {
    static const AllReduceApi api{
        [](Backend* const* streams, int n) -> AllReduceComm* {
            return new Communicator(std::span<Backend* const>(streams, n < 0 ? 0 : static_cast<size_t>(n)));
        },
        allreduce_api_free, allreduce_api_call};
    return api;
}

}  // namespace tessel::npu
