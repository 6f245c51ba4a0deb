"""Tiles, sets and the action layout (docs/environments.md, Actions).

A double-N set holds every pair (a, b) with 0 <= a <= b <= N, in canonical order
(0,0), (0,1), ..., (0,N), (1,1), ..., (N,N). A tile's index is its position in that list,
and a tile is always written low half first. Hands and sets of tiles are kept as Python
int bitmasks over tile indices (bit i = tile i): legality is then one AND per open end.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import numpy as np

from block_env.validation import is_int

Tile = tuple[int, int]

#: The end a tile is placed on: 0 = left end, 1 = right end (docs/environments.md).
LEFT_END = 0
RIGHT_END = 1


@dataclass(frozen=True)
class TileSet:
    """The tiles of a double-``max_pip`` set and the lookup tables the engine uses.

    Build one with :func:`tile_set`, which caches it per ``max_pip``.

    Examples:
        >>> from block_env import tile_set
        >>> ts = tile_set(6)
        >>> ts.num_tiles, ts.tiles[:3], ts.describe_action(ts.action((3, 5), 1))
        (28, ((0, 0), (0, 1), (0, 2)), '[3|5] on right')
    """

    max_pip: int
    tiles: tuple[Tile, ...]
    index: dict[Tile, int] = field(repr=False)
    #: pips[i] = a + b for tile i (docs/rules.md, a hand's total counts both halves).
    pips: tuple[int, ...] = field(repr=False)
    #: suit_masks[v] = bitmask of the tiles that carry value v on either half.
    suit_masks: tuple[int, ...] = field(repr=False)
    #: double_index[v] = index of the double [v|v].
    double_index: tuple[int, ...] = field(repr=False)

    def __deepcopy__(self, memo: dict[int, Any]) -> TileSet:
        return self  # immutable: copies of a game state share it

    @property
    def num_tiles(self) -> int:
        return len(self.tiles)

    @property
    def num_suits(self) -> int:
        """Values 0..max_pip: each one is a suit."""
        return self.max_pip + 1

    @property
    def num_actions(self) -> int:
        """``2 * T + 1``: every tile on either end, then the pass."""
        return 2 * len(self.tiles) + 1

    @property
    def pass_action(self) -> int:
        return 2 * len(self.tiles)

    @cached_property
    def mirror_actions(self) -> np.ndarray:
        """The action order that mirrors a move: ``values[..., tiles.mirror_actions]`` reads each
        tile on the other end (the pass stays the pass), as a policy's moves read when the line's
        ends are swapped (read-only)."""
        actions = np.arange(self.num_actions)
        actions[:-1] ^= 1  # 2i (left) <-> 2i + 1 (right)
        actions.flags.writeable = False
        return actions

    @property
    def full_mask(self) -> int:
        """The bitmask of every tile of the set."""
        return (1 << len(self.tiles)) - 1

    @property
    def total_pips(self) -> int:
        return sum(self.pips)

    def tile_index(self, tile: Tile) -> int:
        """Index of ``tile``; either half may come first. ValueError if not in this set."""
        try:
            a, b = tile
        except (TypeError, ValueError):
            raise ValueError(f"a tile is a pair of pips (a, b), got {tile!r}") from None
        # Integers only: 0.5 or "1" dealt as a pip would silently be another tile.
        if not all(is_int(h) for h in (a, b)):
            raise ValueError(f"a tile's halves are integer pips 0..{self.max_pip}, got {tile!r}")
        key = (int(a), int(b)) if a <= b else (int(b), int(a))
        if key not in self.index:
            raise ValueError(f"tile {tile!r} is not in the double-{self.max_pip} set (pips 0..{self.max_pip})")
        return self.index[key]

    def mask_of(self, tiles: list[Tile] | tuple[Tile, ...]) -> int:
        mask = 0
        for tile in tiles:
            mask |= 1 << self.tile_index(tile)
        return mask

    def tiles_of(self, mask: int) -> list[Tile]:
        """The tiles in ``mask``, in canonical order."""
        return [self.tiles[i] for i in bit_indices(mask)]

    def pips_of(self, mask: int) -> int:
        pips = self.pips
        return sum(pips[i] for i in bit_indices(mask))

    def action(self, tile: Tile | int, end: int) -> int:
        """The action id that places ``tile`` (a tile or its index) on ``end`` (0 or 1)."""
        i = tile if isinstance(tile, int) else self.tile_index(tile)
        if end not in (LEFT_END, RIGHT_END):
            raise ValueError(f"end must be 0 (left) or 1 (right), got {end!r}")
        return 2 * i + end

    def describe_action(self, action: int) -> str:
        """A human-readable name, e.g. ``"[3|6] on left"`` or ``"pass"``."""
        if action == self.pass_action:
            return "pass"
        a, b = self.tiles[action // 2]
        return f"[{a}|{b}] on {'left' if action % 2 == LEFT_END else 'right'}"


def ends_after(tiles: TileSet, ends: tuple[int, int] | None, action: int) -> tuple[int, int]:
    """The open ends after placing ``action`` (not the pass) on ``ends`` (None: the opening).

    docs/environments.md, Actions: the opening (a, b) gives ends a, b; a tile placed on an end showing v turns
    that end to its other half.
    """
    x, y = tiles.tiles[action >> 1]
    if ends is None:
        return (x, y)
    left, right = ends
    if action & 1:
        return (left, y if x == right else x)
    return (y if x == left else x, right)


def replay_ends(
    tiles: TileSet, moves: Iterable[tuple[int, int]]
) -> Iterator[tuple[int, int, tuple[int, int] | None, tuple[int, int]]]:
    """Each of ``moves`` ((seat, action), oldest first, from an empty line) as (seat, action,
    the line's ends before it, after it): the ends before are None for the opening, and a pass
    leaves them as they were. Every replay of a round's record that asks which ends a tile or
    a pass faced reads them here.

    Examples:
        >>> ts = tile_set(6)
        >>> opening, on_right = ts.action((3, 5), 0), ts.action((5, 6), 1)
        >>> [(before, after) for _, _, before, after in replay_ends(ts, [(0, opening), (1, on_right), (0, ts.pass_action)])]
        [(None, (3, 5)), ((3, 5), (3, 6)), ((3, 6), (3, 6))]
    """
    ends: tuple[int, int] | None = None
    for seat, action in moves:
        if action != tiles.pass_action:
            after = ends_after(tiles, ends, action)
        elif ends is None:
            raise ValueError(f"seat {seat} passed before the opening: the round's leader always opens")
        else:
            after = ends
        yield seat, action, ends, after
        ends = after


def bit_indices(mask: int) -> list[int]:
    """Indices of the set bits of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


@cache
def tile_set(max_pip: int) -> TileSet:
    """The double-``max_pip`` set (cached; TileSet is immutable).

    Examples:
        >>> tile_set(9).num_tiles
        55
    """
    if not isinstance(max_pip, int) or max_pip < 0:
        raise ValueError(f"max_pip must be a non-negative int, got {max_pip!r}")
    tiles = tuple((a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1))
    index = {t: i for i, t in enumerate(tiles)}
    suit_masks = tuple(sum(1 << i for i, (a, b) in enumerate(tiles) if v in (a, b)) for v in range(max_pip + 1))
    return TileSet(
        max_pip=max_pip,
        tiles=tiles,
        index=index,
        pips=tuple(a + b for a, b in tiles),
        suit_masks=suit_masks,
        double_index=tuple(index[(v, v)] for v in range(max_pip + 1)),
    )


def format_tile(tile: Tile) -> str:
    return f"[{tile[0]}|{tile[1]}]"
