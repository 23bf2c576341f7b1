// How much memory this process may still take: what tessel checks before a large allocation it
// can size in advance (a context's KV cache and compute buffers), so an impossible size is an
// error naming the bytes instead of a visit from the OOM killer.
#pragma once

#include <cstdint>
#include <string>

namespace tessel {

struct MemoryHeadroom {
    uint64_t bytes = UINT64_MAX;  ///< the smaller of the limits below (UINT64_MAX: none known)
    std::string limited_by;       ///< "MemAvailable" or "RLIMIT_AS" ("" when none is known)
};

/// The memory this process may still allocate: MemAvailable of /proc/meminfo (bytes the kernel
/// can give without swapping), and RLIMIT_AS less the current address space (VmSize of
/// /proc/self/status) when that limit is set; whichever is smaller.
MemoryHeadroom memory_headroom();

/// `bytes` as text with a binary unit, e.g. "24.0 GiB", "512 B".
std::string format_bytes(uint64_t bytes);

}  // namespace tessel
