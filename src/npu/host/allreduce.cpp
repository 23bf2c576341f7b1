#include "npu/host/allreduce.hpp"

#include <algorithm>
#include <string>

#include "npu/host/backend.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorCode::InvalidArgument, "all-reduce: " + what); }

}  // namespace

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

void Communicator::allreduce(std::span<Tensor* const> tensors, AllReduceMode mode) {
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
        for (size_t p = 0; p < n; ++p) buf->map_on(ranks_[p]->session());
        operands.push_back(operand(t));
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
    for (size_t r = 0; r < n; ++r) {
        fences(r, entry);
        for (int32_t& p : params) p = 0;
        params[0] = static_cast<int32_t>(r);
        params[1] = static_cast<int32_t>(n);
        params[2] = static_cast<int32_t>(mode);
        ranks_[r]->enqueue(TSL_NPU_OP_ALLREDUCE, "ALLREDUCE", {}, operands, params);
        fences(r, exit);
        ranks_[r]->send();
    }
}

void allreduce_api_free(AllReduceComm* comm) { delete comm; }

void allreduce_api_call(AllReduceComm* comm, Tensor* const* tensors, int n, int mode) {
    if (mode != 0 && mode != 1) bad("mode " + std::to_string(mode) + "; 0 (elements) or 1 (rows) expected");
    comm->allreduce(std::span<Tensor* const>(tensors, n < 0 ? 0 : static_cast<size_t>(n)), static_cast<AllReduceMode>(mode));
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
