// The link between the NPU host runtime and a device runtime (DESIGN.md, "The npu offload path").
//
// Two transports with this one interface:
//  - inproc:  the device runtime (src/npu/device) runs on its own threads in this process; it still
//             maps every buffer by fd itself, so it sees offsets, never host pointers.
//  - process: a `tessel npu-device` process started by open_link(); fds go over a Unix socket
//             with SCM_RIGHTS; the request/response rings live in shared memory with futex doorbells.
// Control calls (hwinfo, map, unmap) are synchronous. Batches are asynchronous: submit() puts a
// request in the ring, receive() takes the next response.
//
// Liveness: the device bumps a heartbeat counter in shared memory after every op and after every
// chunk of work inside an op. receive() gives up with TSL_NPU_ERR_TIMEOUT when the heartbeat has
// not moved for options.timeout_ms while a batch is outstanding (then the process link kills its
// device; the inproc link cancels its device and, when the device is stuck inside an op and does
// not stop within a short grace, abandons its threads, keeping the memory they may touch alive),
// and with TSL_NPU_ERR_DEVICE_LOST when the device process has exited. After either, the link is
// dead: every later call fails with the same status, none blocks.
// One host thread drives a link (the calls are not safe against each other). Details: docs/npu.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "npu/link/cpu_set.hpp"
#include "npu/proto/proto.h"

namespace tessel::npu {

class ShmBuffer;

/// InProcess: device threads in this process; Process: a `tessel npu-device` child; Hexagon: the
/// Hexagon device program (src/npu/hexagon/device_main.c) as a child under QEMU user-mode
/// emulation, over the same control socket, rings and protocol as Process.
enum class LinkKind { InProcess, Process, Hexagon };

/// "inproc", "process" or "hexagon" (TESSEL_NPU_LINK's values).
const char* link_kind_name(LinkKind kind);

struct LinkOptions {
    LinkKind kind = LinkKind::InProcess;
    uint32_t n_threads = 2;          ///< device worker threads
    uint64_t vtcm_bytes = 8u << 20;  ///< scratchpad budget reported by the device, bytes
    uint32_t ring_depth = 32;        ///< request/response ring entries (>= the op-queue depth)
    uint32_t timeout_ms = 10000;     ///< no-progress limit (TESSEL_NPU_TIMEOUT_MS)
    bool poll = false;               ///< spin on the rings instead of futex sleeps (TESSEL_NPU_OPPOLL)
    uint32_t fault = 0;              ///< enum tsl_npu_fault injected into the device (tests)
    std::string device_exe;          ///< process link: the tessel binary; hexagon: the Hexagon device program (TESSEL_NPU_DEVICE_EXE)
    std::string emulator;            ///< hexagon: the QEMU that runs device_exe (TESSEL_NPU_QEMU)
    std::string name = "NPU0";       ///< for messages
    CpuSet cpus;                     ///< the device runtime's threads run on these (TESSEL_NPU_CPUS); empty: anywhere
};

class Link {
public:
    virtual ~Link() = default;
    virtual LinkKind kind() const = 0;

    /// The device's report (protocol version included; the session checks it), read once at open.
    virtual tsl_npu_hwinfo hwinfo() = 0;
    /// Makes `buf` known to the device under buf.fd() (the device maps it). Returns a status.
    virtual int32_t map(const ShmBuffer& buf, uint32_t flags) = 0;
    /// Forgets `buf` on the device; call only when no outstanding batch uses it.
    virtual int32_t unmap(const ShmBuffer& buf) = 0;

    /// Queues a batch whose block lies in `queue` (a mapped buffer) at req.block_offset.
    /// Returns TSL_NPU_OK, TSL_NPU_ERR_QUEUE_FULL when the ring has no room, or the dead status.
    virtual int32_t submit(const ShmBuffer& queue, const tsl_npu_batch_req& req) = 0;
    /// Waits for the next response (see liveness above). Returns TSL_NPU_OK with *rsp filled, or
    /// TSL_NPU_ERR_TIMEOUT / TSL_NPU_ERR_DEVICE_LOST / TSL_NPU_ERR_PROTOCOL (at once when nothing is
    /// outstanding: no answer could come).
    virtual int32_t receive(tsl_npu_batch_rsp* rsp) = 0;
    /// Number of submitted batches not yet received.
    virtual uint32_t outstanding() const = 0;
};

/// Opens a link of options.kind and starts its device. Throws tessel::Error(Io) naming the device
/// and the reason (no device executable, spawn or socket failure, no answer within timeout_ms).
std::unique_ptr<Link> open_link(const LinkOptions& options);

/// In-process devices this process abandoned stuck inside an op (link.hpp, "Liveness") whose threads
/// have not returned yet: their memory (ring region, device state, its mappings of the buffers) is
/// still held. It drops back when such a thread returns, e.g. once a test has called
/// tsl_npu_device_release_stuck().
uint32_t abandoned_inproc_devices();

/// Entry point of `tessel npu-device --socket FD`: serves one host over the Unix socket FD until
/// the host closes it. Returns the process exit code.
int device_process_main(int socket_fd);

}  // namespace tessel::npu
