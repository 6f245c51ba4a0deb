#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv, train an agent with configs/default.yaml (or
# CONFIG=configs/quick.yaml), then run the arena against every baseline, search included.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${EXTRAS:-train,eval}" bash scripts/setup.sh  # the main job's packages only
CONFIG="${CONFIG:-configs/default.yaml}"
# Each config its own folder (runs/default, runs/quick): a run never writes into another's.
.venv/bin/block-dominoes main --config "$CONFIG" --out "${OUT:-runs/$(basename "$CONFIG" .yaml)}" "$@"
