// CPU feature detection, tiers and the TESSEL_CPU_ISA cap (src/core/cpu_features.hpp).
// Everything about tiers and caps is tested through the pure functions on synthetic feature
// sets of both architectures; the detected set of this machine is checked for consistency and
// against the kernel's view in /proc/cpuinfo.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/fp16.hpp"
#include "tessel/errors.hpp"

using namespace tessel;

namespace {

// Sapphire-Rapids-like: everything x86 tessel knows about.
CpuFeatures full_x86() {
    CpuFeatures f;
    f.arch = CpuArch::X86;
    f.model = "synthetic x86";
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (fi.arch == CpuArch::X86) f.*fi.member = true;
    return f;
}

// AVX2 machine without AVX-512 (e.g. Zen 2).
CpuFeatures avx2_x86() {
    CpuFeatures f;
    f.arch = CpuArch::X86;
    f.sse42 = f.avx = f.avx2 = f.fma = f.f16c = true;
    return f;
}

CpuFeatures full_arm() {
    CpuFeatures f;
    f.arch = CpuArch::Arm;
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (fi.arch == CpuArch::Arm) f.*fi.member = true;
    f.sve_vector_bytes = 32;
    f.sme_vector_bytes = 64;
    return f;
}

CpuFeatures none(CpuArch arch) {
    CpuFeatures f;
    f.arch = arch;
    return f;
}

std::string error_message(auto&& fn, ErrorCode expected = ErrorCode::InvalidArgument) {
    try {
        fn();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), expected);
        return e.what();
    }
    ADD_FAILURE() << "no tessel::Error thrown";
    return "";
}

// Names of the features set in f (of f's architecture).
std::set<std::string> set_features(const CpuFeatures& f) {
    std::set<std::string> out;
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        if (f.*fi.member) out.insert(fi.name);
    return out;
}

#if defined(__x86_64__)
std::string read_file(const char* path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The whitespace-separated words of the first /proc/cpuinfo line starting with `key`.
std::set<std::string> cpuinfo_words(const std::string& cpuinfo, const std::string& key) {
    std::istringstream in(cpuinfo);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::istringstream words(line.substr(colon + 1));
        std::set<std::string> out;
        for (std::string w; words >> w;) out.insert(w);
        return out;
    }
    return {};
}
#endif

}  // namespace

TEST(CpuTiers, NamesParseBackPerArchitecture) {
    const std::vector<std::string> x86 = {"scalar", "avx2", "avx512", "avx512vnni", "amx"};
    const std::vector<std::string> arm = {"scalar", "neon", "dotprod", "i8mm", "sve", "sme"};
    ASSERT_EQ(arch_tiers(CpuArch::X86).size(), x86.size());
    ASSERT_EQ(arch_tiers(CpuArch::Arm).size(), arm.size());
    for (size_t i = 0; i < x86.size(); ++i) {
        const auto t = parse_tier(x86[i], CpuArch::X86);
        ASSERT_TRUE(t) << x86[i];
        EXPECT_EQ(tier_name(*t), x86[i]);
        EXPECT_EQ(*t, arch_tiers(CpuArch::X86)[i]);
        EXPECT_EQ(tier_rank(*t), static_cast<int>(i));
        EXPECT_EQ(parse_tier_or_throw(x86[i], CpuArch::X86), *t);
    }
    for (size_t i = 0; i < arm.size(); ++i) {
        const auto t = parse_tier(arm[i], CpuArch::Arm);
        ASSERT_TRUE(t) << arm[i];
        EXPECT_EQ(tier_name(*t), arm[i]);
        EXPECT_EQ(*t, arch_tiers(CpuArch::Arm)[i]);
        EXPECT_EQ(tier_rank(*t), static_cast<int>(i));
    }
    EXPECT_EQ(parse_tier("scalar", CpuArch::Other), CpuTier::Scalar);
    EXPECT_EQ(arch_tiers(CpuArch::Other).size(), 1u);
}

TEST(CpuTiers, Ordering) {
    EXPECT_LT(tier_rank(CpuTier::Scalar), tier_rank(CpuTier::Avx2));
    EXPECT_LT(tier_rank(CpuTier::Avx2), tier_rank(CpuTier::Avx512));
    EXPECT_LT(tier_rank(CpuTier::Avx512), tier_rank(CpuTier::Avx512Vnni));
    EXPECT_LT(tier_rank(CpuTier::Avx512Vnni), tier_rank(CpuTier::Amx));
    EXPECT_LT(tier_rank(CpuTier::Scalar), tier_rank(CpuTier::Neon));
    EXPECT_LT(tier_rank(CpuTier::Neon), tier_rank(CpuTier::Dotprod));
    EXPECT_LT(tier_rank(CpuTier::Dotprod), tier_rank(CpuTier::I8mm));
    EXPECT_LT(tier_rank(CpuTier::I8mm), tier_rank(CpuTier::Sve));
    EXPECT_LT(tier_rank(CpuTier::Sve), tier_rank(CpuTier::Sme));
    EXPECT_TRUE(tier_on_arch(CpuTier::Scalar, CpuArch::Arm));
    EXPECT_TRUE(tier_on_arch(CpuTier::Amx, CpuArch::X86));
    EXPECT_FALSE(tier_on_arch(CpuTier::Amx, CpuArch::Arm));
    EXPECT_FALSE(tier_on_arch(CpuTier::Neon, CpuArch::X86));
}

TEST(CpuTiers, RejectsJunkAndForeignNames) {
    for (const char* junk : {"", "AVX2", "avx3", "avx-512", " avx2", "avx2 ", "scalar,avx2", "native"}) {
        EXPECT_FALSE(parse_tier(junk, CpuArch::X86)) << junk;
        EXPECT_FALSE(parse_tier(junk, CpuArch::Arm)) << junk;
    }
    for (const char* arm : {"neon", "dotprod", "i8mm", "sve", "sme"}) EXPECT_FALSE(parse_tier(arm, CpuArch::X86)) << arm;
    for (const char* x86 : {"avx2", "avx512", "avx512vnni", "amx"}) EXPECT_FALSE(parse_tier(x86, CpuArch::Arm)) << x86;

    EXPECT_EQ(error_message([] { parse_tier_or_throw("avx3", CpuArch::X86); }),
              "unknown CPU tier 'avx3'; valid tiers on x86-64: scalar, avx2, avx512, avx512vnni, amx");
    EXPECT_EQ(error_message([] { parse_tier_or_throw("neon", CpuArch::X86); }),
              "CPU tier 'neon' is an aarch64 tier; valid tiers on x86-64: scalar, avx2, avx512, avx512vnni, amx");
    EXPECT_EQ(error_message([] { parse_tier_or_throw("amx", CpuArch::Arm); }),
              "CPU tier 'amx' is an x86-64 tier; valid tiers on aarch64: scalar, neon, dotprod, i8mm, sve, sme");
    EXPECT_EQ(error_message([] { parse_tier_or_throw("", CpuArch::Arm); }),
              "unknown CPU tier ''; valid tiers on aarch64: scalar, neon, dotprod, i8mm, sve, sme");
    EXPECT_EQ(error_message([] { parse_tier_or_throw("avx2", CpuArch::Other); }),
              "CPU tier 'avx2' is an x86-64 tier; valid tiers on other: scalar");
}

TEST(CpuTiers, BestTierOfSyntheticSets) {
    EXPECT_EQ(best_tier(full_x86()), CpuTier::Amx);
    EXPECT_EQ(best_tier(avx2_x86()), CpuTier::Avx2);
    EXPECT_EQ(best_tier(none(CpuArch::X86)), CpuTier::Scalar);
    EXPECT_EQ(best_tier(full_arm()), CpuTier::Sme);
    EXPECT_EQ(best_tier(none(CpuArch::Other)), CpuTier::Scalar);

    CpuFeatures no_f16c = avx2_x86();
    no_f16c.f16c = false;
    EXPECT_EQ(best_tier(no_f16c), CpuTier::Scalar);

    CpuFeatures no_dq = full_x86();  // Xeon Phi-like: AVX-512 F without DQ
    no_dq.avx512dq = false;
    EXPECT_EQ(best_tier(no_dq), CpuTier::Avx2);

    CpuFeatures amx_no_vnni = full_x86();  // amx sits on top of avx512vnni
    amx_no_vnni.avx512vnni = false;
    EXPECT_EQ(best_tier(amx_no_vnni), CpuTier::Avx512);
    EXPECT_FALSE(tier_supported(amx_no_vnni, CpuTier::Amx));

    CpuFeatures skylake = full_x86();
    skylake.avx512vnni = skylake.avx512bf16 = skylake.avx512fp16 = skylake.avx_vnni = false;
    skylake.amx_tile = skylake.amx_int8 = skylake.amx_bf16 = false;
    EXPECT_EQ(best_tier(skylake), CpuTier::Avx512);

    CpuFeatures graviton3 = full_arm();  // SVE without SVE2 or SME
    graviton3.sve2 = graviton3.sme = false;
    EXPECT_EQ(best_tier(graviton3), CpuTier::Sve);

    CpuFeatures sme_no_sve = full_arm();  // sme sits on top of sve
    sme_no_sve.sve = sme_no_sve.sve2 = false;
    EXPECT_EQ(best_tier(sme_no_sve), CpuTier::I8mm);

    CpuFeatures a76 = full_arm();  // dotprod, no i8mm
    a76.i8mm = a76.sve = a76.sve2 = a76.sme = false;
    EXPECT_EQ(best_tier(a76), CpuTier::Dotprod);

    EXPECT_FALSE(tier_supported(full_x86(), CpuTier::Neon));
    EXPECT_FALSE(tier_supported(full_arm(), CpuTier::Avx2));
    EXPECT_TRUE(tier_supported(full_arm(), CpuTier::Scalar));
}

TEST(CpuCap, FullAmxSetCappedAtEachX86Tier) {
    const CpuFeatures full = full_x86();
    EXPECT_EQ(cap_cpu_features(full, CpuTier::Amx), full);

    const CpuFeatures vnni = cap_cpu_features(full, CpuTier::Avx512Vnni);
    EXPECT_EQ(set_features(vnni),
              (std::set<std::string>{"sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
                                     "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni"}));
    EXPECT_EQ(best_tier(vnni), CpuTier::Avx512Vnni);

    const CpuFeatures avx512 = cap_cpu_features(full, CpuTier::Avx512);
    EXPECT_EQ(set_features(avx512),
              (std::set<std::string>{"sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq"}));
    EXPECT_EQ(best_tier(avx512), CpuTier::Avx512);

    const CpuFeatures avx2 = cap_cpu_features(full, CpuTier::Avx2);
    EXPECT_EQ(set_features(avx2), (std::set<std::string>{"sse4.2", "avx", "avx2", "fma", "f16c"}));
    EXPECT_EQ(best_tier(avx2), CpuTier::Avx2);
    EXPECT_EQ(avx2.model, full.model);

    const CpuFeatures scalar = cap_cpu_features(full, CpuTier::Scalar);
    EXPECT_TRUE(set_features(scalar).empty());
    EXPECT_FALSE(scalar.f16c);
    EXPECT_EQ(best_tier(scalar), CpuTier::Scalar);
}

TEST(CpuCap, ArmCapsClearVectorLengths) {
    const CpuFeatures full = full_arm();
    EXPECT_EQ(cap_cpu_features(full, CpuTier::Sme), full);

    const CpuFeatures sve = cap_cpu_features(full, CpuTier::Sve);
    EXPECT_EQ(set_features(sve), (std::set<std::string>{"neon", "dotprod", "i8mm", "sve", "sve2"}));
    EXPECT_EQ(sve.sve_vector_bytes, 32);
    EXPECT_EQ(sve.sme_vector_bytes, 0);

    const CpuFeatures i8mm = cap_cpu_features(full, CpuTier::I8mm);
    EXPECT_EQ(set_features(i8mm), (std::set<std::string>{"neon", "dotprod", "i8mm"}));
    EXPECT_EQ(i8mm.sve_vector_bytes, 0);

    EXPECT_EQ(set_features(cap_cpu_features(full, CpuTier::Neon)), (std::set<std::string>{"neon"}));
    EXPECT_TRUE(set_features(cap_cpu_features(full, CpuTier::Scalar)).empty());
}

TEST(CpuCap, CannotRaiseOrCrossArchitectures) {
    EXPECT_EQ(error_message([] { cap_cpu_features(avx2_x86(), CpuTier::Avx512); }),
              "CPU tier 'avx512' is above what this CPU supports (best tier: avx2); a cap can only lower the tier");
    EXPECT_EQ(error_message([] { cap_cpu_features(avx2_x86(), CpuTier::Amx); }),
              "CPU tier 'amx' is above what this CPU supports (best tier: avx2); a cap can only lower the tier");
    EXPECT_EQ(cap_cpu_features(avx2_x86(), CpuTier::Avx2), avx2_x86());
    EXPECT_EQ(error_message([] { cap_cpu_features(full_x86(), CpuTier::Neon); }),
              "CPU tier 'neon' is an aarch64 tier; valid tiers on x86-64: scalar, avx2, avx512, avx512vnni, amx");
    EXPECT_EQ(error_message([] { cap_cpu_features(full_arm(), CpuTier::Avx2); }),
              "CPU tier 'avx2' is an x86-64 tier; valid tiers on aarch64: scalar, neon, dotprod, i8mm, sve, sme");
}

TEST(CpuCap, EnvValue) {
    const CpuFeatures full = full_x86();
    EXPECT_EQ(apply_isa_env(full, nullptr), full);
    EXPECT_EQ(apply_isa_env(full, "avx2"), cap_cpu_features(full, CpuTier::Avx2));
    EXPECT_EQ(apply_isa_env(full, "scalar"), cap_cpu_features(full, CpuTier::Scalar));
    EXPECT_EQ(error_message([&] { apply_isa_env(full, "sve"); }, ErrorCode::Environment),
              "TESSEL_CPU_ISA=sve: CPU tier 'sve' is an aarch64 tier; valid tiers on x86-64: scalar, avx2, avx512, "
              "avx512vnni, amx");
    EXPECT_EQ(error_message([&] { apply_isa_env(full, "fast"); }, ErrorCode::Environment),
              "TESSEL_CPU_ISA=fast: unknown CPU tier 'fast'; valid tiers on x86-64: scalar, avx2, avx512, avx512vnni, amx");
    EXPECT_EQ(error_message([] { apply_isa_env(avx2_x86(), "avx512vnni"); }, ErrorCode::Environment),
              "TESSEL_CPU_ISA=avx512vnni: CPU tier 'avx512vnni' is above what this CPU supports (best tier: avx2); a cap "
              "can only lower the tier");
}

TEST(CpuFeaturesNormalize, ClearsFeaturesWithoutPrerequisites) {
    CpuFeatures f = none(CpuArch::X86);
    f.avx512vnni = f.avx512bw = f.amx_int8 = f.f16c = f.fma = f.avx2 = true;
    EXPECT_TRUE(set_features(normalize_cpu_features(f)).empty());

    CpuFeatures a = none(CpuArch::Arm);
    a.sve2 = a.dotprod = a.i8mm = true;
    a.sve_vector_bytes = 16;
    const CpuFeatures n = normalize_cpu_features(a);
    EXPECT_TRUE(set_features(n).empty());
    EXPECT_EQ(n.sve_vector_bytes, 0);

    EXPECT_EQ(normalize_cpu_features(full_x86()), full_x86());
    EXPECT_EQ(normalize_cpu_features(full_arm()), full_arm());
}

TEST(CpuInfoModel, ParsesModelLines) {
    EXPECT_EQ(parse_cpuinfo_model("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 143\n"
                                  "model name\t: Intel(R) Xeon(R) Platinum 8488C\nflags\t\t: fpu\n"),
              "Intel(R) Xeon(R) Platinum 8488C");
    EXPECT_EQ(parse_cpuinfo_model("processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd\n"
                                  "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\n"
                                  "CPU part\t: 0xd40\nCPU revision\t: 1\n"),
              "Arm Neoverse-V1");
    EXPECT_EQ(parse_cpuinfo_model("CPU implementer\t: 0x61\nCPU part\t: 0x022\n"), "implementer 0x61 part 0x022");
    EXPECT_EQ(parse_cpuinfo_model("Hardware\t: Qualcomm Technologies, Inc SM8550\nCPU implementer\t: 0x41\n"),
              "Qualcomm Technologies, Inc SM8550");
    EXPECT_EQ(parse_cpuinfo_model("model name\t:\nModel\t: Raspberry Pi 5 Model B Rev 1.0\n"), "Raspberry Pi 5 Model B Rev 1.0");
    EXPECT_EQ(parse_cpuinfo_model(""), "");
}

TEST(CpuDetected, ConsistentOnThisMachine) {
    const CpuFeatures& f = cpu_features();
    EXPECT_EQ(f.arch, host_arch());
    EXPECT_EQ(&f, &cpu_features());  // detected once
    EXPECT_EQ(normalize_cpu_features(f), f);
    // Implications that detection must respect.
    EXPECT_TRUE(f.avx512f || !(f.avx512vnni || f.avx512bw || f.avx512vl || f.avx512dq || f.avx512bf16 || f.avx512fp16));
    EXPECT_TRUE((f.avx2 && f.fma) || !f.avx512f);
    EXPECT_TRUE(f.avx || !(f.avx2 || f.fma || f.f16c));
    EXPECT_TRUE(f.amx_tile || !(f.amx_int8 || f.amx_bf16));
    EXPECT_TRUE(f.sve || !f.sve2);
    if (f.sve) {
        EXPECT_GE(f.sve_vector_bytes, 16);
        EXPECT_LE(f.sve_vector_bytes, 256);
        EXPECT_EQ(f.sve_vector_bytes % 16, 0);
    } else {
        EXPECT_EQ(f.sve_vector_bytes, 0);
    }
    EXPECT_TRUE(f.neon || !(f.dotprod || f.i8mm));
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        EXPECT_TRUE(fi.arch == f.arch || !(f.*fi.member)) << fi.name;
    EXPECT_TRUE(f.neon || host_arch() != CpuArch::Arm);  // ASIMD is mandatory on AArch64 Linux
    // Every tier up to the best is supported, none above it.
    for (CpuTier t : arch_tiers(f.arch)) EXPECT_EQ(tier_supported(f, t), tier_rank(t) <= tier_rank(best_tier(f))) << tier_name(t);
    // Capping at the best tier keeps every tier-defining feature.
    EXPECT_EQ(best_tier(cap_cpu_features(f, best_tier(f))), best_tier(f));
}

TEST(CpuDetected, UsableIsSubsetOfDetected) {
    const CpuFeatures& f = cpu_features();
    const CpuFeatures& u = usable_cpu_features();  // a bad TESSEL_CPU_ISA in the test environment fails here
    for (const CpuFeatureInfo& fi : cpu_feature_table())
        EXPECT_TRUE(f.*fi.member || !(u.*fi.member)) << fi.name;
    EXPECT_LE(tier_rank(usable_tier()), tier_rank(best_tier(f)));
    EXPECT_EQ(u.model, f.model);
    if (!cpu_isa_env()) {
        EXPECT_EQ(u, f);
        EXPECT_EQ(usable_tier(), best_tier(f));
    } else {
        EXPECT_EQ(u, apply_isa_env(f, cpu_isa_env()->c_str()));
        EXPECT_EQ(tier_name(usable_tier()), *cpu_isa_env());
    }
}

// The kernel's /proc/cpuinfo flags are an independent source for x86 (it hides features whose
// state the OS does not enable, as the detector must). Not compiled for aarch64: the aarch64
// suite runs under qemu-aarch64, where /proc/cpuinfo describes the x86 host.
#if defined(__x86_64__)
TEST(CpuDetected, MatchesKernelCpuinfo) {
    const std::string cpuinfo = read_file("/proc/cpuinfo");
    ASSERT_FALSE(cpuinfo.empty()) << "/proc/cpuinfo is not readable";
    const CpuFeatures& f = cpu_features();
    ASSERT_EQ(f.arch, CpuArch::X86);
    struct Flag {
        bool CpuFeatures::*member;
        const char* kernel_name;
    };
    const std::set<std::string> have = cpuinfo_words(cpuinfo, "flags");
    ASSERT_FALSE(have.empty()) << "no flags line in /proc/cpuinfo";
    const std::vector<Flag> flags = {
        {&CpuFeatures::sse42, "sse4_2"},           {&CpuFeatures::avx, "avx"},
        {&CpuFeatures::avx2, "avx2"},              {&CpuFeatures::fma, "fma"},
        {&CpuFeatures::f16c, "f16c"},              {&CpuFeatures::avx512f, "avx512f"},
        {&CpuFeatures::avx512bw, "avx512bw"},      {&CpuFeatures::avx512vl, "avx512vl"},
        {&CpuFeatures::avx512dq, "avx512dq"},      {&CpuFeatures::avx512vnni, "avx512_vnni"},
        {&CpuFeatures::avx512bf16, "avx512_bf16"}, {&CpuFeatures::avx512fp16, "avx512_fp16"},
        {&CpuFeatures::avx_vnni, "avx_vnni"},      {&CpuFeatures::amx_tile, "amx_tile"},
        {&CpuFeatures::amx_int8, "amx_int8"},      {&CpuFeatures::amx_bf16, "amx_bf16"}};
    for (const Flag& fl : flags) EXPECT_EQ(f.*fl.member, have.count(fl.kernel_name) == 1) << fl.kernel_name;
    const std::string model = parse_cpuinfo_model(cpuinfo);
    if (!model.empty()) {
        EXPECT_EQ(f.model, model);  // both come from the cpuid brand string
    }
    EXPECT_FALSE(f.model.empty());
}
#endif

TEST(CpuFp16, ScalarCapGivesIdenticalRows) {
    const CpuFeatures& detected = cpu_features();
    const CpuFeatures scalar = cap_cpu_features(detected, CpuTier::Scalar);
    ASSERT_FALSE(scalar.f16c);
    // Every half, and a sweep of float bit patterns including NaNs, Infs and subnormals; odd
    // lengths exercise the vector tails.
    std::vector<uint16_t> halves(0x10000 + 3);
    for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i * 40503u);
    std::vector<float> a(halves.size()), b(halves.size());
    fp16_to_fp32_row(halves.data(), a.data(), static_cast<int64_t>(halves.size()), detected);
    fp16_to_fp32_row(halves.data(), b.data(), static_cast<int64_t>(halves.size()), scalar);
    for (size_t i = 0; i < halves.size(); ++i) {
        if (std::isnan(b[i])) {
            // F16C quiets signalling NaNs (sets the quiet bit 22); the scalar code keeps the bits.
            // Sign and payload agree otherwise.
            ASSERT_TRUE(std::isnan(a[i])) << std::hex << halves[i];
            ASSERT_EQ(f32_bits(a[i]) | 0x400000u, f32_bits(b[i]) | 0x400000u) << std::hex << halves[i];
        } else {
            ASSERT_EQ(f32_bits(a[i]), f32_bits(b[i])) << std::hex << halves[i];
        }
    }

    std::vector<float> floats;
    for (uint64_t u = 0; u < 0x100000000ull; u += 65521) floats.push_back(f32_from_bits(static_cast<uint32_t>(u)));
    for (uint32_t special : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu, 0x00000001u, 0x477ff000u,
                             0x477fefffu, 0x33000000u, 0x33000001u})
        floats.push_back(f32_from_bits(special));
    std::vector<uint16_t> ha(floats.size()), hb(floats.size());
    fp32_to_fp16_row(floats.data(), ha.data(), static_cast<int64_t>(floats.size()), detected);
    fp32_to_fp16_row(floats.data(), hb.data(), static_cast<int64_t>(floats.size()), scalar);
    for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(ha[i], hb[i]) << std::hex << f32_bits(floats[i]);
    // And the scalar rows are the scalar element functions.
    for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(hb[i], fp32_to_fp16(floats[i])) << std::hex << f32_bits(floats[i]);
}
