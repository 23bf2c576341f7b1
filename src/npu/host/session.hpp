// A session with one NPU device (DESIGN.md, "The npu offload path"): opens the link, checks the
// device's protocol version, allocates the op-queue memory and the fence buffer, then runs batches.
// Construction undoes whatever it had set up when a later step fails. The first device error
// (an error status, a wrong response, a timeout, a lost device) is remembered: every later submit,
// wait or synchronize throws it as tessel::Error(Device), naming the device and the status.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "npu/host/config.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/host/opqueue.hpp"
#include "npu/link/link.hpp"
#include "npu/link/shared_link.hpp"
#include "npu/link/shm.hpp"

namespace tessel::npu {

class Trace;

/// The params of a FENCE or FENCE_WAIT op on fence slot `slot` and value `value` (proto.h).
inline void fence_params(int32_t (&params)[TSL_NPU_OP_PARAMS], uint32_t slot, uint64_t value) {
    for (int32_t& p : params) p = 0;
    params[0] = static_cast<int32_t>(value & 0xffffffffu);
    params[1] = static_cast<int32_t>(value >> 32);
    params[2] = static_cast<int32_t>(slot);
}

class Session {
public:
    /// Opens device `name` ("NPU0", "NPU0:1", ...) under `cfg`: a device runtime of its own, or with
    /// `shared`, a virtual session of that device runtime (shared_link.hpp). Throws tessel::Error(Io)
    /// when the link cannot be opened and tessel::Error(Device) when the device speaks another
    /// protocol version.
    Session(const std::string& name, const Config& cfg, SharedDevice* shared = nullptr);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const std::string& name() const { return name_; }
    const Config& config() const { return cfg_; }
    const tsl_npu_hwinfo& hwinfo() const { return hwinfo_; }
    LinkKind link_kind() const { return link_->kind(); }
    /// True when both sessions are served by one device runtime (virtual sessions of one physical
    /// device, or the same session): it runs their batches in submission order.
    bool shares_device_with(const Session& other) const {
        return &other == this || (shared_ != nullptr && other.shared_ == shared_);
    }
    BatchLimits limits() const;

    /// Makes `buf` known to the device. Throws tessel::Error(Device) when the device refuses.
    void map(const ShmBuffer& buf, uint32_t flags);
    /// Waits for every batch in flight, then forgets `buf` on the device. Never throws (a failed
    /// session has nothing left to unmap).
    void unmap(const ShmBuffer& buf);

    /// Queues `batch` (applying TESSEL_NPU_FAULT=bad-desc if set); returns its sequence number.
    uint64_t submit(const OpBatch& batch);
    /// Waits until batch `seq` has been answered (and checked).
    void wait(uint64_t seq);
    /// Waits for every batch in flight.
    void synchronize();
    uint64_t last_seq() const;
    uint64_t done_seq() const;
    /// Throws the remembered error, if any.
    void check() const;
    bool failed() const { return status_ != TSL_NPU_OK; }

    /// Per-op profile records of the batch answered last.
    std::vector<OpProfile> last_profile() const;
    /// While on, the records of every answered batch are kept for take_profile().
    void collect_profile(bool on);
    /// The records kept since the last call (answered batches only: synchronize first).
    std::vector<OpProfile> take_profile();
    /// The process's trace (TESSEL_NPU_TRACE), or nullptr.
    Trace* trace() const { return trace_; }

    /// The fence buffer (128-byte slots).
    const ShmBuffer& fences() const { return *fences_; }
    /// The fence buffer as an op operand: one I32 tensor over all of it (stable for the session's
    /// life, so op batches that key tensors by address never confuse two sessions' buffers).
    Operand fence_operand() const;
    /// The next fence to record: a slot (round robin) and a value no earlier fence used.
    std::pair<uint32_t, uint64_t> next_fence();
    /// Value the device last stored in fence slot `slot`. Each slot's values only grow.
    uint64_t fence_value(uint32_t slot) const;
    /// Makes `peer`'s fence buffer known to this device (once per peer session), so that a
    /// FENCE_WAIT op here can read a fence the peer's device stores; when `peer` closes first, it
    /// unmaps its fences here. Throws like map().
    void map_peer_fences(Session& peer);

private:
    void fail(int32_t status, const std::string& detail);
    [[noreturn]] void throw_error() const;
    void drain_to(uint64_t seq);

    std::string name_;
    Config cfg_;
    const SharedDevice* shared_ = nullptr;
    std::unique_ptr<Link> link_;
    tsl_npu_hwinfo hwinfo_{};
    std::unique_ptr<OpQueue> queue_;
    Trace* trace_ = nullptr;  // the process's, not owned
    std::unique_ptr<ShmBuffer> fences_;
    Tensor fence_view_;
    uint32_t n_fence_slots_ = 64, next_fence_ = 0;
    uint64_t fence_value_ = 0;
    std::vector<Session*> fence_peers_;    // sessions whose fence buffers are mapped here
    std::vector<Session*> fence_readers_;  // sessions that mapped this one's fence buffer
    int32_t status_ = TSL_NPU_OK;
    std::string error_;
    mutable std::mutex mu_;
};

}  // namespace tessel::npu
