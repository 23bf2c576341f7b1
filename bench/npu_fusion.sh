#!/usr/bin/env bash
# The NPU with every enqueue-time fusion, with none, and the packed CPU path of the same binary: pp and tg
# tokens/s of `tessel bench` (one repetition per call), the three configurations alternating for --rounds
# rounds so that drift of the machine's speed hits all three; medians printed as a markdown table with the
# ratios fusion on / off and NPU / CPU (issue 25's bars: >= 1.05 and >= 1.0).
#
#   bash bench/npu_fusion.sh [--tessel build/bin/tessel] [-m FILE] [-p 512] [-n 128] [-t 2] [--rounds 5] [--busy]
#
# --busy keeps one core busy with a spinning shell loop while it measures (a shared machine).
set -euo pipefail
tessel=build/bin/tessel model="" p=512 n=128 threads=2 rounds=5 busy=0
while (($#)); do
  case "$1" in
    --tessel) tessel=$2; shift 2 ;;
    -m) model=$2; shift 2 ;;
    -p) p=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --busy) busy=1; shift ;;
    *) echo "npu_fusion.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
common=(bench -p "$p" -n "$n" -t "$threads" -r 1 -o csv)
[[ -n $model ]] && common+=(-m "$model")

spinner=""
if ((busy)); then
  sh -c 'while :; do :; done' & spinner=$!
  trap 'kill $spinner 2>/dev/null' EXIT
fi

# "pp tg" tokens/s of one `tessel bench` call on device $2 with TESSEL_NPU_OPFUSION=$1 (csv: avg_ts of each test row)
run() {
  local out
  out=$(TESSEL_NPU_OPFUSION=$1 "$tessel" "${common[@]}" --device "$2" 2>/dev/null) ||
    { echo "npu_fusion.sh: TESSEL_NPU_OPFUSION=$1 $tessel ${common[*]} --device $2 failed" >&2; exit 1; }
  python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
ts = {("pp" if int(r["n_prompt"]) else "tg"): float(r["avg_ts"]) for r in rows}
print(ts["pp"], ts["tg"])' <<<"$out"
}
declare -a on_pp on_tg off_pp off_tg cpu_pp cpu_tg
for ((r = 0; r < rounds; r++)); do
  read -r a b < <(run 1 npu); on_pp+=("$a"); on_tg+=("$b")
  read -r a b < <(run 0 npu); off_pp+=("$a"); off_tg+=("$b")
  read -r a b < <(run 1 cpu); cpu_pp+=("$a"); cpu_tg+=("$b")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
load=$( ((busy)) && echo "one core busy" || echo quiet)
echo "| load | test | NPU fusion on t/s | NPU fusion off t/s | CPU t/s | on / off | NPU (on) / CPU |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for t in pp tg; do
  declare -n xs_on=on_$t xs_off=off_$t xs_cpu=cpu_$t
  mon=$(median "${xs_on[@]}") moff=$(median "${xs_off[@]}") mcpu=$(median "${xs_cpu[@]}")
  size=$([[ $t == pp ]] && echo "$p" || echo "$n")
  echo "| $load | $t$size | $mon | $moff | $mcpu | $(ratio "$mon" "$moff") | $(ratio "$mon" "$mcpu") |"
done
