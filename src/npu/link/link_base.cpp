#include "npu/link/link_base.hpp"

#include <atomic>
#include <chrono>

#include "tessel/errors.hpp"

namespace tessel::npu {

namespace {

constexpr uint32_t kMaxRingDepth = 4096;

const LinkOptions& checked(const LinkOptions& o) {
    if (o.ring_depth == 0 || o.ring_depth > kMaxRingDepth)
        throw Error(ErrorCode::InvalidArgument, o.name + ": ring depth " + std::to_string(o.ring_depth) +
                                                    " outside 1.." + std::to_string(kMaxRingDepth));
    if (o.timeout_ms == 0) throw Error(ErrorCode::InvalidArgument, o.name + ": link timeout must be at least 1 ms");
    return o;
}

}  // namespace

uint32_t ring_capacity(uint32_t depth) {
    uint32_t c = 1;
    while (c < depth) c <<= 1;
    return c;
}

LinkBase::LinkBase(const LinkOptions& options)
    : options_(checked(options)),
      region_buf_(std::make_shared<ShmBuffer>(options.name + "-rings", Region::bytes(ring_capacity(options.ring_depth)))),
      region_(Region::create(region_buf_->data(), ring_capacity(options.ring_depth))) {}

uint32_t LinkBase::slice_us() const {
    // Short enough to notice a lost device quickly, never longer than a tenth of the timeout.
    const uint32_t tenth_us = options_.timeout_ms * 100u;
    return tenth_us < 10000u ? (tenth_us == 0 ? 1u : tenth_us) : 10000u;
}

int32_t LinkBase::fail(int32_t status) {
    if (dead_ == TSL_NPU_OK) dead_ = status;
    return dead_;
}

int32_t LinkBase::watch(const std::function<Attempt()>& attempt) {
    using clock = std::chrono::steady_clock;
    std::atomic_ref<uint64_t> heartbeat(region_.control->heartbeat);
    uint64_t seen = heartbeat.load(std::memory_order_acquire);
    clock::time_point last_progress = clock::now();
    const auto limit = std::chrono::milliseconds(options_.timeout_ms);
    for (;;) {
        const Attempt a = attempt();
        if (a == Attempt::Ready) return TSL_NPU_OK;
        if (a == Attempt::Broken) {
            stop_stalled_device();
            return fail(TSL_NPU_ERR_DEVICE_LOST);
        }
        if (device_gone()) {
            // An answer the device gave just before it went still counts.
            if (attempt() == Attempt::Ready) return TSL_NPU_OK;
            return fail(TSL_NPU_ERR_DEVICE_LOST);
        }
        const uint64_t now_hb = heartbeat.load(std::memory_order_acquire);
        const clock::time_point now = clock::now();
        if (now_hb != seen) {
            seen = now_hb;
            last_progress = now;
        } else if (now - last_progress >= limit) {
            stop_stalled_device();
            return fail(TSL_NPU_ERR_TIMEOUT);
        }
    }
}

int32_t LinkBase::submit(const ShmBuffer& queue, const tsl_npu_batch_req& req) {
    if (dead_ != TSL_NPU_OK) return dead_;
    if (outstanding_ >= options_.ring_depth) return TSL_NPU_ERR_QUEUE_FULL;
    const RequestEntry entry{queue.fd(), 0, req};
    if (!region_.requests.push(&entry)) return TSL_NPU_ERR_QUEUE_FULL;
    ++outstanding_;
    return TSL_NPU_OK;
}

int32_t LinkBase::receive(tsl_npu_batch_rsp* rsp) {
    if (dead_ != TSL_NPU_OK) return dead_;
    if (outstanding_ == 0) return TSL_NPU_ERR_PROTOCOL;  // nothing can come: waiting would only time out
    Ring responses = region_.responses;
    const uint32_t slice = slice_us();
    const int32_t status = watch([&] {
        if (responses.pop(rsp)) return Attempt::Ready;
        responses.wait(slice, options_.poll);
        return responses.pop(rsp) ? Attempt::Ready : Attempt::NotYet;
    });
    if (status == TSL_NPU_OK) --outstanding_;
    return status;
}

}  // namespace tessel::npu
