// The process link (link.hpp): a `tessel npu-device --socket FD` child (or, for the Hexagon link,
// `QEMU DEVICE_PROGRAM npu-device --socket FD`), control messages over a SOCK_SEQPACKET socket
// (control.hpp), batches through the ring region (ring.hpp) it maps by fd.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "npu/link/control.hpp"
#include "npu/link/link_base.hpp"
#include "npu/link/links.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(1);

std::string exit_text(int status) {
    if (WIFEXITED(status)) return std::string("exit status ") + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("signal ") + std::to_string(WTERMSIG(status));
    return "unknown status";
}

class ProcessLink final : public LinkBase {
public:
    /// Starts the child; start() then hands it the ring region. The destructor always reaps it.
    explicit ProcessLink(const LinkOptions& options) : LinkBase(options) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
            throw Error(ErrorCode::Io, options_.name + ": socketpair: " + std::strerror(errno));
        sock_ = sv[0];
        const std::string fd_arg = std::to_string(sv[1]);
        std::vector<const char*> argv;
        if (options_.kind == LinkKind::Hexagon) argv.push_back(options_.emulator.c_str());
        for (const char* a : {options_.device_exe.c_str(), "npu-device", "--socket", fd_arg.c_str()}) argv.push_back(a);
        argv.push_back(nullptr);
        const pid_t host = getpid();
        pid_ = fork();
        if (pid_ == 0) {
            // Child: only async-signal-safe calls until exec. Its end of the socket survives exec.
            // The emulated device notices a lost host only between batches: the kernel ends it with
            // the host (with the thread that opened the link, which is the caller's to keep).
            if (options_.kind == LinkKind::Hexagon && (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != host)) _exit(127);
            // its stdout is the host's stderr: nothing a device prints mixes with generated text
            if (dup2(STDERR_FILENO, STDOUT_FILENO) >= 0 && fcntl(sv[1], F_SETFD, 0) == 0)
                execv(argv[0], const_cast<char* const*>(argv.data()));
            _exit(127);
        }
        const int fork_errno = errno;
        close(sv[1]);
        if (pid_ < 0) {
            close(sock_);
            throw Error(ErrorCode::Io, options_.name + ": cannot start the device process: fork: " + std::strerror(fork_errno));
        }
    }

    ~ProcessLink() override {
        if (!reaped_) {
            ControlMsg msg{};
            msg.op = static_cast<uint32_t>(ControlOp::Shutdown);
            send_control(sock_, msg, -1);  // a gone device refuses: the wait below reaps it
            const auto end = std::chrono::steady_clock::now() + kShutdownGrace;
            while (!device_gone() && std::chrono::steady_clock::now() < end)
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            if (!reaped_) stop_stalled_device();
        }
        close(sock_);
    }

    /// Sends Start with the region; throws tessel::Error(Io) when the device does not answer OK.
    void start() {
        ControlMsg msg{};
        msg.op = static_cast<uint32_t>(ControlOp::Start);
        msg.size = region_buf_->size();
        msg.vtcm_bytes = options_.vtcm_bytes;
        msg.n_threads = options_.n_threads;
        msg.fault = options_.fault;
        msg.poll = options_.poll ? 1 : 0;
        for (size_t w = 0; w < 4; ++w) msg.cpus[w] = options_.cpus.words()[w];
        ControlMsg answer{};
        const int32_t status = call(msg, region_buf_->fd(), &answer);
        if (status != TSL_NPU_OK) {
            std::string why = tsl_npu_status_name(static_cast<uint32_t>(status));
            if (reaped_ && exit_status_ >= 0) why += " (" + exit_text(exit_status_) + ")";
            const std::string under = options_.kind == LinkKind::Hexagon ? "' under '" + options_.emulator + "' (TESSEL_NPU_QEMU)" : "'";
            throw Error(ErrorCode::Io, options_.name + ": the device process '" + options_.device_exe + under + " did not start: " + why);
        }
        hwinfo_ = answer.hwinfo;
    }

    LinkKind kind() const override { return options_.kind; }

    int32_t map(const ShmBuffer& buf, uint32_t flags) override {
        ControlMsg msg{};
        msg.op = static_cast<uint32_t>(ControlOp::Map);
        msg.host_fd = buf.fd();
        msg.flags = flags;
        msg.size = buf.size();
        ControlMsg answer{};
        return call(msg, buf.fd(), &answer);
    }

    int32_t unmap(const ShmBuffer& buf) override {
        ControlMsg msg{};
        msg.op = static_cast<uint32_t>(ControlOp::Unmap);
        msg.host_fd = buf.fd();
        ControlMsg answer{};
        return call(msg, -1, &answer);
    }

private:
    // One control round trip: the answer's status, or the dead status when the device does not
    // answer within the liveness rule or has gone.
    int32_t call(const ControlMsg& msg, int fd, ControlMsg* answer) {
        if (dead_ != TSL_NPU_OK) return dead_;
        if (!send_control(sock_, msg, fd)) {
            stop_stalled_device();
            return fail(TSL_NPU_ERR_DEVICE_LOST);
        }
        const int wait_ms = static_cast<int>((slice_us() + 999) / 1000);
        const int32_t status = watch([&] {
            pollfd p{sock_, POLLIN, 0};
            const int r = poll(&p, 1, wait_ms);
            if (r < 0 && errno == EINTR) return Attempt::NotYet;
            if (r <= 0) return r == 0 ? Attempt::NotYet : Attempt::Broken;
            int extra_fd = -1;
            const int got = recv_control(sock_, answer, &extra_fd);
            if (extra_fd >= 0) close(extra_fd);
            if (got != 1 || answer->op != msg.op) return Attempt::Broken;
            return Attempt::Ready;
        });
        return status == TSL_NPU_OK ? answer->status : status;
    }

    bool device_gone() override {
        if (reaped_) return true;
        int status = 0;
        const pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_ || (r < 0 && errno == ECHILD)) {
            reaped_ = true;
            exit_status_ = r == pid_ ? status : -1;
        }
        return reaped_;
    }

    void stop_stalled_device() override {
        if (reaped_) return;
        kill(pid_, SIGKILL);
        int status = 0;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        exit_status_ = status;
    }

    int sock_ = -1;
    pid_t pid_ = -1;
    bool reaped_ = false;
    int exit_status_ = -1;
};

}  // namespace

std::unique_ptr<Link> open_process_link(const LinkOptions& options) {
    if (options.kind == LinkKind::Hexagon && (options.emulator.empty() || access(options.emulator.c_str(), X_OK) != 0))
        throw Error(ErrorCode::Io, options.name + ": the Hexagon link needs QEMU (set TESSEL_NPU_QEMU): '" + options.emulator +
                                       "' is not an executable file");
    if (options.device_exe.empty() || access(options.device_exe.c_str(), X_OK) != 0) {
        std::string msg = options.name + ": out-of-process link needs the tessel executable (set TESSEL_NPU_DEVICE_EXE)";
        if (!options.device_exe.empty()) msg += ": '" + options.device_exe + "' is not an executable file";
        throw Error(ErrorCode::Io, msg);
    }
    auto link = std::make_unique<ProcessLink>(options);
    link->start();  // on a throw, the destructor stops and reaps the child
    return link;
}

std::unique_ptr<Link> open_link(const LinkOptions& options) {
    return options.kind == LinkKind::InProcess ? open_inproc_link(options) : open_process_link(options);
}

const char* link_kind_name(LinkKind kind) {
    switch (kind) {
    case LinkKind::InProcess: return "inproc";
    case LinkKind::Process: return "process";
    case LinkKind::Hexagon: return "hexagon";
    }
    return "?";
}

}  // namespace tessel::npu
