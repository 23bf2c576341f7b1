// What both NPU links share on the host side (link.hpp): the ring region, the batch calls, the dead
// state and the liveness watch. A link subclass supplies how to tell that its device has gone and how
// to stop a device that no longer makes progress.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "npu/link/link.hpp"
#include "npu/link/ring.hpp"
#include "npu/link/shm.hpp"

namespace tessel::npu {

class LinkBase : public Link {
public:
    tsl_npu_hwinfo hwinfo() override { return hwinfo_; }
    int32_t submit(const ShmBuffer& queue, const tsl_npu_batch_req& req) override;
    int32_t receive(tsl_npu_batch_rsp* rsp) override;
    uint32_t outstanding() const override { return outstanding_; }

protected:
    /// Creates the ring region for options.ring_depth. Throws tessel::Error(InvalidArgument) naming
    /// the device when ring_depth is 0 or above 4096, or timeout_ms is 0.
    explicit LinkBase(const LinkOptions& options);

    /// True once the device can no longer answer (process exited and reaped / loop left).
    virtual bool device_gone() = 0;
    /// Stops a device that made no progress for timeout_ms (cancel and join / kill and reap).
    virtual void stop_stalled_device() = 0;

    /// Result of one attempt of watch(): try, wait at most one slice, try again.
    enum class Attempt { Ready, NotYet, Broken };
    /// Repeats `attempt` until it is Ready (returns TSL_NPU_OK) or the device fails: gone or Broken
    /// -> TSL_NPU_ERR_DEVICE_LOST; no heartbeat change for timeout_ms -> stop_stalled_device() and
    /// TSL_NPU_ERR_TIMEOUT. A failure marks the link dead.
    int32_t watch(const std::function<Attempt()>& attempt);
    /// Marks the link dead with `status` (the first failure wins) and returns the dead status.
    int32_t fail(int32_t status);
    /// Slice of one attempt, microseconds.
    uint32_t slice_us() const;

    LinkOptions options_;
    /// The ring region. Shared: an in-process device abandoned in an op keeps it after the link is gone.
    std::shared_ptr<ShmBuffer> region_buf_;
    Region region_;
    tsl_npu_hwinfo hwinfo_{};
    int32_t dead_ = TSL_NPU_OK;
    uint32_t outstanding_ = 0;
};

/// Smallest power of two >= depth (ring capacity for a ring_depth).
uint32_t ring_capacity(uint32_t depth);

}  // namespace tessel::npu
