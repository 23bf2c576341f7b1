#!/usr/bin/env bash
# Record llama.cpp's perplexity of a test model on the fixed text tests/data/gpl-3.txt, for
# tests/smollm2/perplexity_test.cpp (smollm2, the default model SmolLM2-135M-Instruct Q4_1) and
# tests/models/ (gemma3-270m):
#
#   scripts/reference/make_perplexity.sh [MODEL]    -> writes tests/data/MODEL/perplexity.txt
#
# MODEL: a name of scripts/models.sh (default smollm2).
# Runs llama-perplexity built by scripts/peer/build-llama.sh (pinned llama-cpp-python sdist) in
# its default mode at -c 512 -b 512 with 2 threads (flash attention and KV types at llama.cpp's
# defaults) and -nr (no extra buffer types: with GGML_NATIVE=ON on an AMX machine ggml would run
# Q4_1 through its AMX kernels, which die with SIGILL (tilezero) here), and parses its "Final estimate: PPL = X +/- Y" line. The model comes from tessel's
# cache, ${XDG_CACHE_HOME:-$HOME/.cache}/tessel/models/, through scripts/models.sh, which fetches
# it when missing (TESSEL: the tessel binary that fetches the default model, default
# build/bin/tessel). Output: one key=value per line.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
name=${1:-smollm2}
tessel=${TESSEL:-build/bin/tessel}
text=tests/data/gpl-3.txt
out=tests/data/$name/perplexity.txt
n_ctx=512
n_batch=512
declare -A readers=([smollm2]=tests/smollm2/perplexity_test.cpp [gemma3-270m]=tests/models/models_test.cpp)
threads=2

bin=$(scripts/peer/build-llama.sh)
build=$(basename "$(dirname "$bin")")     # llama-build-VERSION
version=${build#llama-build-}

model=$(scripts/models.sh "$name" "$tessel")
sha=$(sha256sum "$model" | cut -d' ' -f1)

mkdir -p "$(dirname "$out")"
args=(-f "$text" -c "$n_ctx" -b "$n_batch" -t "$threads" -nr)
log=$(mktemp)
trap 'rm -f "$log" "$out.tmp"' EXIT
echo "make_perplexity: llama-perplexity ${args[*]} (a few minutes)" >&2
"$bin/llama-perplexity" -m "$model" "${args[@]}" >"$log" 2>&1 || {
    tail -20 "$log" >&2
    exit 1
}

final=$(grep -E 'Final estimate: PPL = [0-9.]+ \+/- [0-9.]+' "$log" | tail -1)
chunks=$(sed -nE 's/.*calculating perplexity over ([0-9]+) chunks.*/\1/p' "$log" | tail -1)
if [[ -z $final || -z $chunks ]]; then
    echo "make_perplexity: no final estimate or chunk count in llama-perplexity's output:" >&2
    tail -20 "$log" >&2
    exit 1
fi
ppl=$(sed -E 's/.*PPL = ([0-9.]+) .*/\1/' <<<"$final")
err=$(sed -E 's/.*\+\/- ([0-9.]+).*/\1/' <<<"$final")

{
    echo "# llama.cpp's perplexity of $(basename "$model") on $text."
    echo "# Written by scripts/reference/make_perplexity.sh $name; read by ${readers[$name]:-tests/models/}."
    echo "llama_cpp_python=$version"
    echo "model=$(basename "$model")"
    echo "model_sha256=$sha"
    echo "text=$text"
    echo "n_ctx=$n_ctx"
    echo "n_batch=$n_batch"
    echo "threads=$threads"
    echo "chunks=$chunks"
    echo "ppl=$ppl"
    echo "ppl_error=$err"
    echo "command=llama-perplexity -m $(basename "$model") ${args[*]}"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "make_perplexity: PPL = $ppl +/- $err over $chunks chunks -> $out" >&2
