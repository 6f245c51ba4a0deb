#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv, train an agent with configs/default.yaml (or
# CONFIG=configs/quick.yaml), then run the arena against every baseline, search included.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/block-dominoes main --config "${CONFIG:-configs/default.yaml}" --out "${OUT:-runs/default}" "$@"
