// The in-process link (link.hpp): the device runtime on its own threads in this process. It maps
// every buffer by fd itself, so it sees offsets into its own mappings, never host pointers.
//
// Stopping the device: the link sets cancel and stop, wakes the batch loop and waits a short grace
// for it to leave, then joins it. A device stuck inside an op never looks at the cancel flag, so a
// loop still running after the grace is abandoned instead: its thread is detached, never joined,
// and everything the device's threads may still touch (the ring region, the device with its own
// mappings of every buffer, its worker pool and scratchpad: DeviceSide) is owned by that thread
// too, so it stays alive, on purpose, until the thread returns (never, for an op that never
// ends). The host's buffers are not among it: the device reaches them only through its mappings.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "npu/link/device_loop.hpp"
#include "npu/link/link_base.hpp"
#include "npu/link/links.hpp"

namespace tessel::npu {

namespace {

// How long a loop asked to leave gets before it is abandoned: after a stall (the device has had
// timeout_ms already; the error must come within timeout_ms + 1 s) and when the link is destroyed
// (as long as the process link gives its child to exit).
constexpr auto kStalledGrace = std::chrono::milliseconds(200);
constexpr auto kShutdownGrace = std::chrono::milliseconds(1000);

std::atomic<uint32_t> g_abandoned{0};

// Counts an abandoned device until its memory is gone (the first member of DeviceSide, so the last
// one destroyed).
struct AbandonMark {
    std::atomic<bool> abandoned{false};
    ~AbandonMark() {
        if (abandoned.load(std::memory_order_acquire)) g_abandoned.fetch_sub(1, std::memory_order_acq_rel);
    }
};

// What the device's threads use, owned jointly by the link and the batch-loop thread: the link
// lets go last when it joined the thread, the thread when the link abandoned it.
struct DeviceSide {
    DeviceSide(std::shared_ptr<ShmBuffer> region, const LinkOptions& o)
        : region_buf(std::move(region)), hosted(o.name, o.n_threads, o.vtcm_bytes, o.fault, o.cpus) {}

    AbandonMark mark;
    std::shared_ptr<ShmBuffer> region_buf;
    HostedDevice hosted;
};

class InProcessLink final : public LinkBase {
public:
    explicit InProcessLink(const LinkOptions& options)
        : LinkBase(options), side_(std::make_shared<DeviceSide>(region_buf_, options)) {
        tsl_npu_device_hwinfo(&side_->hosted.device(), &hwinfo_);
        std::atomic_ref<uint32_t>(region_.control->alive).store(1, std::memory_order_release);
        // The thread's copy of side_ is released when the thread ends, after the loop returned.
        ScopedAffinity pin(options.cpus, options.name);  // the loop thread inherits it
        loop_ = std::thread([side = side_, region = region_, poll = options.poll] {
            run_device_loop(side->hosted.device(), region, side->hosted.mutex(), poll, DieAction::StopLoop);
        });
    }

    ~InProcessLink() override { stop_loop(kShutdownGrace); }

    LinkKind kind() const override { return LinkKind::InProcess; }

    int32_t map(const ShmBuffer& buf, uint32_t /*flags: the device keeps none*/) override {
        return with_device([&](tsl_npu_device& d) {
            // Same process: the host's fd is also the local one; the device maps it itself.
            return tsl_npu_device_map(&d, buf.fd(), buf.fd(), buf.size());
        });
    }

    int32_t unmap(const ShmBuffer& buf) override {
        return with_device([&](tsl_npu_device& d) { return tsl_npu_device_unmap(&d, buf.fd()); });
    }

private:
    // Runs fn under the device mutex, which a running batch holds: waits for it while the device
    // makes progress. (try_lock and short sleeps, not a timed mutex: ThreadSanitizer does not know
    // the pthread_mutex_clocklock that std::timed_mutex::try_lock_for uses.)
    template <typename Fn>
    int32_t with_device(Fn fn) {
        if (dead_ != TSL_NPU_OK) return dead_;
        std::unique_lock<std::mutex> lock(side_->hosted.mutex(), std::defer_lock);
        const int32_t status = watch([&] {
            if (lock.try_lock()) return Attempt::Ready;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            return lock.try_lock() ? Attempt::Ready : Attempt::NotYet;
        });
        if (status != TSL_NPU_OK) return status;
        return fn(side_->hosted.device());
    }

    bool device_gone() override {
        return std::atomic_ref<uint32_t>(region_.control->alive).load(std::memory_order_acquire) == 0;
    }

    void stop_stalled_device() override { stop_loop(kStalledGrace); }

    // Cancels the running batch and asks the loop to leave; joins it when it has left within
    // `grace`, else abandons it (see the top of this file). Does nothing the second time.
    void stop_loop(std::chrono::milliseconds grace) {
        if (!loop_.joinable()) return;
        std::atomic_ref<uint32_t>(region_.control->cancel).store(1, std::memory_order_release);
        std::atomic_ref<uint32_t>(region_.control->stop).store(1, std::memory_order_release);
        region_.requests.wake();
        const auto end = std::chrono::steady_clock::now() + grace;
        while (!device_gone() && std::chrono::steady_clock::now() < end)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (device_gone()) {
            loop_.join();  // the loop has returned: only its thread's exit is left
            return;
        }
        g_abandoned.fetch_add(1, std::memory_order_acq_rel);
        side_->mark.abandoned.store(true, std::memory_order_release);
        loop_.detach();
    }

    std::shared_ptr<DeviceSide> side_;
    std::thread loop_;
};

}  // namespace

std::unique_ptr<Link> open_inproc_link(const LinkOptions& options) {
    return std::make_unique<InProcessLink>(options);
}

uint32_t abandoned_inproc_devices() { return g_abandoned.load(std::memory_order_acquire); }

}  // namespace tessel::npu
