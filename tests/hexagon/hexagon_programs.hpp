// Running the Hexagon programs of the `hexagon` tests (built by the Hexagon tree, -DTESSEL_HEXAGON=ON)
// under qemu-hexagon: TESSEL_HEXAGON_BIN names their folder (CTest sets it), TESSEL_QEMU_HEXAGON the
// emulator (default: qemu-hexagon-static on PATH).
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace tessel::test {

/// The path of Hexagon program `name`, or "" (with a test failure) when the folder is not set.
inline std::string hexagon_program(const std::string& name) {
    const char* dir = std::getenv("TESSEL_HEXAGON_BIN");
    if (!dir || !*dir) {
        ADD_FAILURE() << "TESSEL_HEXAGON_BIN is not set (configure with -DTESSEL_HEXAGON=ON and run through ctest)";
        return "";
    }
    return std::string(dir) + "/" + name;
}

/// The emulator's path: TESSEL_QEMU_HEXAGON, else qemu-hexagon-static on PATH ("" with a test
/// failure when there is none).
inline std::string hexagon_qemu() {
    const char* q = std::getenv("TESSEL_QEMU_HEXAGON");
    if (q && *q) return q;
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin";
    for (size_t from = 0; from <= dirs.size();) {
        const size_t colon = std::min(dirs.find(':', from), dirs.size());
        const std::string candidate = dirs.substr(from, colon - from) + "/qemu-hexagon-static";
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        from = colon + 1;
    }
    ADD_FAILURE() << "qemu-hexagon-static not on PATH (Debian's qemu-user-static) and TESSEL_QEMU_HEXAGON not set";
    return "";
}

/// Points this process's NPU devices at the Hexagon device program under the emulator
/// (TESSEL_NPU_LINK=hexagon, TESSEL_NPU_DEVICE_EXE, TESSEL_NPU_QEMU), as a user would.
inline void use_hexagon_link() {
    setenv("TESSEL_NPU_LINK", "hexagon", 1);
    setenv("TESSEL_NPU_DEVICE_EXE", hexagon_program("tessel-npu-hexagon").c_str(), 1);
    setenv("TESSEL_NPU_QEMU", hexagon_qemu().c_str(), 1);
}

/// Runs `program args` under the emulator; returns its stdout and sets *status to its exit status
/// (-1 when it did not exit normally).
inline std::string run_hexagon(const std::string& program, const std::string& args, int* status) {
    const std::string cmd = hexagon_qemu() + " " + program + " " + args;
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
        *status = -1;
        return out;
    }
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

}  // namespace tessel::test
