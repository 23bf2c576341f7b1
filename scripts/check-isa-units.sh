#!/usr/bin/env bash
# Checks that the CPU backend's translation units built for AVX-512 or AMX (src/cpu/**/*_avx512*.cpp,
# *_amx.cpp; cmake/TesselFlags.cmake gives them those flags) hold nothing a CPU without that ISA
# could run before a kernel's tier check: no function with external linkage, no static constructor,
# no weak object but constant type information, and no weak (inline, template) function the linker
# could pick for other units unless its code is baseline x86-64 (no VEX, EVEX or AMX instruction:
# e.g. std::array::operator[] that UBSan's checks kept out of line is harmless). Their kernel tables
# are constinit data (kernel.hpp). A table-building function in the AMX unit once faulted at model
# load on an AVX2-only CPU.
#   usage: check-isa-units.sh BUILD_DIR   (a configured and built tree)
set -euo pipefail
build=${1:?usage: check-isa-units.sh BUILD_DIR}
objs=$(find "$build/src/CMakeFiles/tessel_cpu.dir/cpu" -name '*_avx512*.o' -o -name '*_amx.*o' | sort)
if [[ -z "$objs" ]]; then
  echo "check-isa-units: no AVX-512 / AMX objects under $build (not an x86 build?)" >&2
  exit 1
fi
bad=0
for o in $objs; do
  # T: external function, V: weak object (typeinfo aside), _GLOBAL__sub_I: a static constructor
  # (DW.ref.*: exception-handling data)
  found=$(nm -C "$o" | awk '($2 == "T" || ($2 == "V" && !/ typeinfo /) || /_GLOBAL__sub_I/) && !/DW\.ref\./' || true)
  # W: weak functions whose code uses an ISA extension (VEX / EVEX / mask / AMX instructions)
  for sym in $(nm "$o" | awk '$2 == "W" {print $3}'); do
    if objdump -d --no-show-raw-insn --disassemble="$sym" "$o" |
        awk -F'\t' 'NF >= 2 {split($2, w, " "); m = w[1]} m ~ /^(v|k|tile|ldtilecfg|sttilecfg|tdp)/ || /\{evex\}/ {hit = 1} END {exit !hit}'; then
      found+="${found:+$'\n'}weak function $(c++filt "$sym") uses ISA extension instructions"
    fi
  done
  if [[ -n "$found" ]]; then
    echo "check-isa-units: $o defines code other units may run:" >&2
    echo "$found" >&2
    bad=1
  fi
done
n=$(wc -w <<<"$objs")
if [[ $bad -ne 0 ]]; then exit 1; fi
echo "check-isa-units: $n AVX-512 / AMX objects define only their kernels (internal), constinit tables and baseline weak code"
