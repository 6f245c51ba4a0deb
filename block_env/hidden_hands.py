"""Hidden hands dealt again, consistently with what one seat knows: the tiles it cannot see
shared among the other seats, each seat keeping its count and holding none of the suits it
passed on. The determinizations of the search agents and the resampler of the OpenSpiel game
(what IS-MCTS searches over) are both this one sampler.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import njit

from block_env.batched import mask_bits, shuffle_in_place
from block_env.rules import Rules
from block_env.tiles import tile_set


def sample_hidden_hands(
    rules: Rules,
    *,
    hand: int,
    unseen: int,
    hand_counts: tuple[int, ...],
    voids: tuple[int, ...],
    worlds: int,
    attempts: int,
    seed: int,
) -> np.ndarray:
    """(worlds, P, T) bool: deals of the ``unseen`` tiles (a bitmask) to relative seats
    1..P-1, ``hand_counts`` each, consistent with the suits each has shown it lacks (``voids``,
    bitmasks over suits); relative seat 0 holds ``hand``. Seats with more voids are dealt
    first; a deal that fails is shuffled again, and the last of ``attempts`` ignores voids
    (a last resort that keeps every count). Each world draws from its own stream of ``seed``.

    Examples:
        >>> from block_env import Rules
        >>> rules = Rules()  # 7 tiles each, 14 out of play
        >>> mine = sum(1 << t for t in range(7))
        >>> hands = sample_hidden_hands(
        ...     rules, hand=mine, unseen=rules.tile_set.full_mask & ~mine, hand_counts=(7, 7),
        ...     voids=(0, 0), worlds=3, attempts=20, seed=1)
        >>> hands.shape, hands.sum(axis=2).tolist()
        ((3, 2, 28), [[7, 7], [7, 7], [7, 7]])
    """
    ts = rules.tile_set
    n = rules.num_players
    hands = np.zeros((worlds, n, ts.num_tiles), dtype=bool)
    hands[:, 0] = mask_bits(hand, ts.num_tiles)
    order = np.array(sorted(range(1, n), key=lambda r: -voids[r].bit_count()), dtype=np.int64)
    streams = np.random.default_rng(seed).integers(0, 2**63, size=worlds, dtype=np.uint64)
    _sample_hands_kernel(
        np.flatnonzero(mask_bits(unseen, ts.num_tiles)),
        _tile_suits(ts.max_pip),
        order,
        np.array(voids, dtype=np.int64),
        np.array(hand_counts, dtype=np.int64),
        attempts,
        streams,
        hands,
    )
    return hands


@cache
def _tile_suits(max_pip: int) -> np.ndarray:
    """Each tile's suits as a bitmask (one bit per half), for the double-``max_pip`` set
    (cached: read-only)."""
    suits = np.array([(1 << a) | (1 << b) for a, b in tile_set(max_pip).tiles], dtype=np.int64)
    suits.flags.writeable = False
    return suits


@njit(cache=True, nogil=True)
def _sample_hands_kernel(unseen, tile_suits, order, voids, need, attempts, streams, hands):  # pragma: no cover
    size = len(unseen)
    pool = np.empty(size, dtype=np.int64)
    taken = np.empty(size, dtype=np.bool_)
    for w in range(hands.shape[0]):
        state = streams[w]
        for attempt in range(attempts):
            pool[:] = unseen
            state = shuffle_in_place(pool, state)
            taken[:] = False
            hands[w, 1:, :] = False
            ok = True
            for r in order:
                void = voids[r] if attempt < attempts - 1 else 0  # the last resort ignores voids
                got = 0
                for p in range(size):
                    if got == need[r]:
                        break
                    if not taken[p] and (tile_suits[pool[p]] & void) == 0:
                        taken[p] = True
                        hands[w, r, pool[p]] = True
                        got += 1
                if got < need[r]:
                    ok = False
                    break
            if ok:
                break
        streams[w] = state
