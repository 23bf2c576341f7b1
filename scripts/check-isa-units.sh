#!/usr/bin/env bash
# Checks that the CPU backend's translation units built for AVX-512 or AMX (src/cpu/**/*_avx512*.cpp,
# *_amx.cpp; cmake/TesselFlags.cmake gives them those flags) hold nothing a CPU without that ISA
# could run before a kernel's tier check: no function with external linkage, no weak (inline,
# template) function the linker could pick for other units, no static constructor. Their kernel
# tables are constinit data (kernel.hpp). A table-building function in the AMX unit once faulted
# at model load on an AVX2-only CPU.
#   usage: check-isa-units.sh BUILD_DIR   (a configured and built tree)
set -euo pipefail
build=${1:?usage: check-isa-units.sh BUILD_DIR}
objs=$(find "$build/src/CMakeFiles/tessel.dir/cpu" -name '*_avx512*.o' -o -name '*_amx.*o' | sort)
if [[ -z "$objs" ]]; then
  echo "check-isa-units: no AVX-512 / AMX objects under $build (not an x86 build?)" >&2
  exit 1
fi
bad=0
for o in $objs; do
  # T: external function, W/V: weak symbol (but DW.ref.*, exception-handling data), _GLOBAL__sub_I:
  # a static constructor
  found=$(nm -C "$o" | awk '($2 == "T" || $2 == "W" || $2 == "V" || /_GLOBAL__sub_I/) && !/DW\.ref\./' || true)
  if [[ -n "$found" ]]; then
    echo "check-isa-units: $o defines code other units may run:" >&2
    echo "$found" >&2
    bad=1
  fi
done
n=$(wc -w <<<"$objs")
if [[ $bad -ne 0 ]]; then exit 1; fi
echo "check-isa-units: $n AVX-512 / AMX objects define only their kernels (internal) and constinit tables"
