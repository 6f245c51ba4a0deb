"""Copy a scored agent with its move scorer's scores multiplied by a factor (its output layer's
weights and bias), for the arena: python scale_scores.py SOURCE OUT FACTOR. OUT must not exist."""

import shutil
import sys
from pathlib import Path

import numpy as np

if len(sys.argv) != 4:
    sys.exit(__doc__)
source, out, factor = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
if not np.isfinite(factor):
    sys.exit(f"FACTOR must be a finite number, got {sys.argv[3]!r}")
if out.exists():
    sys.exit(f"{out} already exists")
if not (source / "move_scorer.npz").is_file():
    sys.exit(f"{source} has no move scorer (move_scorer.npz)")
with np.load(source / "move_scorer.npz") as saved:
    arrays = {name: saved[name] for name in saved.files}
for name in ("out_weight", "out_bias"):
    arrays[name] = (arrays[name] * factor).astype(np.float32)
shutil.copytree(source, out)
np.savez(out / "move_scorer.npz", **arrays)
