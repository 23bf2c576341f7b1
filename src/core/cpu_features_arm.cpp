// AArch64 feature detection: the kernel's HWCAP/HWCAP2 words (getauxval) and, for SVE and SME,
// the vector lengths this thread runs with (prctl). The model name comes from /proc/cpuinfo
// (see parse_cpuinfo_model); with SME, the streaming-mode compute units from each CPU's SMIDR_EL1
// in sysfs (sme_units.hpp).
#if defined(__aarch64__)

#include <sys/auxv.h>
#include <sys/prctl.h>

#include "core/cpu_features.hpp"
#include "core/sme_units.hpp"

namespace tessel::detail {
namespace {

// Linux arm64 hwcap bits (arch/arm64/include/uapi/asm/hwcap.h).
constexpr unsigned long kHwcapAsimd = 1ul << 1;
constexpr unsigned long kHwcapAsimdDp = 1ul << 20;
constexpr unsigned long kHwcapSve = 1ul << 22;
constexpr unsigned long kHwcap2Sve2 = 1ul << 1;
constexpr unsigned long kHwcap2I8mm = 1ul << 13;
constexpr unsigned long kHwcap2Sme = 1ul << 23;

// prctl options (linux/prctl.h); the result's low 16 bits are the vector length in bytes.
constexpr int kPrSveGetVl = 51;
constexpr int kPrSmeGetVl = 64;
constexpr long kPrVlLenMask = 0xffff;

#ifndef AT_HWCAP2
constexpr unsigned long kAtHwcap2 = 26;
#else
constexpr unsigned long kAtHwcap2 = AT_HWCAP2;
#endif

int vector_length(int option) {
    const long r = ::prctl(option, 0, 0, 0, 0);
    return r < 0 ? 0 : static_cast<int>(r & kPrVlLenMask);
}

}  // namespace

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
    f.arch = CpuArch::Arm;
    const unsigned long hw = ::getauxval(AT_HWCAP);
    const unsigned long hw2 = ::getauxval(kAtHwcap2);
    f.neon = hw & kHwcapAsimd;
    f.dotprod = hw & kHwcapAsimdDp;
    f.sve = hw & kHwcapSve;
    f.sve2 = hw2 & kHwcap2Sve2;
    f.i8mm = hw2 & kHwcap2I8mm;
    f.sme = hw2 & kHwcap2Sme;
    if (f.sve) f.sve_vector_bytes = vector_length(kPrSveGetVl);
    if (f.sme) {
        f.sme_vector_bytes = vector_length(kPrSmeGetVl);
        f.sme_units = sme_units_from_sysfs("/sys/devices/system/cpu");
    }
    return f;
}

}  // namespace tessel::detail

#endif  // __aarch64__
