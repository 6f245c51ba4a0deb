"""The env options' choice lists, in one place (CONTRACT.md: "Environments").

Rules choices live in :mod:`block_env.rules`; these are the adapters' options. The envs, the
training configs and the console command import them instead of retyping them.
"""

from __future__ import annotations

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
