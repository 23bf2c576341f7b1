// The devices tessel can run a model on, as ModelParams::devices names them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessel/export.h"

namespace tessel {

enum class DeviceKind {
    Cpu,    ///< the host CPU (always present, the fallback for nodes no accelerator claims)
    Accel,  ///< an accelerator, e.g. an NPU (TESSEL_NPU_DEVICES, docs/config.md)
};

/// One registered device.
struct DeviceInfo {
    std::string name;         ///< "CPU", "NPU0", "NPU1", ...; ModelParams::devices takes it in any case
    std::string description;  ///< e.g. the CPU model
    DeviceKind kind = DeviceKind::Cpu;
    uint64_t memory_free = 0;   ///< bytes (host RAM for the CPU; the mappable bytes for an NPU)
    uint64_t memory_total = 0;  ///< bytes
};

/// Every registered device, the CPU first. Does not open any device (an NPU's runtime starts
/// when a model is loaded onto it). Throws nothing.
TESSEL_API std::vector<DeviceInfo> devices();

/// The device a ModelParams::devices entry names, as devices() names it: "cpu" -> "CPU", "npu" ->
/// the first NPU (e.g. "NPU0"), a registered name in any case -> that device. Opens nothing.
/// Throws tessel::Error(InvalidArgument) "unknown device 'NAME' (devices: cpu, npu = npu0, ...)"
/// for any other name (what Model::load throws for it).
TESSEL_API std::string resolve_device(std::string_view name);

}  // namespace tessel
