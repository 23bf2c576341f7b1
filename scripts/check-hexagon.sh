#!/usr/bin/env bash
# Compile check of the NPU device runtime for Hexagon (32-bit DSP, HVX v67, 128-byte vectors): the
# CMake target tessel_npu_device itself, configured with cmake/toolchains/hexagon.cmake in a
# device-only tree (build-hexagon/). On a non-x86, freestanding target the target's source list
# leaves out the host-ISA kernels (*_f16c.c, *_avx2.c, *_avx512*.c, *_amx.c) and the host-only
# platform_posix.c. -nostdlibinc leaves only the compiler's own headers (stdint.h, stddef.h): an
# include of a libc or OS header fails here. Compiles only; nothing is linked or run.
# CLANG=... picks another clang.
set -euo pipefail
cd "$(dirname "$0")/.."
clang=${CLANG:-clang}
cmake -S . -B build-hexagon -G Ninja -DTESSEL_NPU_DEVICE_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/hexagon.cmake -DCMAKE_C_COMPILER="$clang" >/dev/null
cmake --build build-hexagon
n=$(find build-hexagon -name '*.c.obj' | wc -l)
echo "check-hexagon: $n translation units of tessel_npu_device compile for hexagon (v67, HVX 128 B)"
