#!/usr/bin/env bash
# Install what tessel needs to build and test on Debian 12 (root, or sudo available).
# Idempotent: does nothing when every package is already present at its pinned version.
# Library versions are pinned here, in one place; toolchains come from Debian 12 as shipped.
set -euo pipefail

# A package installed for two architectures must be named with its architecture (NAME:ARCH).
native=$(dpkg --print-architecture)
PINNED=(
  "libcli11-dev=2.1.2+ds-1"
  "nlohmann-json3-dev=3.11.2-2"
  "libgtest-dev=1.12.1-0.2"
  "googletest=1.12.1-0.2"   # GoogleTest sources (/usr/src/googletest), built for the aarch64 cross build
  "libpcre2-dev:$native=10.42-1+deb12u2"  # pre-tokenizer regexes (src/vocab)
  "libpcre2-dev:arm64=10.42-1+deb12u2"    # the same for the aarch64 cross build (Debian multiarch)
)
# g++-aarch64-linux-gnu + qemu-user-static: the aarch64 cross build and its tests under QEMU.
# qemu-user-static is not pinned: its Debian 12 version moves with every security update.
UNPINNED=(cmake ninja-build g++ clang libclang-rt-14-dev python3 g++-aarch64-linux-gnu qemu-user-static)

missing=()
for spec in "${PINNED[@]}"; do
  pkg=${spec%%=*}; ver=${spec#*=}
  have=$(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>/dev/null || true)
  [[ "$have" == "install ok installed $ver" ]] || missing+=("$spec")
done
for pkg in "${UNPINNED[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# arm64 packages (NAME:arm64) install through multiarch into /usr/lib/aarch64-linux-gnu.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
