"""Inference from the opponent's moves, for a two-player search: which of the sampled deals
explain what the opponent did.

A plain determinized search deals the unseen tiles uniformly among the deals that respect the
public record (hand counts, voids shown by passes). But a player's choices say more than its
passes: an opponent who opened with a light tile probably held no heavy double. With a model
of the opponent (a trained policy), each sampled deal is weighted by how likely the model
makes the opponent's observed moves in it, and the search's worlds are drawn by those weights.

The seat sees only its own observations, so it keeps its own record of the round
(:class:`RoundRecord`): with two players exactly one opponent turn falls between two of its
own, and the difference of the two views says what the opponent did.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from block_env.agents.policy import PolicyAgent
from block_env.batched import BatchedGames
from block_env.engine import PublicView
from block_env.observations import BatchEncoder
from block_env.rules import Rules
from block_env.tiles import ends_after

#: Each observed move's likelihood is (1 - FLOOR) * the model's probability + FLOOR / legal
#: moves: a model that is sure but wrong about one move must not rule a deal out.
FLOOR = 0.1


@dataclass(frozen=True)
class OpponentTurn:
    """One opponent decision: the view of this seat just before its own move that preceded
    it (None when the opponent opened the round), that move, the opponent's actions that
    explain what followed (one placement, two when both ends give the same line, or the
    pass), the tile it placed (None for a pass) and this seat's hand before its move (its
    dealt hand when the opponent opened)."""

    before: PublicView | None
    mine: int | None
    theirs: tuple[int, ...]
    tile: int | None
    hand: int


class RoundRecord:
    """A two-player seat's record of the opponent's turns this round, read from the
    differences between its consecutive views (:meth:`observe` at each of its decisions)."""

    def __init__(self, rules: Rules) -> None:
        if rules.num_players != 2:
            raise ValueError(f"inference from the opponent's moves needs two players, got {rules.num_players}")
        self.rules = rules
        self.turns: list[OpponentTurn] = []
        self._last: tuple[PublicView, int] | None = None
        # Under "heaviest" leads an opening may be forced (it then says nothing); "lot" is free.
        self._free_opening = rules.first_lead == "lot" and rules.next_lead != "heaviest"

    def reset(self) -> None:
        self.turns = []
        self._last = None

    def observe(self, view: PublicView) -> None:
        """Read the opponent's turn since this seat's last move (or its opening of the round)."""
        ts = self.rules.tile_set
        if self._last is not None and not self._continues(view):
            self.reset()  # a new round of a match
        if self._last is None:
            if view.played and self._free_opening:  # the opponent chose the tile it opened with
                tile = view.opening
                assert tile is not None
                self.turns = [OpponentTurn(None, None, (2 * tile, 2 * tile + 1), tile, view.hand)]
            return
        before, mine = self._last
        after_mine = before.ends if mine == ts.pass_action else ends_after(ts, before.ends, mine)
        new = view.played & ~before.played & ~self._placed_by_me()
        if not new:
            self.turns.append(OpponentTurn(before, mine, (ts.pass_action,), None, before.hand))
            return
        tile = new.bit_length() - 1
        theirs = tuple(a for a in (2 * tile, 2 * tile + 1) if ends_after(ts, after_mine, a) == view.ends)
        self.turns.append(OpponentTurn(before, mine, theirs, tile, before.hand))

    def played(self, view: PublicView, action: int) -> None:
        """This seat chose ``action`` at ``view``."""
        self._last = (view, action)

    def _placed_by_me(self) -> int:
        """The tile this seat placed with its last move (a bitmask; 0 for a pass)."""
        assert self._last is not None
        mine = self._last[1]
        return 0 if mine == self.rules.tile_set.pass_action else 1 << (mine >> 1)

    def _continues(self, view: PublicView) -> bool:
        assert self._last is not None
        return (self._last[0].played | self._placed_by_me()) & ~view.played == 0 and view.played != 0


def move_log_likelihoods(
    rules: Rules,
    worlds: np.ndarray,
    record: RoundRecord,
    model: PolicyAgent,
    encode: BatchEncoder,
) -> np.ndarray:
    """(W,) the log-likelihood of the opponent's recorded moves in each of ``worlds``
    ((W, 2, T) bool hands now, this seat 0) under ``model`` (a PolicyAgent: its action
    logits), each move's probability floored (:data:`FLOOR`)."""
    turns = record.turns
    if not turns:
        return np.zeros(len(worlds))
    ts = rules.tile_set
    t_count = ts.num_tiles
    num_worlds, num_turns = len(worlds), len(turns)
    games = BatchedGames(rules, num_worlds * num_turns)
    hands = np.repeat(worlds, num_turns, axis=0)  # game = world * num_turns + turn
    # Each turn's hands: the opponent also held every tile it placed from that turn on, this
    # seat its hand of then.
    later = 0
    held_then = []
    for turn in reversed(turns):
        if turn.tile is not None:
            later |= 1 << turn.tile
        held_then.append(later)
    held_then.reverse()
    bits = np.arange(t_count)
    for j, turn in enumerate(turns):
        rows = slice(j, None, num_turns)
        hands[rows, 1] |= (held_then[j] >> bits & 1).astype(bool)
        hands[rows, 0] = (turn.hand >> bits & 1).astype(bool)

    def facts(turn: OpponentTurn) -> tuple:
        b = turn.before
        if b is None:  # the opponent leads an empty line
            return (-1, -1), 0, 1, 0, (0, 0), -1, 1
        ends = (-1, -1) if b.ends is None else b.ends
        opening = -1 if b.opening is None else b.opening
        return ends, b.played, b.leader, b.passes, b.voids, opening, 0

    per_turn = [facts(t) for t in turns]
    tile_rows = np.array([[p[1] >> i & 1 for i in range(t_count)] for p in per_turn], dtype=bool)
    games.set_positions(
        hands,
        ends=np.tile(np.array([p[0] for p in per_turn]), (num_worlds, 1)),
        played=np.tile(tile_rows, (num_worlds, 1)),
        current=np.tile(np.array([p[6] for p in per_turn]), num_worlds),
        leader=np.tile(np.array([p[2] for p in per_turn]), num_worlds),
        passes=np.tile(np.array([p[3] for p in per_turn]), num_worlds),
        voids=np.tile(np.array([p[4] for p in per_turn]), (num_worlds, 1)),
        opening=np.tile(np.array([p[5] for p in per_turn]), num_worlds),
    )
    mine_steps = [j for j, t in enumerate(turns) if t.mine is not None]
    if mine_steps:
        g = (np.arange(num_worlds)[:, None] * num_turns + np.array(mine_steps)[None]).ravel()
        actions = np.tile(np.array([turns[j].mine for j in mine_steps]), num_worlds)
        games.step(actions, g, check=False)
    everyone = np.arange(num_worlds * num_turns)
    masks = games.legal_mask(everyone)
    logits = model.logits(encode(games, everyone, np.ones(len(everyone), dtype=np.int64)))
    logits = np.where(masks, logits, -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    explained = np.zeros_like(probs)
    for j, turn in enumerate(turns):
        explained[j::num_turns, list(turn.theirs)] = 1.0
    p_model = (probs * explained).sum(axis=1)
    legal_count = masks.sum(axis=1)
    legal_explained = (masks & (explained > 0)).any(axis=1)
    p = np.where(legal_explained, (1 - FLOOR) * p_model + FLOOR / legal_count, 1e-6)
    return np.log(p).reshape(num_worlds, num_turns).sum(axis=1)
