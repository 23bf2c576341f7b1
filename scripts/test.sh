#!/usr/bin/env bash
# Build tessel and run every test, as CI does (.ci/run calls exactly this).
#   1. install build dependencies (scripts/install-deps.sh, idempotent) and fetch the pinned
#      llama-cpp-python sdist into the peer cache (scripts/peer/fetch-sdist.sh, idempotent): the
#      tokenizer conformance test reads llama.cpp's vocab test files from it
#   2. release build (build/) and a Hexagon compile check of the NPU device runtime
#      (scripts/check-hexagon.sh), sanitizer build (build-asan/), libFuzzer build (build-fuzz/, clang)
#   3. fuzz the GGUF reader for TESSEL_FUZZ_SECONDS (default 60) from tests/fuzz/corpus
#   4. sanitizer run of the unit, GGUF, test-ops, model and CLI tests
#   5. ThreadSanitizer build of test_unit and test_npu (build-tsan/): the thread-pool tests and the
#      in-process NPU link tests
#   6. aarch64 cross build (build-arm64/, cmake/toolchains/aarch64-linux-gnu.cmake) and its unit,
#      GGUF and test-ops tests under QEMU user-mode emulation (qemu-aarch64-static -cpu max)
#   7. the full suite on the release build
# The log ends with ctest's summary line of the full suite.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
fuzz_seconds=${TESSEL_FUZZ_SECONDS:-60}
if ! [[ "$fuzz_seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "test.sh: TESSEL_FUZZ_SECONDS must be a positive whole number of seconds, got '$fuzz_seconds'" >&2
  exit 2
fi
t0=$SECONDS
phase() { echo; echo "== [$((SECONDS - t0)) s] $*"; }

phase "install dependencies"
bash scripts/install-deps.sh

phase "peer data: llama-cpp-python sdist (tokenizer test vocabularies)"
bash scripts/peer/fetch-sdist.sh >/dev/null

phase "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build

phase "Hexagon compile check of the device runtime"
bash scripts/check-hexagon.sh

phase "main job smoke run: the default model (fetched once into the cache), greedy"
build/bin/tessel run --chat -p "What is the capital of France? Answer in one sentence." -n 32 --temp 0

phase "sanitizer build (address, undefined)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_SANITIZE=ON
cmake --build build-asan

phase "clang build with the libFuzzer target"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_FUZZ=ON
cmake --build build-fuzz   # all targets: also checks that clang 14 builds the whole tree

phase "fuzz the GGUF reader for ${fuzz_seconds} s"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" && cp tests/fuzz/corpus/* "$work/corpus"/
mkdir -p build-fuzz/artifacts
if ! (cd "$work" && "$root/build-fuzz/tests/fuzz/fuzz_gguf" -max_total_time="$fuzz_seconds" \
        -artifact_prefix="$root/build-fuzz/artifacts/" -print_final_stats=1 "$work/corpus" >"$work/fuzz.log" 2>&1); then
  cat "$work/fuzz.log"
  echo "fuzz_gguf FAILED: the crashing input is kept in build-fuzz/artifacts/"
  exit 1
fi
tail -n 12 "$work/fuzz.log"

phase "sanitizer tests (unit, gguf, ops, model, cli, npu)"
(cd build-asan && ctest -L 'unit|gguf|ops|model|cli|npu' --output-on-failure -j2)

phase "thread sanitizer: thread-pool tests, in-process NPU link tests"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSEL_TSAN=ON
cmake --build build-tsan --target test_unit test_npu
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_unit --gtest_filter='ThreadPool*' --gtest_brief=1
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_npu --gtest_filter='*InProcess*' --gtest_brief=1

phase "aarch64 cross build + unit tests under QEMU"
cmake -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake"
cmake --build build-arm64 --target test_unit test_gguf test_model tessel_cli
(cd build-arm64 && ctest -L 'unit|gguf|ops|model' --output-on-failure -j2)

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

phase "all tests (release)"
(cd build && ctest --output-on-failure -j2)
