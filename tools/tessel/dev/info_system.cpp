// `tessel info --system` and `tessel info --kernels`: this machine's CPU (model, cores, ISA
// features and tiers under TESSEL_CPU_ISA, SVE/SME vector lengths and SME units) and the packed
// CPU kernels, as text or JSON.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/cpu_features.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "cpu/packed/report.hpp"
#include "cpu/topology.hpp"
#include "dev/commands.hpp"
#include "text.hpp"

namespace tessel::cli::dev {
namespace {

void print_system(bool json) {
    // Usable features first: a bad TESSEL_CPU_ISA is reported before anything is printed.
    const CpuFeatures& use = usable_cpu_features();
    const CpuFeatures& det = cpu_features();
    const std::optional<std::string> env = cpu_isa_env();
    const cpu::CoreTopology topo = cpu::core_topology();
    const int threads = cpu::default_thread_count();
    if (json) {
        nlohmann::ordered_json features = nlohmann::ordered_json::object();
        for (const CpuFeatureInfo& fi : cpu_feature_table())
            if (fi.arch == det.arch)
                features[fi.name] = {{"detected", det.*fi.member}, {"usable", use.*fi.member}, {"tier", tier_name(fi.tier)}};
        nlohmann::ordered_json out = {{"cpu", det.model},
                                      {"arch", arch_name(det.arch)},
                                      {"physical_cores", topo.cores > 0 ? topo.cores : threads},
                                      {"default_threads", threads}};
        if (topo.big_little()) {
            out["big_cores"] = topo.big_cores;
            out["core_capacities"] = topo.capacities;
        }
        out["features"] = features;
        if (det.arch == CpuArch::Arm) {
            out["sve_vector_bytes"] = {{"detected", det.sve_vector_bytes}, {"usable", use.sve_vector_bytes}};
            out["sme_vector_bytes"] = {{"detected", det.sme_vector_bytes}, {"usable", use.sme_vector_bytes}};
            out["sme_units"] = {{"detected", det.sme_units}, {"usable", use.sme_units}};  // 0: unknown or no SME
        }
        out["best_tier"] = tier_name(best_tier(det));
        out["usable_tier"] = tier_name(best_tier(use));
        out["tessel_cpu_isa"] = env ? nlohmann::ordered_json(*env) : nlohmann::ordered_json(nullptr);
        std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        return;
    }
    std::printf("cpu: %s\n", printable(det.model.empty() ? "unknown" : det.model).c_str());
    std::printf("arch: %s\n", arch_name(det.arch));
    if (topo.big_little()) {
        // e.g. "8 (4 big at capacity 1024, 4 little at 446)"; sysfs cpu_capacity, 1024 = fastest
        std::string little;
        for (size_t i = 1; i < topo.capacities.size(); ++i) little += (i > 1 ? "/" : "") + std::to_string(topo.capacities[i]);
        std::printf("physical cores: %d (%d big at capacity %d, %d little at %s)\n", topo.cores, topo.big_cores, topo.capacities[0],
                    topo.cores - topo.big_cores, little.c_str());
        std::printf("default threads: %d (the big cores)\n", threads);
    } else {
        std::printf("physical cores: %d\n", topo.cores > 0 ? topo.cores : threads);
    }
    std::printf("TESSEL_CPU_ISA: %s\n", env ? printable(*env).c_str() : "(unset)");
    std::printf("best tier: %s\n", tier_name(best_tier(det)));
    std::printf("usable tier: %s\n", tier_name(best_tier(use)));
    std::printf("\nfeatures:\n  %-12s %-10s %-8s %s\n", "name", "detected", "usable", "tier");
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (fi.arch == det.arch)
            std::printf("  %-12s %-10s %-8s %s\n", fi.name, det.*fi.member ? "yes" : "no", use.*fi.member ? "yes" : "no",
                        tier_name(fi.tier));
    if (det.arch == CpuArch::Arm) {
        std::printf("\nsve vector length: %d bytes (usable: %d)\n", det.sve_vector_bytes, use.sve_vector_bytes);
        std::printf("sme vector length: %d bytes (usable: %d)\n", det.sme_vector_bytes, use.sme_vector_bytes);
        if (det.sme)
            std::printf("sme units: %s (streaming-mode compute units, SMIDR_EL1)\n",
                        det.sme_units > 0 ? std::to_string(det.sme_units).c_str() : "unknown");
    }
}

void print_kernels(int threads) {
    if (threads <= 0) threads = cpu::default_thread_count();
    const std::string report = cpu::packed::kernel_report(usable_cpu_features(), cpu_features(), threads, cpu::packed::matrix_thread_cap());
    std::fputs(report.c_str(), stdout);
    if (!cpu::packed::packed_enabled()) std::puts("\nTESSEL_CPU_PACKED=0: weights are not packed");
}

}  // namespace

std::function<bool(bool json)> add_info_developer_options(CLI::App& info, CLI::Option* file, CLI::Option* full_arrays) {
    struct Options {
        bool system = false;
        bool kernels = false;
        int threads = 0;
    };
    auto opts = std::make_shared<Options>();
    info.add_flag("--system", opts->system,
                  "Print the CPU: model, physical cores, ISA features (detected / usable under TESSEL_CPU_ISA), tiers")
        ->excludes(file)
        ->excludes(full_arrays)
        ->group(kDeveloperOptionsGroup);
    info.add_flag("--kernels", opts->kernels,
                  "Print the CPU matrix-product kernels (packed and plain-row layouts): per weight type every compiled kernel, whether this CPU runs it, "
                  "and which one the chain selects (for -t threads) and why")
        ->excludes(file)
        ->excludes(full_arrays)
        ->group(kDeveloperOptionsGroup);
    info.add_option("-t,--threads", opts->threads, "With --kernels: thread count for the chain's plan (0: the default thread count)")
        ->check(CLI::Range(0, 1024))
        ->group(kDeveloperOptionsGroup);
    return [opts](bool json) {
        if (opts->system) {
            print_system(json);
            return true;
        }
        if (opts->kernels) {
            print_kernels(opts->threads);
            return true;
        }
        return false;
    };
}

}  // namespace tessel::cli::dev
