// The CPU device: host buffers, a thread pool, and the reference kernels (fast kernels and the
// packed weight buffer type plug in here in later steps).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace tessel::cpu {

/// Plain host memory, 64-byte aligned. Its buffers keep tensors in their GGUF layout.
class HostBufferType final : public BufferType {
public:
    std::string name() const override { return "CPU"; }
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override;
    bool is_host() const override { return true; }
    /// The process-wide instance.
    static HostBufferType& instance();
};

class CpuDevice final : public Device {
public:
    std::string name() const override { return "CPU"; }
    std::string description() const override;
    DeviceKind kind() const override { return DeviceKind::Cpu; }
    void memory(size_t& free, size_t& total) const override;
    std::unique_ptr<Backend> init_backend(const BackendParams& params) override;
    BufferType& buffer_type() override { return HostBufferType::instance(); }
    bool supports_op(const Tensor& t) const override;
    bool supports_buft(const BufferType& bt) const override { return bt.is_host(); }
    std::unique_ptr<Event> new_event() override;
};

/// The CPU device (one per process).
CpuDevice& cpu_device();

}  // namespace tessel::cpu
