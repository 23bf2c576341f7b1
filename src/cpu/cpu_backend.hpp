// The CPU device: host buffers, the CPU_PACKED weight buffer type, a thread pool, the packed
// path, the fast kernels and the reference kernels.
//
// Its backend plans a graph once (graph_plan.hpp: each node's kernel or packed plan, its work
// bytes, solo or all threads) on the first graph_compute of a graph_uid and keeps the plans of the
// last 16 uids (uid 0: planned on every call). Each graph_compute is one pool run in which every
// thread walks the planned nodes, a barrier between steps; small nodes run on thread 0 alone. The
// environment (TESSEL_CPU_MATRIX_THREADS, TESSEL_CPU_CHUNK_MULT) is read when the backend is
// created, never while it computes, and a planned graph_compute allocates nothing.
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
    /// CPU_PACKED (src/cpu/packed/buffer.hpp) when packing is enabled and this CPU runs a packed kernel.
    std::vector<BufferType*> extra_weight_buffer_types() override;
    bool supports_op(const Tensor& t) const override;
    /// From the kernel tables under the usable features: Fast for a node the packed path or a fast
    /// kernel (cpu/kernels/kernel.hpp) serves, Reference for the rest the reference kernels run.
    KernelKind declared_kernel(const Tensor& t) const override;
    bool supports_buft(const BufferType& bt) const override { return bt.is_host(); }
    std::unique_ptr<Event> new_event() override;
};

/// The CPU device (one per process).
CpuDevice& cpu_device();

}  // namespace tessel::cpu
