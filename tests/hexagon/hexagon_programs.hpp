// Running the Hexagon programs of the `hexagon` tests (built by the Hexagon tree, -DTESSEL_HEXAGON=ON)
// under qemu-hexagon: TESSEL_HEXAGON_BIN names their folder, TESSEL_QEMU_HEXAGON the emulator
// (both set by CMake for ctest).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

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

/// The emulator: TESSEL_QEMU_HEXAGON, else qemu-hexagon-static on PATH.
inline std::string hexagon_qemu() {
    const char* q = std::getenv("TESSEL_QEMU_HEXAGON");
    return q && *q ? q : "qemu-hexagon-static";
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
