#!/usr/bin/env bash
# Create (or reuse) a pinned Python venv and print its python path on stdout (progress on stderr):
#
#   scripts/pyenv.sh reference   numpy + gguf + jsonschema (scripts/requirements-reference.txt): the float64
#                                references (scripts/reference/); CI builds it in a few seconds
#   scripts/pyenv.sh [xcheck]    the above plus llama-cpp-python (scripts/requirements-xcheck.txt):
#                                regenerating tests/data/ against llama.cpp; never built by CI
#   scripts/pyenv.sh plot        matplotlib (scripts/requirements-plot.txt): bench/compare.py --plot
#   scripts/pyenv.sh server      pytest + openai + selenium (scripts/requirements-server-test.txt): tests/server/
#
# The venvs live at ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/pyenv-reference, .../pyenv, .../pyenv-plot and .../pyenv-server. Versions
# come from the requirements files only. Idempotent: when every pin is already installed nothing is
# installed. llama-cpp-python is built from its sdist with CMAKE_ARGS=-DGGML_NATIVE=OFF so the
# reference library does not depend on the build machine's ISA.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kind=${1:-xcheck}
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tessel"
case "$kind" in
  reference) reqs=("$here/requirements-reference.txt"); venv="$cache/pyenv-reference" ;;
  xcheck) reqs=("$here/requirements-reference.txt" "$here/requirements-xcheck.txt"); venv="$cache/pyenv" ;;
  plot) reqs=("$here/requirements-plot.txt"); venv="$cache/pyenv-plot" ;;
  server) reqs=("$here/requirements-server-test.txt"); venv="$cache/pyenv-server" ;;
  *) echo "pyenv: unknown environment '$kind' (reference, xcheck, plot or server)" >&2; exit 2 ;;
esac
base_python=${PYTHON:-python3}

if [[ ! -x "$venv/bin/python" ]]; then
    echo "pyenv: creating $venv" >&2
    mkdir -p "$(dirname "$venv")"
    "$base_python" -m venv "$venv"
fi
py="$venv/bin/python"

# Exit 0 when every `name==version` line of the requirements files is installed at that version.
pins_satisfied() {
    "$py" - "${reqs[@]}" <<'PYEOF'
import sys
from importlib import metadata

missing = []
for path in sys.argv[1:]:
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, want = line.partition("==")
        try:
            have = metadata.version(name.strip())
        except metadata.PackageNotFoundError:
            have = None
        if have != want.strip():
            missing.append(f"{name.strip()}=={want.strip()} (have {have})")
for m in missing:
    print(f"pyenv: needs {m}", file=sys.stderr)
sys.exit(1 if missing else 0)
PYEOF
}

if pins_satisfied; then
    echo "pyenv: all pins satisfied" >&2
else
    [[ $kind == xcheck ]] && echo "pyenv: installing pins (building llama-cpp-python can take ~20 min on 2 cores)" >&2
    args=()
    for r in "${reqs[@]}"; do args+=(-r "$r"); done
    CMAKE_ARGS="${CMAKE_ARGS:+$CMAKE_ARGS }-DGGML_NATIVE=OFF" \
        "$py" -m pip install --no-cache-dir "${args[@]}" >&2
    pins_satisfied
fi

echo "$py"
