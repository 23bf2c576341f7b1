#!/usr/bin/env bash
# CTest's smollm2.quant_aware: scripts/reference/quant_aware.py with TESSEL_BINARY on every path
# this machine has, run by the python of the reference venv in $TESSEL_REFERENCE_PYTHON
# (scripts/test.sh sets it from `scripts/pyenv.sh reference`). Without it the check fails under
# CI=true and otherwise exits 77, which CTest reports as not run.
#   usage: run-quant-aware.sh TESSEL_BINARY
set -euo pipefail
tessel=${1:?usage: run-quant-aware.sh TESSEL_BINARY}
py=${TESSEL_REFERENCE_PYTHON:-}
if [[ -z $py || ! -x $py ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "run-quant-aware: TESSEL_REFERENCE_PYTHON is not set to a python (scripts/pyenv.sh reference prints one)" >&2
    exit 1
  fi
  echo "NOT RUN: TESSEL_REFERENCE_PYTHON is unset or not an executable; export TESSEL_REFERENCE_PYTHON=\$(scripts/pyenv.sh reference)"
  exit 77
fi
exec "$py" "$(dirname "$0")/quant_aware.py" --tessel "$tessel"
