#!/usr/bin/env bash
# Install what tessel needs to build and test on Debian 12 (root, or sudo available).
# Idempotent: does nothing when every package is already present at its pinned version.
# Library versions are pinned here, in one place; toolchains come from Debian 12 as shipped.
set -euo pipefail

PINNED=(
  "libcli11-dev=2.1.2+ds-1"
  "nlohmann-json3-dev=3.11.2-2"
  "libgtest-dev=1.12.1-0.2"
  "googletest=1.12.1-0.2"   # GoogleTest sources (/usr/src/googletest), built for the aarch64 cross build
  "libssl-dev=3.0.22-1~deb12u2"   # libcrypto: SHA-256 of fetched models (bookworm-security)
  "libpcre2-dev=10.42-1+deb12u2"  # pre-tokenizer regexes (src/vocab)
)
# Target libraries for the aarch64 cross build, from Debian's arm64 archive through multiarch
# (dpkg --add-architecture arm64). One entry per library; a Multi-Arch: same package must have
# exactly the host package's version.
ARM64_PINNED=(
  "libssl-dev:arm64=3.0.22-1~deb12u2"
  "libpcre2-dev:arm64=10.42-1+deb12u2"
)
# g++-aarch64-linux-gnu + qemu-user-static: the aarch64 cross build and its tests under QEMU.
# qemu-user-static is not pinned: its Debian 12 version moves with every security update.
UNPINNED=(cmake ninja-build g++ clang libclang-rt-14-dev python3 g++-aarch64-linux-gnu qemu-user-static)

# Status of a package: an unqualified name means the host's architecture when the package has one
# (Multi-Arch: same packages can be installed for amd64 and arm64 at once), else the arch-all one.
native=$(dpkg --print-architecture)
status_of() {
  local q=$1
  [[ $q == *:* ]] || q="$1:$native"
  dpkg-query -W -f='${Status} ${Version}' "$q" 2>/dev/null ||
    dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null || true
}

missing=()
for spec in "${PINNED[@]}" "${ARM64_PINNED[@]}"; do
  pkg=${spec%%=*}; ver=${spec#*=}
  have=$(status_of "$pkg")
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
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
