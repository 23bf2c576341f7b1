// The child side of the process link: `tessel npu-device --socket FD` (link.hpp, control.hpp).
// One thread answers control messages; the batch thread runs the device loop on the ring region.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>

#include "npu/link/control.hpp"
#include "npu/link/device_loop.hpp"
#include "npu/link/link.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

namespace {

// How long the batch thread gets to leave once the host is gone or shut us down. A batch stuck
// inside an op never leaves (it does not look at the cancel flag): the process then exits without
// it, so no device process outlives its host. Below the host's own 1 s shutdown grace.
constexpr auto kLeaveGrace = std::chrono::milliseconds(500);

// The host's ring region, mapped here by the fd that came with Start.
class RegionMapping {
public:
    RegionMapping(int fd, size_t size) : size_(size) {
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) base_ = static_cast<uint8_t*>(p);
    }
    ~RegionMapping() {
        if (base_) munmap(base_, size_);
    }
    RegionMapping(const RegionMapping&) = delete;
    RegionMapping& operator=(const RegionMapping&) = delete;
    uint8_t* base() const { return base_; }

private:
    uint8_t* base_ = nullptr;
    size_t size_;
};

// True when the file behind fd has at least `size` bytes.
bool fd_holds(int fd, uint64_t size) {
    struct stat st {};
    return fstat(fd, &st) == 0 && st.st_size >= 0 && static_cast<uint64_t>(st.st_size) >= size;
}

int refuse(const char* what) {
    std::fprintf(stderr, "tessel: error: npu-device: %s\n", what);
    return 1;
}

// Answers Map/Unmap until the host sends Shutdown or closes the socket. Keeps the local fd of every
// mapping until it is unmapped (the device does not own them).
void serve_control(int sock, HostedDevice& hosted) {
    std::map<int32_t, int> local_fds;
    for (;;) {
        ControlMsg msg{};
        int fd = -1;
        if (recv_control(sock, &msg, &fd) != 1) break;
        ControlMsg answer = msg;
        answer.status = TSL_NPU_OK;
        const auto op = static_cast<ControlOp>(msg.op);
        if (op == ControlOp::Map) {
            std::lock_guard<std::mutex> lock(hosted.mutex());
            // The size must not exceed the memfd: touching pages past its end would raise SIGBUS.
            answer.status = fd < 0 || !fd_holds(fd, msg.size) ? TSL_NPU_ERR_MAP_FAILED
                                                              : tsl_npu_device_map(&hosted.device(), msg.host_fd, fd, msg.size);
            if (answer.status == TSL_NPU_OK && local_fds.count(msg.host_fd) == 0) {
                local_fds[msg.host_fd] = fd;
                fd = -1;
            }
        } else if (op == ControlOp::Unmap) {
            std::lock_guard<std::mutex> lock(hosted.mutex());
            answer.status = tsl_npu_device_unmap(&hosted.device(), msg.host_fd);
            if (auto it = local_fds.find(msg.host_fd); it != local_fds.end()) {
                close(it->second);
                local_fds.erase(it);
            }
        } else if (op != ControlOp::Shutdown) {
            answer.status = TSL_NPU_ERR_PROTOCOL;
        }
        if (fd >= 0) close(fd);
        if (!send_control(sock, answer, -1) || op == ControlOp::Shutdown) break;
    }
    for (const auto& [host_fd, local] : local_fds) close(local);
}

}  // namespace

int device_process_main(int sock) {
    ControlMsg start{};
    int region_fd = -1;
    if (recv_control(sock, &start, &region_fd) != 1 || start.op != static_cast<uint32_t>(ControlOp::Start) ||
        region_fd < 0) {
        if (region_fd >= 0) close(region_fd);
        return refuse("expected a start message with the ring region on the socket");
    }
    if (!fd_holds(region_fd, start.size)) {
        close(region_fd);
        return refuse("the ring region is larger than the memory the host passed");
    }
    RegionMapping mapping(region_fd, start.size);
    close(region_fd);
    Region region;
    if (mapping.base() == nullptr || !Region::attach(mapping.base(), start.size, &region))
        return refuse("the ring region from the host cannot be mapped or is malformed");
    const CpuSet cpus = CpuSet::from_words({start.cpus[0], start.cpus[1], start.cpus[2], start.cpus[3]});
    std::unique_ptr<HostedDevice> hosted;
    std::unique_ptr<ScopedAffinity> pin;  // the batch thread inherits it
    try {
        hosted = std::make_unique<HostedDevice>("device", start.n_threads, start.vtcm_bytes, start.fault, cpus);
        pin = std::make_unique<ScopedAffinity>(cpus, "device");
    } catch (const Error& e) {
        return refuse(e.what());
    }
    ControlMsg answer = start;
    answer.status = TSL_NPU_OK;
    tsl_npu_device_hwinfo(&hosted->device(), &answer.hwinfo);
    std::atomic_ref<uint32_t>(region.control->alive).store(1, std::memory_order_release);
    std::thread batches(run_device_loop, std::ref(hosted->device()), region, std::ref(hosted->mutex()),
                        start.poll != 0, DieAction::ExitProcess);
    pin.reset();
    if (send_control(sock, answer, -1)) serve_control(sock, *hosted);
    // The host shut us down or went away: end the running batch, stop the loop.
    std::atomic_ref<uint32_t>(region.control->cancel).store(1, std::memory_order_release);
    std::atomic_ref<uint32_t>(region.control->stop).store(1, std::memory_order_release);
    region.requests.wake();
    const auto end = std::chrono::steady_clock::now() + kLeaveGrace;
    while (std::atomic_ref<uint32_t>(region.control->alive).load(std::memory_order_acquire) != 0 &&
           std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (std::atomic_ref<uint32_t>(region.control->alive).load(std::memory_order_acquire) != 0) {
        std::fprintf(stderr, "tessel: error: npu-device: the running op did not end within %lld ms of the shutdown; "
                             "exiting without it\n", static_cast<long long>(kLeaveGrace.count()));
        _exit(4);  // no destructor may join the stuck threads or unmap what they use
    }
    batches.join();
    close(sock);
    return 0;
}

}  // namespace tessel::npu
