// The packed kernel report of `tessel info --kernels`.
#pragma once

#include <string>

#include "core/cpu_features.hpp"

namespace tessel::cpu::packed {

/// Text report: for each weight type the packed path knows (required: Q4_0, Q4_1, Q5_0, Q8_0, F16;
/// optional: IQ4_NL, MXFP4, Q4_K, Q5_K, Q6_K, F32, each shown as present or absent), every compiled
/// kernel with its geometry and whether it can run under `usable` (TESSEL_CPU_ISA applied) and on
/// the `detected` CPU, then the chain's choice for one activation row (GEMV) and for a prompt
/// (M = 512) on `threads` threads with matrix-unit cap `cap` (0 = none), and why.
std::string kernel_report(const CpuFeatures& usable, const CpuFeatures& detected, int threads, int cap);

}  // namespace tessel::cpu::packed
