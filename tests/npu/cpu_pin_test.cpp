// TESSEL_NPU_CPUS: the lists parse into one CPU set per physical device (bad values name the
// variable and the CPU), and a device runtime's threads (workers and batch loop) run only on its
// set, over both links, while the thread that opened it keeps its own CPUs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "npu/host/config.hpp"
#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

/// Config from the environment with TESSEL_NPU_CPUS (and TESSEL_NPU_DEVICES when given) set.
Config config_with(const char* cpus, const char* devices = nullptr) {
    setenv("TESSEL_NPU_CPUS", cpus, 1);
    if (devices) setenv("TESSEL_NPU_DEVICES", devices, 1);
    struct Unset {
        ~Unset() {
            unsetenv("TESSEL_NPU_CPUS");
            unsetenv("TESSEL_NPU_DEVICES");
        }
    } unset;
    return config_from_env();
}

std::string error_of(const char* cpus, const char* devices = nullptr) {
    try {
        config_with(cpus, devices);
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

TEST(NpuCpus, ListsParseIntoOneSetPerDevice) {
    const CpuSet allowed = CpuSet::allowed();
    ASSERT_TRUE(allowed.has(0)) << allowed.text();
    EXPECT_TRUE(config_with("0").cpus.size() == 1 && config_with("0").cpus[0].text() == "0");
    const Config two = config_with("0;0", "NPU0,NPU1:1,NPU1");
    ASSERT_EQ(two.cpus.size(), 2u);
    EXPECT_EQ(link_options(two, "NPU1:1").cpus.text(), "0");
    EXPECT_EQ(link_options(two, "NPU1").cpus.text(), "0");
    EXPECT_EQ(link_options(Config{}, "NPU0").cpus.text(), "");
    EXPECT_EQ(config_with(allowed.text().c_str()).cpus[0].text(), allowed.text());
    for (const char* bad : {"", "x", "0,", "1-0", "0;;0", "0-", "300", " 0"})
        EXPECT_NE(error_of(bad).find("TESSEL_NPU_CPUS"), std::string::npos) << "'" << bad << "': " << error_of(bad);
    uint32_t missing = 0;
    while (allowed.has(missing)) ++missing;
    ASSERT_LT(missing, CpuSet::kMaxCpus);
    const std::string list = "0-" + std::to_string(missing);
    EXPECT_NE(error_of(list.c_str()).find("CPU " + std::to_string(missing) + " is not one of them"), std::string::npos)
        << error_of(list.c_str());
    EXPECT_NE(error_of("0;0", "3").find("device NPU2 has no list"), std::string::npos) << error_of("0;0", "3");
    EXPECT_NE(error_of("0;0;0", "2").find("3 lists, but the devices end at NPU1"), std::string::npos) << error_of("0;0;0", "2");
    EXPECT_NE(error_of("0;0;0", "NPU0,NPU2").find("accepted"), std::string::npos);  // NPU1's list goes unused: a gap, not an extra
}

/// "Cpus_allowed_list" of every thread of process `pid`.
std::vector<std::string> thread_cpus(pid_t pid) {
    std::vector<std::string> out;
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (const auto& task : std::filesystem::directory_iterator(tasks)) {
        std::ifstream status(task.path() / "status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind("Cpus_allowed_list:", 0) == 0) {
                std::istringstream words(line.substr(18));
                std::string list;
                words >> list;
                out.push_back(list);
            }
    }
    return out;
}

/// The child processes of this process (the process link's device).
std::vector<pid_t> children() {
    std::vector<pid_t> out;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream f(task.path() / "children");
        for (pid_t p; f >> p;) out.push_back(p);
    }
    return out;
}

size_t count(const std::vector<std::string>& lists, const std::string& want) {
    size_t n = 0;
    for (const std::string& l : lists) n += l == want;
    return n;
}

class NpuPinned : public ::testing::TestWithParam<LinkKind> {};

TEST_P(NpuPinned, TheDeviceThreadsRunOnItsCpus) {
    const CpuSet allowed = CpuSet::allowed();
    Config cfg;
    cfg.link = GetParam();
    cfg.n_threads = 3;
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) cfg.device_exe = exe;
    cfg.cpus = {CpuSet{}};
    cfg.cpus[0].add(0);
    const std::vector<pid_t> before = children();
    const size_t pinned_before = count(thread_cpus(getpid()), "0");
    NpuDevice dev("NPU0", cfg);
    dev.session();
    // The opening thread got its own CPUs back.
    EXPECT_EQ(CpuSet::allowed().text(), allowed.text());
    if (GetParam() == LinkKind::InProcess) {
        // 2 workers and the batch loop
        EXPECT_EQ(count(thread_cpus(getpid()), "0"), pinned_before + 3);
    } else {
        std::vector<pid_t> started;
        for (pid_t p : children())
            if (std::find(before.begin(), before.end(), p) == before.end()) started.push_back(p);
        ASSERT_EQ(started.size(), 1u);
        EXPECT_GE(count(thread_cpus(started[0]), "0"), 3u);
    }
}

INSTANTIATE_TEST_SUITE_P(Links, NpuPinned, ::testing::Values(LinkKind::InProcess, LinkKind::Process),
                         [](const auto& info) { return std::string(info.param == LinkKind::InProcess ? "InProcess" : "Process"); });

}  // namespace
}  // namespace tessel::npu
