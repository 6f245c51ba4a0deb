"""Players taking turns in the AEC env: the one loop the arena, the terminal and browser
games, and training's teacher all run.

A player is anything with ``act(observation_dict) -> action`` (the
:class:`block_env.opponents.Opponent` protocol; every :class:`block_env.agents.Agent` is
one). A seat whose player is ``None`` belongs to someone outside the loop (a person at the
terminal or in the browser): the loop stops when that seat is to move, and the caller steps
the env for it, then runs the loop again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from block_env.aec import raw_env
from block_env.engine import RoundResult
from block_env.opponents import Opponent


@dataclass(frozen=True)
class Move:
    """One move made by the loop: who made it, the action, and the result of the round it
    ended (None when the round goes on)."""

    seat: int
    action: int
    round_over: RoundResult | None


def step(env: raw_env, action: int) -> Move:
    """Play ``action`` for the seat to move (the engine checks it) and say what it did."""
    seat = env.seat_of(env.agent_selection)
    finished = len(env.results)
    env.step(action)
    return Move(seat, int(action), env.results[-1] if len(env.results) > finished else None)


def play_moves(env: raw_env, players: Sequence[Opponent | None]) -> Iterator[Move]:
    """Let ``players`` (one per seat) move in ``env``, yielding each move, until the episode
    ends or the seat to move has no player. A player with an ``observation`` attribute (every
    agent has one) is given its observations in that encoding.

    Examples:
        >>> from block_env import raw_env
        >>> from block_env.opponents import RandomOpponent
        >>> env = raw_env("standard")
        >>> env.reset(seed=1)
        >>> moves = list(play_moves(env, [RandomOpponent(seed=1), RandomOpponent(seed=2)]))
        >>> env.episode_over and moves[-1].round_over == env.results[-1]
        True
    """
    if len(players) != env.rules.num_players:
        raise ValueError(f"play_moves needs one player per seat ({env.rules.num_players}), got {len(players)}")
    while not env.episode_over:
        player = players[env.seat_of(env.agent_selection)]
        if player is None:
            return
        # Each player reads its own encoding (an agent's ``observation``), the env's otherwise.
        yield step(env, player.act(env.observe(env.agent_selection, getattr(player, "observation", None))))
