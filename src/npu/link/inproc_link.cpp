// The in-process link (link.hpp): the device runtime on its own threads in this process. It maps
// every buffer by fd itself, so it sees offsets into its own mappings, never host pointers.
#include "npu/link/links.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "npu/link/device_loop.hpp"
#include "npu/link/link_base.hpp"

namespace tessel::npu {

namespace {

class InProcessLink final : public LinkBase {
public:
    explicit InProcessLink(const LinkOptions& options)
        : LinkBase(options), device_(options.name, options.n_threads, options.vtcm_bytes, options.fault) {
        tsl_npu_device_hwinfo(&device_.device(), &hwinfo_);
        std::atomic_ref<uint32_t>(region_.control->alive).store(1, std::memory_order_release);
        loop_ = std::thread(run_device_loop, std::ref(device_.device()), region_, std::ref(device_.mutex()),
                            options.poll, DieAction::StopLoop);
    }

    ~InProcessLink() override { stop_loop(); }

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
        std::unique_lock<std::mutex> lock(device_.mutex(), std::defer_lock);
        const int32_t status = watch([&] {
            if (lock.try_lock()) return Attempt::Ready;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            return lock.try_lock() ? Attempt::Ready : Attempt::NotYet;
        });
        if (status != TSL_NPU_OK) return status;
        return fn(device_.device());
    }

    bool device_gone() override {
        return std::atomic_ref<uint32_t>(region_.control->alive).load(std::memory_order_acquire) == 0;
    }

    void stop_stalled_device() override { stop_loop(); }

    // Cancels the running batch, asks the loop to leave and joins it.
    void stop_loop() {
        std::atomic_ref<uint32_t>(region_.control->cancel).store(1, std::memory_order_release);
        std::atomic_ref<uint32_t>(region_.control->stop).store(1, std::memory_order_release);
        region_.requests.wake();
        if (loop_.joinable()) loop_.join();
    }

    HostedDevice device_;
    std::thread loop_;
};

}  // namespace

std::unique_ptr<Link> open_inproc_link(const LinkOptions& options) {
    return std::make_unique<InProcessLink>(options);
}

}  // namespace tessel::npu
