"""Copy a scored agent with its move scorer's scores multiplied by a factor (its output layer's
weights and bias), for the arena: python scale_scores.py SOURCE OUT FACTOR."""

import shutil
import sys
from pathlib import Path

import numpy as np

source, out, factor = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
shutil.copytree(source, out)  # refuses an existing OUT
with np.load(source / "move_scorer.npz") as saved:
    arrays = {name: saved[name] for name in saved.files}
for name in ("out_weight", "out_bias"):
    arrays[name] = (arrays[name] * factor).astype(np.float32)
np.savez(out / "move_scorer.npz", **arrays)
