// core_topology() on fake sysfs trees: physical cores, big/little capacities and the default
// thread count they give (cpu/topology.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu/topology.hpp"
#include "support/test_paths.hpp"

namespace tessel::cpu {
namespace {

namespace fs = std::filesystem;

// Writes cpuN/topology/core_cpus_list and, when capacity >= 0, cpuN/cpu_capacity under dir.
void add_cpu(const fs::path& dir, int cpu, const std::string& siblings, int capacity) {
    const fs::path cpu_dir = dir / ("cpu" + std::to_string(cpu));
    fs::create_directories(cpu_dir / "topology");
    std::ofstream(cpu_dir / "topology" / "core_cpus_list") << siblings << "\n";
    if (capacity >= 0) std::ofstream(cpu_dir / "cpu_capacity") << capacity << "\n";
}

// cpu0-3 big (capacity 1024), cpu4-7 little (512), one thread per core.
fs::path big_little_tree() {
    const fs::path dir = test::temp_dir() / "big_little";
    for (int c = 0; c < 8; ++c) add_cpu(dir, c, std::to_string(c), c < 4 ? 1024 : 512);
    return dir;
}

TEST(CoreTopology, BigLittleCountsBigCoresOnly) {
    const fs::path dir = big_little_tree();
    const CoreTopology t = core_topology(dir.string());
    EXPECT_EQ(t.cores, 8);
    EXPECT_EQ(t.big_cores, 4);
    EXPECT_EQ(t.capacities, (std::vector<int>{1024, 512}));
    EXPECT_TRUE(t.big_little());
    EXPECT_EQ(t.default_threads(), 4);

    // without cpu0: 3 big cores against 4 little ones, still the big ones
    std::vector<bool> allowed(8, true);
    allowed[0] = false;
    EXPECT_EQ(core_topology(dir.string(), allowed).default_threads(), 3);
}

TEST(CoreTopology, SmtSiblingsOnBigCoresCountOnce) {
    // 2 big cores x 2 SMT threads (cpu0,1 and cpu2,3; capacity 1024), 4 single-thread little cores (446)
    const fs::path dir = test::temp_dir();
    add_cpu(dir, 0, "0-1", 1024);
    add_cpu(dir, 1, "0-1", 1024);
    add_cpu(dir, 2, "2-3", 1024);
    add_cpu(dir, 3, "2-3", 1024);
    for (int c = 4; c < 8; ++c) add_cpu(dir, c, std::to_string(c), 446);
    const CoreTopology t = core_topology(dir.string());
    EXPECT_EQ(t.cores, 6);
    EXPECT_EQ(t.big_cores, 2);
    EXPECT_EQ(t.capacities, (std::vector<int>{1024, 446}));
    EXPECT_EQ(t.default_threads(), 2);
}

TEST(CoreTopology, ThreeCapacitiesCountPrimeAndMidCores) {
    // a DynamIQ cluster: 1 prime core, 3 mid, 4 little
    const fs::path dir = test::temp_dir();
    for (int c = 0; c < 8; ++c) add_cpu(dir, c, std::to_string(c), c == 0 ? 1024 : c < 4 ? 870 : 325);
    const CoreTopology t = core_topology(dir.string());
    EXPECT_EQ(t.cores, 8);
    EXPECT_EQ(t.capacities, (std::vector<int>{1024, 870, 325}));
    EXPECT_EQ(t.default_threads(), 4);  // capacity more than half of 1024
}

TEST(CoreTopology, EqualCapacitiesCountEveryCore) {
    const fs::path dir = test::temp_dir();
    for (int c = 0; c < 4; ++c) add_cpu(dir, c, std::to_string(c), 1024);
    const CoreTopology t = core_topology(dir.string());
    EXPECT_EQ(t.cores, 4);
    EXPECT_EQ(t.big_cores, 4);
    EXPECT_EQ(t.capacities, (std::vector<int>{1024}));
    EXPECT_FALSE(t.big_little());
    EXPECT_EQ(t.default_threads(), 4);
}

TEST(CoreTopology, NoCapacityFilesCountEveryCore) {
    // x86 layout: 3 cores x 2 SMT threads, no cpu_capacity
    const fs::path dir = test::temp_dir();
    for (int c = 0; c < 6; ++c) add_cpu(dir, c, std::to_string(c % 3) + "," + std::to_string(c % 3 + 3), -1);
    const CoreTopology t = core_topology(dir.string());
    EXPECT_EQ(t.cores, 3);
    EXPECT_EQ(t.big_cores, 3);
    EXPECT_TRUE(t.capacities.empty());
    EXPECT_FALSE(t.big_little());
    EXPECT_EQ(t.default_threads(), 3);
    EXPECT_EQ(count_physical_cores(dir.string()), 3);
}

TEST(CoreTopology, AffinityMaskDecidesWhichCoresAreBig) {
    const fs::path dir = big_little_tree();
    // little cores only: no big core to prefer, so every allowed core counts
    std::vector<bool> allowed(8, false);
    allowed[5] = allowed[6] = allowed[7] = true;
    CoreTopology t = core_topology(dir.string(), allowed);
    EXPECT_EQ(t.cores, 3);
    EXPECT_EQ(t.capacities, (std::vector<int>{512}));
    EXPECT_FALSE(t.big_little());
    EXPECT_EQ(t.default_threads(), 3);

    // one big and two little cores allowed: the big one
    allowed[0] = true;
    allowed[7] = false;
    t = core_topology(dir.string(), allowed);
    EXPECT_EQ(t.cores, 3);
    EXPECT_EQ(t.big_cores, 1);
    EXPECT_EQ(t.default_threads(), 1);
}

TEST(CoreTopology, MissingTreeIsEmpty) {
    const CoreTopology t = core_topology((test::temp_dir() / "missing").string());
    EXPECT_EQ(t.cores, 0);
    EXPECT_EQ(t.default_threads(), 0);
    EXPECT_TRUE(t.capacities.empty());
}

TEST(CoreTopology, ThisMachineMatchesDefaultThreadCount) {
    const CoreTopology t = core_topology();
    if (t.cores == 0) GTEST_SKIP() << "NOT RUN: /sys/devices/system/cpu unreadable";
    EXPECT_EQ(default_thread_count(), t.default_threads());
    EXPECT_GE(t.big_cores, 1);
    EXPECT_LE(t.big_cores, t.cores);
}

TEST(CoreTopology, DefaultThreadCountIsPositive) {
    const int n = default_thread_count();
    EXPECT_GE(n, 1);
    EXPECT_LE(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(CoreTopology, CountPhysicalCoresFromSysfsLayout) {
    namespace fs = std::filesystem;
    const fs::path dir = test::temp_dir();
    auto add_cpu = [&](int cpu, const char* file, const char* siblings) {
        const fs::path topo = dir / ("cpu" + std::to_string(cpu)) / "topology";
        fs::create_directories(topo);
        std::ofstream(topo / file) << siblings << "\n";
    };
    // 4 cores x 2 SMT threads: cpuN and cpuN+4 are siblings
    for (int c = 0; c < 8; ++c) {
        const std::string s = std::to_string(c % 4) + "," + std::to_string(c % 4 + 4);
        add_cpu(c, "core_cpus_list", s.c_str());
    }
    fs::create_directories(dir / "cpufreq");  // non-cpu entries are ignored
    fs::create_directories(dir / "cpuidle");
    EXPECT_EQ(count_physical_cores(dir.string()), 4);

    // affinity restricted to cpu0, cpu4 (siblings) and cpu1: two cores
    std::vector<bool> allowed(8, false);
    allowed[0] = allowed[4] = allowed[1] = true;
    EXPECT_EQ(count_physical_cores(dir.string(), allowed), 2);

    // older kernels: only thread_siblings_list
    const fs::path old_dir = dir / "old";
    for (int c = 0; c < 3; ++c) {
        const fs::path topo = old_dir / ("cpu" + std::to_string(c)) / "topology";
        fs::create_directories(topo);
        std::ofstream(topo / "thread_siblings_list") << (c < 2 ? "0-1" : "2") << "\n";
    }
    EXPECT_EQ(count_physical_cores(old_dir.string()), 2);

    EXPECT_EQ(count_physical_cores((dir / "missing").string()), 0);
}

}  // namespace
}  // namespace tessel::cpu
