"""A move scorer: a small network, shared by every move, that adds to a trained policy's logit
for each tile it can place a score read from the policy's last hidden layer and from what the
move does (the end it leaves, how many tiles of that suit the player keeps and has not seen,
whether an opponent has shown a void in it, the other end, the tile's pips).

A plain policy network reads a position and writes 57 logits at once, so what it learns of one
tile on one end teaches it nothing of the others. The scorer's weights are the same for every
move, and its inputs name the suit the move leaves open, so what one move teaches carries to
all moves that leave the same situation. It is fitted to a search teacher's decisions on top
of a frozen network (``block-dominoes score-moves``) and saved beside it in the agent folder
(``move_scorer.npz``; agent.json's ``move_scorer``), and :class:`~block_env.agents.policy.
PolicyAgent` adds its scores to the network's logits. Only the moves a seat can make (a tile
it holds on an end showing one of its suits; at the opening, any tile it holds, on the left)
are scored: the others are never legal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from block_env.observations import layout_for
from block_env.rules import Rules

#: The file beside policy.pth that holds a move scorer's weights.
MOVE_SCORER_WEIGHTS = "move_scorer.npz"
#: agent.json's key naming a move scorer: ``{"hidden": units}``.
MOVE_SCORER = "move_scorer"
#: The encodings a move scorer reads (it needs the hand, the tiles played, the voids and the ends).
SCORED_ENCODINGS = ("vector", "tracked")
_WEIGHT_NAMES = ("hidden_weight", "move_weight", "bias", "out_weight", "out_bias")


def suits_of_tiles(rules: Rules) -> np.ndarray:
    """(T, S) float32: how many times each tile shows each suit (a double shows its suit twice)."""
    tiles = rules.tile_set.tiles
    counts = np.zeros((len(tiles), rules.tile_set.num_suits), dtype=np.float32)
    for index, (low, high) in enumerate(tiles):
        counts[index, low] += 1
        counts[index, high] += 1
    return counts


def move_feature_size(rules: Rules) -> int:
    """How many features :func:`scored_moves` gives each move."""
    suits, others = rules.tile_set.num_suits, rules.num_players - 1
    return 2 * suits + 2 * (2 + others) + 2 + rules.tile_set.num_tiles


def check_scored_encoding(observation: str, where: str) -> None:
    """ValueError, led by ``where``, for an encoding a move scorer cannot read."""
    if observation not in SCORED_ENCODINGS:
        raise ValueError(
            f"{where}: a move scorer reads the {' or '.join(map(repr, SCORED_ENCODINGS))} encoding "
            f"(the hand, the tiles played, the voids and the ends), not {observation!r}"
        )


def scored_moves(rules: Rules, observation: str, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The moves of (k, size) observations a scorer scores, and their features.

    The moves: (m, 3) int64 rows of (observation row, tile, end), every tile the observer holds
    on every end showing one of its suits, and at the opening (no ends yet) every tile it holds
    on the left end: a superset of the legal moves. The features: (m, F) float32
    (:func:`move_feature_size`), in order: the end the move leaves (one-hot by suit; a double
    leaves its suit, and at the opening the tile's suits are counted), the other end (one-hot);
    for each of the two, how often its suit shows on the tiles the player keeps after the move
    and on those it has not seen (neither held nor played; a double counts twice), and whether
    each other seat has shown a void in it; whether both ends show one suit; the tile's pips over
    the most a tile has; the tile, one-hot."""
    layout = layout_for(rules, observation)
    rows = np.ascontiguousarray(np.atleast_2d(observations), dtype=np.float32)
    starts = np.array([layout.slices[name].start for name in ("hand", "played", "voids", "ends")], dtype=np.int64)
    return _scored_moves(rows, starts, _suit_table(rules), rules.num_players, float(2 * rules.tile_set.max_pip))


def logit_positions(rows: np.ndarray, moves: np.ndarray, num_actions: int) -> np.ndarray:
    """Flat indices into (k, ``num_actions``) logits of scored ``moves`` (:func:`scored_moves`'
    rows of (row, tile, end)) placed in logit rows ``rows``: action ``2 * tile + end``."""
    return rows * num_actions + 2 * moves[:, 1] + moves[:, 2]


@functools.cache
def _suit_table(rules: Rules) -> np.ndarray:
    counts = suits_of_tiles(rules).astype(np.int64)
    counts.flags.writeable = False
    return counts


@njit(cache=True, nogil=True)
def _scored_moves(
    rows: np.ndarray, starts: np.ndarray, suits: np.ndarray, players: int, most_pips: float
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    hand_at, played_at, voids_at, ends_at = starts[0], starts[1], starts[2], starts[3]
    tiles, suit_count = suits.shape
    size = 2 * suit_count + 2 * (2 + players - 1) + 2 + tiles
    total = 0
    for k in range(rows.shape[0]):  # how many moves, to size the arrays once
        for t in range(tiles):
            for e in range(2):
                total += _scored(rows, k, t, e, hand_at, ends_at, suits)
    moves = np.empty((total, 3), dtype=np.int64)
    features = np.zeros((total, size), dtype=np.float32)
    kept = np.zeros(suit_count, dtype=np.float32)
    unseen = np.zeros(suit_count, dtype=np.float32)
    leaves = np.zeros(suit_count, dtype=np.float32)
    m = 0
    for k in range(rows.shape[0]):
        kept[:] = 0.0
        unseen[:] = 0.0
        for t in range(tiles):
            held = rows[k, hand_at + t]
            out = 1.0 - held - rows[k, played_at + t]
            for v in range(suit_count):
                kept[v] += held * suits[t, v]
                unseen[v] += out * suits[t, v]
        for t in range(tiles):
            for e in range(2):
                if not _scored(rows, k, t, e, hand_at, ends_at, suits):
                    continue
                moves[m, 0], moves[m, 1], moves[m, 2] = k, t, e
                this_end = ends_at + e * suit_count
                other_end = ends_at + (1 - e) * suit_count
                pips = 0.0
                for v in range(suit_count):
                    leaves[v] = max(suits[t, v] - rows[k, this_end + v], 0.0)
                    features[m, v] = leaves[v]
                    features[m, suit_count + v] = rows[k, other_end + v]
                    pips += suits[t, v] * v
                at = 2 * suit_count
                for side in range(2):  # the end the move leaves, then the other end (one-hot by suit)
                    end = features[m, side * suit_count : (side + 1) * suit_count]
                    mine = 0.0
                    hidden = 0.0
                    for v in range(suit_count):
                        mine += end[v] * (kept[v] - suits[t, v])
                        hidden += end[v] * unseen[v]
                    features[m, at] = mine
                    features[m, at + 1] = hidden
                    for r in range(1, players):
                        void = 0.0
                        for v in range(suit_count):
                            void += end[v] * rows[k, voids_at + r * suit_count + v]
                        features[m, at + 1 + r] = void
                    at += 2 + players - 1
                both = 0.0
                for v in range(suit_count):
                    both += leaves[v] * rows[k, other_end + v]
                features[m, at] = both
                features[m, at + 1] = pips / most_pips
                features[m, at + 2 + t] = 1.0
                m += 1
    return moves, features


@njit(cache=True, nogil=True)
def _scored(
    rows: np.ndarray, k: int, t: int, e: int, hand_at: int, ends_at: int, suits: np.ndarray
) -> bool:  # pragma: no cover - compiled
    """Whether row ``k``'s observer can place tile ``t`` on end ``e``: it holds the tile, and the
    end shows one of its suits or (the opening: no ends yet) the end is the left one."""
    if rows[k, hand_at + t] <= 0.5:
        return False
    suit_count = suits.shape[1]
    opening = True
    for v in range(2 * suit_count):
        if rows[k, ends_at + v] > 0.5:
            opening = False
    if opening:
        return e == 0
    for v in range(suit_count):
        if suits[t, v] > 0 and rows[k, ends_at + e * suit_count + v] > 0.5:
            return True
    return False


@dataclass(frozen=True)
class MoveScorer:
    """A fitted move scorer's weights: ``tanh(hidden @ hidden_weight + features @ move_weight +
    bias) @ out_weight + out_bias`` is a move's score, added to its logit."""

    hidden_weight: np.ndarray
    move_weight: np.ndarray
    bias: np.ndarray
    out_weight: np.ndarray
    out_bias: np.ndarray

    @property
    def units(self) -> int:
        """The scorer's hidden units."""
        return int(self.bias.shape[0])

    def scores(
        self, rules: Rules, observation: str, observations: np.ndarray, last_hidden: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The scored moves' flat indices into (k, actions) logits and their scores, for (k, size)
        observations whose policy's last hidden layer is ``last_hidden`` (k, H)."""
        moves, features = scored_moves(rules, observation, observations)
        per_row = last_hidden @ self.hidden_weight  # once per position, not per move
        inner = np.tanh(per_row[moves[:, 0]] + features @ self.move_weight + self.bias)
        return logit_positions(moves[:, 0], moves, rules.tile_set.num_actions), inner @ self.out_weight + self.out_bias

    def save(self, folder: Path) -> None:
        np.savez(
            folder / MOVE_SCORER_WEIGHTS,
            hidden_weight=self.hidden_weight,
            move_weight=self.move_weight,
            bias=self.bias,
            out_weight=self.out_weight,
            out_bias=self.out_bias,
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in _WEIGHT_NAMES}


def check_scorer_shapes(arrays: dict[str, np.ndarray], rules: Rules, hidden_layer: int, units: int, where: str) -> None:
    """ValueError, led by ``where``, unless ``arrays`` are a scorer of ``units`` for a policy whose
    last hidden layer has ``hidden_layer`` units, under ``rules``."""
    shapes = {
        "hidden_weight": (hidden_layer, units),
        "move_weight": (move_feature_size(rules), units),
        "bias": (units,),
        "out_weight": (units,),
        "out_bias": (),
    }
    for name, shape in shapes.items():
        got = np.shape(arrays[name]) if name in arrays else "nothing"
        if got != shape:
            raise ValueError(f"{where}: the move scorer's {name} must have shape {shape}, got {got}")


def load_move_scorer(folder: str | Path, rules: Rules, hidden_layer: int, units: int) -> MoveScorer:
    """The move scorer saved in an agent folder, for a policy whose last hidden layer has
    ``hidden_layer`` units and a scorer of ``units`` (agent.json's); ValueError naming the file
    when it is missing, not plain arrays, or not of those shapes."""
    path = Path(folder) / MOVE_SCORER_WEIGHTS
    try:
        with np.load(path, allow_pickle=False) as saved:
            arrays = {name: np.asarray(saved[name], dtype=np.float32) for name in _WEIGHT_NAMES if name in saved}
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: agent.json names a move scorer") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a move scorer's weights: {e}") from None
    check_scorer_shapes(arrays, rules, hidden_layer, units, str(path))
    return MoveScorer(**arrays)
