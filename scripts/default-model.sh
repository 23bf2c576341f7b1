#!/usr/bin/env bash
# Prints the path of tessel's cached default model (SmolLM2-135M-Instruct Q4_1), fetching it first
# with the given tessel binary when it is missing (tessel downloads and sha256-checks it):
#
#   model=$(scripts/default-model.sh [TESSEL_BINARY])      (default binary: build/bin/tessel)
#
# Same cache rule as tessel (tools/common/model_fetch.cpp): ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models,
# a relative XDG_CACHE_HOME being ignored.
set -euo pipefail
tessel=${1:-build/bin/tessel}
model_dir=${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models
[[ $model_dir == /* ]] || model_dir=$HOME/.cache/tessel/models
model=$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf
if [[ ! -f $model ]]; then
    echo "default-model: fetching the default model with $tessel" >&2
    "$tessel" run -p hi -n 1 >/dev/null
fi
echo "$model"
