// x86 feature detection: cpuid leaves 1, 7.0, 7.1 and the brand string, AND-ed with the state
// the OS saves (XCR0 via xgetbv) and, for AMX, the kernel's permission for tile data.
#if defined(__x86_64__) || defined(__i386__)

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "core/cpu_features.hpp"

namespace tessel::detail {
namespace {

struct Regs {
    unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
    Regs r;
    __cpuid_count(leaf, subleaf, r.a, r.b, r.c, r.d);
    return r;
}

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

// Only called when CPUID.1:ECX.OSXSAVE is set (xgetbv faults otherwise). Inline asm so this file
// needs no -mxsave.
uint64_t xcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<uint64_t>(hi) << 32) | lo;
}

// XCR0 state components.
constexpr uint64_t kXcrSse = 1u << 1, kXcrAvx = 1u << 2;
constexpr uint64_t kXcrOpmask = 1u << 5, kXcrZmmHi256 = 1u << 6, kXcrHi16Zmm = 1u << 7;
constexpr uint64_t kXcrTileCfg = 1u << 17, kXcrTileData = 1u << 18;

// Linux asks processes to request AMX tile data state before use (kernel 5.16+).
bool request_amx_permission() {
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return ::syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

std::string brand_string() {
    if (cpuid(0x80000000u).a < 0x80000004u) return "";
    char text[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
        const Regs r = cpuid(0x80000002u + i);
        const unsigned words[4] = {r.a, r.b, r.c, r.d};
        for (int w = 0; w < 4; ++w)
            for (int k = 0; k < 4; ++k) text[i * 16 + w * 4 + k] = static_cast<char>((words[w] >> (8 * k)) & 0xff);
    }
    std::string s(text);
    const auto b = s.find_first_not_of(' ');
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

}  // namespace

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
    f.arch = CpuArch::X86;
    f.model = brand_string();

    const unsigned max_leaf = cpuid(0).a;
    if (max_leaf < 1) return f;
    const Regs l1 = cpuid(1);
    const uint64_t xcr = bit(l1.c, 27) ? xcr0() : 0;  // OSXSAVE
    const bool os_avx = (xcr & (kXcrSse | kXcrAvx)) == (kXcrSse | kXcrAvx);
    const bool os_avx512 = os_avx && (xcr & (kXcrOpmask | kXcrZmmHi256 | kXcrHi16Zmm)) == (kXcrOpmask | kXcrZmmHi256 | kXcrHi16Zmm);
    const bool os_amx = (xcr & (kXcrTileCfg | kXcrTileData)) == (kXcrTileCfg | kXcrTileData);

    f.sse42 = bit(l1.c, 20);
    f.avx = bit(l1.c, 28) && os_avx;
    f.fma = bit(l1.c, 12) && os_avx;
    f.f16c = bit(l1.c, 29) && os_avx;

    if (max_leaf >= 7) {
        const Regs l7 = cpuid(7, 0);
        f.avx2 = bit(l7.b, 5) && os_avx;
        f.avx512f = bit(l7.b, 16) && os_avx512;
        f.avx512dq = bit(l7.b, 17) && os_avx512;
        f.avx512bw = bit(l7.b, 30) && os_avx512;
        f.avx512vl = bit(l7.b, 31) && os_avx512;
        f.avx512vnni = bit(l7.c, 11) && os_avx512;
        f.avx512fp16 = bit(l7.d, 23) && os_avx512;
        const bool amx_tile = bit(l7.d, 24), amx_int8 = bit(l7.d, 25), amx_bf16 = bit(l7.d, 22);
        if (l7.a >= 1) {  // max subleaf
            const Regs l71 = cpuid(7, 1);
            f.avx_vnni = bit(l71.a, 4) && os_avx;
            f.avx512bf16 = bit(l71.a, 5) && os_avx512;
        }
        if (amx_tile && os_amx && request_amx_permission()) {
            f.amx_tile = true;
            f.amx_int8 = amx_int8;
            f.amx_bf16 = amx_bf16;
        }
    }
    return f;
}

}  // namespace tessel::detail

#endif  // x86
