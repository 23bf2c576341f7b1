#!/usr/bin/env bash
# Install dependencies and build the release tree (build/). Idempotent; prints the tessel binary path.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh >&2
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build >&2
echo "$PWD/build/bin/tessel"
