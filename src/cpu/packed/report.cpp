#include "cpu/packed/report.hpp"

#include <cstdio>
#include <vector>

#include "cpu/packed/kernel.hpp"

namespace tessel::cpu::packed {
namespace {

std::string line(const char* fmt, auto... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

std::string why(const Plan& p, int64_t M, const std::vector<const Kernel*>& c) {
    std::string w = "first usable kernel of the chain (highest tier first) with min_m <= " + std::to_string(M);
    if (p.main != c.front()) w += "; " + std::string(c.front()->name) + " needs M >= " + std::to_string(c.front()->min_m);
    if (p.fallback) w += "; matrix unit capped at " + std::to_string(p.main_threads) + " thread(s), the others run the fallback";
    return w;
}

}  // namespace

std::string kernel_report(const CpuFeatures& usable_f, const CpuFeatures& detected, int threads, int cap) {
    struct Type {
        DType t;
        bool required;
    };
    const Type types[] = {{DType::Q4_0, true},   {DType::Q4_1, true},   {DType::Q5_0, true},  {DType::Q8_0, true},
                          {DType::F16, true},    {DType::IQ4_NL, false}, {DType::MXFP4, false}, {DType::Q4_K, false},
                          {DType::Q5_K, false}, {DType::Q6_K, false}, {DType::F32, false},  {DType::Q5_1, false},
                          {DType::Q2_K, false}, {DType::Q3_K, false}, {DType::IQ4_XS, false}, {DType::BF16, false}};
    std::string out = line("matrix-product kernels (packed: CPU_PACKED weights; rows: plain GGUF rows), usable tier %s, "
                           "%d thread(s), matrix-unit cap %s\n",
                           tier_name(best_tier(usable_f)), threads, cap ? std::to_string(cap).c_str() : "none");
    for (const Type& ty : types) {
        std::vector<const Kernel*> compiled, packed_compiled;
        for (const Kernel* k : all_kernels())
            if (k->weight == ty.t) {
                compiled.push_back(k);
                if (k->rhs_layout == RhsLayout::Packed) packed_compiled.push_back(k);
            }
        const Format* f = format_for(ty.t);
        out += line("\n%s (%s): packed %s\n", dtype_name(ty.t), ty.required ? "required" : "optional",
                    packed_compiled.empty() ? "absent (no packed kernel compiled; the rows kernels serve it)"
                                            : (std::string("present, format ") + (f ? f->name : "?")).c_str());
        for (const Kernel* k : compiled)
            out += line("  %-34s %-32s %-6s tier %-10s %dx%d k%d s%d min_m %-3lld run: %s (cpu: %s)\n", k->name, k->gemv_name,
                        k->rhs_layout == RhsLayout::Packed ? "packed" : "rows", tier_name(k->tier), k->mr, k->nr, k->kr, k->sr,
                        static_cast<long long>(k->min_m), usable(*k, usable_f) ? "yes" : "no", usable(*k, detected) ? "yes" : "no");
        for (RhsLayout layout : {RhsLayout::Packed, RhsLayout::Rows}) {
            const char* lname = layout == RhsLayout::Packed ? "packed" : "rows";
            const std::vector<const Kernel*> c = chain(ty.t, usable_f, layout);
            if (c.empty()) {
                if (layout == RhsLayout::Packed && !packed_compiled.empty()) out += "  packed chain: empty on this CPU (weights stay unpacked)\n";
                continue;
            }
            for (int64_t M : {int64_t{1}, int64_t{512}}) {
                const Plan p = plan(c, M, threads, cap);
                const char* main_name = M == 1 ? p.main->gemv_name : p.main->name;
                out += line("  %-6s chain M=%-4lld -> %s%s%s: %s\n", lname, static_cast<long long>(M), main_name, p.fallback ? " + " : "",
                            p.fallback ? (M == 1 ? p.fallback->gemv_name : p.fallback->name) : "", why(p, M, c).c_str());
            }
        }
    }
    return out;
}

}  // namespace tessel::cpu::packed
