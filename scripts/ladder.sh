#!/usr/bin/env bash
# The README's ladder: random, greedy, strategic and search on 2p, 3p, 4p and partnership rules.
set -euo pipefail
cd "$(dirname "$0")/.."
DEALS=${DEALS:-500}
for preset in standard standard_3p standard_4p partnership; do
  .venv/bin/block-dominoes eval --agents random greedy strategic search --rules "$preset" \
    --deals "$DEALS" --seed 2026 --out "results/ladder/$preset" --quiet
done
