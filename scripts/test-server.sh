#!/usr/bin/env bash
# The HTTP server's tests (tests/server/, pytest): OpenAI's client, concurrent streams, a headless
# Chromium on the web page, all against `tessel serve` started on 127.0.0.1 by the tests.
#
#   scripts/test-server.sh BUILD_DIR [PYTEST_ARGS...]     e.g. build-san -k stress
#
# Uses BUILD_DIR/bin/tessel, the default model (fetched into the cache on first use) and the venv
# of scripts/pyenv.sh server. Exit: pytest's, except 5 (no test selected), which is a failure here.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build=$(cd "${1:?usage: test-server.sh BUILD_DIR [PYTEST_ARGS...]}" && pwd)
shift
cli=$build/bin/tessel
[[ -x $cli ]] || { echo "test-server: $cli is not an executable (build tessel_cli)" >&2; exit 1; }
py=$(bash "$here/pyenv.sh" server)
model=${TESSEL_MODEL:-$(bash "$here/default-model.sh" "$cli")}
set +e
TESSEL_CLI=$cli TESSEL_MODEL=$model TESSEL_SERVER_ARTIFACTS=${TESSEL_SERVER_ARTIFACTS:-$build/artifacts} \
  PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -p no:cacheprovider -v "$repo/tests/server" "$@"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
  echo "test-server: FAILED: pytest selected no tests" >&2
  exit 1
fi
exit "$rc"
