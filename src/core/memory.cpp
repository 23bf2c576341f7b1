#include "core/memory.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace tessel {
namespace {

/// The value in kB of `key` ("MemAvailable:") in a /proc file, as bytes; 0 when absent.
uint64_t proc_kib(const char* path, const std::string& key) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
    return 0;
}

}  // namespace

MemoryHeadroom memory_headroom() {
    MemoryHeadroom h;
    if (const uint64_t avail = proc_kib("/proc/meminfo", "MemAvailable:")) h = {avail, "MemAvailable"};
    rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        const uint64_t used = proc_kib("/proc/self/status", "VmSize:");
        const uint64_t left = as.rlim_cur > used ? as.rlim_cur - used : 0;
        if (left < h.bytes) h = {left, "RLIMIT_AS"};
    }
    return h;
}

std::string format_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 5) v /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

}  // namespace tessel
