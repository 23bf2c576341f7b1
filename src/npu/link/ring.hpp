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
// The region's layout and the ring protocol are the wire format of npu/proto/link.h (a device
// program in C, e.g. the Hexagon device, implements the same).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "npu/proto/link.h"

namespace tessel::npu {

static_assert(std::atomic<uint32_t>::is_always_lock_free, "ring counters must be lock-free to be shared");

/// The control page and a request-ring entry: npu/proto/link.h.
using ControlPage = tsl_npu_control_page;
using RequestEntry = tsl_npu_request_entry;
inline constexpr uint32_t kRegionMagic = TSL_NPU_REGION_MAGIC;

/// Positions of one ring: the producer advances head, the consumer advances tail. Both count
/// entries modulo 2^32; head - tail is the fill level.
struct RingHeader {
    alignas(64) std::atomic<uint32_t> head;
    std::atomic<uint32_t> sleepers;  ///< consumers inside a futex wait (the producer wakes only then)
    alignas(64) std::atomic<uint32_t> tail;
};
static_assert(sizeof(RingHeader) == sizeof(tsl_npu_ring_header) && offsetof(RingHeader, head) == offsetof(tsl_npu_ring_header, head) &&
                  offsetof(RingHeader, sleepers) == offsetof(tsl_npu_ring_header, sleepers) &&
                  offsetof(RingHeader, tail) == offsetof(tsl_npu_ring_header, tail),
              "ring header layout (npu/proto/link.h)");

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
