#!/usr/bin/env bash
# The default model split across MPI ranks (docs/npu.md, "A model across MPI ranks"): `mpirun -np N
# tessel run --device npu` (each rank's NPU computes its part of every weight matmul's rows, the parts
# exchanged over TCP on loopback) prints the same greedy text as one process, for 2 and 3 ranks, and
# rank 0 alone reports on stderr, naming the split; a
# random seed, chat and serve are refused under it; ranks given other flags end the job (non-zero)
# within the NPU timeout + 5 s instead of hanging; and a rank killed in the middle of a long run makes
# mpirun exit non-zero within the NPU timeout + 5 s.
# Usage: run_split.sh TESSEL MPIRUN_AND_FLAGS...
set -u
tessel=$1; shift
mpirun=("$@")
prompt="The capital of France is"
args=(run --device npu -p "$prompt" -n 24 --temp 0)
fail() { echo "run_split: FAIL: $*"; exit 1; }

want=$("$tessel" "${args[@]}" 2>/dev/null) || fail "tessel run alone failed"
[[ -n $want ]] || fail "tessel run alone printed nothing"
for n in 2 3; do
  got=$(timeout 300 "${mpirun[@]}" -np "$n" "$tessel" "${args[@]}" 2>/tmp/run_split.$$.err) || { cat /tmp/run_split.$$.err; fail "mpirun -np $n exited $?"; }
  echo "-- $n ranks: $got"
  [[ $got == "$want" ]] || fail "$n ranks printed '$got', one process '$want'"
  # rank 0 alone reports, and says the run was split
  err=$(cat /tmp/run_split.$$.err)
  [[ $(grep -c '^tessel: loaded' <<<"$err") -eq 1 ]] || fail "$n ranks: not one load report: $err"
  [[ $err == *"split by rows across $n MPI ranks"* ]] || fail "$n ranks: no word of the split: $err"
done
echo "-- one process: $want"

# What cannot split: refused on every rank with a flag error (exit 2), before any model is loaded.
out=$(timeout 120 "${mpirun[@]}" -np 2 "$tessel" run --device npu -p "$prompt" -n 4 --temp 0.8 2>&1)
[[ $? -ne 0 && $out == *"give --seed N"* ]] || fail "a random seed under mpirun was not refused: $out"
out=$(echo hi | timeout 120 "${mpirun[@]}" -np 2 "$tessel" chat --device npu -n 4 2>&1)
[[ $? -ne 0 && $out == *"its input reaches rank 0 only"* ]] || fail "chat under mpirun was not refused: $out"
# Ranks given other lengths: the one left waiting ends the job after TESSEL_NPU_TIMEOUT_MS (2 s here).
start=$(date +%s)
out=$(TESSEL_NPU_TIMEOUT_MS=2000 timeout 120 "${mpirun[@]}" -x TESSEL_NPU_TIMEOUT_MS -np 1 "$tessel" "${args[@]}" : \
      -np 1 "$tessel" run --device npu -p "$prompt" -n 4 --temp 0 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "-- ranks given -n 24 and -n 4: exit $rc after ${elapsed} s"
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "ranks with other -n: exit $rc"
(( elapsed <= 7 )) || fail "ranks with other -n took ${elapsed} s, more than the 2 s timeout + 5"
[[ $out == *"not every rank took part within TESSEL_NPU_TIMEOUT_MS=2000"* ]] || fail "no timeout message: $out"

# A killed rank: rank 1 of a long run, once it has started generating.
"${mpirun[@]}" -np 2 "$tessel" run --device npu -p "$prompt" -n 4000 --temp 0 --ignore-eos >/dev/null 2>/tmp/run_split.$$.err &
job=$!
victim=""
for _ in $(seq 300); do
  for p in $(pgrep -f "tessel run --device npu"); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; fi
  done
  [[ -n $victim ]] && break
  sleep 0.1
done
[[ -n $victim ]] || { kill $job; fail "rank 1 never started"; }
sleep 2
kill -9 "$victim"
start=$(date +%s)
wait $job
rc=$?
elapsed=$(( $(date +%s) - start ))
rm -f /tmp/run_split.$$.err
echo "-- killed rank 1: mpirun exit $rc after ${elapsed} s"
[[ $rc -ne 0 ]] || fail "mpirun exited 0 although rank 1 was killed"
(( elapsed <= 15 )) || fail "mpirun took ${elapsed} s after the kill, more than 15"
echo "run_split: ok"
