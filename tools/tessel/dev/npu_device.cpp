// `tessel npu-device --socket FD` (internal): the device side of the NPU's process link, started by
// the host runtime (src/npu/link/process_link.cpp); not meant to be run by hand.
#include <cstdlib>
#include <memory>

#include "dev/commands.hpp"
#include "npu/link/link.hpp"

namespace tessel::cli::dev {

void add_npu_device_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("npu-device", "internal: the NPU device process of the out-of-process link");
    cmd->group("");  // hidden from --help: only the host runtime starts it
    auto socket_fd = std::make_shared<int>(-1);
    cmd->add_option("--socket", *socket_fd, "the Unix socket inherited from the host")->required()->check(
        CLI::Range(0, 1 << 20).description("a file descriptor number"));
    cmd->callback([socket_fd] {
        const int rc = npu::device_process_main(*socket_fd);
        if (rc != 0) std::exit(rc);
    });
}

}  // namespace tessel::cli::dev
