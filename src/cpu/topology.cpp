#include "cpu/topology.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <system_error>
#include <thread>

namespace tessel::cpu {
namespace {

// CPUs this process may run on (affinity mask, indexed by cpu number); empty if unknown.
std::vector<bool> affinity_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
    std::vector<bool> allowed(CPU_SETSIZE, false);
    for (int i = 0; i < CPU_SETSIZE; ++i) allowed[static_cast<size_t>(i)] = CPU_ISSET(i, &set);
    return allowed;
}

bool is_cpu_entry(const std::string& name, size_t& index) {
    if (name.size() < 4 || name.size() > 12 || name.compare(0, 3, "cpu") != 0) return false;
    size_t v = 0;
    for (size_t i = 3; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9') return false;
        v = v * 10 + static_cast<size_t>(name[i] - '0');
    }
    index = v;
    return true;
}

std::string read_first_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) line.pop_back();
    return line;
}

}  // namespace

int available_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    const unsigned hc = std::thread::hardware_concurrency();
    return hc > 0 ? static_cast<int>(hc) : 1;
}

CoreTopology core_topology(const std::string& cpu_dir, const std::vector<bool>& allowed) {
    namespace fs = std::filesystem;
    std::map<std::string, int> cores;  // sibling list -> capacity (-1: no cpu_capacity file)
    std::error_code ec;
    fs::directory_iterator it(cpu_dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        size_t index = 0;
        if (!is_cpu_entry(it->path().filename().string(), index)) continue;
        if (!allowed.empty() && (index >= allowed.size() || !allowed[index])) continue;
        for (const char* file : {"topology/core_cpus_list", "topology/thread_siblings_list"}) {
            std::string siblings = read_first_line(it->path() / file);
            if (siblings.empty()) continue;
            const std::string text = read_first_line(it->path() / "cpu_capacity");
            int capacity = -1;
            std::from_chars(text.data(), text.data() + text.size(), capacity);
            auto [core, added] = cores.emplace(std::move(siblings), capacity);
            if (!added) core->second = std::max(core->second, capacity);
            break;
        }
    }
    CoreTopology t;
    t.cores = static_cast<int>(cores.size());
    std::set<int, std::greater<int>> capacities;
    for (const auto& [siblings, capacity] : cores)
        if (capacity >= 0) capacities.insert(capacity);
    t.capacities.assign(capacities.begin(), capacities.end());
    for (const auto& [siblings, capacity] : cores)
        if (capacities.empty() || 2 * capacity > *capacities.begin()) ++t.big_cores;
    return t;
}

int count_physical_cores(const std::string& cpu_dir, const std::vector<bool>& allowed) {
    return core_topology(cpu_dir, allowed).cores;
}

CoreTopology core_topology() { return core_topology("/sys/devices/system/cpu", affinity_cpus()); }

int default_thread_count() {
    const int n = core_topology().default_threads();
    if (n > 0) return n;
    const unsigned hc = std::thread::hardware_concurrency();
    return hc > 0 ? static_cast<int>(hc) : 1;
}

}  // namespace tessel::cpu
