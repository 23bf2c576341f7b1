// Facts about the machine tessel runs on, and process-wide settings an application makes before
// loading models.
#pragma once

#include <string>

#include "tessel/errors.hpp"
#include "tessel/export.h"

namespace tessel {

/// The host CPU.
struct CpuInfo {
    std::string model;       ///< model name as the OS reports it, e.g. "AMD EPYC 9R14"; "" when unknown
    std::string arch;        ///< "x86-64", "aarch64" or "other": the architecture this library was built for
    /// Physical cores in this process's CPU affinity mask, on a big/little CPU only those of the
    /// largest sysfs cpu_capacity (the logical CPU count when sysfs cannot be read), >= 1: the
    /// thread count of a context made with ContextParams::n_threads = 0 (docs/config.md).
    int physical_cores = 1;
};

/// Describes the host CPU: the model name is read once, the core count on every call (it follows
/// the affinity mask). Never throws: unreadable /proc or sysfs files give the fallbacks above.
TESSEL_API CpuInfo cpu_info();

/// Reads every TESSEL_* environment variable the library uses (docs/config.md lists them with
/// their defaults), so a bad value is reported before any work starts; later reads see the same
/// values. Throws tessel::Error(Environment) naming the first variable whose value is empty or
/// invalid. Model::load reads the variables it needs anyway: calling this is optional.
TESSEL_API void check_environment();

/// Process-wide: `false` keeps the weights of models loaded afterwards in their GGUF layout on
/// the CPU, instead of repacking them once at load into the layouts of the CPU's packed
/// micro-kernels (what TESSEL_CPU_PACKED=0 does; the CLI's --no-packed). Packed weights are usually
/// faster; the two kernel families may round differently. Models already loaded keep their
/// layout. Overrides TESSEL_CPU_PACKED; call it before loading models.
TESSEL_API void set_weight_packing(bool enabled);

}  // namespace tessel
