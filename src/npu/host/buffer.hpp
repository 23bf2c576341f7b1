// NPU buffer types (DESIGN.md, "The npu offload path"): memory shared with the device, one
// memfd-backed ShmBuffer per Buffer, mapped on the device when allocated and unmapped (after the
// device finished with it) when freed.
//  - NPUn:      the device's memory for weights and compute; not host memory as far as the
//               scheduler is concerned (the device may keep it in its own layout).
//  - NPUn-HOST: host-visible memory the CPU reads and writes in place (is_host), which the device
//               reads too; TESSEL_NPU_HOSTBUF=1 puts the CPU's compute buffers there.
//
// Tiled weights (tiled.hpp, docs/npu.md "Tiled weights"): in an NPUn buffer whose usage is
// Weights, a tensor flagged kFlagWeight (not a view) of a tileable type (Q4_0, Q4_1, Q8_0, IQ4_NL,
// MXFP4) is stored as 32x32 tiles. init_tensor records this in the tensor's `extra` (a TiledTensor
// owned by the buffer); nothing is ever guessed from the bytes. set_tensor repacks a whole-tensor
// write at once and stages partial writes in host memory until every byte has arrived; get_tensor
// returns the original GGUF bytes bit-exactly (the staged bytes while the tensor is incomplete).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/buffer.hpp"
#include "npu/link/shm.hpp"

namespace tessel::npu {

class NpuDevice;
class Session;

class NpuBufferType final : public BufferType {
public:
    NpuBufferType(NpuDevice& device, bool host) : device_(device), host_(host) {}
    std::string name() const override;
    /// Throws tessel::Error(Io) when shared memory cannot be had, Error(Device) when the device
    /// cannot map it (or its session failed to open).
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override;
    /// NPUn (not -HOST): tiled_size for a tileable tensor flagged kFlagWeight (not a view), as
    /// alloc_size sees no buffer usage: the weight loader sets kFlagWeight before placing a weight,
    /// and only Weights buffers tile (a flagged tensor elsewhere merely gets the larger size).
    /// Every other tensor: n_bytes().
    size_t alloc_size(const Tensor& t) const override;
    /// 128 bytes: one HVX vector, so device kernels may use aligned loads.
    size_t alignment() const override { return 128; }
    /// A quarter of the bytes one batch may map (TESSEL_NPU_VMEM), at most 2 GiB, so an op over
    /// four buffers still fits a batch on a 32-bit device; larger weights are spread over buffers.
    size_t max_size() const override;
    bool is_host() const override { return host_; }
    /// NPUn: true when the device claims `use` with its unplaced weight sources stored tiled
    /// (device_supports, stored_tiled): MUL_MAT / MUL_MAT_ID / GET_ROWS read tiles, any other use
    /// of a tileable weight is declined and that weight stays with the CPU. NPUn-HOST: every use.
    bool supports_use(const Tensor& use) const override;
    NpuDevice& device() const { return device_; }

private:
    NpuDevice& device_;
    bool host_;
};

/// The buffer's record of a tiled tensor (tensor.extra).
struct TiledTensor {
    size_t device_bytes = 0;        ///< tiled_size: the bytes the tensor takes in device memory
    bool complete = false;          ///< every byte written and repacked
    std::vector<uint8_t> staging;   ///< GGUF bytes of a partially written tensor (n_bytes when used)
    std::vector<std::pair<size_t, size_t>> written;  ///< staged ranges [begin, end), sorted and merged
};

class NpuBuffer final : public Buffer {
public:
    NpuBuffer(NpuBufferType& type, size_t size);
    ~NpuBuffer() override;
    void* base() override { return shm_->data(); }
    /// Places t; a tileable weight in an NPUn Weights buffer gets a TiledTensor record (above).
    void init_tensor(Tensor& t, size_t offset) override;
    void set_tensor(Tensor& t, const void* src, size_t offset, size_t size) override;
    void get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const override;
    /// Fills the memory; tiled tensors then read back as the unpacked form of those bytes.
    void clear(uint8_t value) override;
    const ShmBuffer& shm() const { return *shm_; }
    /// The device whose memory this is.
    NpuDevice& device() const { return npu_type_.device(); }
    /// TSL_NPU_BUF_* flags the batch descriptors carry for this buffer.
    uint32_t wire_flags() const;
    /// Makes this buffer known to another device's session too (once), so that ops there may read
    /// and write it (all-reduce); the buffer unmaps itself there when it is freed, so `session`
    /// must outlive it (sessions live as long as their devices). Throws like
    /// Session::map.
    void map_on(Session& session) const;

    /// t's record when this buffer stores t tiled (t itself, not a view), else nullptr.
    const TiledTensor* tiled(const Tensor& t) const;

private:
    void repack_from(Tensor& t, TiledTensor& rec, const uint8_t* plain);

    NpuBufferType& npu_type_;
    std::unique_ptr<ShmBuffer> shm_;
    std::unordered_map<const Tensor*, std::unique_ptr<TiledTensor>> tiled_;
    mutable std::mutex peers_mu_;
    mutable std::vector<Session*> peers_;  // other sessions this buffer is mapped on
};

/// Whether NPUn (device memory, usage Weights) stores t tiled: a tileable type (tiled.hpp),
/// flagged kFlagWeight, not a view.
bool would_tile(const Tensor& t);

/// The NPU buffer holding t's data, or nullptr when t lives elsewhere.
const NpuBuffer* npu_buffer_of(const Tensor& t);

/// t's tiled record, or nullptr when t is not stored tiled (views of a tiled tensor: nullptr;
/// use reads_tiled for them).
const TiledTensor* tiled_of(const Tensor& t);

/// True when t is a tiled tensor or a view of one (its bytes are not in GGUF layout).
bool reads_tiled(const Tensor& t);

/// True when t's bytes are, or will be, 32x32 tiles: stored tiled (tiled_of), or a weight not
/// placed yet (no buffer) that NPUn would tile (would_tile). The second case answers the weight
/// loader, which asks supports_op / supports_use before placing anything: a weight placed in NPUn
/// is tiled.
bool stored_tiled(const Tensor& t);

}  // namespace tessel::npu
