"""Every seed stream derived from one root seed, in one place.

``derive_seed(root, "teacher_games", 3)`` names a stream and an index under a root seed (a
config's ``seed``) and returns an independent 63-bit seed, through numpy's SeedSequence: no
two named streams overlap, and the same names always give the same seed. The arena's
per-deal and per-seat seeds are here too, with the formulas their published numbers use.
"""

from __future__ import annotations

import random
import zlib

import numpy as np

from block_env.validation import check_int

#: Seeds handed to engines and agents are below this (they fit a signed 64-bit integer).
SEED_BOUND = 2**63


def derive_seed(root: int, stream: str, index: int = 0) -> int:
    """An independent seed for ``stream`` (a name) number ``index`` under ``root``."""
    check_int("a root seed", root, low=0)
    check_int("a seed stream index", index, low=0)
    words = np.random.SeedSequence(root, spawn_key=(zlib.crc32(stream.encode()), index)).generate_state(2, np.uint64)
    return int(words[0]) % SEED_BOUND


def deal_seeds(seed: int, deals: int) -> list[int]:
    """The arena's per-deal seeds: every table and seating of deal d replays seed d."""
    rng = random.Random(seed)
    return [rng.getrandbits(63) for _ in range(deals)]


def seat_seed(episode_seed: int, seat: int) -> int:
    """The seed an agent at ``seat`` is reset with in an arena episode."""
    return (episode_seed * 31 + seat) % SEED_BOUND
