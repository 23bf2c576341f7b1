// NPU buffer types (DESIGN.md, "The npu offload path"): memory shared with the device, one
// memfd-backed ShmBuffer per Buffer, mapped on the device when allocated and unmapped (after the
// device finished with it) when freed.
//  - NPUn:      the device's memory for weights and compute; not host memory as far as the
//               scheduler is concerned (the device may keep it in its own layout).
//  - NPUn-HOST: host-visible memory the CPU reads and writes in place (is_host), which the device
//               reads too; TESSEL_NPU_HOSTBUF=1 puts the CPU's compute buffers there.
#pragma once

#include <memory>
#include <string>

#include "backend/buffer.hpp"
#include "npu/link/shm.hpp"

namespace tessel::npu {

class NpuDevice;

class NpuBufferType final : public BufferType {
public:
    NpuBufferType(NpuDevice& device, bool host) : device_(device), host_(host) {}
    std::string name() const override;
    /// Throws tessel::Error(Io) when shared memory cannot be had, Error(Device) when the device
    /// cannot map it (or its session failed to open).
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override;
    /// 128 bytes: one HVX vector, so device kernels may use aligned loads.
    size_t alignment() const override { return 128; }
    /// A quarter of the bytes one batch may map (TESSEL_NPU_VMEM), at most 2 GiB, so an op over
    /// four buffers still fits a batch on a 32-bit device; larger weights are spread over buffers.
    size_t max_size() const override;
    bool is_host() const override { return host_; }
    NpuDevice& device() const { return device_; }

private:
    NpuDevice& device_;
    bool host_;
};

class NpuBuffer final : public Buffer {
public:
    NpuBuffer(NpuBufferType& type, size_t size);
    ~NpuBuffer() override;
    void* base() override { return shm_->data(); }
    void set_tensor(Tensor& t, const void* src, size_t offset, size_t size) override;
    void get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const override;
    void clear(uint8_t value) override;
    const ShmBuffer& shm() const { return *shm_; }
    /// TSL_NPU_BUF_* flags the batch descriptors carry for this buffer.
    uint32_t wire_flags() const;

private:
    NpuBufferType& npu_type_;
    std::unique_ptr<ShmBuffer> shm_;
};

/// The NPU buffer holding t's data, or nullptr when t lives elsewhere.
const NpuBuffer* npu_buffer_of(const Tensor& t);

}  // namespace tessel::npu
