#!/usr/bin/env bash
# Installs a built tessel tree (cmake --install), moves the installed tree elsewhere (the pkg-config
# file must follow), builds the outside project tests/install/ against it through pkg-config only,
# and runs its programs: the C API test linked shared and static, and the C++ API program.
#   usage: run.sh BUILD_DIR API_EXPECT_EXE
#   (API_EXPECT_EXE writes the C API test's expectations and the default model's path,
#   tests/api/api_expect.cpp; it exits 77, skipped, when the model is not cached outside CI: this
#   script passes that on.)
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR API_EXPECT_EXE}
api_expect=${2:?usage: run.sh BUILD_DIR API_EXPECT_EXE}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/moved"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
PKG_CONFIG_PATH="$work/moved/lib/pkgconfig" cmake -S "$here" -B "$work/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DC_API_TEST="$src/tests/api/c_api_test.c" -DTESSEL_TEST_VERSION="$version" >/dev/null
cmake --build "$work/consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
# Nothing of the build tree may be reached: the programs link the moved installed tree only.
if ldd "$work/consumer/c_api_shared" | grep -F "$build"; then
  echo "install test: c_api_shared loads a library of the build tree" >&2
  exit 1
fi
rc=0
"$api_expect" "$work/expect.txt" || rc=$?
if [[ $rc -ne 0 ]]; then exit "$rc"; fi
"$work/consumer/c_api_shared" "$work/expect.txt"
"$work/consumer/c_api_static" "$work/expect.txt"
model=$(python3 -c 'import sys
for line in open(sys.argv[1]):
    key, _, value = line.strip().partition(" ")
    if key == "model":
        print(bytes.fromhex(value).decode())' "$work/expect.txt")
"$work/consumer/cpp_api" "$model"
echo "install test: the installed tree (moved after install) builds and runs an outside C and C++ project"
