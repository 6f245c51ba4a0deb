#!/usr/bin/env bash
# The README's ladder: random, greedy, strategic and search on 2p, 3p, 4p and partnership rules.
# Deals per preset are sized so that each rung's head-to-head interval is narrow enough to read.
set -euo pipefail
cd "$(dirname "$0")/.."
for run in standard:400 standard_3p:500 standard_4p:1000 partnership:300; do
  preset=${run%%:*}
  deals=${run##*:}
  .venv/bin/block-dominoes eval --agents random greedy strategic search --rules "$preset" \
    --deals "$deals" --seed 2026 --out "results/ladder/$preset" --quiet
done
