// The hexagon link (TESSEL_NPU_LINK=hexagon): the Hexagon device program (tessel-npu-hexagon) under
// qemu-hexagon behind an NPU session: it reports its HVX kernels, computes a graph, and every fault
// of the emulated device ends the run with one clean error within the timeout, never a hang (a
// device that dies: DEVICE_LOST; one that stops answering or sticks inside an op: TIMEOUT, the
// emulator killed).
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>
#include <ostream>
#include <string>
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
