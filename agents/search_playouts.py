"""The search agent's compiled parts: fast playouts of many worlds at once on the batched
engine (its determinizations are the core's :func:`block_env.hidden_hands.sample_hidden_hands`).

The playouts move with the batched engine's own compiled move (``BatchedGames.step``), so the
rules stay in one place; only the playout policy is the search's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from block_env.agents.scripted import move_score_compiled
from block_env.batched import BatchedGames, BatchResults, CompiledPolicies, ends_after_move, follows_ends, next_random

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


def play_out_ranked(
    batch: BatchedGames, games: np.ndarray, policy: CompiledPolicies, first_moves: np.ndarray | None = None
) -> BatchResults:
    """Play every game in ``games`` to the end of its round, every seat playing the highest-ranked
    legal move of ``policy``'s first row (the first on ties: as a scripted chooser without
    random moves), the whole playout in one call of the engine's compiled loop rather than a
    step per move: what :func:`play_out` does with such a chooser, in a fraction of the time.
    ``first_moves[j]`` (legal moves, unchecked), if given, is played in ``games[j]`` first: a
    search's move in each of its worlds."""
    active = np.asarray(games, dtype=np.int64)
    n, num_players = batch.num_games, batch.tables.num_players
    no_learner = np.full(n, -1, dtype=np.int64)  # no seat stops the loop for a decision
    _status, results = batch.play_until_decision(
        active,
        no_learner,
        np.zeros((n, num_players), dtype=np.int64),  # every seat plays policy 0
        policy,
        np.zeros(n, dtype=np.uint64),  # no random draws: a ranked policy never draws
        skip_forced=False,
        first_moves=first_moves,
        check=False,
    )
    return results


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
            new_l, new_r = ends_after_move(left[g], right[g], x, y, b)
            mine = 0
            for t in range(num_tiles):
                if t != i and owner[g, t] == seat and follows_ends(low[t], high[t], new_l, new_r):
                    mine += 1
            score = move_score_compiled(weights, x + y, x == y, mine)
            if score > best:
                best = score
                actions[j] = b
