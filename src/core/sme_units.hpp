// Streaming-mode compute units (SMCUs): how many SME units the CPUs share, from each CPU's
// SMIDR_EL1 (Arm ARM, "SMIDR_EL1, Streaming Mode Identification Register"). Several cores may
// share one unit, so the matrix-unit thread cap (cpu/packed/kernel.hpp) uses this count, not the
// core count. Architecture-neutral (pure parsing), so the rules are tested on every host.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tessel {

/// The units that a set of SMIDR_EL1 values (one per CPU) describe.
struct SmeUnitCount {
    int units = 0;               ///< streaming-mode compute units
    bool reserved_nsmc = false;  ///< a shared unit had NSMC = 0xF (reserved; counted as 1)
};

/// Counts units from SMIDR_EL1 values. Fields: SH = bits [14:13], NSMC = bits [59:56] (units
/// shared by the CPUs of one affinity id, minus one), affinity id = (bits [51:32] << 12) | bits [11:0].
///   SH 2: a private unit, +1.
///   SH 3: shared units: per affinity id the largest NSMC + 1 seen counts once (NSMC 0xF: 1).
///   SH 0: private when the affinity id is 0, else shared as SH 3.
///   SH 1: ignored.
/// Pure.
SmeUnitCount count_sme_units(std::span<const uint64_t> smidr);

/// SMIDR_EL1 of every cpu<N> under `cpu_dir` (laid out like /sys/devices/system/cpu), from
/// cpu<N>/regs/identification/smidr_el1 (hex, with or without 0x). CPUs without the file or with
/// text that is not one hex number are skipped. Order: by directory entry (irrelevant to counting).
std::vector<uint64_t> read_smidr_values(const std::string& cpu_dir);

/// count_sme_units(read_smidr_values(cpu_dir)).units; 0 (unknown) when no CPU had a readable file.
/// Logs a warning (once per process) when a value has the reserved NSMC 0xF.
int sme_units_from_sysfs(const std::string& cpu_dir);

}  // namespace tessel
