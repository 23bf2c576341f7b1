#!/usr/bin/env bash
# Build llama.cpp's CLI tools (llama-perplexity, llama-bench, llama-quantize, llama-server) from the
# pinned llama-cpp-python sdist (scripts/peer/fetch-sdist.sh) into tessel's peer cache. They are peers
# for measurements on this machine only, never shipped or committed:
#
#   scripts/peer/build-llama.sh      -> prints the folder holding the binaries on stdout
#
# Layout under ${TESSEL_PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tessel/peer}:
#   llama-build-VERSION/bin/llama-perplexity, llama-bench, llama-quantize, llama-server   (VERSION: llama-cpp-python's)
# CPU backend only, Release, no network code (LLAMA_OPENSSL=OFF; LLAMA_CURL is gone upstream),
# llama-server without its web UI: LLAMA_BUILD_UI=OFF (no npm) and LLAMA_USE_PREBUILT_UI=OFF (the
# build would otherwise download the UI's assets), so the build fetches nothing and / serves no page.
# GGML_NATIVE=ON: ggml is compiled for this CPU (-march=native), so the binaries are fast here
# and may not run on another machine; rebuild after moving the cache. Needs cmake and ninja
# (Debian packages, scripts/install-deps.sh). Idempotent: existing binaries are reused; a
# cache that lacks one of the tools is rebuilt whole. The
# build happens in a temporary folder inside the cache, renamed into place when complete, so a
# failed or interrupted build leaves nothing behind. Jobs: ${TESSEL_PEER_JOBS:-2}.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools=(llama-perplexity llama-bench llama-quantize llama-server)
jobs=${TESSEL_PEER_JOBS:-2}

for tool in cmake ninja; do
    if ! command -v "$tool" >/dev/null; then
        echo "build-llama: $tool not found (install it: scripts/install-deps.sh)" >&2
        exit 1
    fi
done

sdist=$("$here/fetch-sdist.sh")
name=$(basename "$sdist")                  # llama-cpp-python-VERSION
version=${name#llama-cpp-python-}
peer=$(dirname "$sdist")
dest="$peer/llama-build-$version"

complete() {
    local t
    for t in "${tools[@]}"; do [[ -x "$1/bin/$t" ]] || return 1; done
}

if ! complete "$dest"; then
    work=$(mktemp -d "$peer/.build-llama.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    echo "build-llama: building ${tools[*]} from llama-cpp-python $version (-j$jobs)" >&2
    cmake -S "$sdist/vendor/llama.cpp" -B "$work/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
        -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=ON \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON >&2
    ninja -C "$work/build" -j"$jobs" "${tools[@]}" >&2
    mkdir "$work/out" "$work/out/bin"
    for t in "${tools[@]}"; do cp "$work/build/bin/$t" "$work/out/bin/"; done
    rm -rf "$dest"  # an incomplete earlier attempt
    mv "$work/out" "$dest"
fi
echo "build-llama: $dest/bin" >&2
echo "$dest/bin"
