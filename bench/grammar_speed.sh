#!/usr/bin/env bash
# Constrained generation against unconstrained on the same model, threads and prompt: tokens/s of
# `tessel run` (its stderr report) with a JSON schema and without, alternating for --rounds rounds,
# medians printed as a markdown table with the ratio of times (constrained / unconstrained; issue 33's
# bar is <= 1.3). Both runs generate exactly -n tokens: the unconstrained one with --ignore-eos, the
# constrained one under a schema (an array of at least 40 objects) that cannot end sooner.
#
#   bash bench/grammar_speed.sh [--tessel build/bin/tessel] [-m FILE] [-n 128] [-t 2] [--rounds 10] [--busy]
#
# --busy keeps one core busy with a spinning shell loop while it measures (a shared machine).
set -euo pipefail
tessel=build/bin/tessel model="" n=128 threads=2 rounds=10 busy=0
while (($#)); do
  case "$1" in
    --tessel) tessel=$2; shift 2 ;;
    -m) model=$2; shift 2 ;;
    -n) n=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --busy) busy=1; shift ;;
    *) echo "grammar_speed.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
schema='{"type":"array","minItems":40,"items":{"type":"object","properties":{"name":{"type":"string"},"job":{"type":"string"}},"required":["name","job"]}}'
prompt="List the people in a small town with their jobs as JSON."
common=(run -p "$prompt" -n "$n" -t "$threads" --temp 0)
[[ -n $model ]] && common+=(-m "$model")

spinner=""
if ((busy)); then
  sh -c 'while :; do :; done' & spinner=$!
  trap 'kill $spinner 2>/dev/null' EXIT
fi

# tokens/s of one run's "generated N tokens, X tokens/s", checking that N is the requested count
tg() {
  local err
  err=$("$tessel" "${common[@]}" "$@" 2>&1 >/dev/null)
  local line
  line=$(grep -o "generated [0-9]* tokens, [0-9.]* tokens/s" <<<"$err") || { echo "grammar_speed.sh: no report: $err" >&2; exit 1; }
  [[ $line == "generated $n tokens,"* ]] || { echo "grammar_speed.sh: expected $n tokens: $line" >&2; exit 1; }
  awk '{print $4}' <<<"$line"
}
plain=() constrained=()
for ((r = 0; r < rounds; r++)); do
  plain+=("$(tg --ignore-eos)")
  constrained+=("$(tg -j "$schema")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mp=$(median "${plain[@]}") mc=$(median "${constrained[@]}")
echo "| load | tg$n unconstrained t/s | tg$n with --json-schema t/s | time constrained / unconstrained |"
echo "| --- | --- | --- | --- |"
printf '| %s | %s | %s | %.2f |\n' "$( ((busy)) && echo "one core busy" || echo quiet)" "$mp" "$mc" "$(awk -v p="$mp" -v c="$mc" 'BEGIN {print p / c}')"
