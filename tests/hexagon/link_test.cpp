// The hexagon link (TESSEL_NPU_LINK=hexagon): the Hexagon device program (tessel-npu-hexagon) under
// qemu-hexagon behind an NPU session: it reports its HVX kernels, computes a graph, and every fault
// of the emulated device ends the run with one clean error within the timeout, never a hang (a
// device that dies: DEVICE_LOST; one that stops answering or sticks inside an op: TIMEOUT, the
// emulator killed), and the emulator never outlives its host.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "hexagon/hexagon_programs.hpp"
#include "npu/device/faults.h"
#include "npu/f32_tensors.hpp"
#include "npu/host/config.hpp"
#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config hexagon_config() {
    Config c;
    c.link = LinkKind::Hexagon;
    c.timeout_ms = 2000;
    c.device_exe = test::hexagon_program("tessel-npu-hexagon");
    c.emulator = test::hexagon_qemu();
    return c;
}

// ADD of two F32 tensors in one NPU buffer: x + x.
struct AddGraph {
    std::unique_ptr<Buffer> buf;
    Tensor x, y;
    explicit AddGraph(NpuDevice& dev, int64_t n) {
        buf = dev.buffer_type().alloc_buffer(1 << 16);
        x.set_shape(DType::F32, {n});
        y.set_shape(DType::F32, {n});
        buf->init_tensor(x, 0);
        buf->init_tensor(y, 32768);
        y.op = Op::ADD;
        y.src[0] = &x;
        y.src[1] = &x;
        fill_ramp(x, -3.0f);
    }
};

TEST(HexagonLink, TheEmulatedDeviceRunsAGraphWithItsHvxKernels) {
    NpuDevice dev("NPU0", hexagon_config());
    auto backend = dev.init_backend({});
    EXPECT_NE(dev.description().find("Hexagon"), std::string::npos) << dev.description();
    AddGraph g(dev, 1000);
    backend->graph_compute({&g.y});
    backend->synchronize();
    const std::vector<float> x = read_f32(g.x), y = read_f32(g.y);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] + x[i]) << i;
    EXPECT_EQ(std::string(dev.session().hwinfo().name), "tessel NPU (hvx kernels)");
    EXPECT_EQ(dev.session().hwinfo().n_threads, 1u);
}

// Sets or clears environment variables for one scope, restoring them after.
class ScopedEnv {
public:
    ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
        for (const auto& [name, value] : vars) {
            const char* old = std::getenv(name);
            saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
            if (value) setenv(name, value, 1);
            else unsetenv(name);
        }
    }
    ~ScopedEnv() {
        for (const auto& [name, old] : saved_) {
            if (old) setenv(name.c_str(), old->c_str(), 1);
            else unsetenv(name.c_str());
        }
    }

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// TESSEL_NPU_LINK=hexagon's variables: the device program is required and must be Hexagon code, the
// emulator must exist; each error (ErrorCode::Environment) names its variable.
TEST(HexagonLink, ConfigurationErrorsNameTheVariable) {
    const std::string program = test::hexagon_program("tessel-npu-hexagon");
    const std::string qemu = test::hexagon_qemu();
    auto error_of = [](std::initializer_list<std::pair<const char*, const char*>> vars) {
        ScopedEnv env(vars);
        try {
            config_from_env();
        } catch (const Error& e) {
            EXPECT_EQ(e.code(), ErrorCode::Environment) << e.what();
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error_of({{"TESSEL_NPU_LINK", "hexagon"}, {"TESSEL_NPU_DEVICE_EXE", nullptr}}).find("TESSEL_NPU_DEVICE_EXE is required"),
              std::string::npos);
    EXPECT_NE(error_of({{"TESSEL_NPU_LINK", "hexagon"}, {"TESSEL_NPU_DEVICE_EXE", "/proc/self/exe"}}).find("a Hexagon program"),
              std::string::npos);
    EXPECT_NE(error_of({{"TESSEL_NPU_LINK", "hexagon"}, {"TESSEL_NPU_DEVICE_EXE", program.c_str()}, {"TESSEL_NPU_QEMU", "/nonexistent/qemu"}})
                  .find("TESSEL_NPU_QEMU"),
              std::string::npos);
    EXPECT_NE(error_of({{"TESSEL_NPU_LINK", "hexagn"}}).find("inproc, process or hexagon"), std::string::npos);
    ScopedEnv good({{"TESSEL_NPU_LINK", "hexagon"}, {"TESSEL_NPU_DEVICE_EXE", program.c_str()}, {"TESSEL_NPU_QEMU", qemu.c_str()}});
    const Config c = config_from_env();
    EXPECT_EQ(c.link, LinkKind::Hexagon);
    EXPECT_EQ(c.device_exe, program);
    EXPECT_EQ(c.emulator, qemu);
}

// The first process whose parent is `parent` (from /proc/<pid>/stat), or -1.
pid_t child_of(pid_t parent) {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream in(e.path() / "stat");
        std::string stat;
        std::getline(in, stat);
        const size_t close = stat.rfind(')');  // after "pid (comm)": state, ppid
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 1));
        std::string state;
        long ppid = 0;
        if (rest >> state >> ppid && ppid == parent) return static_cast<pid_t>(std::stol(name));
    }
    return -1;
}

// Gone, or a zombie nobody reaps (a container's init may not).
bool process_gone(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) return true;
    const size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

// A host killed while its device is busy inside an op (the STUCK fault: the device never gets back to
// its control socket) takes the emulated device with it, at once.
TEST(HexagonLink, TheEmulatedDeviceEndsWithItsHost) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t host = fork();
    ASSERT_GE(host, 0);
    if (host == 0) {
        Config cfg = hexagon_config();
        cfg.fault = TSL_NPU_FAULT_STUCK;
        cfg.timeout_ms = 600000;
        NpuDevice dev("NPU0", cfg);
        auto backend = dev.init_backend({});
        AddGraph g(dev, 256);
        (void)!write(ready[1], "r", 1);
        try {
            backend->graph_compute({&g.y});
            backend->synchronize();
        } catch (...) {
        }
        _exit(0);
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1) << "the host process did not open its device";
    close(ready[0]);
    const pid_t emulator = child_of(host);
    ASSERT_GT(emulator, 0) << "no emulator under the host process";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the batch is inside its stuck op
    ASSERT_FALSE(process_gone(emulator));
    kill(host, SIGKILL);
    int status = 0;
    waitpid(host, &status, 0);
    const auto t0 = std::chrono::steady_clock::now();
    while (!process_gone(emulator) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3))
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(process_gone(emulator)) << "the emulated device outlived its host by 3 s";
    if (!process_gone(emulator)) kill(emulator, SIGKILL);
}

struct FaultCase {
    const char* name;
    uint32_t fault;
    const char* status;
};

void PrintTo(const FaultCase& f, std::ostream* os) { *os << f.name; }

class HexagonFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(HexagonFault, EndsInOneCleanErrorWithinTheTimeout) {
    Config cfg = hexagon_config();
    cfg.fault = GetParam().fault;
    cfg.timeout_ms = 500;
    NpuDevice dev("NPU0", cfg);
    auto backend = dev.init_backend({});
    AddGraph g(dev, 256);
    const auto t0 = std::chrono::steady_clock::now();
    std::string message;
    try {
        backend->graph_compute({&g.y});
        backend->synchronize();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Device);
        message = e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(message.find(GetParam().status), std::string::npos) << message;
    EXPECT_LE(seconds, cfg.timeout_ms / 1000.0 + 1.0) << message;
    EXPECT_THROW(backend->graph_compute({&g.y}), Error);  // remembered
}

INSTANTIATE_TEST_SUITE_P(Faults, HexagonFault,
                         ::testing::Values(FaultCase{"Status", TSL_NPU_FAULT_STATUS, "INJECTED"},
                                           FaultCase{"Die", TSL_NPU_FAULT_DIE, "DEVICE_LOST"},
                                           FaultCase{"Hang", TSL_NPU_FAULT_HANG, "TIMEOUT"},
                                           FaultCase{"Stuck", TSL_NPU_FAULT_STUCK, "TIMEOUT"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessel::npu
