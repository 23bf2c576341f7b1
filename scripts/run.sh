#!/usr/bin/env bash
# The main job, from a fresh clone: install, build, then run tessel.
# Until text generation lands, this writes a small example GGUF with tessel's own writer
# (build/bin/tessel-make-example) and describes it with `tessel info`.
set -euo pipefail
cd "$(dirname "$0")/.."
tessel=$(bash scripts/build.sh)
example="build/example.gguf"
build/bin/tessel-make-example "$example"
"$tessel" info "$example"
