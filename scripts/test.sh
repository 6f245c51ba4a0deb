#!/usr/bin/env bash
# Set up (scripts/setup.sh, chromium for the browser test, postgresql for the web store's
# tests), then run the whole test suite on both cores.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS=all bash scripts/setup.sh  # every extra, whatever EXTRAS the shell holds
bash scripts/setup-browser.sh
bash scripts/setup-postgres.sh
.venv/bin/python -m pytest -q -n 2 "$@"
