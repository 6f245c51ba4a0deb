"""The agent interface. Agents act from exactly what a seat observes: the env's observation
dict, read into a :class:`block_env.PublicView` by the public decoder
(:func:`block_env.observations.read_public_view`). Nothing here can reach hidden state.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod

import numpy as np

from block_env.engine import PublicView
from block_env.observations import read_public_view
from block_env.options import ENCODINGS
from block_env.rules import Rules, resolve_rules
from block_env.validation import check_choice

Observation = dict[str, np.ndarray]


class Agent(ABC):
    """A policy for one seat. ``act`` sees only that seat's observation dict.

    Agents are built for one rules set and encoding (the decoder needs both) and carry their
    own seeded RNG: same seed, same observations → same actions.

    Examples:
        >>> from block_env import Rules
        >>> from block_env.agents import Agent
        >>> class FirstLegal(Agent):
        ...     name = "first_legal"
        ...     def act(self, obs):
        ...         return int(obs["action_mask"].argmax())
        >>> FirstLegal(Rules()).name
        'first_legal'
    """

    name = "agent"
    #: True when the agent's move is a function of the observation alone (it draws no random
    #: numbers and keeps nothing between moves) and its ``act_batch`` chooses for each row what
    #: ``act`` would: then one instance may play many games at once (the arena's lockstep play).
    deterministic: bool = False

    def __init__(self, rules: Rules | str, seed: int | None = None, observation: str = "vector") -> None:
        self.rules = resolve_rules(rules)
        self.observation = check_choice("observation", observation, ENCODINGS)
        self.rng = random.Random(seed)

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; reseed when ``seed`` is given."""
        if seed is not None:
            self.rng.seed(seed)

    def view(self, obs: Observation) -> PublicView:
        """What this seat knows, read from its observation dict."""
        return read_public_view(obs, self.rules, self.observation)

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
