// Registration of the developer tools (dev/commands.hpp).
#include <filesystem>
#include <system_error>

#include "dev/commands.hpp"
#include "npu/host/config.hpp"

namespace tessel::cli::dev {

void add_developer_commands(CLI::App& app) {
    add_test_ops_command(app);
    add_quantize_command(app);
    add_trace_command(app);
    add_render_template_command(app);
    add_npu_device_command(app);  // hidden: only the host runtime starts it
    // The NPU's process link starts this binary as `tessel npu-device` (unless TESSEL_NPU_DEVICE_EXE).
    std::error_code ec;
    if (const auto self = std::filesystem::read_symlink("/proc/self/exe", ec); !ec) npu::set_self_executable(self.string());
}

}  // namespace tessel::cli::dev
