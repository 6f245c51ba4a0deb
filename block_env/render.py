"""Text and image views of a round. Pillow is imported only when an image is asked for."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from block_env.engine import Round
from block_env.tiles import Tile, format_tile


def seat_name(seat: int) -> str:
    return f"player_{seat}"


def render_text(rnd: Round, scores: Sequence[int], viewer: int, round_number: int = 1) -> str:
    """The line, the ends, hand counts, scores, the last move and ``viewer``'s hand."""
    rules = rnd.rules
    ts = rnd.tiles
    line = "".join(format_tile(t) for t in rnd.line()) or "(empty: the leader opens)"
    ends = "-" if rnd.ends is None else f"{rnd.left} (left) | {rnd.right} (right)"
    to_play = "round over" if rnd.is_over else seat_name(rnd.current)
    counts = ", ".join(f"{seat_name(s)}: {c}" for s, c in enumerate(rnd.counts))
    if rules.partnership:
        score = ", ".join(f"side {side} (seats {side}+{side + 2}): {p}" for side, p in enumerate(scores))
    else:
        score = ", ".join(f"{seat_name(s)}: {p}" for s, p in enumerate(scores))
    lines = [
        f"Round {round_number} | leader {seat_name(rnd.leader)} | to play: {to_play}",
        f"Line:   {line}",
        f"Ends:   {ends}",
        f"Tiles in hand: {counts}",
        f"Scores: {score} (target {rules.resolved_target})",
    ]
    if rnd.moves:
        mover, action = rnd.moves[-1]
        lines.append(f"Last:   {seat_name(mover)} {ts.describe_action(action)}")
    hand = " ".join(format_tile(t) for t in ts.tiles_of(rnd.hands[viewer])) or "(empty)"
    lines.append(f"{seat_name(viewer)}'s hand: {hand}")
    if rnd.result is not None:
        res = rnd.result
        who = "nobody (tied block)" if res.winner is None else seat_name(res.winner)
        lines.append(
            f"Round over: {res.end}; {who} scores {res.award}"
            + (" (doubled)" if res.doubled else "")
            + f"; pips left {list(res.hand_pips)}"
        )
    return "\n".join(lines)


# Pip centres on a unit square for values 0..9; larger values are written as numbers.
_PIP_SPOTS = {
    0: [],
    1: [(0.5, 0.5)],
    2: [(0.25, 0.25), (0.75, 0.75)],
    3: [(0.25, 0.25), (0.5, 0.5), (0.75, 0.75)],
    4: [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)],
    5: [(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)],
    6: [(0.25, 0.2), (0.25, 0.5), (0.25, 0.8), (0.75, 0.2), (0.75, 0.5), (0.75, 0.8)],
    7: [(0.25, 0.2), (0.25, 0.5), (0.25, 0.8), (0.5, 0.5), (0.75, 0.2), (0.75, 0.5), (0.75, 0.8)],
    8: [(0.2, 0.2), (0.5, 0.2), (0.8, 0.2), (0.2, 0.8), (0.5, 0.8), (0.8, 0.8), (0.2, 0.5), (0.8, 0.5)],
    9: [(x, y) for y in (0.2, 0.5, 0.8) for x in (0.2, 0.5, 0.8)],
}
_CELL = 28  # pixels per tile half
_GAP = 4
_ROW = 12  # tiles per row of the line


def render_image(rnd: Round, viewer: int) -> np.ndarray:
    """An RGB image (H, W, 3 uint8): the line, wrapped in rows, above ``viewer``'s hand."""
    try:
        from PIL import Image, ImageDraw
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError('render_mode="rgb_array" needs Pillow: pip install "block-env[render]"') from e
    line = rnd.line()
    hand = rnd.tiles.tiles_of(rnd.hands[viewer])
    tile_w = 2 * _CELL + _GAP
    width = _ROW * tile_w + _GAP
    line_rows = max(1, -(-len(line) // _ROW))
    hand_rows = max(1, -(-len(hand) // _ROW))
    height = (line_rows + hand_rows) * (_CELL + _GAP) + 3 * _GAP + 16
    img = Image.new("RGB", (width, height), (18, 104, 56))  # table felt
    draw = ImageDraw.Draw(img)
    y = _GAP
    for k, tile in enumerate(line):
        _draw_tile(draw, _GAP + (k % _ROW) * tile_w, y + (k // _ROW) * (_CELL + _GAP), tile)
    y += line_rows * (_CELL + _GAP) + _GAP
    draw.line([(0, y), (width, y)], fill=(230, 230, 230), width=1)
    draw.text((_GAP, y + 2), f"{seat_name(viewer)}'s hand", fill=(255, 255, 255))
    y += 16
    for k, tile in enumerate(hand):
        _draw_tile(draw, _GAP + (k % _ROW) * tile_w, y + (k // _ROW) * (_CELL + _GAP), tile)
    return np.asarray(img, dtype=np.uint8)


def _draw_tile(draw: object, x: int, y: int, tile: Tile) -> None:
    d = draw  # PIL.ImageDraw.ImageDraw
    d.rounded_rectangle([x, y, x + 2 * _CELL, y + _CELL], radius=4, fill=(250, 248, 240), outline=(30, 30, 30))  # type: ignore[attr-defined]
    d.line([(x + _CELL, y + 3), (x + _CELL, y + _CELL - 3)], fill=(60, 60, 60))  # type: ignore[attr-defined]
    for half, value in enumerate(tile):
        ox = x + half * _CELL
        spots = _PIP_SPOTS.get(value)
        if spots is None:
            d.text((ox + _CELL // 3, y + _CELL // 4), str(value), fill=(0, 0, 0))  # type: ignore[attr-defined]
            continue
        for sx, sy in spots:
            cx, cy = ox + sx * _CELL, y + sy * _CELL
            d.ellipse([cx - 2.5, cy - 2.5, cx + 2.5, cy + 2.5], fill=(0, 0, 0))  # type: ignore[attr-defined]
