#!/usr/bin/env bash
# Create (or reuse) the pinned Python venv used to regenerate tests/data/quant/.
#
#   scripts/pyenv.sh            -> prints the venv's python path on stdout (progress on stderr)
#
# The venv lives at ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/pyenv. Versions come from
# scripts/requirements-xcheck.txt only. Idempotent: when every pin is already installed nothing
# is built. llama-cpp-python is built from its sdist with CMAKE_ARGS=-DGGML_NATIVE=OFF so the
# reference library does not depend on the build machine's ISA. Only data regeneration needs
# this venv; CI never does.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
req="$here/requirements-xcheck.txt"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/tessel/pyenv"
base_python=${PYTHON:-python3}

if [[ ! -x "$venv/bin/python" ]]; then
    echo "pyenv: creating $venv" >&2
    mkdir -p "$(dirname "$venv")"
    "$base_python" -m venv "$venv"
fi
py="$venv/bin/python"

# Exit 0 when every `name==version` line of the requirements file is installed at that version.
pins_satisfied() {
    "$py" - "$req" <<'PYEOF'
import sys
from importlib import metadata

missing = []
for raw in open(sys.argv[1], encoding="utf-8"):
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
    echo "pyenv: installing pins (building llama-cpp-python can take ~20 min on 2 cores)" >&2
    CMAKE_ARGS="${CMAKE_ARGS:+$CMAKE_ARGS }-DGGML_NATIVE=OFF" \
        "$py" -m pip install --no-cache-dir -r "$req" >&2
    pins_satisfied
fi

echo "$py"
