# Compile tessel's NPU device runtime for Hexagon (32-bit DSP, v67, HVX with 128-byte vectors) with
# Debian's clang, freestanding: -nostdlibinc leaves only the compiler's own headers (stdint.h,
# stddef.h), so an include of a libc or OS header fails. Compile only: nothing is linked or run
# here (qemu-hexagon runs code built by a later step).
#
#   cmake -S . -B build-hexagon -G Ninja -DTESSEL_NPU_DEVICE_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/hexagon.cmake
#   cmake --build build-hexagon        (scripts/check-hexagon.sh)

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR hexagon)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET hexagon)
set(CMAKE_C_FLAGS_INIT "-mv67 -mhvx -mhvx-length=128b -ffreestanding -nostdlibinc")
# Compiler checks build a static library: there is no Hexagon C library or linker setup here.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
