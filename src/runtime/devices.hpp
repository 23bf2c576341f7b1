// The composition root of devices: the one place that knows every device implementation (the CPU
// backend and the NPU sessions) and registers them; every other layer sees only backend::Device.
#pragma once

#include "backend/registry.hpp"

namespace tessel::runtime {

/// The process-wide registry: the CPU device, then NPU0..NPU(n-1) as TESSEL_NPU_* configure them
/// (docs/config.md), registered on the first call (thread-safe). A bad TESSEL_NPU_* value leaves
/// NPU0 registered so that its first use reports the variable.
Registry& device_registry();

}  // namespace tessel::runtime
