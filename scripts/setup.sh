#!/usr/bin/env bash
# Build .venv from the repo's own files: torch (CPU build) first, then block_env with the extras
# EXTRAS names (default: every extra, as the tests need; scripts/main.sh asks for train,eval).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# torch 2.13.0's CPU build first: an unpinned torch (pulled by stable-baselines3), or PyPI's own
# Linux wheel, is a CUDA build of several GB. A wheel this machine keeps (pip's find-links) if it
# has one, else PyTorch's CPU index; its dependencies come from PyPI with the extras below.
if ! .venv/bin/python -m pip install -q --no-index --no-deps "torch==2.13.0" 2>/dev/null; then
    .venv/bin/python -m pip install -q --no-deps --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -c constraints.txt -e ".[${EXTRAS:-all}]"
echo "set-up done: $(.venv/bin/python -c 'import block_env, torch; print("block_env", block_env.__version__, "torch", torch.__version__)')"
