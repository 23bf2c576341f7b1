// Architecture-neutral half of the CPU feature module: tiers, the cap, cpuinfo parsing and the
// lazily initialised process-wide sets. Detection itself is in cpu_features_{x86,arm}.cpp.
#include "core/cpu_features.hpp"
#include "core/env.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tessel/errors.hpp"

namespace tessel {
namespace {

using F = CpuFeatures;

constexpr CpuFeatureInfo kFeatures[] = {
    {"sse4.2", &F::sse42, CpuArch::X86, CpuTier::Avx2},
    {"avx", &F::avx, CpuArch::X86, CpuTier::Avx2},
    {"avx2", &F::avx2, CpuArch::X86, CpuTier::Avx2},
    {"fma", &F::fma, CpuArch::X86, CpuTier::Avx2},
    {"f16c", &F::f16c, CpuArch::X86, CpuTier::Avx2},
    {"avx512f", &F::avx512f, CpuArch::X86, CpuTier::Avx512},
    {"avx512bw", &F::avx512bw, CpuArch::X86, CpuTier::Avx512},
    {"avx512vl", &F::avx512vl, CpuArch::X86, CpuTier::Avx512},
    {"avx512dq", &F::avx512dq, CpuArch::X86, CpuTier::Avx512},
    {"avx512vnni", &F::avx512vnni, CpuArch::X86, CpuTier::Avx512Vnni},
    {"avx512bf16", &F::avx512bf16, CpuArch::X86, CpuTier::Avx512Vnni},
    {"avx512fp16", &F::avx512fp16, CpuArch::X86, CpuTier::Avx512Vnni},
    {"avxvnni", &F::avx_vnni, CpuArch::X86, CpuTier::Avx512Vnni},
    {"amx-tile", &F::amx_tile, CpuArch::X86, CpuTier::Amx},
    {"amx-int8", &F::amx_int8, CpuArch::X86, CpuTier::Amx},
    {"amx-bf16", &F::amx_bf16, CpuArch::X86, CpuTier::Amx},
    {"neon", &F::neon, CpuArch::Arm, CpuTier::Neon},
    {"dotprod", &F::dotprod, CpuArch::Arm, CpuTier::Dotprod},
    {"i8mm", &F::i8mm, CpuArch::Arm, CpuTier::I8mm},
    {"sve", &F::sve, CpuArch::Arm, CpuTier::Sve},
    {"sve2", &F::sve2, CpuArch::Arm, CpuTier::Sve},
    {"sme", &F::sme, CpuArch::Arm, CpuTier::Sme},
};

struct TierInfo {
    CpuTier tier;
    const char* name;
    CpuArch arch;  // ignored for scalar (every architecture)
    int rank;
    // Requirements added by this tier on top of the lower ones (unused slots are null).
    std::array<bool CpuFeatures::*, 4> requires_;
};

constexpr TierInfo kTiers[] = {
    {CpuTier::Scalar, "scalar", CpuArch::Other, 0, {}},
    {CpuTier::Avx2, "avx2", CpuArch::X86, 1, {&F::avx2, &F::fma, &F::f16c}},
    {CpuTier::Avx512, "avx512", CpuArch::X86, 2, {&F::avx512f, &F::avx512bw, &F::avx512vl, &F::avx512dq}},
    {CpuTier::Avx512Vnni, "avx512vnni", CpuArch::X86, 3, {&F::avx512vnni}},
    {CpuTier::Amx, "amx", CpuArch::X86, 4, {&F::amx_tile, &F::amx_int8}},
    {CpuTier::Neon, "neon", CpuArch::Arm, 1, {&F::neon}},
    {CpuTier::Dotprod, "dotprod", CpuArch::Arm, 2, {&F::dotprod}},
    {CpuTier::I8mm, "i8mm", CpuArch::Arm, 3, {&F::i8mm}},
    {CpuTier::Sve, "sve", CpuArch::Arm, 4, {&F::sve}},
    {CpuTier::Sme, "sme", CpuArch::Arm, 5, {&F::sme}},
};

constexpr CpuTier kX86Tiers[] = {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512, CpuTier::Avx512Vnni, CpuTier::Amx};
constexpr CpuTier kArmTiers[] = {CpuTier::Scalar, CpuTier::Neon, CpuTier::Dotprod, CpuTier::I8mm, CpuTier::Sve, CpuTier::Sme};
constexpr CpuTier kOtherTiers[] = {CpuTier::Scalar};

const TierInfo& info(CpuTier t) {
    for (const TierInfo& i : kTiers)
        if (i.tier == t) return i;
    return kTiers[0];
}

std::string valid_names(CpuArch arch) {
    std::string s;
    for (CpuTier t : arch_tiers(arch)) s += (s.empty() ? "" : ", ") + std::string(tier_name(t));
    return s;
}

std::string_view trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

// Arm Ltd (implementer 0x41) part numbers of common cores, for /proc/cpuinfo without a model line.
struct ArmPart {
    unsigned part;
    const char* name;
};
constexpr ArmPart kArmLtdParts[] = {
    {0xd03, "Cortex-A53"}, {0xd05, "Cortex-A55"},   {0xd08, "Cortex-A72"},   {0xd09, "Cortex-A73"},
    {0xd0a, "Cortex-A75"}, {0xd0b, "Cortex-A76"},   {0xd0c, "Neoverse-N1"},  {0xd0d, "Cortex-A77"},
    {0xd40, "Neoverse-V1"}, {0xd41, "Cortex-A78"},  {0xd44, "Cortex-X1"},    {0xd46, "Cortex-A510"},
    {0xd47, "Cortex-A710"}, {0xd48, "Cortex-X2"},   {0xd49, "Neoverse-N2"},  {0xd4d, "Cortex-A715"},
    {0xd4e, "Cortex-X3"},  {0xd4f, "Neoverse-V2"},
};

}  // namespace

const char* arch_name(CpuArch arch) {
    switch (arch) {
        case CpuArch::X86: return "x86-64";
        case CpuArch::Arm: return "aarch64";
        case CpuArch::Other: break;
    }
    return "other";
}

std::span<const CpuFeatureInfo> cpu_feature_table() { return kFeatures; }

const char* tier_name(CpuTier tier) { return info(tier).name; }

bool tier_on_arch(CpuTier tier, CpuArch arch) { return tier == CpuTier::Scalar || info(tier).arch == arch; }

int tier_rank(CpuTier tier) { return info(tier).rank; }

std::span<const CpuTier> arch_tiers(CpuArch arch) {
    switch (arch) {
        case CpuArch::X86: return kX86Tiers;
        case CpuArch::Arm: return kArmTiers;
        case CpuArch::Other: break;
    }
    return kOtherTiers;
}

std::optional<CpuTier> parse_tier(std::string_view name, CpuArch arch) {
    for (CpuTier t : arch_tiers(arch))
        if (name == tier_name(t)) return t;
    return std::nullopt;
}

CpuTier parse_tier_or_throw(std::string_view name, CpuArch arch) {
    if (auto t = parse_tier(name, arch)) return *t;
    std::string what = "unknown CPU tier '" + std::string(name) + "'";
    for (CpuArch other : {CpuArch::X86, CpuArch::Arm})
        if (other != arch && parse_tier(name, other))
            what = "CPU tier '" + std::string(name) + "' is an " + arch_name(other) + " tier";
    throw Error(ErrorCode::InvalidArgument, what + "; valid tiers on " + arch_name(arch) + ": " + valid_names(arch));
}

bool tier_supported(const CpuFeatures& f, CpuTier tier) {
    if (!tier_on_arch(tier, f.arch)) return false;
    const int rank = tier_rank(tier);
    for (CpuTier t : arch_tiers(f.arch)) {
        if (tier_rank(t) > rank) break;
        for (bool CpuFeatures::*m : info(t).requires_)
            if (m && !(f.*m)) return false;
    }
    return true;
}

CpuTier best_tier(const CpuFeatures& f) {
    CpuTier best = CpuTier::Scalar;
    for (CpuTier t : arch_tiers(f.arch)) {
        if (!tier_supported(f, t)) break;
        best = t;
    }
    return best;
}

CpuFeatures cap_cpu_features(const CpuFeatures& f, CpuTier cap) {
    if (!tier_on_arch(cap, f.arch)) parse_tier_or_throw(tier_name(cap), f.arch);  // throws, listing names
    if (!tier_supported(f, cap))
        throw Error(ErrorCode::InvalidArgument, std::string("CPU tier '") + tier_name(cap) +
                                                    "' is above what this CPU supports (best tier: " +
                                                    tier_name(best_tier(f)) + "); a cap can only lower the tier");
    CpuFeatures out = f;
    const int rank = tier_rank(cap);
    for (const CpuFeatureInfo& fi : kFeatures)
        if (fi.arch != f.arch || tier_rank(fi.tier) > rank) out.*fi.member = false;
    return normalize_cpu_features(std::move(out));
}

CpuFeatures normalize_cpu_features(CpuFeatures f) {
    f.avx = f.avx && f.sse42;
    f.avx2 = f.avx2 && f.avx;
    f.fma = f.fma && f.avx;
    f.f16c = f.f16c && f.avx;
    f.avx_vnni = f.avx_vnni && f.avx2;
    f.avx512f = f.avx512f && f.avx2 && f.fma;
    for (bool CpuFeatures::*m : {&F::avx512bw, &F::avx512vl, &F::avx512dq, &F::avx512vnni, &F::avx512bf16, &F::avx512fp16})
        f.*m = f.*m && f.avx512f;
    f.amx_int8 = f.amx_int8 && f.amx_tile;
    f.amx_bf16 = f.amx_bf16 && f.amx_tile;
    f.dotprod = f.dotprod && f.neon;
    f.i8mm = f.i8mm && f.neon;
    f.sve = f.sve && f.neon;
    f.sve2 = f.sve2 && f.sve;
    if (!f.sve) f.sve_vector_bytes = 0;
    if (!f.sme) f.sme_vector_bytes = f.sme_units = 0;
    return f;
}

CpuFeatures apply_isa_env(const CpuFeatures& detected, const char* env_value) {
    if (!env_value) return detected;
    try {
        return cap_cpu_features(detected, parse_tier_or_throw(env_value, detected.arch));
    } catch (const Error& e) {
        throw Error(ErrorCode::Environment, "TESSEL_CPU_ISA=" + std::string(env_value) + ": " + e.what());
    }
}

std::string parse_cpuinfo_model(std::string_view text) {
    std::string model, model2, hardware;
    long implementer = -1, part = -1;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        const std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
        if (value.empty()) continue;
        if (key == "model name" && model.empty()) model = value;
        else if (key == "Model" && model2.empty()) model2 = value;
        else if (key == "Hardware" && hardware.empty()) hardware = value;
        else if (key == "CPU implementer" && implementer < 0) implementer = std::strtol(std::string(value).c_str(), nullptr, 0);
        else if (key == "CPU part" && part < 0) part = std::strtol(std::string(value).c_str(), nullptr, 0);
    }
    if (!model.empty()) return model;
    if (!model2.empty()) return model2;
    if (!hardware.empty()) return hardware;
    if (implementer < 0 || part < 0) return "";
    if (implementer == 0x41)
        for (const ArmPart& p : kArmLtdParts)
            if (static_cast<long>(p.part) == part) return std::string("Arm ") + p.name;
    char buf[64];
    std::snprintf(buf, sizeof buf, "implementer 0x%02lx part 0x%03lx", implementer, part);
    return buf;
}

namespace {

CpuFeatures detect_once() {
    CpuFeatures f = normalize_cpu_features(detail::detect_cpu_features());
    if (f.model.empty()) {
        std::ifstream in("/proc/cpuinfo");
        std::ostringstream text;
        text << in.rdbuf();
        f.model = parse_cpuinfo_model(text.str());
    }
    return f;
}

const std::optional<std::string>& isa_env_once() {
    static const std::optional<std::string> value = env::get("TESSEL_CPU_ISA");
    return value;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect_once();
    return f;
}

const CpuFeatures& usable_cpu_features() {
    // If the initializer throws, the static stays uninitialized and the next call tries (and
    // throws) again, so every query reports the bad value.
    static const CpuFeatures f = [] {
        const auto& env = isa_env_once();
        return apply_isa_env(cpu_features(), env ? env->c_str() : nullptr);
    }();
    return f;
}

CpuTier usable_tier() { return best_tier(usable_cpu_features()); }

std::optional<std::string> cpu_isa_env() { return isa_env_once(); }

#if !(defined(__x86_64__) || defined(__i386__) || defined(__aarch64__))
CpuFeatures detail::detect_cpu_features() { return CpuFeatures{}; }
#endif

}  // namespace tessel
