// The CPU's cores as sysfs describes them, and the default thread count they give.
#pragma once

#include <string>
#include <vector>

namespace tessel::cpu {

/// Default thread count: the physical cores this process may run on (core_topology(), over the
/// affinity mask), only the big ones on a big/little CPU (CoreTopology::default_threads()).
/// Falls back to std::thread::hardware_concurrency() when sysfs is unreadable; never less than 1.
/// Thread-safe; reads sysfs on every call.
int default_thread_count();

/// Physical cores, and their capacities where the CPU's cores differ in speed (Arm big.LITTLE /
/// DynamIQ: sysfs cpuN/cpu_capacity, the kernel's relative speed of a core, 1024 = the fastest).
struct CoreTopology {
    int cores = 0;      ///< physical cores: distinct sibling lists
    /// physical cores whose capacity is more than half the largest among `cores` (prime and
    /// mid cores; == cores without capacities)
    int big_cores = 0;
    /// Distinct cpu_capacity values of the counted cores, largest first; empty when no counted
    /// core has the file (x86). A core's capacity is the largest of its CPUs' (SMT siblings share one).
    std::vector<int> capacities;

    /// More than one capacity: a big/little CPU.
    bool big_little() const { return capacities.size() > 1; }
    /// The default thread count: the big cores on a big/little CPU, else every core. "Big" is
    /// relative to the counted (allowed) cores: an affinity mask of little cores only counts them all.
    int default_threads() const { return big_little() ? big_cores : cores; }
};

/// The sysfs parser behind default_thread_count(), exposed for tests: reads the cpuN entries
/// under `cpu_dir` (a directory laid out like /sys/devices/system/cpu): their sibling lists
/// (topology/core_cpus_list, or thread_siblings_list on older kernels) and cpu_capacity. If
/// `allowed` is non-empty, only cpuN with allowed[N] true count. All zero/empty if no entry could
/// be read (no errors thrown).
CoreTopology core_topology(const std::string& cpu_dir, const std::vector<bool>& allowed = {});

/// This machine's core_topology(): /sys/devices/system/cpu over this process's affinity mask.
CoreTopology core_topology();

/// core_topology(cpu_dir, allowed).cores.
int count_physical_cores(const std::string& cpu_dir, const std::vector<bool>& allowed = {});

/// CPUs this process may run on (the affinity mask's count; hardware_concurrency() when unknown),
/// at least 1: a thread pool with more threads than this is oversubscribed.
int available_cpus();

}  // namespace tessel::cpu
