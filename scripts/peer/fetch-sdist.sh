#!/usr/bin/env bash
# Fetch the pinned llama-cpp-python sdist into tessel's peer cache. It vendors llama.cpp's
# source and its tokenizer test vocabularies (vendor/llama.cpp/models/ggml-vocab-*.gguf with
# .inp/.out), which the tokenizer conformance test runs. Nothing from it enters this repository.
#
#   scripts/peer/fetch-sdist.sh      -> prints the extracted folder on stdout (progress on stderr)
#
# Layout under ${TESSEL_PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tessel/peer}:
#   llama-cpp-python-VERSION/   the extracted sdist (complete once it holds .tessel-complete)
#   llama-cpp-python            symlink to it: the path tests use (tests/support/test_paths.hpp)
# Idempotent: a complete extraction is reused. The download is checked against the pinned
# sha256; on any failure nothing is left in the cache but what was there before.
set -euo pipefail

version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
python=${PYTHON:-python3}  # only its standard library is used

peer=${TESSEL_PEER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tessel/peer}
dest="$peer/llama-cpp-python-$version"
link="$peer/llama-cpp-python"
marker=.tessel-complete

mkdir -p "$peer"
work=$(mktemp -d "$peer/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [[ ! -f "$dest/$marker" ]]; then
    echo "fetch-sdist: downloading llama-cpp-python $version (sdist, ~75 MB)" >&2
    # The file itself, located through PyPI's simple index (PEP 503): `pip download` of an sdist
    # would first build its metadata, fetching and building the whole build backend from source.
    tarball="$work/llama_cpp_python-$version.tar.gz"
    "$python" - "$version" "$tarball" <<'PY'
import re, sys, urllib.request
version, out = sys.argv[1], sys.argv[2]
name = f"llama_cpp_python-{version}.tar.gz"
with urllib.request.urlopen("https://pypi.org/simple/llama-cpp-python/", timeout=60) as r:
    links = re.findall(r'href="([^"#]+)', r.read().decode())
urls = [u for u in links if u.endswith("/" + name)]
if not urls:
    sys.exit(f"fetch-sdist: PyPI's index lists no {name}")
with urllib.request.urlopen(urls[0], timeout=600) as r, open(out, "wb") as f:
    while chunk := r.read(1 << 20):
        f.write(chunk)
PY
    if ! echo "$sha256  $tarball" | sha256sum --check --quiet - >&2; then
        echo "fetch-sdist: sha256 of $(basename "$tarball") differs from the pinned one" >&2
        exit 1
    fi
    mkdir "$work/extract"
    tar -xzf "$tarball" -C "$work/extract"
    src="$work/extract/llama_cpp_python-$version"
    if [[ ! -d "$src/vendor/llama.cpp/models" ]]; then
        echo "fetch-sdist: $(basename "$tarball") has no vendor/llama.cpp/models" >&2
        exit 1
    fi
    touch "$src/$marker"
    rm -rf "$dest"  # an incomplete earlier attempt (no marker)
    mv "$src" "$dest"
fi

# Point the stable name at this version; rename(2) replaces the link atomically.
ln -s "llama-cpp-python-$version" "$work/link"
mv -T "$work/link" "$link"
echo "fetch-sdist: $dest" >&2
echo "$dest"
