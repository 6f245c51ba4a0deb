"""Observation encodings as named pieces over one flat float32 buffer.

Following OpenSpiel's observer idea, each encoding is a :class:`Layout`: a table of
:class:`Piece` (name, shape, bound, meaning) laid end to end. The same table documents the
encoding (``block-dominoes encodings`` prints it), builds the Box bounds, and drives
:func:`decode_observation`. numpy (and numba for the batched writers): no PettingZoo or
Gymnasium here.

Player observations are seat-relative: relative seat 0 is the observer, 1 the next seat
clockwise, and so on; relative side 0 is the observer's side. They hold only the
observer's own hand plus public facts (the line, tiles played, hand counts, voids shown by
passes, scores), so no hidden tile can leak. ``state`` is the full-information encoding
for centralised critics, in absolute seats.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import numpy as np
from numba import njit

from block_env.batched import PLAYED, BatchedGames, ends_after_move, mask_bits
from block_env.engine import PublicView, Round
from block_env.options import ENCODINGS
from block_env.rules import Rules, resolve_rules
from block_env.tiles import bit_indices, replay_ends
from block_env.validation import check_choice

#: How a piece is stored: "bits" pieces are 0/1 and come first in a player encoding (the
#: whole prefix is built as one Python int and unpacked in one numpy call: the hot path);
#: "number" pieces are the numeric tail.
BITS, NUMBER = "bits", "number"


@dataclass(frozen=True)
class Piece:
    """One named block of an encoding: ``shape`` values in [0, high], stored as ``kind``.

    ``columns`` names the parts of each row of a 2-D piece (the history's move rows).
    """

    name: str
    shape: tuple[int, ...]
    high: float
    meaning: str
    kind: str = BITS
    columns: Layout | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))


@dataclass(frozen=True)
class Layout:
    """Pieces laid end to end over one flat float32 vector."""

    name: str
    pieces: tuple[Piece, ...]
    slices: dict[str, slice] = field(init=False, repr=False)
    size: int = field(init=False)

    def __post_init__(self) -> None:
        slices = {}
        start = 0
        for p in self.pieces:
            if p.name in slices:
                raise ValueError(f"layout {self.name!r} has two pieces named {p.name!r}")
            slices[p.name] = slice(start, start + p.size)
            start += p.size
        object.__setattr__(self, "slices", slices)
        object.__setattr__(self, "size", start)

    def offset(self, name: str) -> int:
        return self.slices[name].start

    @property
    def num_bits(self) -> int:
        """Size of the leading "bits" pieces (ValueError if a bits piece follows a number)."""
        kinds = [p.kind for p in self.pieces]
        bits = kinds.index(NUMBER) if NUMBER in kinds else len(kinds)
        if BITS in kinds[bits:]:
            raise ValueError(f"layout {self.name!r}: every bits piece must come before the number pieces")
        return sum(p.size for p in self.pieces[:bits])

    def columns_in(self, target: Layout) -> np.ndarray:
        """For each column of this layout, its column in ``target`` (the piece of the same name
        and shape); ValueError naming a piece ``target`` lacks. How a network's first layer is
        carried to a wider input: "vector" into "tracked", an observation into a critic's
        input with the hidden hands."""
        columns = []
        for piece in self.pieces:
            match = next((p for p in target.pieces if p.name == piece.name), None)
            if match is None or match.shape != piece.shape:
                raise ValueError(f"the {target.name!r} encoding has no piece {piece.name!r} of shape {piece.shape}")
            columns.append(np.arange(target.slices[piece.name].start, target.slices[piece.name].stop))
        return np.concatenate(columns)

    @cached_property
    def mirror_columns(self) -> np.ndarray:
        """The column order that mirrors an observation: ``obs[..., layout.mirror_columns]`` is
        the same position with the line's left and right ends swapped (the rows of ``ends``);
        every other piece of "vector" and "tracked" reads the same either way round. With
        :attr:`~block_env.tiles.TileSet.mirror_actions` it shows a policy the same decision
        mirrored (read-only). ValueError for a layout without an ``ends`` piece ("history",
        whose move rows imply the opening's ends, so a mirrored line cannot be written)."""
        if "ends" not in self.slices:
            raise ValueError(f"the {self.name!r} layout has no ends piece to mirror")
        columns = np.arange(self.size)
        ends = columns[self.slices["ends"]].reshape(2, -1)
        ends[:] = ends[::-1].copy()
        columns.flags.writeable = False
        return columns

    def views(self, buffer: np.ndarray) -> dict[str, np.ndarray]:
        """Named, reshaped views into ``buffer`` (writes go through)."""
        if buffer.shape != (self.size,):
            raise ValueError(
                f"a {self.name!r} observation for these rules has shape ({self.size},), got {buffer.shape}"
            )
        return {p.name: buffer[self.slices[p.name]].reshape(p.shape) for p in self.pieces}

    def high(self) -> np.ndarray:
        return np.concatenate([np.full(p.size, p.high, dtype=np.float32) for p in self.pieces])

    @cached_property
    def bounds(self) -> np.ndarray:
        """Every value's upper bound (read-only; :meth:`high` gives a fresh copy)."""
        high = self.high()
        high.flags.writeable = False
        return high

    def markdown(self) -> str:
        rows = ["| piece | offset | shape | range | meaning |", "|---|---|---|---|---|"]
        for p in self.pieces:
            s = self.slices[p.name]
            high = int(p.high) if float(p.high).is_integer() else round(p.high, 3)
            rows.append(f"| `{p.name}` | {s.start} | {p.shape} | 0..{high} | {p.meaning} |")
        rows.append(f"| total | | ({self.size},) | | |")
        return "\n".join(rows)


def max_moves(rules: Rules) -> int:
    """An upper bound on moves in one round: between placements at most n-1 passes, and a
    block ends on the n-th; at most T placements (docs/rules.md, round end)."""
    return rules.num_players * (rules.tile_set.num_tiles + 1)


def _max_score_fraction(rules: Rules) -> float:
    # Highest score reachable: just under the target plus the largest possible award
    # (every pip of the set, doubled by club scoring).
    target = rules.resolved_target
    return float(target - 1 + 2 * rules.tile_set.total_pips) / target


# Binary pieces come first in each player encoding so that an observation's whole 0/1
# prefix is built as one Python int and unpacked in a single numpy call (the hot path).


@cache
def vector_layout(rules: Rules) -> Layout:
    """The default "vector" encoding for ``rules``."""
    t = rules.tile_set.num_tiles
    s = rules.tile_set.num_suits
    n = rules.num_players
    return Layout(
        "vector",
        (
            Piece("hand", (t,), 1, "1 where the observer holds tile i (canonical tile order)"),
            Piece("played", (t,), 1, "1 where tile i is in the line"),
            Piece("opening", (t,), 1, "one-hot tile the leader opened the line with; zeros before the opening"),
            Piece("voids", (n, s), 1, "1 where a relative seat has shown by passing that it lacks a suit"),
            Piece(
                "ends", (2, s), 1, "one-hot value of the left (row 0) and right (row 1) end; zeros before the opening"
            ),
            Piece("to_play", (n,), 1, "one-hot relative seat to move; zeros once the round is over"),
            Piece("leader", (n,), 1, "one-hot relative seat that led this round"),
            Piece("hand_counts", (n,), t, "tiles held by each relative seat (0 = observer)", NUMBER),
            Piece("passes", (1,), n, "consecutive passes since the last tile was placed", NUMBER),
            Piece(
                "scores",
                (rules.num_sides,),
                _max_score_fraction(rules),
                "match score / target per relative side (0 = observer's)",
                NUMBER,
            ),
        ),
    )


def _tracking_pieces(rules: Rules) -> tuple[Piece, ...]:
    """The "tracked" encoding's pieces beyond the vector's: who placed which tile, facing what."""
    t = rules.tile_set.num_tiles
    s = rules.tile_set.num_suits
    n = rules.num_players
    return (
        Piece("placed", (n, t), 1, "1 where relative seat r placed tile i this round"),
        Piece(
            "placed_facing",
            (n, t, s),
            1,
            "1 where relative seat r placed tile i while an end of the line showed suit v (what it chose "
            "that tile over); zeros for the opening tile",
        ),
    )


@cache
def tracked_layout(rules: Rules) -> Layout:
    """The "tracked" encoding: the vector encoding plus, for each seat, the tiles it placed
    and the ends each was placed against (what its choices say about its hand), fixed-size
    for feed-forward networks. The new pieces come before the vector's number pieces."""
    vector = vector_layout(rules).pieces
    numbers = next(i for i, p in enumerate(vector) if p.kind == NUMBER)
    return Layout("tracked", (*vector[:numbers], *_tracking_pieces(rules), *vector[numbers:]))


@cache
def history_layout(rules: Rules) -> Layout:
    """The "history" encoding: own hand plus the public move sequence, for sequence models."""
    t = rules.tile_set.num_tiles
    n = rules.num_players
    row = move_row_layout(rules)
    return Layout(
        "history",
        (
            Piece("hand", (t,), 1, "1 where the observer holds tile i"),
            Piece("to_play", (n,), 1, "one-hot relative seat to move; zeros once the round is over"),
            Piece(
                "moves",
                (max_moves(rules), row.size),
                1,
                "one row per move this round, oldest first: one-hot relative seat (n), one-hot tile (T), "
                "pass flag, placed on left end, placed on right end; unused rows are zero",
                columns=row,
            ),
            Piece("hand_counts", (n,), t, "tiles held by each relative seat (0 = observer)", NUMBER),
            Piece(
                "scores",
                (rules.num_sides,),
                _max_score_fraction(rules),
                "match score / target per relative side",
                NUMBER,
            ),
            Piece("num_moves", (1,), max_moves(rules), "moves so far this round (rows of `moves` in use)", NUMBER),
        ),
    )


@cache
def move_row_layout(rules: Rules) -> Layout:
    """The columns of one row of the history's ``moves`` piece."""
    return Layout(
        "move",
        (
            Piece("seat", (rules.num_players,), 1, "one-hot relative seat that moved"),
            Piece("tile", (rules.tile_set.num_tiles,), 1, "one-hot tile placed"),
            Piece("pass", (1,), 1, "1 for a pass"),
            Piece("on_left", (1,), 1, "1 if placed on the left end"),
            Piece("on_right", (1,), 1, "1 if placed on the right end"),
        ),
    )


@cache
def state_layout(rules: Rules) -> Layout:
    """The full-information ``state()`` encoding for centralised critics (absolute seats)."""
    t = rules.tile_set.num_tiles
    s = rules.tile_set.num_suits
    n = rules.num_players
    return Layout(
        "state",
        (
            Piece("hands", (n, t), 1, "1 where seat k holds tile i"),
            Piece("ends", (2, s), 1, "one-hot left/right end values; zeros before the opening"),
            Piece("played", (t,), 1, "1 where tile i is in the line"),
            Piece("to_play", (n,), 1, "one-hot seat to move; zeros once the round is over"),
            Piece("leader", (n,), 1, "one-hot seat that led this round"),
            Piece("voids", (n, s), 1, "suits each seat has shown it lacks"),
            Piece("passes", (1,), n, "consecutive passes since the last placement"),
            Piece("scores", (rules.num_sides,), _max_score_fraction(rules), "match score / target per side"),
        ),
    )


@cache
def privileged_layout(rules: Rules, observation: str) -> Layout:
    """A player encoding followed by what that player cannot see: the input of an asymmetric
    critic during training (PerfectDou's idea), never an agent's observation. Only the batched
    encoder writes it (:func:`encode_hidden` is the scalar ``hidden_hands``)."""
    t = rules.tile_set.num_tiles
    base = layout_for(rules, observation)
    hidden = Piece(
        "hidden_hands",
        (rules.num_players - 1, t),
        1,
        "1 where relative seat r + 1 holds tile i: the other seats' hands, hidden from the observer",
    )
    return Layout(f"{observation}+hidden", (*base.pieces, hidden))


def layout_for(rules: Rules, observation: str) -> Layout:
    check_choice("observation", observation, ENCODINGS)
    return {"vector": vector_layout, "history": history_layout, "tracked": tracked_layout}[observation](rules)


def _set_bits(row: np.ndarray, mask: int) -> None:
    for i in bit_indices(mask):
        row[i] = 1.0


class Encoder:
    """Encodes rounds for one player layout; every offset comes from the layout's pieces.

    Each piece is filled by the writer of its name: a bits writer returns the piece's bits as
    an int (bit k = element k of the flattened piece), a number writer its values. Adding a
    piece is a layout entry plus a writer (``writers`` extends or replaces the built-in ones).
    """

    def __init__(self, rules: Rules, layout: Layout, writers: dict[str, Any] | None = None) -> None:
        self.layout = layout
        self.rules = rules
        self.num_tiles = rules.tile_set.num_tiles
        self.num_suits = rules.tile_set.num_suits
        self.num_players = rules.num_players
        self.num_sides = rules.num_sides
        self.target = rules.resolved_target
        self.pass_action = rules.tile_set.pass_action
        n = self.num_players
        # Seat-relative orders: _seats[seat][r] = (seat + r) % n; _sides likewise for sides.
        self._seats = [operator.itemgetter(*[(seat + r) % n for r in range(n)]) for seat in range(n)]
        self._sides = [[(rules.side_of(seat) + r) % self.num_sides for r in range(self.num_sides)] for seat in range(n)]
        self.num_bits = layout.num_bits
        known = {**WRITERS, **(writers or {})}
        missing = [p.name for p in layout.pieces if p.name not in known]
        if missing:
            raise ValueError(f"no writer for piece(s) {missing} of layout {layout.name!r}")
        self._bit_writers = [(layout.offset(p.name), known[p.name], p) for p in layout.pieces if p.kind == BITS]
        self._number_writers = [known[p.name] for p in layout.pieces if p.kind == NUMBER]

    def __call__(self, rnd: Round, seat: int, scores: Sequence[int], out: np.ndarray | None = None) -> np.ndarray:
        buf = np.empty(self.layout.size, dtype=np.float32) if out is None else out
        bits = 0
        for offset, write, piece in self._bit_writers:
            bits |= write(self, rnd, seat, piece) << offset
        buf[: self.num_bits] = mask_bits(bits, self.num_bits)
        tail: list[float] = []
        for write in self._number_writers:
            tail += write(self, rnd, seat, scores)
        buf[self.num_bits :] = tail
        return buf


# -- piece writers (scalar): enc, round, observing seat, piece -> bits; or -> values ----------


def _hand(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    return rnd.hands[seat]


def _played(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    return rnd.played


def _opening(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    return 1 << (rnd.moves[0][1] >> 1) if rnd.moves else 0  # the leader always opens


def _voids(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    width = piece.shape[1]
    bits = 0
    for r, void in enumerate(enc._seats[seat](rnd.voids)):
        bits |= void << (r * width)
    return bits


def _ends(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    return 1 << rnd.left | 1 << (piece.shape[1] + rnd.right) if rnd.left >= 0 else 0


def _to_play(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    return 1 << ((rnd.current - seat) % enc.num_players) if rnd.result is None else 0


def _leader(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    return 1 << ((rnd.leader - seat) % enc.num_players)


def _moves(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    cols = piece.columns
    assert cols is not None
    n, width, pass_action = enc.num_players, cols.size, enc.pass_action
    tile_at, pass_at, left_at = cols.offset("tile"), cols.offset("pass"), cols.offset("on_left")
    seat_at = cols.offset("seat")
    bits = 0
    row = 0
    for mover, action in rnd.moves:
        bits |= 1 << (row + seat_at + (mover - seat) % n)
        if action == pass_action:
            bits |= 1 << (row + pass_at)
        else:
            bits |= 1 << (row + tile_at + (action >> 1)) | 1 << (row + left_at + (action & 1))
        row += width
    return bits


def _placed(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    n, t = enc.num_players, enc.num_tiles
    bits = 0
    for mover, action in rnd.moves:
        if action != enc.pass_action:
            bits |= 1 << ((mover - seat) % n * t + (action >> 1))
    return bits


def _placed_facing(enc: Encoder, rnd: Round, seat: int, piece: Piece) -> int:
    n, t, s = enc.num_players, enc.num_tiles, enc.num_suits
    bits = 0
    for mover, action, ends, _ in replay_ends(enc.rules.tile_set, rnd.moves):
        if action != enc.pass_action and ends is not None:  # the opening faced no ends
            row = ((mover - seat) % n * t + (action >> 1)) * s
            bits |= 1 << (row + ends[0]) | 1 << (row + ends[1])
    return bits


def _hand_counts(enc: Encoder, rnd: Round, seat: int, scores: Sequence[int]) -> list[float]:
    return list(enc._seats[seat](rnd.counts))


def _passes(enc: Encoder, rnd: Round, seat: int, scores: Sequence[int]) -> list[float]:
    return [rnd.passes]


def _scores(enc: Encoder, rnd: Round, seat: int, scores: Sequence[int]) -> list[float]:
    return [scores[side] / enc.target for side in enc._sides[seat]]


def _num_moves(enc: Encoder, rnd: Round, seat: int, scores: Sequence[int]) -> list[float]:
    return [len(rnd.moves)]


#: The built-in writers of the player encodings' pieces, by piece name.
WRITERS: dict[str, Any] = {
    "hand": _hand,
    "played": _played,
    "opening": _opening,
    "voids": _voids,
    "ends": _ends,
    "to_play": _to_play,
    "leader": _leader,
    "moves": _moves,
    "placed": _placed,
    "placed_facing": _placed_facing,
    "hand_counts": _hand_counts,
    "passes": _passes,
    "scores": _scores,
    "num_moves": _num_moves,
}


class BatchEncoder:
    """Encodes many games of a :class:`block_env.batched.BatchedGames` in one call, each from
    one observing seat: the same vectors as :class:`Encoder` (a test checks), at the offsets
    of the same layout. Every built-in piece is written by one compiled pass that fills each
    observation row once (the offsets come from the layout, so any arrangement of built-in
    pieces works); ``writers`` adds pieces (or replaces built-in ones), each called as
    ``write(encoder, games, g, seats, out_slice, piece)`` after that pass."""

    def __init__(self, rules: Rules, layout: Layout, writers: dict[str, Any] | None = None) -> None:
        self.layout = layout
        self.rules = rules
        writers = {**BATCH_WRITERS, **(writers or {})}
        missing = [p.name for p in layout.pieces if p.name not in COMPILED_PIECES and p.name not in writers]
        if missing:
            raise ValueError(f"no batched writer for piece(s) {missing} of layout {layout.name!r}")
        compiled = {p.name for p in layout.pieces if p.name not in writers}
        # at[i]: offset of COMPILED_PIECES[i] in a row, -1 when the layout lacks it.
        self._at = np.array([layout.offset(name) if name in compiled else -1 for name in COMPILED_PIECES])
        moves = next((p for p in layout.pieces if p.name == "moves"), None)
        columns = moves.columns if moves is not None and moves.columns is not None else move_row_layout(rules)
        self._move_columns = np.array(
            [
                columns.size,
                columns.offset("seat"),
                columns.offset("pass"),
                columns.offset("tile"),
                columns.offset("on_left"),
            ]
        )
        self._side_of = np.array([rules.side_of(s) for s in range(rules.num_players)], dtype=np.int64)
        self._custom = [(layout.slices[p.name], writers[p.name], p) for p in layout.pieces if p.name in writers]

    def __call__(self, games: BatchedGames, g: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """(len(g), size) float32: game ``g[j]`` as seat ``seats[j]`` observes it."""
        out = np.empty((len(g), self.layout.size), dtype=np.float32)
        if not len(g):
            return out
        g = np.asarray(g, dtype=np.int64)
        seats = np.asarray(seats, dtype=np.int64)
        ts = self.rules.tile_set
        _encode_kernel(
            games.owner, games.opening, games.voids, games.left, games.right, games.current, games.over,
            games.leader, games.counts, games.passes, games.scores, games.moves, games.move_seats,
            games.num_moves, g, seats, self._side_of, ts.num_suits, float(self.rules.resolved_target),
            ts.pass_action, self._at, self._move_columns, out,
        )  # fmt: skip
        for sl, write, piece in self._custom:
            write(self, games, g, seats, out[:, sl], piece)
        return out


@njit(inline="always")
def _wrap(value, size):  # pragma: no cover - compiled
    """value % size for 0 <= value < 2 * size, without a division."""
    return value - size if value >= size else value


def _batch_tracking(
    encoder: BatchEncoder, games: BatchedGames, g: np.ndarray, seats: np.ndarray, out: np.ndarray, piece: Piece
) -> None:
    """The "tracked" pieces (``placed``, ``placed_facing``) of each row, from the games' move records."""
    ts = encoder.rules.tile_set
    tiles = np.array(ts.tiles, dtype=np.int64)
    _tracking_kernel(
        games.moves, games.move_seats, games.num_moves, g, seats, tiles, ts.num_suits, ts.pass_action,
        piece.name == "placed_facing", out,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _tracking_kernel(
    moves, move_seats, num_moves, g, seats, tiles, num_suits, pass_action, facing, out
):  # pragma: no cover - compiled
    num_tiles = tiles.shape[0]
    num_players = out.shape[1] // (num_tiles * num_suits) if facing else out.shape[1] // num_tiles
    out[:] = 0.0
    for j in range(g.shape[0]):
        game = g[j]
        left = -1
        right = -1
        for k in range(num_moves[game]):
            action = moves[game, k]
            if action == pass_action:
                continue
            tile = action >> 1
            row = (move_seats[game, k] - seats[j] + num_players) % num_players * num_tiles + tile
            x = tiles[tile, 0]
            y = tiles[tile, 1]
            if left < 0:
                left = x
                right = y
                if not facing:
                    out[j, row] = 1.0
                continue
            if facing:
                out[j, row * num_suits + left] = 1.0
                out[j, row * num_suits + right] = 1.0
            else:
                out[j, row] = 1.0
            left, right = ends_after_move(left, right, x, y, action)


#: Batched writers of built-in pieces outside the compiled pass.
BATCH_WRITERS: dict[str, Any] = {"placed": _batch_tracking, "placed_facing": _batch_tracking}


#: The pieces the compiled batched writer knows, in the order of its offsets (``at``).
COMPILED_PIECES = (
    "hand",
    "played",
    "opening",
    "voids",
    "ends",
    "to_play",
    "leader",
    "moves",
    "hand_counts",
    "passes",
    "scores",
    "num_moves",
    "hidden_hands",
)


@njit(cache=True, nogil=True)
def _encode_kernel(  # pragma: no cover - compiled
    owner, opening, voids, left, right, current, over, leader, counts, passes, scores, moves, move_seats,
    num_moves, g, seats, side_of, num_suits, target, pass_action, at, move_columns, out,
):  # fmt: skip
    """Row j of ``out`` = game g[j] as seat seats[j] observes it: the row is zeroed and every
    built-in piece written at its offset at[i] (skipped when -1) in one pass, so each row is
    touched once while it sits in cache (ten per-piece passes over a strided (N, size) array
    each pulled every row back from memory). Same meaning as the scalar writers above."""
    num_tiles = owner.shape[1]
    num_players = counts.shape[1]
    num_sides = scores.shape[1]
    width = out.shape[1]
    row_width, seat_col, pass_col, tile_col, end_col = move_columns
    # Offsets in locals: numba's stores into `out` may alias any array, so reading at[i] in
    # the loops would reload it on every store and keep LLVM from vectorising them.
    hand, played, opened, voided, ends, to_play, led, history, held, passed, scored, moved, hidden = at
    for j in range(len(g)):
        k, seat = g[j], seats[j]
        for c in range(width):
            out[j, c] = 0.0
        if hand >= 0:
            for i in range(num_tiles):
                out[j, hand + i] = owner[k, i] == seat
        if played >= 0:
            for i in range(num_tiles):
                out[j, played + i] = owner[k, i] == PLAYED
        if opened >= 0 and opening[k] >= 0:
            out[j, opened + opening[k]] = 1.0
        if voided >= 0:  # per relative seat
            for r in range(num_players):
                shown = voids[k, _wrap(seat + r, num_players)]
                for v in range(num_suits):
                    out[j, voided + r * num_suits + v] = (shown >> v) & 1
        if ends >= 0 and left[k] >= 0:
            out[j, ends + left[k]] = 1.0
            out[j, ends + num_suits + right[k]] = 1.0
        if to_play >= 0 and not over[k]:
            out[j, to_play + _wrap(current[k] - seat + num_players, num_players)] = 1.0
        if led >= 0:
            out[j, led + _wrap(leader[k] - seat + num_players, num_players)] = 1.0
        if history >= 0:  # one row per move, the mover relative to the observer
            for m in range(num_moves[k]):
                base = history + m * row_width
                action = moves[k, m]
                out[j, base + seat_col + _wrap(move_seats[k, m] - seat + num_players, num_players)] = 1.0
                if action == pass_action:
                    out[j, base + pass_col] = 1.0
                else:
                    out[j, base + tile_col + (action >> 1)] = 1.0
                    out[j, base + end_col + (action & 1)] = 1.0
        if held >= 0:  # per relative seat
            for r in range(num_players):
                out[j, held + r] = counts[k, _wrap(seat + r, num_players)]
        if passed >= 0:
            out[j, passed] = passes[k]
        if scored >= 0:  # / target, per relative side
            first = side_of[seat]
            for r in range(num_sides):
                out[j, scored + r] = scores[k, _wrap(first + r, num_sides)] / target
        if moved >= 0:
            out[j, moved] = num_moves[k]
        if hidden >= 0:  # every other seat's tiles, at its relative seat's row
            for i in range(num_tiles):
                o = owner[k, i]
                if o >= 0 and o != seat:
                    out[j, hidden + (_wrap(o - seat + num_players, num_players) - 1) * num_tiles + i] = 1.0


@cache
def batch_encoder(rules: Rules, observation: str) -> BatchEncoder:
    return BatchEncoder(rules, layout_for(rules, observation))


@cache
def encoder(rules: Rules, observation: str) -> Encoder:
    return Encoder(rules, layout_for(rules, observation))


def encode(observation: str, rnd: Round, seat: int, scores: Sequence[int], out: np.ndarray | None = None) -> np.ndarray:
    """Encode what ``seat`` observes of ``rnd`` (plus match ``scores`` per side)."""
    return encoder(rnd.rules, observation)(rnd, seat, scores, out)


def encode_state(rnd: Round, scores: Sequence[int]) -> np.ndarray:
    """The full-information state (every hand), absolute seats."""
    rules = rnd.rules
    layout = state_layout(rules)
    buf = np.zeros(layout.size, dtype=np.float32)
    v = layout.views(buf)
    for seat in range(rules.num_players):
        _set_bits(v["hands"][seat], rnd.hands[seat])
        _set_bits(v["voids"][seat], rnd.voids[seat])
    if rnd.left >= 0:
        v["ends"][0, rnd.left] = 1.0
        v["ends"][1, rnd.right] = 1.0
    _set_bits(v["played"], rnd.played)
    if rnd.result is None:
        v["to_play"][rnd.current] = 1.0
    v["leader"][rnd.leader] = 1.0
    v["passes"][0] = rnd.passes
    v["scores"][:] = [x / rules.resolved_target for x in scores]
    return buf


def encode_hidden(rnd: Round, seat: int) -> np.ndarray:
    """The ``hidden_hands`` piece of :func:`privileged_layout`: every other seat's hand in
    relative order, flattened (float32, (n - 1) * T)."""
    n, t = rnd.rules.num_players, rnd.rules.tile_set.num_tiles
    bits = 0
    for r in range(1, n):
        bits |= rnd.hands[(seat + r) % n] << ((r - 1) * t)
    return mask_bits(bits, (n - 1) * t).astype(np.float32)


def _tiles_where(rules: Rules, row: np.ndarray) -> list[tuple[int, int]]:
    tiles = rules.tile_set.tiles
    return [tiles[i] for i in np.flatnonzero(row > 0.5)]


def _one_hot_index(row: np.ndarray) -> int | None:
    hits = np.flatnonzero(row > 0.5)
    return int(hits[0]) if len(hits) else None


def decode_observation(
    vector: Any, rules: Rules | str | None = None, observation: str = "vector", layout: Layout | None = None
) -> dict[str, Any]:
    """Read an observation vector back into named parts (seat-relative).

    For the default "vector" encoding: ``hand`` (list of (a, b)), ``ends`` (None before the
    opening, else (left, right)), ``played``, ``opening`` (the tile the leader opened with,
    or None), ``to_play`` and ``leader`` (relative seats;
    ``to_play`` None once the round is over), ``hand_counts`` and ``voids`` (per relative
    seat; voids as sorted suit lists), ``passes`` and ``scores`` (per relative side, in
    points). For "tracked": those keys, ``placed`` (per relative seat, the tiles it placed)
    and ``placed_facing`` (per relative seat, (tile, the suits the ends showed) for each tile
    it placed after the opening). For "history": the same keys as "vector", with ``ends``, ``played``, ``opening``,
    ``leader``, ``voids`` and ``passes`` replayed from ``moves`` (a list of (relative seat,
    action id)), which it adds.
    Accepts the observation dict from the env too (its "observation" entry is read), and
    ``rules`` as a Rules, a preset name or None (the default rules).
    ``layout`` reads a layout other than the built-in one for ``observation`` (same pieces
    by name, possibly more of them or in another order).

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> parts = decode_observation(env.observe("player_0"), "standard")
        >>> len(parts["hand"]), parts["ends"]
        (7, None)
    """
    rules = resolve_rules(rules)
    layout = layout if layout is not None else layout_for(rules, observation)
    v = _checked_views(vector, layout)
    target = rules.resolved_target
    out: dict[str, Any] = {
        "hand": _tiles_where(rules, v["hand"]),
        "to_play": _one_hot_index(v["to_play"]),
        "hand_counts": [int(round(x)) for x in v["hand_counts"]],
        "scores": [int(round(x * target)) for x in v["scores"]],
    }
    if observation != "history":
        out.update(_decode_table(rules, v))
        if observation == "tracked":
            out["placed"] = [_tiles_where(rules, row) for row in v["placed"]]
            tiles = rules.tile_set.tiles
            out["placed_facing"] = [
                [
                    (tiles[i], [int(x) for x in np.flatnonzero(facing[i] > 0.5)])
                    for i in np.flatnonzero(facing.any(axis=1))
                ]
                for facing in v["placed_facing"] > 0.5
            ]
        return out
    out["moves"] = _decode_moves(rules, v)
    out.update(replay_public(rules, out["moves"]))
    if out["leader"] is None:
        out["leader"] = out["to_play"]
    return out


def read_moves(obs: Any, rules: Rules | str | None = None) -> list[tuple[int, int]]:
    """The round's moves so far, oldest first, as (relative seat, action id), read from a
    "history" observation (the env's dict or its vector).

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> first = env.agent_selection
        >>> env.step(int(env.observe(first)["action_mask"].argmax()))
        >>> [seat for seat, action in read_moves(env.observe(env.agent_selection, "history"), "standard")]
        [1]
    """
    rules = resolve_rules(rules)
    return _decode_moves(rules, _checked_views(obs, history_layout(rules)))


def _checked_views(vector: Any, layout: Layout) -> dict[str, np.ndarray]:
    """The layout's named views of ``vector`` (or of an observation dict's "observation"),
    each checked to hold values its piece can hold: ValueError names the first that does not."""
    return layout.views(_checked_buffer(vector, layout))


def _checked_buffer(vector: Any, layout: Layout) -> np.ndarray:
    """``vector`` (or an observation dict's "observation") as a float32 array of the layout's
    shape, every value within its piece's range: ValueError names the first piece that is not."""
    if isinstance(vector, dict):
        if "observation" not in vector:
            raise ValueError(f"an observation dict holds an 'observation' entry; got keys {sorted(map(str, vector))}")
        vector = vector["observation"]
    try:
        with np.errstate(over="ignore"):
            buf = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValueError(
            f"an observation is a flat array of {layout.size} numbers, got {type(vector).__name__}"
        ) from None
    if buf.shape != (layout.size,):
        layout.views(buf)  # ValueError names the expected shape
    # One pass over the whole vector (NaN fails both comparisons); the pieces are searched
    # only to name the one that is out of range.
    if not ((buf >= 0) & (buf <= layout.bounds)).all():
        v = layout.views(buf)
        for piece in layout.pieces:
            values = v[piece.name]
            if not (np.isfinite(values).all() and (values >= 0).all() and (values <= np.float32(piece.high)).all()):
                raise ValueError(
                    f"observation piece {piece.name!r} must hold values in 0..{piece.high:g}; got {values.ravel()[:8].tolist()}"
                )
    return buf


def _decode_table(rules: Rules, v: dict[str, np.ndarray]) -> dict[str, Any]:
    """The "vector" encoding's public pieces: ends, played tiles, opening, leader, voids, passes."""
    left = _one_hot_index(v["ends"][0])
    right = _one_hot_index(v["ends"][1])
    opening = _tiles_where(rules, v["opening"])
    return {
        "ends": None if left is None or right is None else (left, right),
        "played": _tiles_where(rules, v["played"]),
        "opening": opening[0] if opening else None,
        "leader": _one_hot_index(v["leader"]),
        "voids": [[int(s) for s in np.flatnonzero(row > 0.5)] for row in v["voids"]],
        "passes": int(round(float(v["passes"][0]))),
    }


def _decode_moves(rules: Rules, v: dict[str, np.ndarray]) -> list[tuple[int, int]]:
    """The "history" encoding's move rows as (relative seat, action id)."""
    cols = move_row_layout(rules).slices
    moves = []
    for row in v["moves"][: int(round(float(v["num_moves"][0])))]:
        mover = int(np.argmax(row[cols["seat"]]))
        if row[cols["pass"]][0] > 0.5:
            action = rules.tile_set.pass_action
        else:
            action = 2 * int(np.argmax(row[cols["tile"]])) + int(row[cols["on_right"]][0] > 0.5)
        moves.append((mover, action))
    return moves


def read_public_view(obs: dict[str, np.ndarray], rules: Rules | str, observation: str = "vector") -> PublicView:
    """What the observing seat knows, read from its observation dict (any encoding) alone:
    the same :class:`PublicView` that ``Round.public_view`` gives from the engine."""
    rules = resolve_rules(rules)
    if observation != "history":  # "vector", or "tracked" (the vector's pieces and more)
        return _read_vector_view(obs, rules, layout_for(rules, observation))
    d = decode_observation(obs["observation"], rules, observation=observation)
    ts = rules.tile_set
    return PublicView(
        rules=rules,
        hand=ts.mask_of(d["hand"]),
        ends=d["ends"],
        played=ts.mask_of(d["played"]),
        opening=None if d["opening"] is None else ts.tile_index(d["opening"]),
        leader=d["leader"] or 0,
        to_play=d["to_play"],
        hand_counts=tuple(d["hand_counts"]),
        voids=tuple(sum(1 << v for v in row) for row in d["voids"]),
        passes=d["passes"],
        scores=tuple(d["scores"]),
        legal=tuple(int(a) for a in np.flatnonzero(obs["action_mask"])),
    )


@cache
def _vector_view_fields(rules: Rules, observation: str) -> tuple[int, dict[str, tuple[int, int]], dict[str, slice]]:
    """Where :func:`_read_vector_view` finds the vector encoding's pieces in ``observation``'s
    layout: how many leading values hold every 0/1 piece it reads, each such piece's (offset,
    width) among them (a row of voids or ends is a piece of its own), and the number pieces'
    slices."""
    layout = layout_for(rules, observation)
    s = rules.tile_set.num_suits
    at = {
        name: (layout.slices[name].start, layout.slices[name].stop - layout.slices[name].start)
        for name in ("hand", "played", "opening", "to_play", "leader")
    }
    for name, rows in (("voids", rules.num_players), ("ends", 2)):
        for r in range(rows):
            at[f"{name}{r}"] = (layout.slices[name].start + r * s, s)
    stop = max(start + width for start, width in at.values())
    numbers = {name: layout.slices[name] for name in ("hand_counts", "passes", "scores")}
    return stop, at, numbers


def _lowest_bit(bits: int) -> int | None:
    """The lowest set bit's index (a one-hot row's hit), or None for no bit."""
    return (bits & -bits).bit_length() - 1 if bits else None


def _read_vector_view(obs: dict[str, np.ndarray], rules: Rules, layout: Layout) -> PublicView:
    """:func:`read_public_view` for the "vector" encoding (or one holding its pieces), straight
    to bitmasks: what every scripted agent reads each move (the same checks and facts as
    decoding to named parts). Every 0/1 piece comes from one Python int of the observation's
    leading values, cut by shifts: the scripted opponents read one view per move."""
    buf = _checked_buffer(obs["observation"], layout)
    stop, at, numbers = _vector_view_fields(rules, layout.name)
    everything = int.from_bytes(np.packbits(buf[:stop] > 0.5, bitorder="little").tobytes(), "little")

    def piece(name: str) -> int:
        start, width = at[name]
        return everything >> start & ((1 << width) - 1)

    left, right = _lowest_bit(piece("ends0")), _lowest_bit(piece("ends1"))
    target = rules.resolved_target
    return PublicView(
        rules=rules,
        hand=piece("hand"),
        ends=None if left is None or right is None else (left, right),
        played=piece("played"),
        opening=_lowest_bit(piece("opening")),
        leader=_lowest_bit(piece("leader")) or 0,
        to_play=_lowest_bit(piece("to_play")),
        hand_counts=tuple(int(round(x)) for x in buf[numbers["hand_counts"]].tolist()),
        voids=tuple(piece(f"voids{r}") for r in range(rules.num_players)),
        passes=int(round(buf[numbers["passes"]].tolist()[0])),
        scores=tuple(int(round(x * target)) for x in buf[numbers["scores"]].tolist()),
        legal=tuple(np.flatnonzero(obs["action_mask"]).tolist()),
    )


@dataclass(frozen=True)
class PublicViews:
    """What each of k observing seats knows, as arrays (:func:`read_public_views`): row j
    holds the facts of :func:`read_public_view`'s view of observation j, with tile and suit
    sets as bool rows rather than int bitmasks (for compiled code, at any set's size), and -1
    where the view has None (``ends`` before the opening, ``opening``, ``to_play``)."""

    rules: Rules
    hand: np.ndarray  # (k, T) bool
    played: np.ndarray  # (k, T) bool
    ends: np.ndarray  # (k, 2) int64: left, right
    opening: np.ndarray  # (k,) int64: a tile index
    leader: np.ndarray  # (k,) int64: a relative seat
    to_play: np.ndarray  # (k,) int64: a relative seat
    hand_counts: np.ndarray  # (k, n) int64: per relative seat
    voids: np.ndarray  # (k, n, S) bool: relative seat r has shown it lacks suit v
    passes: np.ndarray  # (k,) int64
    scores: np.ndarray  # (k, sides) int64: per relative side
    legal: np.ndarray  # (k, 2T+1) bool: the action masks

    def __len__(self) -> int:
        return len(self.hand)

    @classmethod
    def empty(cls, rules: Rules, k: int, legal: np.ndarray) -> PublicViews:
        """Room for k views (``legal``: their (k, 2T+1) bool action masks), to be filled in."""
        ts, n = rules.tile_set, rules.num_players
        return cls(
            rules=rules,
            hand=np.empty((k, ts.num_tiles), dtype=bool),
            played=np.empty((k, ts.num_tiles), dtype=bool),
            ends=np.empty((k, 2), dtype=np.int64),
            opening=np.empty(k, dtype=np.int64),
            leader=np.empty(k, dtype=np.int64),
            to_play=np.empty(k, dtype=np.int64),
            hand_counts=np.empty((k, n), dtype=np.int64),
            voids=np.empty((k, n, ts.num_suits), dtype=bool),
            passes=np.empty(k, dtype=np.int64),
            scores=np.empty((k, rules.num_sides), dtype=np.int64),
            legal=legal,
        )

    @classmethod
    def of(cls, views: Sequence[PublicView]) -> PublicViews:
        """Views of one rules as rows (the inverse of :meth:`row`)."""
        if not views:
            raise ValueError("PublicViews.of needs at least one view (the rules are read from it)")
        rules = views[0].rules
        legal = np.zeros((len(views), rules.tile_set.num_actions), dtype=bool)
        out = cls.empty(rules, len(views), legal)
        for j, view in enumerate(views):
            if view.rules != rules:
                raise ValueError(f"view {j} is of {view.rules}, but view 0 is of {rules}")
            legal[j, list(view.legal)] = True
            _write_view(out, j, view)
        return out

    def row(self, j: int) -> PublicView:
        """Row ``j`` as a :class:`PublicView` (what :func:`read_public_view` reads from it alone)."""
        left, right = self.ends[j].tolist()
        return PublicView(
            rules=self.rules,
            hand=_bitmask(self.hand[j]),
            ends=None if left < 0 else (left, right),
            played=_bitmask(self.played[j]),
            opening=None if self.opening[j] < 0 else int(self.opening[j]),
            leader=int(self.leader[j]),
            to_play=None if self.to_play[j] < 0 else int(self.to_play[j]),
            hand_counts=tuple(self.hand_counts[j].tolist()),
            voids=tuple(_bitmask(suits) for suits in self.voids[j]),
            passes=int(self.passes[j]),
            scores=tuple(self.scores[j].tolist()),
            legal=tuple(np.flatnonzero(self.legal[j]).tolist()),
        )


def _bitmask(row: np.ndarray) -> int:
    return sum(1 << i for i in np.flatnonzero(row).tolist())


def read_public_views(
    observations: np.ndarray, masks: np.ndarray, rules: Rules | str, observation: str = "vector"
) -> PublicViews:
    """What each observing seat knows, from k observations of one encoding (k, size) and their
    action masks (k, 2T+1): :func:`read_public_view` of every row, with its checks (ValueError
    names the first row out of range, and the piece). "vector" and "tracked" observations are
    read in one compiled pass over the batch; "history" ones are replayed row by row.

    Examples:
        >>> from block_env import raw_env
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> obs = env.observe(env.agent_selection)
        >>> views = read_public_views(obs["observation"][None], obs["action_mask"][None], "standard")
        >>> views.hand.sum(axis=1), views.ends, views.row(0) == read_public_view(obs, "standard")
        (array([7]), array([[-1, -1]]), True)
    """
    rules = resolve_rules(rules)
    layout = layout_for(rules, observation)
    buf = np.asarray(observations, dtype=np.float32)
    if buf.ndim != 2:
        raise ValueError(
            f"observations are a batch, one row per observation (ndim 2); got ndim {buf.ndim}, shape {buf.shape}"
        )
    ts, k = rules.tile_set, len(buf)
    legal = np.asarray(masks).astype(bool)
    if buf.shape != (k, layout.size):
        raise ValueError(
            f"{k} {observation!r} observations of these rules are a ({k}, {layout.size}) array, got {buf.shape}"
        )
    if legal.shape != (k, ts.num_actions):
        raise ValueError(f"the action masks of {k} observations are a ({k}, {ts.num_actions}) array, got {legal.shape}")
    views = PublicViews.empty(rules, k, legal)
    if observation == "history":
        for j, (o, m) in enumerate(zip(buf, legal)):
            _write_view(views, j, read_public_view({"observation": o, "action_mask": m}, rules, observation))
        return views
    v = views
    bad = _read_views_kernel(
        buf, layout.bounds, _view_offsets(rules, observation), rules.resolved_target,
        v.hand, v.played, v.ends, v.opening, v.leader, v.to_play, v.hand_counts, v.voids, v.passes, v.scores,
    )  # fmt: skip
    if bad >= 0:
        try:
            _checked_buffer(buf[bad], layout)
        except ValueError as e:
            raise ValueError(f"observation row {bad}: {e}") from None
        raise ValueError(f"observation row {bad} is out of its pieces' ranges, but the one-row check passes it")
    return views


def _write_view(views: PublicViews, j: int, view: PublicView) -> None:
    """Row ``j`` of ``views`` from one view."""
    tiles = np.arange(views.hand.shape[1])
    suits = np.arange(views.voids.shape[2])
    views.hand[j] = view.hand >> tiles & 1
    views.played[j] = view.played >> tiles & 1
    views.ends[j] = view.ends or (-1, -1)
    views.opening[j] = -1 if view.opening is None else view.opening
    views.leader[j] = view.leader
    views.to_play[j] = -1 if view.to_play is None else view.to_play
    views.hand_counts[j] = view.hand_counts
    views.voids[j] = [suit_set >> suits & 1 for suit_set in view.voids]
    views.passes[j] = view.passes
    views.scores[j] = view.scores


#: The pieces :func:`_read_views_kernel` reads, in the order of its offsets.
_VIEW_PIECES = ("hand", "played", "opening", "leader", "to_play", "voids", "ends", "hand_counts", "passes", "scores")


@cache
def _view_offsets(rules: Rules, observation: str) -> np.ndarray:
    layout = layout_for(rules, observation)
    offsets = np.array([layout.offset(name) for name in _VIEW_PIECES], dtype=np.int64)
    offsets.flags.writeable = False
    return offsets


@njit(cache=True, nogil=True, inline="always")
def _hit(row, start, width):  # pragma: no cover - compiled
    """A one-hot run's hit (its first value above one half, as _lowest_bit), or -1 for none."""
    for i in range(width):
        if row[start + i] > 0.5:
            return i
    return -1


@njit(cache=True, nogil=True)
def _read_views_kernel(
    buf, bounds, at, target, hand, played, ends, opening, leader, to_play, hand_counts, voids, passes, scores
):  # pragma: no cover - compiled
    """:func:`_read_vector_view` for every row of ``buf`` into the arrays of a PublicViews,
    the pieces at offsets ``at`` (:data:`_VIEW_PIECES`). Returns the first row holding a value
    outside ``[0, bounds]`` (NaN included), or -1."""
    num_tiles, num_suits, n = hand.shape[1], voids.shape[2], hand_counts.shape[1]
    bad = -1
    for j in range(buf.shape[0]):
        row = buf[j]
        if bad < 0:
            for c in range(row.shape[0]):
                if not (row[c] >= 0 and row[c] <= bounds[c]):
                    bad = j
                    break
        for t in range(num_tiles):
            hand[j, t] = row[at[0] + t] > 0.5
            played[j, t] = row[at[1] + t] > 0.5
        opening[j] = _hit(row, at[2], num_tiles)
        leader[j] = max(_hit(row, at[3], n), 0)  # 0 (the observer) with no leader shown
        to_play[j] = _hit(row, at[4], n)
        for r in range(n):
            for v in range(num_suits):
                voids[j, r, v] = row[at[5] + r * num_suits + v] > 0.5
        left, right = _hit(row, at[6], num_suits), _hit(row, at[6] + num_suits, num_suits)
        both = left >= 0 and right >= 0  # both ends or neither: None before the opening
        ends[j, 0] = left if both else -1
        ends[j, 1] = right if both else -1
        for r in range(n):
            hand_counts[j, r] = np.rint(row[at[7] + r])
        passes[j] = np.rint(row[at[8]])
        for side in range(scores.shape[1]):
            scores[j, side] = np.rint(np.float64(row[at[9] + side]) * target)
    return bad


def replay_public(rules: Rules, moves: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """What a public move list (seat, action) implies, from an empty line: ``ends``,
    ``played`` (sorted tiles), ``opening`` (tile or None), ``leader`` (seat or None),
    ``voids`` (sorted suits each seat has passed on) and ``passes`` (trailing passes)."""
    ts = rules.tile_set
    ends: tuple[int, int] | None = None  # after the last move
    played = []
    voids = [0] * rules.num_players
    passes = 0
    for seat, action, _, ends in replay_ends(ts, moves):
        if action == ts.pass_action:  # a pass leaves the ends as they were
            voids[seat] |= (1 << ends[0]) | (1 << ends[1])  # docs/rules.md, a pass proves neither end fits
            passes += 1
            continue
        passes = 0
        played.append(ts.tiles[action >> 1])
    return {
        "ends": ends,
        "played": sorted(played),
        "opening": played[0] if played else None,
        "leader": moves[0][0] if moves else None,
        "voids": [[v for v in range(ts.num_suits) if mask >> v & 1] for mask in voids],
        "passes": passes,
    }


def markdown_tables(rules: Rules | None = None) -> str:
    """Every encoding's piece table for ``rules`` (default rules if None), as Markdown."""
    rules = rules if rules is not None else Rules()
    parts = []
    for layout in (vector_layout(rules), history_layout(rules), tracked_layout(rules), state_layout(rules)):
        parts.append(f"#### `{layout.name}`\n\n{layout.markdown()}\n")
    return "\n".join(parts)
