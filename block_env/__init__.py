"""block_env: Block dominoes for reinforcement learning.

The rules engine (:mod:`block_env.engine`, :mod:`block_env.rules`, :mod:`block_env.tiles`,
:mod:`block_env.observations`) is pure Python + numpy and imports neither PettingZoo nor
Gymnasium. ``raw_env``/``env`` (PettingZoo AEC) and ``BlockDominoesEnv`` (Gymnasium) are
loaded on first use; importing the package registers ``block_env/BlockDominoes-v0`` with
Gymnasium when it is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from block_env.engine import Match, PublicView, Round, RoundResult
from block_env.observations import decode_observation
from block_env.rules import PRESETS, Rules
from block_env.tiles import TileSet, tile_set

if TYPE_CHECKING:
    from block_env.aec import env, raw_env
    from block_env.gym_env import BlockDominoesEnv

__version__ = "0.1.0"

__all__ = [
    "GYM_ID",
    "PRESETS",
    "BlockDominoesEnv",
    "Match",
    "PublicView",
    "Round",
    "RoundResult",
    "Rules",
    "TileSet",
    "decode_observation",
    "env",
    "raw_env",
    "tile_set",
]

_LAZY = {"raw_env": "block_env.aec", "env": "block_env.aec", "BlockDominoesEnv": "block_env.gym_env"}
GYM_ID = "block_env/BlockDominoes-v0"


def _register_with_gymnasium() -> None:
    """Make ``gymnasium.make("block_env/BlockDominoes-v0", ...)`` work after ``import block_env``.

    The entry point is a string, so the env module loads only on make(). No wrappers are
    added: the env enforces reset-before-step itself (and passes Gymnasium's checker, see
    the tests), and ``env.action_masks()`` stays reachable for MaskablePPO.
    """
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:  # the engine runs without Gymnasium
        return
    if GYM_ID not in registry:
        register(
            id=GYM_ID,
            # Above the core: the agents layer turns opponent spec strings into agents.
            entry_point="block_env.agents:make_env",
            vector_entry_point="block_env.agents:make_vector_env",
            disable_env_checker=True,
            order_enforce=False,
        )


_register_with_gymnasium()


def __getattr__(name: str) -> Any:
    # PEP 562: the PettingZoo adapter is imported only when asked for.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'block_env' has no attribute {name!r}")
