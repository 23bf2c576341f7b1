#!/usr/bin/env bash
# A rank that dies (SIGKILL) before an all-reduce: mpirun must end the job and exit non-zero
# within the NPU timeout (TESSEL_NPU_TIMEOUT_MS, default 10 s) + 5 s, and say which rank died.
# Usage: killed_rank.sh MPIRUN_AND_FLAGS... -- TEST_BINARY
set -u
cmd=()
while [[ $1 != -- ]]; do cmd+=("$1"); shift; done
shift
binary=$1
limit=15
start=$(date +%s)
out=$(TESSEL_TEST_MPI_KILL_RANK=1 timeout 60 "${cmd[@]}" -np 2 -x TESSEL_TEST_MPI_KILL_RANK "$binary" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
echo "$out" | tail -20
echo "killed_rank: mpirun exit $rc after ${elapsed} s"
if [[ $rc -eq 0 ]]; then echo "killed_rank: FAIL: mpirun exited 0 although rank 1 was killed"; exit 1; fi
if [[ $rc -eq 124 ]]; then echo "killed_rank: FAIL: mpirun still running after 60 s"; exit 1; fi
if (( elapsed > limit )); then echo "killed_rank: FAIL: took ${elapsed} s, more than ${limit} s"; exit 1; fi
if ! grep -q "rank 1" <<<"$out"; then echo "killed_rank: FAIL: mpirun did not name rank 1"; exit 1; fi
echo "killed_rank: ok"
