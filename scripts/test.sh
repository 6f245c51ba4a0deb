#!/usr/bin/env bash
# Set up (scripts/setup.sh, and chromium for the browser test), then run the whole test suite
# on both cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-browser.sh
.venv/bin/python -m pytest -q -n 2 "$@"
