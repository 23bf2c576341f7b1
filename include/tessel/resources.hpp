// What a loaded model runs on, and whether a context of it fits in memory, asked before the
// context is made (e.g. to check a whole list of configurations before measuring any of them).
#pragma once

#include <string>
#include <vector>

#include "tessel/engine.hpp"
#include "tessel/errors.hpp"
#include "tessel/export.h"

namespace tessel {

/// The devices `model` runs on, in the scheduler's priority order: the accelerator first when it
/// was loaded onto one, the CPU (the fallback for every node the accelerator does not claim)
/// last, e.g. {"NPU0", "CPU"} or {"CPU"}. Device names as the backends report them.
TESSEL_API std::vector<std::string> model_devices(const Model& model);

/// Checks `params` for a context of `model` the way the Context constructor does, without
/// allocating anything: throws tessel::Error(InvalidArgument) for bad parameters, and
/// Error(OutOfMemory) naming the bytes the KV cache and compute buffers need and the bytes
/// available (MemAvailable or the RLIMIT_AS headroom, whichever is lower) when they do not fit.
/// The same memory check runs again when the context is made.
TESSEL_API void check_context_fits(const Model& model, const ContextParams& params);

}  // namespace tessel
