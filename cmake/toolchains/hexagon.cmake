# Build tessel's NPU device runtime and its Hexagon programs (the device program, the runtime's
# checks) for Hexagon (32-bit DSP, v67; HVX with 128-byte vectors in the _hvx files only, as
# cmake/TesselFlags.cmake gives ISA flags by suffix) with Debian's clang and ld.lld
# (package lld), freestanding: -nostdlibinc leaves only the compiler's own headers (stdint.h,
# stddef.h), so an include of a libc or OS header fails; programs link against nothing but
# src/npu/hexagon's runtime (-nostdlib) and run under qemu-hexagon (qemu-user-static). -G0: no
# small-data section, so no global pointer to set up at start.
#
#   cmake -S . -B build-hexagon -G Ninja -DTESSEL_NPU_DEVICE_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/hexagon.cmake
#   cmake --build build-hexagon        (the host tree does this with -DTESSEL_HEXAGON=ON)

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR hexagon)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET hexagon)
set(CMAKE_C_FLAGS_INIT "-mv67 -G0 -ffreestanding -nostdlibinc")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostdlib -static -fuse-ld=lld -Wno-unused-command-line-argument")
# Compiler checks build a static library: the runtime a program links is built here, later.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
