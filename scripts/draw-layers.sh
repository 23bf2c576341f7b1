#!/usr/bin/env bash
# Redraws docs/layers.dot and docs/layers.svg, the CMake target graph of tessel's layers
# (`cmake --graphviz`, filtered by cmake/graphviz/CMakeGraphVizOptions.cmake; solid edges are
# PUBLIC links, dotted PRIVATE ones), rendered by Debian's graphviz (`dot`).
#   usage: scripts/draw-layers.sh   (configures a scratch tree; needs graphviz)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v dot >/dev/null || { echo "draw-layers: needs graphviz (apt-get install graphviz)" >&2; exit 2; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
cp cmake/graphviz/CMakeGraphVizOptions.cmake "$tree/"
cmake -S . -B "$tree" -G Ninja -DTESSEL_BUILD_TESTS=OFF -DTESSEL_BUILD_BENCH=OFF --graphviz="$tree/tessel.dot" >/dev/null
cp "$tree/tessel.dot" docs/layers.dot
dot -Tsvg docs/layers.dot -o docs/layers.svg
echo "draw-layers: wrote docs/layers.dot and docs/layers.svg"
