"""The env options' choice lists, in one place (docs/environments.md, Options).

Rules choices live in :mod:`block_env.rules`; these are the adapters' options. The envs, the
training configs and the console command import them instead of retyping them.
"""

from __future__ import annotations

from typing import Any

from block_env.validation import is_int

#: ``episode=``: one round, or rounds until the match target.
EPISODES = ("round", "match")
#: ``reward=``: see :meth:`block_env.RoundResult.side_values`.
REWARDS = ("zero_sum", "points", "win_loss")
#: ``observation=``: the player encodings (``state()`` is always available besides).
ENCODINGS = ("vector", "history", "tracked")
#: ``render_mode=`` of the AEC env; the Gymnasium views offer the non-interactive two.
RENDER_MODES = ("human", "ansi", "rgb_array")
#: ``illegal_action=`` of the Gymnasium views: raise ValueError, or end the episode.
ILLEGAL_ACTIONS = ("raise", "terminate")
#: The Gymnasium views deal again when a scripted or quick round ends before the learner's
#: first decision; this many times in a row at most, then an error (ValueError from the single
#: view, whose scripted deal may be the cause; RuntimeError from the vector view).
MAX_REDEALS = 100


def check_learner_seat(learner_seat: Any, num_players: int) -> None:
    """ValueError unless ``learner_seat`` is None or a seat 0..n-1 (an int, not a bool)."""
    if learner_seat is not None and not (is_int(learner_seat) and 0 <= learner_seat < num_players):
        raise ValueError(f"learner_seat must be None or a seat 0..{num_players - 1}, got {learner_seat!r}")
