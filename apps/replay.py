"""Replays of recorded rounds, frame by frame (the arena's ``--record`` and the web app's
replay viewer).

A round record is plain JSON, written by :meth:`block_env.Round.record` (and
``raw_env.round_records()``): the dealt ``hands`` (tiles per seat), the ``lead`` (a seat, or
"heaviest" when the holder of the heaviest double had to open with it), the ``moves`` as
``[seat, action]`` and the ``result`` (``RoundResult.as_dict()``). A replay is
``{"rules": {...Rules fields}, "agents": [name per seat], "rounds": [round record, ...]}``.
Replaying checks every move against the engine, so a hand-edited file gets a clear error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from block_env.aec import as_action, parse_reset_options
from block_env.engine import Round, RoundResult
from block_env.rules import Rules
from block_env.tiles import LEFT_END, TileSet
from block_env.validation import is_int


def rules_from_record(values: object) -> Rules:
    """Rules from a replay's ``rules`` object (ValueError names an unknown field)."""
    try:
        return Rules.from_dict(values)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise ValueError(f"a replay's rules: {e}") from None


def replay_round(rules: Rules, record: object) -> tuple[Round, list[dict[str, Any]]]:
    """Play a round record through the engine: the final round and one frame per position
    (the deal, then after each move) with every hand visible. ValueError names a malformed
    record or the first illegal move."""
    if not isinstance(record, dict):
        raise ValueError(f"a round record must be an object with hands, lead and moves, got {record!r}")
    scenario = parse_reset_options(rules, {"hands": record.get("hands")})
    if scenario is None or scenario.hands is None:
        raise ValueError("a round record needs 'hands': one list of tiles per seat")
    lead = record.get("lead")
    if lead != "heaviest" and not is_int(lead):
        raise ValueError(f"a round record's 'lead' must be a seat or 'heaviest', got {lead!r}")
    rnd = Round.start(rules, scenario.hands, lead)
    moves = record.get("moves")
    if not isinstance(moves, list):
        raise ValueError(f"a round record's 'moves' must be a list of [seat, action], got {moves!r}")
    frames = [position(rnd)]
    for number, move in enumerate(moves):
        if not (isinstance(move, list) and len(move) == 2):
            raise ValueError(f"move {number}: expected [seat, action], got {move!r}")
        seat, action = move
        if rnd.is_over:
            raise ValueError(f"move {number}: the round is already over")
        if seat != rnd.current:
            raise ValueError(f"move {number}: seat {seat!r} moved, but seat {rnd.current} was to play")
        try:
            rnd.step(as_action(action, rules.tile_set.num_actions))
        except (TypeError, ValueError) as e:
            raise ValueError(f"move {number}: {e}") from None
        frames.append(position(rnd))
    return rnd, frames


def opening_index(tiles: TileSet, moves: Sequence[Sequence[int]]) -> int | None:
    """Where the opening tile sits in the line (``Round.line()``, left to right): after every
    tile placed on the left end since. None before the opening. What lets a page keep the
    opening in place while the line grows at both ends."""
    placed = [action for _, action in moves if action != tiles.pass_action]
    return None if not placed else sum(1 for action in placed[1:] if action % 2 == LEFT_END)


def position(rnd: Round) -> dict[str, Any]:
    """Everything on the table, every hand visible: one replay frame."""
    ts = rnd.tiles
    last = rnd.moves[-1] if rnd.moves else None
    return {
        "line": [list(t) for t in rnd.line()],
        "opening": opening_index(ts, rnd.moves),
        "ends": None if rnd.ends is None else list(rnd.ends),
        "hands": [[list(t) for t in ts.tiles_of(h)] for h in rnd.hands],
        "current": None if rnd.is_over else rnd.current,
        "move": None if last is None else {"seat": last[0], "action": last[1], "text": ts.describe_action(last[1])},
        "result": None if rnd.result is None else explain(rnd.result),
    }


def explain(result: RoundResult) -> dict[str, Any]:
    """A result with the reason spelled out (docs/rules.md, domino, blocked, tie)."""
    values = result.as_dict()
    if result.end == "domino":
        why = f"seat {result.winner} went out (domino)" + (
            ", with a double or both ends: doubled" if result.doubled else ""
        )
    elif result.winner is None:
        why = "blocked, and the lowest pip count is tied: nobody scores"
    else:
        why = f"blocked: side {result.winning_side} has the fewest pips"
    return {**values, "why": why}


#: The most moves a replay may hold in all: each frame repeats the line, so the frames grow as
#: the square of a round's moves (a long double-twelve match holds a few thousand).
MAX_REPLAY_MOVES = 5_000


def replay(values: object) -> dict[str, Any]:
    """Every frame of every round of a replay (see the module docstring), checked."""
    if not isinstance(values, dict):
        raise ValueError("a replay must be an object with rules, agents and rounds")
    rules = rules_from_record(values.get("rules"))
    agents = values.get("agents")
    if not (isinstance(agents, list) and len(agents) == rules.num_players and all(isinstance(a, str) for a in agents)):
        raise ValueError(f"a replay's 'agents' must name each of the {rules.num_players} seats, got {agents!r}")
    rounds = values.get("rounds")
    if not isinstance(rounds, list) or not rounds:
        raise ValueError("a replay's 'rounds' must be a non-empty list of round records")
    moves = sum(len(r["moves"]) for r in rounds if isinstance(r, dict) and isinstance(r.get("moves"), list))
    if moves > MAX_REPLAY_MOVES:
        raise ValueError(f"a replay holds at most {MAX_REPLAY_MOVES:,} moves in all, got {moves:,}")
    out = []
    for number, record in enumerate(rounds):
        try:
            _, frames = replay_round(rules, record)
        except ValueError as e:
            raise ValueError(f"round {number + 1}: {e}") from None
        out.append(frames)
    return {"num_players": rules.num_players, "partnership": rules.partnership, "agents": agents, "rounds": out}
