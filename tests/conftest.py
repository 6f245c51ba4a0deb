"""Shared helpers: scripted scenarios written in the vocabulary of RULES.md."""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from block_env import Rules, raw_env
from block_env.tiles import LEFT_END, RIGHT_END

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

PASS = "pass"
Move = Union[str, tuple[tuple[int, int], int]]
L, R = LEFT_END, RIGHT_END


def action_of(rules: Rules, move: Move) -> int:
    """(tile, end) or "pass" as an action id."""
    ts = rules.tile_set
    if move == PASS:
        return ts.pass_action
    tile, end = move
    return ts.action(tile, end)


def scripted_env(rules: Rules, hands: Sequence[Sequence[tuple[int, int]]], leader: int | None = 0, **kwargs) -> raw_env:
    env = raw_env(rules, **kwargs)
    options: dict = {"hands": [list(h) for h in hands]}
    if leader is not None:
        options["leader"] = leader
    env.reset(seed=0, options=options)
    return env


def play(env: raw_env, moves: Sequence[Move]) -> None:
    for move in moves:
        env.step(action_of(env.rules, move))


def legal_ids(env: raw_env) -> list[int]:
    return [int(a) for a in np.flatnonzero(env.observe(env.agent_selection)["action_mask"])]


@pytest.fixture
def standard() -> Rules:
    return Rules()
