// Control messages of the process link (DESIGN.md, "The npu offload path"): fixed-size records over a
// SOCK_SEQPACKET Unix socket between the host and `tessel npu-device`, one message per packet, a
// buffer's fd riding along as SCM_RIGHTS ancillary data. Every request is answered by one message
// with the same op and a status (enum tsl_npu_status).
//
//   Start     host -> device: region fd (the rings, see ring.hpp) + its size, device options;
//             answer: hwinfo
//   Map       host -> device: buffer fd + the host's fd number (host_fd) + size + flags
//   Unmap     host -> device: host_fd
//   Shutdown  host -> device: the device cancels its batch, answers and exits
#pragma once

#include <cstdint>

#include "npu/proto/proto.h"

namespace tessel::npu {

enum class ControlOp : uint32_t { Start = 1, Map = 2, Unmap = 3, Shutdown = 4 };

struct ControlMsg {
    uint32_t op;       ///< ControlOp
    int32_t status;    ///< answers: enum tsl_npu_status
    int32_t host_fd;   ///< Map/Unmap: the buffer's name in batches (the host's fd number)
    uint32_t flags;    ///< Map: TSL_NPU_BUF_* flags
    uint64_t size;     ///< Start: region bytes; Map: buffer bytes (page-rounded)
    uint64_t vtcm_bytes;  ///< Start: the scratchpad budget
    uint32_t n_threads;   ///< Start: device worker threads
    uint32_t fault;       ///< Start: enum tsl_npu_fault
    uint32_t poll;        ///< Start: 1 = the device loop spins on the request ring
    uint32_t reserved;
    tsl_npu_hwinfo hwinfo;  ///< Start's answer
    uint64_t cpus[4];       ///< Start: CPUs 0..255 the device's threads run on (bit c of word c / 64); none set: anywhere
};
static_assert(sizeof(ControlMsg) == 144, "control message layout");

/// Sends `msg` with `fd` attached (fd < 0: none). Never raises SIGPIPE. Returns false (errno set)
/// when the socket refuses, e.g. EPIPE once the peer has gone.
bool send_control(int sock, const ControlMsg& msg, int fd);

/// Receives one message and the fd attached to it (*fd = -1 when none; received fds are close-on-exec).
/// Returns 1 for a message, 0 when the peer closed the socket, -1 on an error or a packet that is not
/// a ControlMsg (any fd it carried is closed).
int recv_control(int sock, ControlMsg* msg, int* fd);

}  // namespace tessel::npu
