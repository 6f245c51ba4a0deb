#!/usr/bin/env bash
# Build .venv from the repo's own files: torch (CPU build) first, then block_env with every extra.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# torch==2.13.0 first: an unpinned torch (pulled by stable-baselines3) would be a CUDA build of several GB.
.venv/bin/python -m pip install -q -c constraints.txt "torch==2.13.0"
.venv/bin/python -m pip install -q -c constraints.txt -e ".[all]"
echo "set-up done: $(.venv/bin/python -c 'import block_env, torch; print("block_env", block_env.__version__, "torch", torch.__version__)')"
