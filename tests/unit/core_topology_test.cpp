// core_topology() on fake sysfs trees: physical cores, big/little capacities and the default
// thread count they give (cpu/threadpool.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cpu/threadpool.hpp"
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

TEST(CoreTopology, ThreeCapacitiesCountTheLargestOnly) {
    // a DynamIQ cluster: 1 prime core, 3 mid, 4 little
    const fs::path dir = test::temp_dir();
    for (int c = 0; c < 8; ++c) add_cpu(dir, c, std::to_string(c), c == 0 ? 1024 : c < 4 ? 870 : 325);
    const CoreTopology t = core_topology(dir.string());
    EXPECT_EQ(t.cores, 8);
    EXPECT_EQ(t.capacities, (std::vector<int>{1024, 870, 325}));
    EXPECT_EQ(t.default_threads(), 1);
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

}  // namespace
}  // namespace tessel::cpu
