# Cross-compile tessel for 64-bit Arm Linux with Debian 12's cross toolchain, and run its tests
# under QEMU user-mode emulation (packages g++-aarch64-linux-gnu and qemu-user-static).
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#   cmake --build build-arm64 && (cd build-arm64 && ctest -L 'unit|gguf|ops')
#
# The target's libraries and headers live in /usr/aarch64-linux-gnu. That directory is the find
# root, not a --sysroot: Debian's cross toolchain is not laid out as a sysroot (its libc.so
# linker script names /usr/aarch64-linux-gnu/lib/... absolutely, which a --sysroot would prefix
# a second time), and the compiler already searches it by default.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Target libraries installed through Debian multiarch (libssl-dev:arm64, libpcre2-dev:arm64; see
# scripts/install-deps.sh) live in /usr/lib/aarch64-linux-gnu with headers in /usr/include: the
# second root "/" finds them. find_library searches the lib/aarch64-linux-gnu folders there
# (CMAKE_LIBRARY_ARCHITECTURE, and the path below), never the host's lib/x86_64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
list(APPEND CMAKE_LIBRARY_PATH /usr/lib/aarch64-linux-gnu)
# pkg-config (used by find modules such as FindOpenSSL) must describe the target's libraries too.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # build tools run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)    # never link a host (x86) library
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# CMake package configs: the target's first, then the host's. tessel's only config packages
# (CLI11, nlohmann_json in /usr/share/cmake) are header-only and architecture-independent;
# GoogleTest is built from source for the target (tests/CMakeLists.txt), never found here.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# Run target executables (gtest_discover_tests' listing, add_test, try_run) under QEMU.
# -cpu max enables every extension QEMU emulates (SVE, SVE2, i8mm, bf16, SME, ...), so run-time
# ISA dispatch takes its most capable path.
# The C library at run time is the multiarch one (libc6:arm64, pulled in by the arm64 -dev
# packages), loader included: "-L /" maps the binary's /lib/ld-linux-aarch64.so.1 to it. Loading
# it together with the cross toolchain's own libc (a different build of glibc) hangs threads, so
# the search path puts the multiarch folders first and the cross folder (for libstdc++) last.
set(CMAKE_CROSSCOMPILING_EMULATOR
    "qemu-aarch64-static;-cpu;max;-L;/;-E;LD_LIBRARY_PATH=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/usr/aarch64-linux-gnu/lib")
