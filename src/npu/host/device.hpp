// The NPU device and its backend (DESIGN.md, "Core contracts" and "The npu offload path").
//
// NpuDevice "NPUn" owns the configuration and, opened on first use, the Session with its device
// runtime; it offers the NPUn and NPUn-HOST buffer types. NpuBackend::graph_compute translates
// nodes into op descriptors, adds them to an op batch (flushing whenever the next op does not fit)
// and sends the last batch without waiting; synchronize() waits for all. Events are fence ops:
// recording one sends a FENCE op that stores a value in a 128-byte fence slot when the device
// reaches it.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/config.hpp"
#include "npu/host/plan.hpp"
#include "npu/link/shared_link.hpp"

namespace tessel {
class Registry;
}

namespace tessel::npu {

class Session;

class NpuDevice final : public Device {
public:
    /// Device `name` ("NPU<p>", "NPU<p>:<v>") under `cfg`; opens nothing yet. With `shared`, its
    /// session is a virtual session of that device runtime (shared_link.hpp), else it has its own.
    NpuDevice(std::string name, const Config& cfg, std::shared_ptr<SharedDevice> shared = nullptr);
    /// A group ("NPU[0-1]"; docs/npu.md, "Groups"): one device whose own session is rank 0's
    /// (`lead` names it, e.g. "NPU0"; shared like a single device's) and whose `peers` are ranks
    /// 1..n-1. Its memory is rank 0's, mapped on every peer; its streams split the rows of the
    /// weights' matmuls across the ranks (BackendParams::split_rows).
    NpuDevice(std::string name, std::string lead, const Config& cfg, std::shared_ptr<SharedDevice> shared,
              std::vector<std::unique_ptr<NpuDevice>> peers);
    ~NpuDevice() override;

    std::string name() const override { return name_; }
    std::string description() const override;
    DeviceKind kind() const override { return DeviceKind::Accel; }
    /// The mapped-bytes budget of one batch (TESSEL_NPU_VMEM), as free and total.
    void memory(size_t& free, size_t& total) const override;
    std::unique_ptr<Backend> init_backend(const BackendParams& params) override;
    BufferType& buffer_type() override { return device_buft_; }
    /// The ops device_supports() accepts (translate.hpp) under budget(), minus ops whose name
    /// matches TESSEL_NPU_OPFILTER. A node whose VTCM plan exceeds the budget, or a matmul no
    /// allowed kernel takes (TESSEL_NPU_MM_SELECT), is declined: the CPU takes it.
    bool supports_op(const Tensor& t) const override;
    /// Fast for every node device_supports() accepts under budget() (the device's op checks, as the
    /// host mirrors them), whatever TESSEL_NPU_OPFILTER declines: a filtered run claims less.
    KernelKind declared_kernel(const Tensor& t) const override;
    /// What the device offers planning: the open session's hwinfo (VTCM bytes, threads, matrix
    /// unit), or before the session opens the configuration the device will be started with; plus
    /// the matmul settings (TESSEL_NPU_MM_SELECT, TESSEL_NPU_MATRIX, TESSEL_NPU_DMA).
    DeviceBudget budget() const;
    bool supports_buft(const BufferType& bt) const override { return &bt == &device_buft_ || &bt == &host_buft_; }
    /// "host_buffer_type": the NPUn-HOST BufferType*; "cpu_compute_buffer_type": the same when
    /// TESSEL_NPU_HOSTBUF=1 (the scheduler then gives the CPU its compute memory there), else nullptr;
    /// "allreduce_comm": the all-reduce communicator's entry points, an AllReduceApi* (allreduce.hpp);
    /// "allreduce_comm_mpi": the same across MPI processes (allreduce_mpi.hpp; builds with TESSEL_MPI).
    void* proc(const std::string& name) override;
    std::unique_ptr<Event> new_event() override;

    /// The session, opened on first call. Throws what Session's constructor throws (and again on
    /// later calls: a device that failed to open stays unusable).
    Session& session();
    /// A group's ranks 1..n-1 (empty for a single device).
    const std::vector<std::unique_ptr<NpuDevice>>& peers() const { return peers_; }
    const Config& config() const { return cfg_; }
    /// Sets TESSEL_NPU_REORDER's switch for graphs allocated from now on (tests compare both in
    /// one process). Not thread-safe against a scheduler allocating on this device.
    void set_reorder(bool on) { cfg_.reorder = on; }
    /// Sets the fusion kinds (Config::opfusion, FusionKind bits) of graphs translated from now on:
    /// tests and tools compare fusion on and off in one process.
    void set_opfusion(uint32_t kinds) { cfg_.opfusion = kinds; }
    BufferType& host_buffer_type() { return host_buft_; }

private:
    std::string name_, session_name_;
    Config cfg_;
    struct OpFilter;  // TESSEL_NPU_OPFILTER's compiled regex (device.cpp: <regex> stays out of this header)
    std::unique_ptr<OpFilter> opfilter_;
    NpuBufferType device_buft_, host_buft_;
    mutable std::mutex mu_;
    std::shared_ptr<SharedDevice> shared_;
    std::vector<std::unique_ptr<NpuDevice>> peers_;
    std::unique_ptr<Session> session_;
    std::string open_error_;
};

/// Adds the devices of TESSEL_NPU_DEVICES (default NPU0) to `registry`; the sessions of one physical
/// device named more than once (NPU0,NPU0:1) share its device runtime. A bad TESSEL_NPU_* value
/// registers no device and is reported by the first use (see config_error()).
void register_devices(Registry& registry);

/// The TESSEL_NPU_* configuration error met at registration ("" when none).
const std::string& config_error();

}  // namespace tessel::npu
