#!/usr/bin/env bash
# The aarch64 counterpart of check-isa-units.sh, for the CPU backend's SVE and SME translation units
# (src/cpu/**/*_sve.cpp, *_sve.S, *_sme.cpp, *_sme.S; cmake/TesselFlags.cmake gives them those flags).
# It proves from the disassembly that each holds the code its name promises:
#   *_sve  SVE instructions (z or p registers: sdot, fmla on z, ptrue, whilelt, ...; rdvl, cnt[bhwd])
#   *_sme  a streaming-mode switch (smstart / smstop) and an instruction on ZA (fmopa, smopa,
#          zero {za}, ...)
# and that a CPU without that ISA can reach none of it before a kernel's tier check: no function
# with external linkage, no static constructor, no weak object but constant type information, and
# no weak (inline, template) function whose code uses SVE or SME instructions.
#   usage: check-arm-isa-units.sh BUILD_DIR   (a configured and built aarch64 tree)
# Tools: OBJDUMP / NM, else aarch64-linux-gnu-objdump / -nm, else objdump / nm on an aarch64 host.
set -euo pipefail
build=${1:?usage: check-arm-isa-units.sh BUILD_DIR}
pick() {  # pick VAR_VALUE TOOL: the cross tool, or the native one on aarch64
  if [[ -n "$1" ]]; then echo "$1"
  elif command -v "aarch64-linux-gnu-$2" >/dev/null; then echo "aarch64-linux-gnu-$2"
  elif [[ $(uname -m) == aarch64 ]]; then echo "$2"
  else echo "check-arm-isa-units: no aarch64 $2 (install binutils-aarch64-linux-gnu or set ${2^^})" >&2; exit 1
  fi
}
objdump=$(pick "${OBJDUMP:-}" objdump)
nm=$(pick "${NM:-}" nm)
objs=$(find "$build/src/CMakeFiles/tessel_cpu.dir/cpu" \
  \( -name '*_sve.cpp.o' -o -name '*_sve.S.o' -o -name '*_sme.cpp.o' -o -name '*_sme.S.o' \) 2>/dev/null | sort)
if [[ -z "$objs" ]]; then
  echo "check-arm-isa-units: no SVE / SME objects under $build (not an aarch64 build?)" >&2
  exit 1
fi

# "mnemonic<TAB>operands" of each instruction (comments and <symbol> references dropped), then
# which kind it is: "sve" (z or p registers, vector-length instructions), "sme" (streaming-mode
# switch or ZA / ZT0 operand), else "base".
insns() {
  "$objdump" -d --no-show-raw-insn "$@" | awk -F'\t' '
    NF >= 2 && $1 ~ /^ *[0-9a-f]+:$/ {
      m = $2; ops = $3; sub(/ *\/\/.*/, "", ops); gsub(/<[^>]*>/, "", ops)
      kind = "base"
      if (m ~ /^(smstart|smstop|rdsvl|addsvl|addspl)$/ || ops ~ /(^|[^[:alnum:]_])(za|zt0)([0-9]|[^[:alnum:]_]|$)/) kind = "sme"
      else if (m ~ /^(rdvl|addvl|addpl|cnt[bhwd]|inc[bhwd]|dec[bhwd])$/ || ops ~ /(^|[^[:alnum:]_])[zp][0-9]+([^[:alnum:]_]|$)/) kind = "sve"
      print kind "\t" m "\t" ops
    }'
}

bad=0
summary=""
for o in $objs; do
  name=${o##*/}
  problems=""
  listing=$(insns "$o")
  # the ISA the name promises
  if [[ $name == *_sme.cpp.o ]]; then
    :  # the C++ around the SME cores: GCC 12 has no SME intrinsics, the instructions are the .S cores'
  elif [[ $name == *_sme.* ]]; then
    switches=$(awk -F'\t' '$2 ~ /^(smstart|smstop)$/' <<<"$listing" | wc -l)
    za=$(awk -F'\t' '$1 == "sme" && $2 !~ /^(smstart|smstop|rdsvl|addsvl|addspl)$/' <<<"$listing" | wc -l)
    if [[ $switches -eq 0 || $za -eq 0 ]]; then
      problems+="${problems:+$'\n'}no SME instructions found ($switches smstart/smstop, $za on ZA): an SME unit without its kernels"
    else
      used=$(awk -F'\t' '$1 == "sme" {print $2}' <<<"$listing" | sort -u | awk "NR <= 8" | paste -sd, -)
      summary+="${summary:+$'\n'}  $name: SME, $switches smstart/smstop, $za on ZA ($used)"
    fi
  else
    sve=$(awk -F'\t' '$1 == "sve"' <<<"$listing" | wc -l)
    if [[ $sve -eq 0 ]]; then
      problems+="${problems:+$'\n'}no SVE instructions found (none on z / p registers): an SVE unit without its kernels"
    else
      used=$(awk -F'\t' '$1 == "sve" {print $2}' <<<"$listing" | sort -u | awk "NR <= 8" | paste -sd, -)
      summary+="${summary:+$'\n'}  $name: SVE, $sve instructions ($used)"
    fi
  fi
  # T: external function, V: weak object (typeinfo aside), _GLOBAL__sub_I: a static constructor
  # (DW.ref.*: exception-handling data)
  # (an assembly core's entry points, tsl_<isa>_*, are global but hidden: its C++ unit calls them)
  found=$("$nm" -C "$o" | awk '($2 == "T" || ($2 == "V" && !/ typeinfo /) || /_GLOBAL__sub_I/) && !/DW\.ref\./' || true)
  [[ $name == *.S.o ]] && found=$(grep -v ' T tsl_sme_' <<<"$found" || true)
  [[ -n "$found" ]] && problems+="${problems:+$'\n'}defines code other units may run:"$'\n'"$found"
  # W: weak functions whose code uses SVE or SME
  for sym in $("$nm" "$o" | awk '$2 == "W" {print $3}'); do
    if insns --disassemble="$sym" "$o" | awk -F'\t' '$1 != "base" {hit = 1} END {exit !hit}'; then
      problems+="${problems:+$'\n'}weak function $(c++filt "$sym") uses SVE / SME instructions"
    fi
  done
  if [[ -n "$problems" ]]; then
    echo "check-arm-isa-units: $o:" >&2
    sed 's/^/  /' <<<"$problems" >&2
    bad=1
  fi
done
if [[ $bad -ne 0 ]]; then exit 1; fi
n=$(wc -w <<<"$objs")
echo "check-arm-isa-units: $n SVE / SME objects hold their ISA's code and define only internal kernels, constinit tables and baseline weak code"
echo "$summary"
