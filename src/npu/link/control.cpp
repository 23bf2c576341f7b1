#include "npu/link/control.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tessel::npu {

bool send_control(int sock, const ControlMsg& msg, int fd) {
    iovec iov{const_cast<ControlMsg*>(&msg), sizeof(msg)};
    msghdr hdr{};
    hdr.msg_iov = &iov;
    hdr.msg_iovlen = 1;
    alignas(cmsghdr) char space[CMSG_SPACE(sizeof(int))] = {};
    if (fd >= 0) {
        hdr.msg_control = space;
        hdr.msg_controllen = sizeof(space);
        cmsghdr* c = CMSG_FIRSTHDR(&hdr);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    for (;;) {
        const ssize_t n = sendmsg(sock, &hdr, MSG_NOSIGNAL);
        if (n == static_cast<ssize_t>(sizeof(msg))) return true;
        if (n < 0 && errno == EINTR) continue;
        if (n >= 0) errno = EMSGSIZE;
        return false;
    }
}

int recv_control(int sock, ControlMsg* msg, int* fd) {
    *fd = -1;
    iovec iov{msg, sizeof(*msg)};
    msghdr hdr{};
    hdr.msg_iov = &iov;
    hdr.msg_iovlen = 1;
    alignas(cmsghdr) char space[CMSG_SPACE(sizeof(int))] = {};
    hdr.msg_control = space;
    hdr.msg_controllen = sizeof(space);
    ssize_t n;
    do {
        n = recvmsg(sock, &hdr, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n == 0) return 0;
    if (n < 0) return -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr; c = CMSG_NXTHDR(&hdr, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            std::memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
    if (n != static_cast<ssize_t>(sizeof(*msg)) || (hdr.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
        return -1;
    }
    return 1;
}

}  // namespace tessel::npu
