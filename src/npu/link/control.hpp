// Control messages of the process link (the wire format: npu/proto/link.h): fixed-size records over
// a SOCK_SEQPACKET Unix socket between the host and its device program, a buffer's fd riding along
// as SCM_RIGHTS ancillary data.
#pragma once

#include <cstdint>

#include "npu/proto/link.h"

namespace tessel::npu {

enum class ControlOp : uint32_t {
    Start = TSL_NPU_CONTROL_START,
    Map = TSL_NPU_CONTROL_MAP,
    Unmap = TSL_NPU_CONTROL_UNMAP,
    Shutdown = TSL_NPU_CONTROL_SHUTDOWN
};

using ControlMsg = tsl_npu_control_msg;

/// Sends `msg` with `fd` attached (fd < 0: none). Never raises SIGPIPE. Returns false (errno set)
/// when the socket refuses, e.g. EPIPE once the peer has gone.
bool send_control(int sock, const ControlMsg& msg, int fd);

/// Receives one message and the fd attached to it (*fd = -1 when none; received fds are close-on-exec).
/// Returns 1 for a message, 0 when the peer closed the socket, -1 on an error or a packet that is not
/// a ControlMsg (any fd it carried is closed).
int recv_control(int sock, ControlMsg* msg, int* fd);

}  // namespace tessel::npu
