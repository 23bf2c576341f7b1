// The shared-memory region of an NPU link (DESIGN.md, "The npu offload path"): a control page and two
// single-producer/single-consumer rings of fixed-size entries, all in one ShmBuffer that the host
// and the device map (in the process link, at different addresses in different processes).
//
// Everything in the region is address-free: ring positions are u32 counters (std::atomic<uint32_t>,
// lock-free on every target tessel builds for), entries are indexed, never pointed at. A waiter
// sleeps on a ring's head with SYS_futex (the shared, non-_PRIVATE operations, since the two sides
// may be different processes) for a short slice, so it can look at liveness between slices; in poll
// mode it spins with a pause instead.
//
// Region layout (offsets in bytes, capacity = entries per ring, a power of two):
//     0      ControlPage            (one 4 KiB page)
//     4096   RingHeader  request    (64-byte lines: head, then tail)
//     4224   RingHeader  response
//     4352   RequestEntry  x capacity
//     ...    tsl_npu_batch_rsp x capacity
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "npu/proto/proto.h"

namespace tessel::npu {

static_assert(std::atomic<uint32_t>::is_always_lock_free, "ring counters must be lock-free to be shared");

/// The control page: device liveness and the host's requests to the device loop.
struct ControlPage {
    uint32_t magic;     ///< kRegionMagic once the host has initialised the region
    uint32_t capacity;  ///< entries per ring
    /// Bumped by the device at the start of every batch, after every op and per chunk of work inside
    /// an op (the host's progress signal). Accessed through std::atomic_ref on the host, passed as
    /// volatile to tsl_npu_device_run.
    uint64_t heartbeat;
    uint32_t cancel;    ///< non-zero: the running batch stops between ops (TSL_NPU_ERR_CANCELLED)
    uint32_t stop;      ///< non-zero: the device loop exits after its current batch
    uint32_t alive;     ///< 1 while the device loop runs; 0 once it has left (for any reason)
    uint32_t reserved;
};

inline constexpr uint32_t kRegionMagic = 0x4b4c5354u;  // "TSLK"

/// A request-ring entry: the batch and the host fd of the op-queue buffer holding its block.
struct RequestEntry {
    int32_t queue_fd;
    uint32_t reserved;
    tsl_npu_batch_req req;
};
static_assert(sizeof(RequestEntry) == 48, "request entry layout");

/// Positions of one ring: the producer advances head, the consumer advances tail. Both count
/// entries modulo 2^32; head - tail is the fill level.
struct RingHeader {
    alignas(64) std::atomic<uint32_t> head;
    std::atomic<uint32_t> sleepers;  ///< consumers inside a futex wait (the producer wakes only then)
    alignas(64) std::atomic<uint32_t> tail;
};
static_assert(sizeof(RingHeader) == 128, "ring header layout");

/// Sleeps while *word == expected, at most timeout_us microseconds (SYS_futex FUTEX_WAIT, shared).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, uint32_t timeout_us);
/// Wakes every waiter on word (SYS_futex FUTEX_WAKE, shared).
void futex_wake(std::atomic<uint32_t>& word);

/// One single-producer/single-consumer ring over entries of entry_bytes in shared memory. A Ring is
/// a view: copying it copies the pointers. Exactly one thread pushes and one thread pops.
class Ring {
public:
    Ring() = default;
    Ring(RingHeader* header, uint8_t* entries, uint32_t capacity, uint32_t entry_bytes)
        : header_(header), entries_(entries), capacity_(capacity), entry_bytes_(entry_bytes) {}

    /// Copies entry_bytes from `entry` into the ring and rings the doorbell; false when full.
    bool push(const void* entry);
    /// Copies the oldest entry to `entry` and frees its slot; false when empty.
    bool pop(void* entry);
    bool empty() const;
    /// Returns when the ring is not empty, after about `slice_us` microseconds, or when woken.
    /// poll: spin (pause, then yield) instead of sleeping in the kernel.
    void wait(uint32_t slice_us, bool poll) const;
    /// Wakes a consumer sleeping in wait() without pushing (used to deliver a stop request).
    void wake() const;

private:
    RingHeader* header_ = nullptr;
    uint8_t* entries_ = nullptr;
    uint32_t capacity_ = 0;
    uint32_t entry_bytes_ = 0;
};

/// The region seen by one side: pointers into a mapping of region_bytes(capacity) bytes.
struct Region {
    ControlPage* control = nullptr;
    Ring requests;   ///< host -> device, RequestEntry
    Ring responses;  ///< device -> host, tsl_npu_batch_rsp

    /// Bytes a region with `capacity` entries per ring needs.
    static size_t bytes(uint32_t capacity);
    /// Host: initialises the zero-filled mapping `base` (at least bytes(capacity)) and returns its view.
    /// capacity must be a power of two.
    static Region create(uint8_t* base, uint32_t capacity);
    /// Device: the view of a region the host created. Returns false (and leaves *out alone) when
    /// the magic is wrong or `size` cannot hold the capacity the control page states.
    static bool attach(uint8_t* base, size_t size, Region* out);
};

/// Spin-wait hint for poll loops (x86 pause, else a no-op).
void cpu_relax();

}  // namespace tessel::npu
