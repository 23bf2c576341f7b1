// The op queue (DESIGN.md, "The npu offload path"): up to `depth` batches in flight on a link.
// Each batch is written into its own slot of a shared buffer (depth × max block size) and
// announced with a sequence number 1, 2, 3, ...; pushing into a full queue first takes a response.
// Every response is checked (sequence in order, counts equal to the request's, status) and the
// device's per-op profile records are read back from the slot.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "npu/link/link.hpp"
#include "npu/link/shm.hpp"

namespace tessel::npu {

class OpBatch;
class Trace;

/// One op's record from the device, with the op's name.
struct OpProfile {
    std::string op;
    tsl_npu_profile record;
};

class OpQueue {
public:
    /// Allocates depth slots of slot_bytes each (shared memory) and maps them on the device.
    /// Throws tessel::Error(Io) when the memory cannot be had or the device does not map it.
    /// With `profile`, every answered batch prints one line per op and one for the batch on stderr.
    OpQueue(Link& link, const std::string& name, uint32_t depth, uint64_t slot_bytes, int verbose, bool profile);

    /// Sends every later batch with `batch_flags` (TSL_NPU_BATCH_COUNTERS, TSL_NPU_BATCH_TRACE:
    /// the slot size must then hold the trace spans of a device with n_threads threads) and, with
    /// a trace, records host spans and the device side of every answered batch in it.
    void set_batch_flags(uint32_t batch_flags, uint32_t n_threads, Trace* trace);
    /// While on, every answered batch's records are kept for take_profile() (off: cleared).
    void collect_profile(bool on);
    /// The records kept since the last call, in answer order.
    std::vector<OpProfile> take_profile();

    /// Sends `batch` (non-empty, block_size() <= slot size) as sequence last_seq() + 1. A full queue
    /// first takes one response. Returns TSL_NPU_OK or the status of the failure (the queue is then
    /// unusable; detail() explains).
    int32_t push(const OpBatch& batch);
    /// Takes and checks the next response. Returns its status (TSL_NPU_OK when the batch ran).
    int32_t pop();

    uint32_t in_flight() const { return static_cast<uint32_t>(sent_ - done_); }
    uint32_t depth() const { return depth_; }
    uint64_t last_seq() const { return sent_; }
    uint64_t done_seq() const { return done_; }
    /// Per-op records of the batch answered last.
    const std::vector<OpProfile>& last_profile() const { return profile_; }
    /// Device-side time of the batch answered last, ns.
    uint64_t last_batch_ns() const { return last_batch_ns_; }
    /// Explanation of the last failure ("" when none).
    const std::string& detail() const { return detail_; }
    const ShmBuffer& memory() const { return *mem_; }

private:
    struct Slot {
        tsl_npu_batch_req req{};
        std::vector<std::string> ops, details;
        std::chrono::steady_clock::time_point pushed;
    };
    void print_profile(uint64_t seq, const Slot& slot, const tsl_npu_batch_rsp& rsp) const;
    int32_t fail(int32_t status, const std::string& why);

    Link& link_;
    std::string name_;
    uint32_t depth_;
    uint64_t slot_bytes_;
    int verbose_;
    bool print_profile_;
    uint32_t batch_flags_ = 0, device_threads_ = 1;
    Trace* trace_ = nullptr;
    bool collect_ = false;
    std::vector<OpProfile> collected_;
    std::unique_ptr<ShmBuffer> mem_;
    std::vector<Slot> slots_;
    uint64_t sent_ = 0, done_ = 0;
    std::vector<OpProfile> profile_;
    uint64_t last_batch_ns_ = 0;
    std::string detail_;
};

}  // namespace tessel::npu
