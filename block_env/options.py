"""The env options' choice lists, in one place (CONTRACT.md: "Environments").

Rules choices live in :mod:`block_env.rules`; these are the adapters' options. The envs, the
training configs and the console command import them instead of retyping them.
"""

from __future__ import annotations

import math
from typing import Any

#: ``episode=``: one round, or rounds until the match target.
EPISODES = ("round", "match")
#: ``reward=``: see :meth:`block_env.RoundResult.side_values`.
REWARDS = ("zero_sum", "points", "win_loss")
#: ``observation=``: the player encodings (``state()`` is always available besides).
ENCODINGS = ("vector", "history")
#: ``render_mode=`` of the AEC env; the Gymnasium views offer the non-interactive two.
RENDER_MODES = ("human", "ansi", "rgb_array")
#: ``illegal_action=`` of the Gymnasium views: raise ValueError, or end the episode.
ILLEGAL_ACTIONS = ("raise", "terminate")


def check_learner_seat(learner_seat: Any, num_players: int) -> None:
    """ValueError unless ``learner_seat`` is None or a seat 0..n-1 (an int, not a bool)."""
    if learner_seat is not None and (
        isinstance(learner_seat, bool) or not isinstance(learner_seat, int) or not 0 <= learner_seat < num_players
    ):
        raise ValueError(f"learner_seat must be None or a seat 0..{num_players - 1}, got {learner_seat!r}")


def check_reward_scale(reward_scale: Any) -> None:
    """ValueError unless ``reward_scale`` is a positive finite number (NaN and inf are not)."""
    if (
        isinstance(reward_scale, bool)
        or not isinstance(reward_scale, (int, float))
        or not math.isfinite(reward_scale)
        or reward_scale <= 0
    ):
        raise ValueError(f"reward_scale must be a positive finite number, got {reward_scale!r}")


def check_flag(name: str, value: Any) -> None:
    """ValueError unless the option ``name`` is a bool."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")


def check_skip_forced(skip_forced: Any) -> None:
    """ValueError unless ``skip_forced`` is a bool."""
    check_flag("skip_forced", skip_forced)
