// Configuration of the NPU backend from TESSEL_NPU_* environment variables (docs/config.md,
// docs/npu.md). Every value is validated: a bad one is a tessel::Error(Environment) naming the
// variable and what it accepts, never silently replaced by a default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npu/host/device_spec.hpp"
#include "npu/link/link.hpp"

namespace tessel::npu {

struct Config {
    std::vector<DeviceEntry> devices = {{"NPU0", {{0, 0}}}};  ///< TESSEL_NPU_DEVICES (device_spec.hpp); empty = none
    LinkKind link = LinkKind::InProcess;  ///< TESSEL_NPU_LINK: inproc | process | hexagon
    uint32_t opbatch = 1024;         ///< TESSEL_NPU_OPBATCH: ops per batch (1..16384)
    uint32_t opqueue = 32;           ///< TESSEL_NPU_OPQUEUE: batches in flight (1..256)
    uint64_t max_mapped = 3ull << 30;  ///< TESSEL_NPU_VMEM: bytes of buffers one batch may map (32-bit device)
    bool poll = false;               ///< TESSEL_NPU_OPPOLL=1: spin instead of sleeping
    uint32_t timeout_ms = 10000;     ///< TESSEL_NPU_TIMEOUT_MS: no-progress limit
    int verbose = 0;                 ///< TESSEL_NPU_VERBOSE: 0, 1 (ops, batches) or 2 (+ descriptors)
    int profile = 0;                 ///< TESSEL_NPU_PROFILE: 1 a line per op and per batch from the device's records,
                                     ///< 2 with per-op event counters (perf_event_open)
    std::string pmu;                 ///< TESSEL_NPU_PMU: hardware events for profile 2 ("" default, "off" none)
    std::string trace;               ///< TESSEL_NPU_TRACE: Chrome/Perfetto JSON trace file ("" none)
    std::string opfilter;            ///< TESSEL_NPU_OPFILTER: ECMAScript regex of op names not to claim
    bool hostbuf = false;            ///< TESSEL_NPU_HOSTBUF=1: CPU compute buffers in NPU-HOST memory
    uint32_t n_threads = 2;          ///< TESSEL_NPU_THREADS: device worker threads
    uint64_t vtcm_bytes = 8ull << 20;  ///< TESSEL_NPU_VTCM: scratchpad bytes
    bool matrix = true;              ///< TESSEL_NPU_MATRIX=0: never use the device's matrix unit
    uint32_t mm_select = 0;          ///< TESSEL_NPU_MM_SELECT: allowed matmul kernels, bits 1 << tsl_npu_mm_kernel (0: all)
    uint32_t dma = 1;                ///< TESSEL_NPU_DMA: 0 in place, 1 stream tiles (default), copy: stream as copies (tsl_npu_matmul_kparams.dma)
    bool reorder = true;             ///< TESSEL_NPU_REORDER=0: run nodes in the scheduler's order (no graph_optimize reorder)
    uint32_t opfusion = 0xe;         ///< TESSEL_NPU_OPFUSION: enabled fusion kinds, FusionKind bits (fusion.hpp; 1 in the variable = all)
    uint32_t fault = 0;              ///< TESSEL_NPU_FAULT: none|status|seq|hang|die|bad-desc|stuck (tests)
    std::string device_exe;          ///< TESSEL_NPU_DEVICE_EXE: the tessel binary (process link) or the Hexagon
                                     ///< device program (hexagon link)
    std::string emulator;            ///< TESSEL_NPU_QEMU: the hexagon link's QEMU (default qemu-hexagon-static on PATH)
    std::vector<CpuSet> cpus;        ///< TESSEL_NPU_CPUS: none (anywhere), one set for every device, or one per physical device index
};

/// Reads the TESSEL_NPU_* variables. Throws tessel::Error(Environment) on a bad value.
Config config_from_env();

/// The link options a session of device `name` ("NPU<p>" or "NPU<p>:<v>") opens with under `cfg`:
/// with several TESSEL_NPU_CPUS sets, the set of physical device p. Throws
/// tessel::Error(InvalidArgument) when sets are configured and `name` names no device, or p has none.
LinkOptions link_options(const Config& cfg, const std::string& name);

/// Records the running tessel executable (set by the CLI's main); the process link starts it when
/// TESSEL_NPU_DEVICE_EXE is not set.
void set_self_executable(const std::string& path);

}  // namespace tessel::npu
