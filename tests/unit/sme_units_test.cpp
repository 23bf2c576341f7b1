// Streaming-mode compute units from SMIDR_EL1 (core/sme_units.hpp): the counting rules on
// synthetic register values, the sysfs reader on fake trees, and the SME default of the
// matrix-unit thread cap (cpu/packed/kernel.hpp). Runs on every host: all of it is pure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/sme_units.hpp"
#include "cpu/packed/kernel.hpp"
#include "support/test_paths.hpp"

namespace tessel {
namespace {

namespace fs = std::filesystem;

// SMIDR_EL1 with SH (bits [14:13]), NSMC (bits [59:56]) and affinity id `aff` split into bits
// [51:32] (aff >> 12) and [11:0]; other fields set (implementer 0x41 in [31:24], SMPS bit 15,
// revision bits [23:16]) so the counting must mask them out.
uint64_t smidr(unsigned sh, unsigned nsmc, uint64_t aff) {
    return uint64_t{nsmc} << 56 | ((aff >> 12) & 0xFFFFF) << 32 | uint64_t{0x41} << 24 | uint64_t{0x12} << 16 | uint64_t{1} << 15 |
           uint64_t{sh} << 13 | (aff & 0xFFF);
}

int units(const std::vector<uint64_t>& v) { return count_sme_units(v).units; }

TEST(SmeUnits, PrivateUnitsCountOnePerCpu) {
    EXPECT_EQ(units({smidr(2, 0, 0), smidr(2, 0, 1), smidr(2, 3, 2), smidr(2, 0, 2)}), 4);  // NSMC and ids ignored
    EXPECT_EQ(units({}), 0);
}

TEST(SmeUnits, SharedUnitsCountOncePerAffinityIdWithTheLargestNsmc) {
    // 4 CPUs of id 0x100 report 1, 2, 2, 1 units: 2; one CPU of id 0x200 with 1 unit: 1
    EXPECT_EQ(units({smidr(3, 0, 0x100), smidr(3, 1, 0x100), smidr(3, 1, 0x100), smidr(3, 0, 0x100), smidr(3, 0, 0x200)}), 3);
    // bits [51:32] are part of the id: 0x1000 (high part 1, low part 0) differs from 0x001
    EXPECT_EQ(units({smidr(3, 0, 0x1000), smidr(3, 0, 0x001), smidr(3, 0, 0x1000)}), 2);
    EXPECT_EQ(units({smidr(3, 7, 0xFFFFF'FFF)}), 8);
    EXPECT_FALSE(count_sme_units(std::vector<uint64_t>{smidr(3, 14, 5)}).reserved_nsmc);
    EXPECT_EQ(units({smidr(3, 14, 5)}), 15);
}

TEST(SmeUnits, ReservedNsmcCountsOneAndIsReported) {
    const std::vector<uint64_t> v = {smidr(3, 0xF, 0x100), smidr(3, 0xF, 0x100)};
    const SmeUnitCount c = count_sme_units(v);
    EXPECT_EQ(c.units, 1);
    EXPECT_TRUE(c.reserved_nsmc);
    // a valid larger NSMC of the same id still wins
    EXPECT_EQ(units({smidr(3, 0xF, 0x100), smidr(3, 2, 0x100)}), 3);
}

TEST(SmeUnits, ShZeroIsPrivateWithoutAnAffinityIdElseShared) {
    EXPECT_EQ(units({smidr(0, 0, 0), smidr(0, 5, 0)}), 2);        // id 0: private, NSMC ignored
    EXPECT_EQ(units({smidr(0, 1, 0x300), smidr(0, 0, 0x300)}), 2);  // id 0x300: shared, max NSMC 1 -> 2
    EXPECT_EQ(units({smidr(0, 0, 0x300), smidr(3, 2, 0x300)}), 3);  // SH 0 and SH 3 of one id share
}

TEST(SmeUnits, ShOneIsIgnored) {
    EXPECT_EQ(units({smidr(1, 0, 0), smidr(1, 3, 0x100)}), 0);
    EXPECT_EQ(units({smidr(1, 0, 0), smidr(2, 0, 1), smidr(3, 1, 0x100)}), 3);
}

TEST(SmeUnits, MixedPrivateAndSharedAdd) {
    // 2 private units, 2 CPUs sharing 1 unit at id 0x10, 4 CPUs sharing 2 units at id 0x20
    std::vector<uint64_t> v = {smidr(2, 0, 0), smidr(2, 0, 1), smidr(3, 0, 0x10), smidr(3, 0, 0x10)};
    for (int i = 0; i < 4; ++i) v.push_back(smidr(3, 1, 0x20));
    EXPECT_EQ(units(v), 2 + 1 + 2);
}

// Writes `text` as cpu<n>/regs/identification/smidr_el1 under dir.
void write_smidr(const fs::path& dir, const std::string& cpu, const std::string& text) {
    const fs::path id = dir / cpu / "regs" / "identification";
    fs::create_directories(id);
    std::ofstream(id / "smidr_el1") << text;
}

TEST(SmeUnitsSysfs, ReadsHexWithAndWithoutPrefixSkippingMissingAndJunk) {
    const fs::path dir = test::temp_dir() / "cpu";
    write_smidr(dir, "cpu0", "0x0000000000004000\n");   // SH 2
    write_smidr(dir, "cpu1", "0000000000004000\n");     // SH 2, no prefix
    write_smidr(dir, "cpu2", "0X0100000041006100\n");   // SH 3, NSMC 1, id 0x100 (implementer 0x41), 0X prefix
    write_smidr(dir, "cpu3", "  0x100000041006100 \n");  // the same in lower case, spaces around
    fs::create_directories(dir / "cpu4" / "regs" / "identification");  // no file
    fs::create_directories(dir / "cpu5");                               // no regs at all
    write_smidr(dir, "cpu6", "not a register\n");
    write_smidr(dir, "cpu7", "0x\n");
    write_smidr(dir, "cpu8", "");
    write_smidr(dir, "cpu9", "0x10000000000000000\n");  // 17 digits: too wide
    write_smidr(dir, "cpufreq", "0x4000\n");            // not a cpu<N> entry
    std::vector<uint64_t> v = read_smidr_values(dir.string());
    std::sort(v.begin(), v.end());
    EXPECT_EQ(v, (std::vector<uint64_t>{0x4000, 0x4000, 0x0100000041006100, 0x0100000041006100}));
    EXPECT_EQ(smidr(3, 1, 0x100) & ~(uint64_t{0x12} << 16 | uint64_t{1} << 15), 0x0100000041006100u);  // the value the files hold
    EXPECT_EQ(sme_units_from_sysfs(dir.string()), 2 + 2);
}

TEST(SmeUnitsSysfs, NoFilesIsUnknown) {
    const fs::path dir = test::temp_dir() / "cpu";
    fs::create_directories(dir / "cpu0" / "regs" / "identification");
    fs::create_directories(dir / "cpu1");
    EXPECT_TRUE(read_smidr_values(dir.string()).empty());
    EXPECT_EQ(sme_units_from_sysfs(dir.string()), 0);
    EXPECT_EQ(sme_units_from_sysfs((dir / "missing").string()), 0);
}

CpuFeatures arm_sme(int sme_units) {
    CpuFeatures f;
    f.arch = CpuArch::Arm;
    f.neon = f.dotprod = f.i8mm = f.sve = f.sve2 = f.sme = true;
    f.sve_vector_bytes = 32;
    f.sme_vector_bytes = 64;
    f.sme_units = sme_units;
    return f;
}

TEST(SmeUnits, FeaturesDropTheCountWithSme) {
    EXPECT_EQ(normalize_cpu_features(arm_sme(3)).sme_units, 3);
    CpuFeatures no_sme = arm_sme(3);
    no_sme.sme = false;
    EXPECT_EQ(normalize_cpu_features(no_sme).sme_units, 0);
    EXPECT_EQ(cap_cpu_features(arm_sme(3), CpuTier::Sve).sme_units, 0);
    EXPECT_EQ(cap_cpu_features(arm_sme(3), CpuTier::Sme).sme_units, 3);
}

TEST(MatrixThreadCap, DefaultIsTheSmeUnitsOnArmAndNoCapOnX86) {
    EXPECT_EQ(cpu::packed::default_matrix_thread_cap(arm_sme(3)), 3);
    EXPECT_EQ(cpu::packed::default_matrix_thread_cap(arm_sme(0)), 1);  // unknown
    CpuFeatures sve = arm_sme(0);
    sve.sme = false;
    EXPECT_EQ(cpu::packed::default_matrix_thread_cap(sve), 0);  // no matrix unit
    CpuFeatures amx;
    amx.arch = CpuArch::X86;
    amx.amx_tile = amx.amx_int8 = true;
    EXPECT_EQ(cpu::packed::default_matrix_thread_cap(amx), 0);  // AMX is per core
}

}  // namespace
}  // namespace tessel
