#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv, train a MaskablePPO agent with
# configs/default.yaml, then run the arena against random, greedy and strategic.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/block-dominoes main --config "${CONFIG:-configs/default.yaml}" --out "${OUT:-runs/default}" "$@"
