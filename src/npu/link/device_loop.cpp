#include "npu/link/device_loop.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "npu/device/faults.h"
#include "tessel/errors.hpp"

namespace tessel::npu {

namespace {

// A stop request also wakes a sleeping loop, so the sleep slice only bounds a lost wake-up; a
// polling loop does not sleep and looks at the stop flag every millisecond.
constexpr uint32_t kSleepSliceUs = 50000;
constexpr uint32_t kPollSliceUs = 1000;

bool flag(uint32_t& word) {
    return std::atomic_ref<uint32_t>(word).load(std::memory_order_acquire) != 0;
}

tsl_npu_batch_rsp run_batch(tsl_npu_device& device, ControlPage& control, const RequestEntry& entry,
                            std::mutex& device_mutex) {
    const tsl_npu_batch_req& req = entry.req;
    tsl_npu_batch_rsp rsp{};
    rsp.seq = req.seq;
    rsp.n_bufs = req.n_bufs;
    rsp.n_tensors = req.n_tensors;
    rsp.n_ops = req.n_ops;
    rsp.err_op = 0xffffffffu;
    std::lock_guard<std::mutex> lock(device_mutex);
    uint64_t size = 0;
    uint8_t* base = tsl_npu_device_mapping(&device, entry.queue_fd, &size);
    if (base == nullptr) {
        rsp.status = TSL_NPU_ERR_NO_MAPPING;
    } else if (req.block_offset > size || req.block_size > size - req.block_offset) {
        rsp.status = TSL_NPU_ERR_BAD_BATCH;
    } else {
        tsl_npu_device_run(&device, base + req.block_offset, &req, &rsp,
                           reinterpret_cast<volatile uint64_t*>(&control.heartbeat),
                           reinterpret_cast<volatile const uint32_t*>(&control.cancel));
    }
    return rsp;
}

}  // namespace

HostedDevice::HostedDevice(const std::string& name, uint32_t n_threads, uint64_t vtcm_bytes, uint32_t fault, const CpuSet& cpus)
    : device_(std::make_unique<tsl_npu_device>()) {
    ScopedAffinity pin(cpus, name);  // the workers inherit it
    if (tsl_npu_posix_platform_create(n_threads, vtcm_bytes, &platform_) != TSL_NPU_OK)
        throw Error(ErrorCode::Io, name + ": the device runtime cannot start " + std::to_string(n_threads) +
                                       " threads with " + std::to_string(vtcm_bytes) + " bytes of VTCM");
    tsl_npu_device_init(device_.get(), &platform_);
    device_->fault = fault;
}

HostedDevice::~HostedDevice() {
    tsl_npu_device_release(device_.get());
    tsl_npu_posix_platform_destroy(&platform_);
}

void run_device_loop(tsl_npu_device& device, const Region& region, std::mutex& device_mutex, bool poll,
                     DieAction die) {
    ControlPage& control = *region.control;
    Ring requests = region.requests;
    Ring responses = region.responses;
    while (!flag(control.stop)) {
        RequestEntry entry;
        if (!requests.pop(&entry)) {
            requests.wait(poll ? kPollSliceUs : kSleepSliceUs, poll);
            continue;
        }
        std::atomic_ref<uint64_t>(control.heartbeat).fetch_add(1, std::memory_order_release);
        const tsl_npu_batch_rsp rsp = run_batch(device, control, entry, device_mutex);
        if (device.fault == TSL_NPU_FAULT_DIE) {
            if (die == DieAction::ExitProcess) _exit(3);
            break;
        }
        // The host keeps at most `capacity` batches outstanding, so the response ring has room;
        // a host that broke that rule gets its response once it has read the earlier ones.
        while (!responses.push(&rsp) && !flag(control.stop)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::atomic_ref<uint32_t>(control.alive).store(0, std::memory_order_release);
}

}  // namespace tessel::npu
