#!/usr/bin/env bash
# tessel and llama.cpp when a core is shared (issue 32): t/s of the default model's Q4_0 variant on
# the CPU (llama.cpp -t 1, 2; tessel -t 1, 2, 4) and of the default model on tessel's virtual NPU
# (TESSEL_NPU_THREADS=1, 2), quiet and with CPU 1 busy, interleaved; a markdown table of the medians
# and of the ratios the issue's bars name. bench/README.md describes it.
#
#   bench/shared_cores.sh [--tessel PATH] [--before PATH] [--rounds N] [-p N] [-n N] [--quick] [--out FILE]
#
#   --tessel PATH  tessel binary (default: build/bin/tessel)
#   --before PATH  a tessel binary from before a change: its -t 1, -t 2 and NPU columns are added
#   --rounds N     interleaved rounds, the median is reported (default 3)
#   -p N, -n N     prompt tokens of the pp test, generated tokens of the tg test (default 512, 128)
#   --quick        -p 64 -n 16 --rounds 1: a check that it runs (options after it override it)
#   --out FILE     default: bench/results/shared-cores-YYYY-MM-DD.md
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command="bench/shared_cores.sh${*:+ $*}"
tessel=$repo/build/bin/tessel before= rounds=3 p=512 n=128 out=$repo/bench/results/shared-cores-$(date -u +%F).md
while (($#)); do
    case $1 in
        --tessel) tessel=${2:?--tessel needs a path}; shift 2 ;;
        --before) before=${2:?--before needs a path}; shift 2 ;;
        --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
        -p) p=${2:?-p needs a count}; shift 2 ;;
        -n) n=${2:?-n needs a count}; shift 2 ;;
        --quick) p=64 n=16 rounds=1; shift ;;
        --out) out=${2:?--out needs a file}; shift 2 ;;
        -h | --help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "shared_cores: unknown option '$1' (--help)" >&2; exit 2 ;;
    esac
done
for v in "$rounds" "$p" "$n"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "shared_cores: --rounds, -p and -n take a count >= 1, not '$v'" >&2; exit 2; }
done
[[ -x $tessel ]] || { echo "shared_cores: $tessel is not an executable (ninja -C build tessel_cli, or --tessel)" >&2; exit 2; }
[[ -z $before || -x $before ]] || { echo "shared_cores: --before $before is not an executable" >&2; exit 2; }
taskset -c 1 true 2>/dev/null || { echo "shared_cores: cannot run on CPU 1 (needs 2 CPUs in the affinity mask)" >&2; exit 2; }

# The tools and models: llama-bench as bench/compare.py finds it, the Q4_0 variant where compare.py caches it.
bin_dir=$(bash "$repo/scripts/peer/build-llama.sh")
llama_bench=$bin_dir/llama-bench
model=$(bash "$repo/scripts/default-model.sh" "$tessel")
q4_0=$(dirname "$(dirname "$model")")/bench/SmolLM2-135M-Instruct.Q4_0.gguf
if [[ ! -f $q4_0 ]]; then
    mkdir -p "$(dirname "$q4_0")"
    echo "shared_cores: tessel quantize Q4_0 -> $q4_0" >&2
    "$tessel" quantize --allow-requantize "$model" "$q4_0" Q4_0 >&2
fi

tmp=$(mktemp -d) spinner=
stop_spinner() {
    [[ -z $spinner ]] && return
    kill "$spinner" 2>/dev/null || true
    wait "$spinner" 2>/dev/null || true
    spinner=
}
trap 'stop_spinner; rm -rf "$tmp"' EXIT  # also after an error, Ctrl-C or kill (the traps below exit)
trap 'exit 130' INT
trap 'exit 143' TERM

# measure STATE LABEL ROUND COMMAND...: the command's JSON records into $tmp/STATE_LABEL_ROUND.json
measure() {
    local f=$tmp/$1_$2_$3.json
    shift 3
    "$@" >"$f" 2>"$tmp/stderr" || { cat "$tmp/stderr" >&2; echo "shared_cores: failed: $*" >&2; exit 1; }
}

common=(-p "$p" -n "$n" -r 1 -o json)
load=$(cut -d' ' -f1-3 /proc/loadavg)  # other users of the machine show here
for ((r = 1; r <= rounds; r++)); do
    for state in quiet busy; do
        echo "shared_cores: round $r/$rounds, $state" >&2
        if [[ $state == busy ]]; then
            taskset -c 1 sh -c 'while :; do :; done' &
            spinner=$!
        fi
        for t in 1 2; do measure $state llama-t$t $r "$llama_bench" -m "$q4_0" --repack 1 -t $t "${common[@]}"; done
        for t in 1 2 4; do measure $state tessel-t$t $r "$tessel" bench -m "$q4_0" -t $t "${common[@]}"; done
        for t in 1 2; do measure $state npu-$t $r env TESSEL_NPU_THREADS=$t "$tessel" bench -m "$model" --device npu "${common[@]}"; done
        if [[ -n $before ]]; then
            for t in 1 2; do measure $state before-t$t $r "$before" bench -m "$q4_0" -t $t "${common[@]}"; done
            for t in 1 2; do measure $state beforenpu-$t $r env TESSEL_NPU_THREADS=$t "$before" bench -m "$model" --device npu "${common[@]}"; done
        fi
        stop_spinner
    done
done

mkdir -p "$(dirname "$out")"
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
cat >"$out" <<EOF
# Shared cores: tessel and llama.cpp, quiet and with CPU 1 busy

Command: \`$command\`, $(date -u '+%F %H:%M UTC').
Host: ${cpu:-unknown CPU}, $(nproc) CPUs usable; kernel $(uname -sr); load average before the run: $load.
tessel: \`$tessel\` ($(git -C "$(dirname "$tessel")" describe --always --dirty 2>/dev/null || echo "not in a git tree"))${before:+; before: \`$before\`}; llama.cpp: \`$llama_bench\`, \`--repack 1\`.
CPU columns: $(basename "$q4_0"); NPU columns: \`--device npu\` on $(basename "$model"), the CPU backend at tessel's default threads.
Busy: \`taskset -c 1 sh -c 'while :; do :; done'\` running. t/s: median over rounds ($rounds); each round runs every
configuration once (one repetition, after the tool's warm-up), in the columns' order, quiet then busy.

EOF
python3 - "$tmp" "$p" "$n" >>"$out" <<'EOF'
import json, statistics, sys
from pathlib import Path

tmp, p, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
got = {}  # (state, label, test) -> t/s of every round
for f in tmp.glob("*.json"):
    state, label, _ = f.stem.split("_")
    for rec in json.loads(f.read_text()):
        test = f"pp{rec['n_prompt']}" if int(rec["n_gen"]) == 0 else f"tg{rec['n_gen']}"
        got.setdefault((state, label, test), []).append(float(rec["avg_ts"]))
ts = {k: statistics.median(v) for k, v in got.items()}
tests = [f"pp{p}", f"tg{n}"]
columns = {"llama-t1": "llama.cpp -t 1", "llama-t2": "llama.cpp -t 2", "tessel-t1": "tessel -t 1",
           "tessel-t2": "tessel -t 2", "tessel-t4": "tessel -t 4", "npu-1": "NPU, 1 thread", "npu-2": "NPU, 2 threads",
           "before-t1": "before -t 1", "before-t2": "before -t 2", "beforenpu-1": "before NPU, 1", "beforenpu-2": "before NPU, 2"}
columns = {k: v for k, v in columns.items() if ("quiet", k, tests[0]) in ts}
print("| t/s | " + " | ".join(columns.values()) + " |")
print("| --- |" + " ---: |" * len(columns))
for state, name in (("quiet", "quiet"), ("busy", "CPU 1 busy")):
    for test in tests:
        print(f"| {name}, {test} | " + " | ".join(f"{ts[state, c, test]:.1f}" for c in columns) + " |")

ratios = [  # (what, state, numerator, denominator, the issue's bar or None)
    ("tessel, CPU 1 busy: -t 2 / -t 1", "busy", "tessel-t2", "tessel-t1", 0.9),
    ("llama.cpp, CPU 1 busy: -t 2 / -t 1", "busy", "llama-t2", "llama-t1", None),
    ("tessel NPU, CPU 1 busy: 2 / 1 device threads", "busy", "npu-2", "npu-1", 0.9),
    ("tessel, quiet: -t 4 / -t 2", "quiet", "tessel-t4", "tessel-t2", 0.8),
    ("tessel, CPU 1 busy: -t 4 / -t 2", "busy", "tessel-t4", "tessel-t2", 0.8),
    ("tessel, quiet: -t 2 / before -t 2", "quiet", "tessel-t2", "before-t2", 0.97),
    ("before, CPU 1 busy: -t 2 / -t 1", "busy", "before-t2", "before-t1", None),
    ("before NPU, CPU 1 busy: 2 / 1 device threads", "busy", "beforenpu-2", "beforenpu-1", None),
]
ratios = [r for r in ratios if r[2] in columns and r[3] in columns]
print("\n| ratio of medians | " + " | ".join(tests) + " | bar |")
print("| --- |" + " ---: |" * len(tests) + " --- |")
for what, state, num, den, bar in ratios:
    vals = [ts[state, num, t] / ts[state, den, t] for t in tests]
    verdict = "(reference)" if bar is None else f">= {bar}: " + ("met" if min(vals) >= bar else "NOT met")
    print(f"| {what} | " + " | ".join(f"{v:.2f}" for v in vals) + f" | {verdict} |")
EOF
cat "$out"
echo "shared_cores: wrote $out" >&2
