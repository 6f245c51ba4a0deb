"""The search agent's compiled parts: determinizations (hidden hands dealt consistently with
what a seat knows) and fast playouts of many worlds at once on the batched engine.

The playouts move with the batched engine's own compiled move (``BatchedGames.step``), so the
rules stay in one place; only the playout policy and the sampling are the search's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from block_env.agents.scripted import move_score
from block_env.batched import BatchedGames, BatchResults, next_random, shuffle_in_place
from block_env.rules import Rules

#: A playout policy: the moves of ``games`` (indices into a batch) given their legal masks.
MoveChooser = Callable[[np.ndarray, np.ndarray], np.ndarray]


def play_out(
    batch: BatchedGames, games: np.ndarray, choose: MoveChooser, until_seat: int | None = None
) -> BatchResults:
    """Play every game in ``games`` with ``choose`` to the end of its round or, with
    ``until_seat``, until that seat is to move (a search's value-network leaf). Returns the
    results of the rounds that ended; the others stay where they stopped."""
    t = batch.tables
    active = np.asarray(games, dtype=np.int64)
    results = []
    while True:
        if until_seat is not None:
            active = active[batch.current[active] != until_seat]
        if not len(active):
            break
        results.append(batch.step(choose(active, batch.legal_mask(active)), active, check=False))
        active = active[~batch.over[active]]
    return BatchResults.concatenate(results, t.num_players, t.num_sides)


def heuristic_moves(batch: BatchedGames, weights: tuple[float, float, float], epsilon: float, seed: int) -> MoveChooser:
    """The scripted playout policy over ``batch``, in compiled code: with probability
    ``epsilon`` a uniformly random legal move, else the move scoring best on ``weights`` =
    (per pip of the tile, for a double, per tile of mine that follows the new ends); a forced
    move is played as it is."""
    t = batch.tables
    weights_array = np.array(weights, dtype=np.float64)
    rng_states = np.random.default_rng(seed).integers(0, 2**63, size=batch.num_games, dtype=np.uint64)

    def choose(active: np.ndarray, masks: np.ndarray) -> np.ndarray:
        actions = np.empty(len(active), dtype=np.int64)
        streams = rng_states[active]
        _playout_kernel(
            active, masks, weights_array, float(epsilon), streams, batch.owner, batch.left, batch.right,
            batch.current, t.low, t.high, actions,
        )  # fmt: skip
        rng_states[active] = streams
        return actions

    return choose


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
    first; a deal that fails is shuffled again, and the last of ``attempts`` ignores voids.
    The determinizations of a search agent."""
    ts = rules.tile_set
    n = rules.num_players
    hands = np.zeros((worlds, n, ts.num_tiles), dtype=bool)
    hands[:, 0, [i for i in range(ts.num_tiles) if hand >> i & 1]] = True
    tile_suits = np.array([(1 << a) | (1 << b) for a, b in ts.tiles], dtype=np.int64)
    order = np.array(sorted(range(1, n), key=lambda r: -voids[r].bit_count()), dtype=np.int64)
    streams = np.random.default_rng(seed).integers(0, 2**63, size=worlds, dtype=np.uint64)
    _sample_hands_kernel(
        np.array([i for i in range(ts.num_tiles) if unseen >> i & 1], dtype=np.int64),
        tile_suits,
        order,
        np.array(voids, dtype=np.int64),
        np.array(hand_counts, dtype=np.int64),
        attempts,
        streams,
        hands,
    )
    return hands


#: The scripted agents' move score, compiled for the playout kernel.
_move_score = njit(cache=True, inline="always")(move_score)


@njit(cache=True, nogil=True)
def _playout_kernel(
    games, masks, weights, epsilon, rng_states, owner, left, right, current, low, high, actions
):  # pragma: no cover - compiled
    """The playout policy's move in each game: the only legal one; a random one with
    probability epsilon (splitmix64, a stream per game); else the best on ``weights``."""
    num_tiles = owner.shape[1]
    num_actions = masks.shape[1]
    for j in range(len(games)):
        g = games[j]
        count = 0
        for b in range(num_actions):
            count += masks[j, b]
        if count == 1:
            actions[j] = np.argmax(masks[j])
            continue
        u, rng_states[j] = next_random(rng_states[j])
        if u < epsilon:
            u, rng_states[j] = next_random(rng_states[j])
            pick = int(u * count)
            for b in range(num_actions):
                if masks[j, b]:
                    if pick == 0:
                        actions[j] = b
                        break
                    pick -= 1
            continue
        seat = current[g]  # heavy tiles, doubles, and keeping tiles of mine for the new ends
        best = -1e18
        for b in range(num_actions - 1):
            if not masks[j, b]:
                continue
            i = b >> 1
            x, y = low[i], high[i]
            if left[g] < 0:
                new_l, new_r = x, y
            elif b & 1:
                new_l, new_r = left[g], x + y - right[g]
            else:
                new_l, new_r = x + y - left[g], right[g]
            mine = 0
            for t in range(num_tiles):
                if t != i and owner[g, t] == seat:
                    if low[t] == new_l or high[t] == new_l or low[t] == new_r or high[t] == new_r:
                        mine += 1
            score = _move_score(weights, x + y, x == y, mine)
            if score > best:
                best = score
                actions[j] = b


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
