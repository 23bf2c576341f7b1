// Virtual sessions (DESIGN.md, "The npu offload path"; docs/npu.md, "Devices and sessions"): several
// sessions served by one device runtime. All of them talk to the device over one link, so every
// session's batches enter one request ring and the device runs them in the order they were submitted,
// whichever session sent them; the responses come back in that order and each goes to the session
// that sent its batch. A buffer mapped by several sessions is mapped on the device once (counted).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "npu/link/link.hpp"

namespace tessel::npu {

class SharedDevice {
public:
    /// Physical device `name` ("NPU0") for at most `n_sessions` sessions (1..16); opens nothing yet.
    SharedDevice(std::string name, uint32_t n_sessions);
    ~SharedDevice();
    SharedDevice(const SharedDevice&) = delete;
    SharedDevice& operator=(const SharedDevice&) = delete;

    /// A link for one more session. The first open session starts the device with `options`, its
    /// ring deep enough for n_sessions x options.ring_depth batches and named after the physical
    /// device; later sessions share that device (their other options are not used). When every
    /// session's link is gone the device stops; the next attach starts it again. Throws what
    /// open_link throws, and tessel::Error(InvalidArgument) naming the device when n_sessions links
    /// are already open.
    ///
    /// A session's receive() holds the device's link while it waits, so the other sessions' calls
    /// wait for that answer (the device answers in order, so it comes). Every link is driven by one
    /// host thread at a time, like any link.
    std::unique_ptr<Link> attach(const LinkOptions& options);

    const std::string& name() const { return name_; }
    /// Links attached now.
    uint32_t attached() const;

    struct Hub;  // the open device and its routing (shared_link.cpp)

private:
    std::string name_;
    uint32_t n_sessions_;
    mutable std::mutex mu_;
    std::weak_ptr<Hub> hub_;
};

}  // namespace tessel::npu
