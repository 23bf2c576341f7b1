// The CPUs a device runtime's threads may run on (TESSEL_NPU_CPUS; docs/npu.md, "Devices and
// sessions"): a set of CPU numbers 0..kMaxCpus-1, and pinning a thread to it for a scope, so that
// the threads it starts meanwhile (which inherit their creator's affinity) run there too.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <array>
#include <cstdint>
#include <string>

namespace tessel::npu {

class CpuSet {
public:
    static constexpr uint32_t kMaxCpus = 256;

    /// Adds CPU `cpu` (< kMaxCpus).
    void add(uint32_t cpu) { words_[cpu / 64] |= uint64_t{1} << (cpu % 64); }
    bool has(uint32_t cpu) const { return cpu < kMaxCpus && ((words_[cpu / 64] >> (cpu % 64)) & 1) != 0; }
    bool empty() const { return words_ == std::array<uint64_t, 4>{}; }
    /// As a list of CPUs and ranges, e.g. "0-3,6" ("" when empty).
    std::string text() const;
    /// The set as 4 words of 64 CPUs (the process link sends them to the device process).
    const std::array<uint64_t, 4>& words() const { return words_; }
    static CpuSet from_words(const std::array<uint64_t, 4>& words);
    /// The CPUs this thread may run on now (sched_getaffinity), those below kMaxCpus.
    static CpuSet allowed();

private:
    std::array<uint64_t, 4> words_{};
};

/// Pins the calling thread to `cpus` until the scope ends, then gives it back the CPUs it had.
/// An empty set changes nothing. Throws tessel::Error(Io) naming `who` and the CPUs when the kernel
/// refuses (e.g. none of them is online).
class ScopedAffinity {
public:
    ScopedAffinity(const CpuSet& cpus, const std::string& who);
    ~ScopedAffinity();
    ScopedAffinity(const ScopedAffinity&) = delete;
    ScopedAffinity& operator=(const ScopedAffinity&) = delete;

private:
    bool pinned_ = false;
    cpu_set_t saved_;
};

}  // namespace tessel::npu
