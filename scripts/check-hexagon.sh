#!/usr/bin/env bash
# Compile check of the NPU device runtime for Hexagon (32-bit DSP, HVX v67, 128-byte vectors):
# every src/npu/device/*.c except the host-only platform_posix.c and the host-ISA kernels (named
# by the ISA suffix src/CMakeLists.txt uses: *_f16c.c, *_avx2.c, *_avx512*.c, *_amx.c), plus a translation unit that
# includes the wire protocol header, compiled freestanding with clang 14. -nostdlibinc leaves only
# the compiler's own headers (stdint.h, stddef.h): an include of a libc or OS header fails here.
# Compiles only; nothing is linked or run. CLANG=... picks another clang.
set -euo pipefail
cd "$(dirname "$0")/.."
clang=${CLANG:-clang}
flags=(--target=hexagon -mv67 -mhvx -mhvx-length=128b -ffreestanding -nostdlibinc -std=c11 -ffp-contract=off
       -Wall -Wextra -Werror -I src)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include "npu/proto/proto.h"\n' >"$work/proto_only.c"
n=0
for src in src/npu/device/*.c "$work/proto_only.c"; do
  [[ $(basename "$src") == platform_posix.c ]] && continue
  [[ $(basename "$src") =~ _(f16c|avx2|avx512[a-z0-9]*|amx)\.c$ ]] && continue
  "$clang" "${flags[@]}" -c "$src" -o "$work/out.o"
  n=$((n + 1))
done
echo "check-hexagon: $n translation units compile for hexagon (v67, HVX 128 B)"
