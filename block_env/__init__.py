"""block_env: Block dominoes for reinforcement learning.

The rules engine (:mod:`block_env.engine`, :mod:`block_env.rules`, :mod:`block_env.tiles`,
:mod:`block_env.observations`) is pure Python + numpy and imports neither PettingZoo nor
Gymnasium. ``raw_env``/``env`` (PettingZoo AEC) are loaded on first use, so importing the
engine never pulls in the RL libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from block_env.engine import Match, PublicView, Round, RoundResult
from block_env.observations import decode_observation
from block_env.rules import PRESETS, Rules
from block_env.tiles import TileSet, tile_set

if TYPE_CHECKING:
    from block_env.aec import env, raw_env

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
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

_LAZY = {"raw_env": "block_env.aec", "env": "block_env.aec"}


def __getattr__(name: str) -> Any:
    # PEP 562: the PettingZoo adapter is imported only when asked for.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'block_env' has no attribute {name!r}")
