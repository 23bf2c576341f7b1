#include "npu/host/backend.hpp"

#include <cstdio>

#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

void NpuEvent::synchronize() {
    if (!session_) return;
    if (session_->fence_value(slot_) == value_) return;
    session_->wait(seq_);
    if (session_->fence_value(slot_) != value_)
        throw Error(ErrorCode::Device, session_->name() + ": batch #" + std::to_string(seq_) + " ended without storing fence slot " +
                                           std::to_string(slot_));
}

NpuBackend::NpuBackend(NpuDevice& device, Session& session) : device_(device), session_(session), batch_(session.limits()) {}

Device& NpuBackend::device() { return device_; }

std::string NpuBackend::kernel_name(const Tensor& t) const { return std::string("npu_") + op_name(t.op); }

void NpuBackend::flush() {
    if (batch_.empty()) return;
    try {
        session_.submit(batch_);
    } catch (...) {
        batch_.reset();
        throw;
    }
    batch_.reset();
}

void NpuBackend::graph_compute(const std::vector<Tensor*>& nodes) {
    session_.check();
    const int verbose = session_.config().verbose;
    for (Tensor* node : nodes) {
        if (is_no_op(*node)) continue;
        const DeviceOp op = translate(*node);
        std::vector<Operand> all = op.srcs;
        all.insert(all.end(), op.dsts.begin(), op.dsts.end());
        if (!batch_.fit(all)) flush();
        const uint32_t idx = batch_.add(op.opcode, op_name(node->op), op.srcs, op.dsts, node->op_params.data());
        if (verbose)
            std::fprintf(stderr, "npu: %s op %u %s %s\n", session_.name().c_str(), idx, op_name(node->op), describe(*node).c_str());
    }
    flush();
}

void NpuBackend::synchronize() {
    flush();
    session_.synchronize();
}

void NpuBackend::event_record(Event& e) {
    auto* ev = dynamic_cast<NpuEvent*>(&e);
    if (!ev) {
        // Another device's event: make it complete once this stream's work is done.
        synchronize();
        return;
    }
    // A FENCE op storing the next value in a slot, behind everything queued on this stream.
    const auto [slot, value] = session_.next_fence();
    Tensor fence_view;
    fence_view.set_shape(DType::I32, {static_cast<int64_t>(session_.fences().size() / sizeof(int32_t))});
    Operand o;
    o.tensor = &fence_view;
    o.buffer = &session_.fences();
    o.buffer_flags = TSL_NPU_BUF_FENCE;
    o.offset = 0;
    o.size = session_.fences().size();
    int32_t params[TSL_NPU_OP_PARAMS] = {};
    params[0] = static_cast<int32_t>(value & 0xffffffffu);
    params[1] = static_cast<int32_t>(value >> 32);
    params[2] = static_cast<int32_t>(slot);
    if (!batch_.fit({o})) flush();
    batch_.add(TSL_NPU_OP_FENCE, "FENCE", {}, {o}, params);
    flush();
    ev->session_ = &session_;
    ev->seq_ = session_.last_seq();
    ev->slot_ = slot;
    ev->value_ = value;
}

}  // namespace tessel::npu
