// The device side of both NPU links (DESIGN.md, "The npu offload path"): takes batch requests from
// the request ring, finds each batch's block in the device's mapping of the op-queue buffer, runs it
// with tsl_npu_device_run (heartbeat and cancel flag from the control page) and pushes the response.
// The in-process link runs it on a std::thread; `tessel npu-device` runs it on its batch thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "npu/device/device.h"
#include "npu/posix/platform_posix.h"
#include "npu/link/cpu_set.hpp"
#include "npu/link/ring.hpp"

namespace tessel::npu {

/// A device runtime on this machine's CPU: the posix platform (worker threads) and the
/// tsl_npu_device it serves, with the mutex that makes map/unmap/run one-at-a-time (device.h).
class HostedDevice {
public:
    /// Starts n_threads workers (pinned to `cpus` unless empty) and initialises the device with
    /// vtcm_bytes and `fault`. Throws tessel::Error(Io) naming `name` when the platform cannot
    /// start its threads or pin them.
    HostedDevice(const std::string& name, uint32_t n_threads, uint64_t vtcm_bytes, uint32_t fault, const CpuSet& cpus);
    ~HostedDevice();  ///< unmaps every buffer, stops the workers
    HostedDevice(const HostedDevice&) = delete;
    HostedDevice& operator=(const HostedDevice&) = delete;

    tsl_npu_device& device() { return *device_; }
    std::mutex& mutex() { return mutex_; }

private:
    tsl_npu_platform platform_{};
    std::unique_ptr<tsl_npu_device> device_;
    std::mutex mutex_;
};

/// What the loop does for TSL_NPU_FAULT_DIE after running its first batch, instead of answering.
enum class DieAction {
    ExitProcess,  ///< _exit(3): the device process dies mid-batch (process link)
    StopLoop      ///< leave the loop with control->alive = 0: the in-process analogue
};

/// Serves requests until control->stop is set (checked between batches and after every wake-up),
/// then sets control->alive to 0 and returns. `device_mutex` is held while a batch runs (the
/// device's map/unmap calls take it too: device.h allows one caller at a time). poll: spin on the
/// request ring instead of sleeping. A request whose queue fd is not mapped on the device is
/// answered TSL_NPU_ERR_NO_MAPPING; one whose block lies outside that mapping TSL_NPU_ERR_BAD_BATCH.
void run_device_loop(tsl_npu_device& device, const Region& region, std::mutex& device_mutex, bool poll,
                     DieAction die);

}  // namespace tessel::npu
