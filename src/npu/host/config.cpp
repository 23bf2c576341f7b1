#include "npu/host/config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "core/env.hpp"
#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/host/fusion.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

std::string& self_exe() {
    static std::string path;
    return path;
}

[[noreturn]] void bad(const char* name, const std::string& value, const std::string& expected) { env::invalid(name, value, expected); }

constexpr uint16_t kElfMachineHexagon = 164;  // EM_QDSP6 (the ELF machine registry)

// Whether path is a regular file this process may execute (a directory passes access(X_OK)).
bool executable_file(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// e_machine of the ELF file at path (bytes 18-19, little-endian: Hexagon's and x86's), or 0.
uint16_t elf_machine(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char h[20] = {};
    if (!in.read(reinterpret_cast<char*>(h), sizeof h) || h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F') return 0;
    return static_cast<uint16_t>(h[18] | (h[19] << 8));
}

// `name` itself when it holds a '/', else the first executable `name` in a PATH folder; "" when none.
std::string on_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return executable_file(name) ? name : "";
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (size_t from = 0; from <= dirs.size();) {
        const size_t colon = std::min(dirs.find(':', from), dirs.size());
        const std::string candidate = (colon > from ? dirs.substr(from, colon - from) : ".") + "/" + name;
        if (executable_file(candidate)) return candidate;
        from = colon + 1;
    }
    return "";
}

uint64_t number(const char* name, uint64_t lo, uint64_t hi, uint64_t fallback) { return env::whole_number(name, lo, hi, fallback); }

bool flag(const char* name) { return env::flag(name, false); }

uint32_t dma_mode() {
    const auto v = env::get("TESSEL_NPU_DMA");
    if (!v) return 1;
    const std::string s(*v);
    if (s == "0") return 0;
    if (s == "1") return 1;
    if (s == "copy") return 2;
    bad("TESSEL_NPU_DMA", s, "0, 1 or copy");
}

/// TESSEL_NPU_DEVICES (device_spec.hpp).
std::vector<DeviceEntry> devices() {
    const auto v = env::get("TESSEL_NPU_DEVICES");
    return parse_device_string(v ? std::string(*v) : "1");
}

/// TESSEL_NPU_CPUS: CPU lists ("0-3,6") separated by ';', one for every device or one per physical
/// device index (each device of `devices` must have one); every CPU must be one this process may use.
std::vector<CpuSet> cpu_sets(const std::vector<DeviceEntry>& devices) {
    const auto v = env::get("TESSEL_NPU_CPUS");
    if (!v) return {};
    const std::string s(*v);
    const CpuSet allowed = CpuSet::allowed();
    const std::string expected = "CPU lists such as 0-1, or 0-1;2-3 (the i-th for device NPUi), CPUs this process may use (" +
                                 allowed.text() + ")";
    std::vector<CpuSet> sets;
    size_t start = 0;
    for (;;) {
        const size_t semi = s.find(';', start);
        const std::string list = s.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
        CpuSet set;
        size_t i = 0;
        auto num = [&](uint32_t& out) {
            const auto [end, ec] = std::from_chars(list.data() + i, list.data() + list.size(), out);
            if (ec != std::errc() || end == list.data() + i) bad("TESSEL_NPU_CPUS", s, expected);
            i = static_cast<size_t>(end - list.data());
        };
        while (i < list.size() || set.empty()) {
            uint32_t lo = 0, hi = 0;
            num(lo);
            hi = lo;
            if (i < list.size() && list[i] == '-') {
                ++i;
                num(hi);
            }
            if (hi < lo || hi >= CpuSet::kMaxCpus) bad("TESSEL_NPU_CPUS", s, expected);
            for (uint32_t c = lo; c <= hi; ++c) {
                if (!allowed.has(c)) bad("TESSEL_NPU_CPUS", s, expected + "; CPU " + std::to_string(c) + " is not one of them");
                set.add(c);
            }
            if (i < list.size() && list[i++] != ',') bad("TESSEL_NPU_CPUS", s, expected);
            if (i == list.size() && list.back() == ',') bad("TESSEL_NPU_CPUS", s, expected);
        }
        sets.push_back(set);
        if (semi == std::string::npos) break;
        start = semi + 1;
    }
    if (sets.size() > 1) {
        uint32_t highest = 0;
        for (const DeviceEntry& e : devices)
            for (const SessionRef& m : e.members) {
                if (m.device >= sets.size())
                    bad("TESSEL_NPU_CPUS", s, expected + "; device NPU" + std::to_string(m.device) + " has no list");
                highest = std::max(highest, m.device);
            }
        if (sets.size() > highest + 1u)  // a list no device takes is a typo more likely than a plan
            bad("TESSEL_NPU_CPUS", s,
                expected + "; " + std::to_string(sets.size()) + " lists, but the devices end at NPU" + std::to_string(highest));
    }
    return sets;
}

uint32_t fault_mode() {
    const auto v = env::get("TESSEL_NPU_FAULT");
    if (!v) return TSL_NPU_FAULT_NONE;
    const std::string s(*v);
    if (s == "none") return TSL_NPU_FAULT_NONE;
    if (s == "status") return TSL_NPU_FAULT_STATUS;
    if (s == "seq") return TSL_NPU_FAULT_SEQ;
    if (s == "hang") return TSL_NPU_FAULT_HANG;
    if (s == "die") return TSL_NPU_FAULT_DIE;
    if (s == "bad-desc") return TSL_NPU_FAULT_BAD_DESC;
    if (s == "stuck") return TSL_NPU_FAULT_STUCK;
    if (s == "slow") return TSL_NPU_FAULT_SLOW;
    bad("TESSEL_NPU_FAULT", s, "one of none, status, seq, hang, die, bad-desc, stuck, slow");
}

/// TESSEL_NPU_MM_SELECT: a comma list of matrix, tiled, flat -> bits 1 << tsl_npu_mm_kernel.
uint32_t mm_select() {
    const auto v = env::get("TESSEL_NPU_MM_SELECT");
    if (!v) return 0;
    const std::string s(*v);
    uint32_t bits = 0;
    size_t start = 0;
    for (;;) {
        const size_t comma = s.find(',', start);
        const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item == "matrix") bits |= 1u << TSL_NPU_MM_MATRIX;
        else if (item == "tiled") bits |= 1u << TSL_NPU_MM_TILED;
        else if (item == "flat") bits |= 1u << TSL_NPU_MM_FLAT;
        else bad("TESSEL_NPU_MM_SELECT", s, "a comma-separated list of matrix, tiled, flat");
        if (comma == std::string::npos) return bits;
        start = comma + 1;
    }
}

/// TESSEL_NPU_PMU: "off" or a comma list of at most three hardware events (profile slots 5..7).
std::string pmu_events() {
    const auto v = env::get("TESSEL_NPU_PMU");
    if (!v) return "";
    const std::string s(*v);
    const char* expected = "off, or a comma list of at most 3 of cycles, instructions, cache-misses, branch-misses";
    if (s == "off") return s;
    size_t start = 0, n = 0;
    for (;;) {
        const size_t comma = s.find(',', start);
        const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item != "cycles" && item != "instructions" && item != "cache-misses" && item != "branch-misses") bad("TESSEL_NPU_PMU", s, expected);
        if (++n > TSL_NPU_N_COUNTERS - TSL_NPU_COUNTER_PMU) bad("TESSEL_NPU_PMU", s, expected);
        if (comma == std::string::npos) return s;
        start = comma + 1;
    }
}

/// TESSEL_NPU_OPFUSION: 0 none, 1 all, or a sum of FusionKind bits -> the enabled kinds.
uint32_t op_fusion() {
    const auto v = env::get("TESSEL_NPU_OPFUSION");
    if (!v) return kFuseAll;
    const std::string s(*v);
    uint32_t bits = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), bits);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || (bits != 1 && (bits & ~kFuseAll)))
        bad("TESSEL_NPU_OPFUSION", s,
            "0 (off), 1 (all) or a sum of 2 (RMS_NORM+MUL), 4 (MUL_MAT+ADD), 8 (MUL_MATs sharing activations)");
    return bits == 1 ? kFuseAll : bits;
}

}  // namespace

Config config_from_env() {
    Config c;
    c.devices = devices();
    c.cpus = cpu_sets(c.devices);
    if (const auto v = env::get("TESSEL_NPU_LINK")) {
        const std::string s(*v);
        if (s == "inproc") c.link = LinkKind::InProcess;
        else if (s == "process") c.link = LinkKind::Process;
        else if (s == "hexagon") c.link = LinkKind::Hexagon;
        else bad("TESSEL_NPU_LINK", s, "inproc, process or hexagon");
    }
    c.opbatch = static_cast<uint32_t>(number("TESSEL_NPU_OPBATCH", 1, 16384, c.opbatch));
    c.opqueue = static_cast<uint32_t>(number("TESSEL_NPU_OPQUEUE", 1, 256, c.opqueue));
    c.max_mapped = number("TESSEL_NPU_VMEM", 1ull << 20, 1ull << 40, c.max_mapped);
    c.poll = flag("TESSEL_NPU_OPPOLL");
    c.timeout_ms = static_cast<uint32_t>(number("TESSEL_NPU_TIMEOUT_MS", 10, 3600000, c.timeout_ms));
    c.verbose = static_cast<int>(number("TESSEL_NPU_VERBOSE", 0, 2, 0));
    c.profile = static_cast<int>(number("TESSEL_NPU_PROFILE", 0, 2, 0));
    c.pmu = pmu_events();
    if (const auto v = env::get("TESSEL_NPU_TRACE")) c.trace = *v;  // a file that cannot be written: a warning at write
    if (const auto v = env::get("TESSEL_NPU_OPFILTER")) {
        c.opfilter = *v;
        try {
            std::regex check(c.opfilter);
        } catch (const std::regex_error& e) {
            bad("TESSEL_NPU_OPFILTER", c.opfilter, std::string("a valid regular expression (") + e.what() + ")");
        }
    }
    c.hostbuf = flag("TESSEL_NPU_HOSTBUF");
    c.n_threads = static_cast<uint32_t>(number("TESSEL_NPU_THREADS", 1, 64, c.n_threads));
    c.vtcm_bytes = number("TESSEL_NPU_VTCM", 64ull << 10, 1ull << 30, c.vtcm_bytes);
    c.matrix = env::flag("TESSEL_NPU_MATRIX", true);
    c.mm_select = mm_select();
    c.dma = dma_mode();
    c.reorder = env::flag("TESSEL_NPU_REORDER", true);
    c.fault = fault_mode();
    c.opfusion = op_fusion();
    const bool hexagon = c.link == LinkKind::Hexagon;
    const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE");
    if (hexagon && (!exe || !*exe)) /* no default to fall back on */
        throw Error(ErrorCode::Environment, "TESSEL_NPU_DEVICE_EXE is required with TESSEL_NPU_LINK=hexagon: the Hexagon device "
                                            "program (tessel-npu-hexagon, built with -DTESSEL_HEXAGON=ON in build/hexagon/bin/)");
    if (const auto v = env::get("TESSEL_NPU_DEVICE_EXE")) {
        if (!executable_file(*v))
            bad("TESSEL_NPU_DEVICE_EXE", *v, hexagon ? "an executable file (the Hexagon device program)" : "an executable file (the tessel binary)");
        if (hexagon && elf_machine(*v) != kElfMachineHexagon)
            bad("TESSEL_NPU_DEVICE_EXE", *v, "a Hexagon program (ELF machine QDSP6) for TESSEL_NPU_LINK=hexagon");
        c.device_exe = *v;
    } else {
        c.device_exe = self_exe();
    }
    if (hexagon) {
        if (const auto q = env::get("TESSEL_NPU_QEMU")) {
            c.emulator = on_path(*q);
            if (c.emulator.empty()) bad("TESSEL_NPU_QEMU", *q, "an executable file or a program on PATH (qemu-hexagon-static: Debian's qemu-user-static)");
        } else {
            c.emulator = on_path("qemu-hexagon-static");
            if (c.emulator.empty())
                throw Error(ErrorCode::Environment, "TESSEL_NPU_LINK=hexagon needs QEMU: qemu-hexagon-static is not on PATH "
                                                    "(install Debian's qemu-user-static, or set TESSEL_NPU_QEMU)");
        }
    }
    return c;
}

LinkOptions link_options(const Config& cfg, const std::string& name) {
    LinkOptions o;
    o.kind = cfg.link;
    o.n_threads = cfg.n_threads;
    o.vtcm_bytes = cfg.vtcm_bytes;
    o.ring_depth = cfg.opqueue;
    o.timeout_ms = cfg.timeout_ms;
    o.poll = cfg.poll;
    o.fault = cfg.fault == TSL_NPU_FAULT_BAD_DESC ? uint32_t{TSL_NPU_FAULT_NONE} : cfg.fault;  // bad-desc is the host's
    o.device_exe = cfg.device_exe;
    o.emulator = cfg.emulator;
    o.name = name;
    if (cfg.cpus.size() == 1) o.cpus = cfg.cpus[0];
    if (cfg.cpus.size() > 1) {
        uint32_t device = 0;
        try {
            device = parse_device_string(name, "device").at(0).members.at(0).device;
        } catch (const Error&) {
            throw Error(ErrorCode::InvalidArgument, name + ": not a device name, so no TESSEL_NPU_CPUS list is its");
        }
        if (device >= cfg.cpus.size())
            throw Error(ErrorCode::InvalidArgument, name + ": TESSEL_NPU_CPUS has no list for device NPU" + std::to_string(device));
        o.cpus = cfg.cpus[device];
    }
    return o;
}

void set_self_executable(const std::string& path) { self_exe() = path; }

}  // namespace tessel::npu
