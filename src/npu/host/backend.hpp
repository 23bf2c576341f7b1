// The NPU stream (see device.hpp): graph_compute, synchronize, events.
#pragma once

#include <cstdint>

#include "backend/backend.hpp"
#include "npu/host/opbatch.hpp"

namespace tessel::npu {

class NpuDevice;
class Session;

/// A fence slot and value, set when recorded on an NPU stream; synchronize() waits for the device
/// to store the value (an event recorded nowhere is already complete).
class NpuEvent final : public Event {
public:
    void synchronize() override;

private:
    friend class NpuBackend;
    Session* session_ = nullptr;
    uint64_t seq_ = 0;
    uint32_t slot_ = 0;
    uint64_t value_ = 0;
};

class NpuBackend final : public Backend {
public:
    NpuBackend(NpuDevice& device, Session& session);
    Device& device() override;
    /// Translates and queues `nodes` (views and leaves skipped); returns without waiting.
    /// Throws tessel::Error(Device) when the session has failed, Error(Unsupported) for a node
    /// the device does not implement, Error(InvalidArgument) for an operand outside NPU memory.
    void graph_compute(const std::vector<Tensor*>& nodes) override;
    /// Waits for every queued batch; throws the device's error as tessel::Error(Device).
    void synchronize() override;
    std::string kernel_name(const Tensor& t) const override;
    void event_record(Event& e) override;
    /// Waits on the host for e, then continues (the NPU stream has nothing queued in between).
    void event_wait(Event& e) override { e.synchronize(); }

private:
    void flush();

    NpuDevice& device_;
    Session& session_;
    OpBatch batch_;
};

}  // namespace tessel::npu
