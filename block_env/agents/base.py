"""The agent interface, and what a seat knows, read from its observation alone.

Agents act from exactly what a seat observes: the env's observation dict, decoded with the
public decoder (:func:`block_env.decode_observation`). Nothing here can reach hidden state.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from block_env.observations import decode_observation
from block_env.rules import Rules

Observation = dict[str, np.ndarray]


@dataclass(frozen=True)
class Knowledge:
    """What one seat knows at the table, in seat-relative terms (0 = me, 1 = next seat...).

    Tile sets are int bitmasks over tile indices; ``voids[r]`` is a bitmask over suits.
    """

    rules: Rules
    hand: int
    ends: tuple[int, int] | None
    played: int
    opening: int | None
    leader: int
    hand_counts: tuple[int, ...]
    voids: tuple[int, ...]
    passes: int
    scores: tuple[int, ...]
    legal: tuple[int, ...]

    @classmethod
    def from_observation(cls, obs: Observation, rules: Rules, observation: str = "vector") -> Knowledge:
        """Decode the env's observation dict (either encoding) into what the seat knows."""
        d = decode_observation(obs["observation"], rules, observation=observation)
        ts = rules.tile_set
        return cls(
            rules=rules,
            hand=ts.mask_of(d["hand"]),
            ends=d["ends"],
            played=ts.mask_of(d["played"]),
            opening=None if d["opening"] is None else ts.tile_index(d["opening"]),
            leader=d["leader"] or 0,
            hand_counts=tuple(d["hand_counts"]),
            voids=tuple(sum(1 << v for v in row) for row in d["voids"]),
            passes=d["passes"],
            scores=tuple(d["scores"]),
            legal=tuple(int(a) for a in np.flatnonzero(obs["action_mask"])),
        )

    @property
    def unseen(self) -> int:
        """Tiles I cannot see: in other hands or out of play."""
        return ((1 << self.rules.tile_set.num_tiles) - 1) & ~self.hand & ~self.played

    @property
    def partner(self) -> int | None:
        return 2 if self.rules.partnership else None

    @property
    def opponents(self) -> list[int]:
        return [r for r in range(1, self.rules.num_players) if r != self.partner]


class Agent(ABC):
    """A policy for one seat. ``act`` sees only that seat's observation dict.

    Agents are built for one rules set and encoding (the decoder needs both) and carry their
    own seeded RNG: same seed, same observations → same actions.
    """

    name = "agent"

    def __init__(self, rules: Rules, seed: int | None = None, observation: str = "vector") -> None:
        self.rules = rules
        self.observation = observation
        self.rng = random.Random(seed)

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; reseed when ``seed`` is given."""
        if seed is not None:
            self.rng.seed(seed)

    def knowledge(self, obs: Observation) -> Knowledge:
        return Knowledge.from_observation(obs, self.rules, self.observation)

    @abstractmethod
    def act(self, obs: Observation) -> int:
        """A legal action id for the observing seat (its mask must not be all zeros)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def legal_actions(obs: Observation) -> list[int]:
    legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
    if not legal:
        raise ValueError("the observation's action mask is all zeros: it is not this seat's turn")
    return legal
