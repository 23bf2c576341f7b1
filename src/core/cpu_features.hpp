// CPU feature detection and the TESSEL_CPU_ISA cap.
//
// Lives in src/core (not src/cpu) because core's fp16 row conversions pick their F16C path from it
// and core must not depend on cpu; the cpu backend and its kernel table use it from here.
//
// Detection runs once, on first use (thread-safe), into a plain CpuFeatures:
//   x86  cpuid, each feature AND-ed with the OS's XCR0 state (SSE+AVX state for AVX-family
//        features, plus opmask/ZMM state for AVX-512, XTILECFG+XTILEDATA for AMX) and, for AMX,
//        a successful arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA);
//   Arm  getauxval(AT_HWCAP / AT_HWCAP2); SVE/SME vector lengths via prctl; with SME, the
//        streaming-mode compute units from sysfs SMIDR_EL1 (core/sme_units.hpp).
// Features whose prerequisites are missing are cleared (AVX-512 VNNI without AVX-512 F, SVE2
// without SVE, ...), so the detected set is self-consistent.
//
// Tiers are architecture-neutral names ordered per architecture:
//   x86  scalar < avx2 (AVX2+FMA+F16C) < avx512 (F+BW+VL+DQ) < avx512vnni < amx (AMX-TILE+INT8)
//   Arm  scalar < neon < dotprod < i8mm < sve < sme
// Each tier includes the requirements of the tiers below it. Every feature belongs to the lowest
// tier at which kernels may use it (e.g. SSE4.2 and AVX to avx2, AVX-VNNI and AVX-512 BF16/FP16
// to avx512vnni, SVE2 to sve). TESSEL_CPU_ISA=<tier> caps the usable features at that tier:
// features of higher tiers are cleared in usable_cpu_features(); cpu_features() still shows
// what was detected. Without TESSEL_CPU_ISA every detected feature is usable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tessel {

enum class CpuArch { X86, Arm, Other };

/// "x86-64", "aarch64" or "other".
const char* arch_name(CpuArch arch);

/// The architecture this binary was built for.
constexpr CpuArch host_arch() {
#if defined(__x86_64__) || defined(__i386__)
    return CpuArch::X86;
#elif defined(__aarch64__)
    return CpuArch::Arm;
#else
    return CpuArch::Other;
#endif
}

/// What the CPU (and OS) support. Plain data: copy it, edit it in tests.
struct CpuFeatures {
    CpuArch arch = host_arch();
    std::string model;  ///< CPU model name ("" if unknown)

    // x86
    bool sse42 = false;
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
    bool avx512vnni = false;
    bool avx512bf16 = false;
    bool avx512fp16 = false;
    bool avx_vnni = false;
    bool amx_tile = false;
    bool amx_int8 = false;
    bool amx_bf16 = false;

    // Arm
    bool neon = false;     ///< Advanced SIMD (ASIMD)
    bool dotprod = false;  ///< SDOT/UDOT
    bool i8mm = false;     ///< SMMLA/UMMLA/USMMLA
    bool sve = false;
    bool sve2 = false;
    bool sme = false;
    int sve_vector_bytes = 0;  ///< SVE vector length in bytes; 0 unless sve
    int sme_vector_bytes = 0;  ///< SME streaming vector length in bytes; 0 unless sme
    /// Streaming-mode compute units (SMIDR_EL1 of every CPU, core/sme_units.hpp); 0 = unknown or no sme
    int sme_units = 0;

    bool operator==(const CpuFeatures&) const = default;
};

/// Tiers; the order of enumerators within one architecture is the tier order.
enum class CpuTier { Scalar, Avx2, Avx512, Avx512Vnni, Amx, Neon, Dotprod, I8mm, Sve, Sme };

/// One boolean feature: its display name, its member, its architecture and the tier at which it
/// becomes usable under a cap.
struct CpuFeatureInfo {
    const char* name;  ///< e.g. "avx512vnni", "amx-int8", "dotprod"
    bool CpuFeatures::*member;
    CpuArch arch;
    CpuTier tier;
};

/// Every boolean feature of every architecture, in display order (x86 first, then Arm).
std::span<const CpuFeatureInfo> cpu_feature_table();

/// "scalar", "avx2", "avx512", "avx512vnni", "amx", "neon", "dotprod", "i8mm", "sve", "sme".
const char* tier_name(CpuTier tier);

/// Whether `tier` exists on `arch` (scalar exists everywhere).
bool tier_on_arch(CpuTier tier, CpuArch arch);

/// Position of the tier in its architecture's order (scalar = 0, then 1, 2, ...).
int tier_rank(CpuTier tier);

/// The tiers of `arch`, lowest first.
std::span<const CpuTier> arch_tiers(CpuArch arch);

/// Tier named `name` (exact, lower case) if it exists on `arch`; nullopt for junk and for names of
/// another architecture's tiers.
std::optional<CpuTier> parse_tier(std::string_view name, CpuArch arch = host_arch());

/// As parse_tier, but throws Error(InvalidArgument) naming the value and listing the valid
/// names for `arch` (e.g. "CPU tier 'neon' is an aarch64 tier; valid tiers on x86-64: scalar, avx2, ...").
CpuTier parse_tier_or_throw(std::string_view name, CpuArch arch = host_arch());

/// Whether every requirement of `tier` (and of the tiers below it) is in `f`; false if the tier
/// belongs to another architecture than f.arch.
bool tier_supported(const CpuFeatures& f, CpuTier tier);

/// Highest tier of f.arch that `f` fully supports.
CpuTier best_tier(const CpuFeatures& f);

/// `f` with every feature above `cap` cleared (SVE/SME vector lengths and SME units drop to 0 with them).
/// Pure. Throws Error(InvalidArgument) if `cap` is not a tier of f.arch (message lists the valid
/// names) or if `f` does not support `cap` (a cap can only lower, never raise).
CpuFeatures cap_cpu_features(const CpuFeatures& f, CpuTier cap);

/// Clears features whose prerequisites are missing (e.g. AVX-512 VNNI without AVX-512 F, F16C
/// without AVX, i8mm without NEON, SVE2 without SVE) and vector lengths (and SME units) of absent
/// units. Pure.
CpuFeatures normalize_cpu_features(CpuFeatures f);

/// Applies the value of TESSEL_CPU_ISA (nullptr = unset) to detected features. Pure. Throws
/// Error(Environment) with a message starting "TESSEL_CPU_ISA=<value>: " on an unknown or
/// foreign tier name or a tier the CPU lacks.
CpuFeatures apply_isa_env(const CpuFeatures& detected, const char* env_value);

/// The model name in /proc/cpuinfo text: the "model name" line, else "Model", else "Hardware",
/// else (Arm) "CPU implementer"/"CPU part" turned into a name. "" if none. Pure.
std::string parse_cpuinfo_model(std::string_view cpuinfo);

/// Detected features of this machine (computed once, thread-safe). Never throws.
const CpuFeatures& cpu_features();

/// cpu_features() capped by TESSEL_CPU_ISA (read once, thread-safe). Throws Error(Environment)
/// on a bad value, on this and every later call.
const CpuFeatures& usable_cpu_features();

/// best_tier(usable_cpu_features()).
CpuTier usable_tier();

/// The TESSEL_CPU_ISA value as read by usable_cpu_features() (nullopt when unset).
std::optional<std::string> cpu_isa_env();

namespace detail {
/// Architecture-specific detection (cpu_features_x86.cpp / cpu_features_arm.cpp; a fallback
/// without features elsewhere). Not normalized.
CpuFeatures detect_cpu_features();
}  // namespace detail

}  // namespace tessel
