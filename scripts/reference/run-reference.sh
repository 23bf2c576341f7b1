#!/usr/bin/env bash
# CTest's runner of the Python checks in scripts/reference/ (smollm2.quant_aware: quant_aware.py;
# smollm2.json_schema_outputs: json_schema_outputs.py): runs SCRIPT with ARGS by the python of the
# reference venv in $TESSEL_REFERENCE_PYTHON (scripts/test.sh sets it from `scripts/pyenv.sh
# reference`). Without it the check fails under CI=true and otherwise exits 77, which CTest
# reports as not run.
#   usage: run-reference.sh SCRIPT.py [ARGS...]
set -euo pipefail
script=${1:?usage: run-reference.sh SCRIPT.py [ARGS...]}
shift
py=${TESSEL_REFERENCE_PYTHON:-}
if [[ -z $py || ! -x $py ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "run-reference: TESSEL_REFERENCE_PYTHON is not set to a python (scripts/pyenv.sh reference prints one)" >&2
    exit 1
  fi
  echo "NOT RUN: TESSEL_REFERENCE_PYTHON is unset or not an executable; export TESSEL_REFERENCE_PYTHON=\$(scripts/pyenv.sh reference)"
  exit 77
fi
exec "$py" "$(dirname "$0")/$script" "$@"
