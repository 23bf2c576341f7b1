// The public system API (include/tessel/system.hpp).
#include "tessel/system.hpp"

#include "core/cpu_features.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/mul_mat.hpp"
#include "cpu/topology.hpp"
#include "gguf/parser.hpp"
#include "npu/host/config.hpp"

namespace tessel {

CpuInfo cpu_info() {
    const CpuFeatures& f = cpu_features();
    return {f.model, arch_name(f.arch), cpu::default_thread_count()};
}

void check_environment() {
    usable_cpu_features();  // TESSEL_CPU_ISA
    npu::config_from_env();  // TESSEL_NPU_*
    cpu::packed::packed_enabled();  // TESSEL_CPU_PACKED
    cpu::packed::tuning_from_env();  // TESSEL_CPU_MATRIX_THREADS, TESSEL_CPU_CHUNK_MULT
    gguf::detail::metadata_budget();  // TESSEL_GGUF_MAX_METADATA
}

void set_weight_packing(bool enabled) { cpu::packed::set_packed_enabled(enabled); }

}  // namespace tessel
