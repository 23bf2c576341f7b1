#!/usr/bin/env bash
# The Python package (python/) tested as a user installs it: a fresh venv in a temporary folder
# outside the source tree, `pip install` of a copy of python/ (nothing is built: the package is
# pure Python over libtessel.so), pytest run from a folder outside the source tree on a copy of
# python/tests. Needs the default model in the cache (scripts/default-model.sh fetches it).
#
#   scripts/test-python.sh [BUILD_DIR]          (default: build)
#
# From BUILD_DIR: libtessel.so (the first found, unless TESSEL_LIBRARY names one), bin/tessel (the
# CLI the tests compare with, unless TESSEL_CLI is set) and tests/api_expect, which writes the
# expectations the tests read (llama.cpp's reference data, the C++ API's results).
# Exit: pytest's code, except 5 (no tests collected), which is a failure here (exit 1); 77 when
# the model is missing outside CI (nothing ran).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build=$(cd "${1:-$repo/build}" && pwd)
python=${PYTHON:-python3}

lib=${TESSEL_LIBRARY:-$(find "$build" -name libtessel.so -print -quit)}
cli=${TESSEL_CLI:-$build/bin/tessel}
expect_bin=$build/tests/api_expect
[[ -n $lib && -e $lib ]] || { echo "test-python: no libtessel.so in $build (build target tessel_shared, or set TESSEL_LIBRARY)" >&2; exit 1; }
[[ -x $cli ]] || { echo "test-python: $cli is not an executable (build tessel_cli, or set TESSEL_CLI)" >&2; exit 1; }
[[ -x $expect_bin ]] || { echo "test-python: $expect_bin is missing (build target api_expect)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessel-python-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

set +e
"$expect_bin" "$tmp/api_expect.txt"
rc=$?
set -e
[[ $rc -eq 0 ]] || exit "$rc"  # 77: the model is not in the cache (outside CI); api_expect said so

echo "test-python: fresh venv in $tmp (python: $("$python" --version 2>&1))" >&2
"$python" -m venv "$tmp/venv"
cp -r "$repo/python" "$tmp/package"  # pip builds in the folder it is given: keep the source tree clean
rm -rf "$tmp/package/tests"
"$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$tmp/package" -r "$here/requirements-python-test.txt"
cp -r "$repo/python/tests" "$tmp/tests"
mkdir "$tmp/run"
cd "$tmp/run"

set +e
TESSEL_LIBRARY=$lib TESSEL_CLI=$cli TESSEL_API_EXPECT=$tmp/api_expect.txt PYTHONDONTWRITEBYTECODE=1 \
    "$tmp/venv/bin/python" -m pytest -p no:cacheprovider -v "$tmp/tests"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
    echo "test-python: FAILED: pytest collected no tests (exit 5) from $repo/python/tests" >&2
    exit 1
fi
exit "$rc"
