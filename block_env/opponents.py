"""What the Gymnasium views need of an opponent: a small protocol the core defines.

The envs know nothing of the agents package (imports go one way: core <- agents). Anything
with ``act(observation_dict) -> action`` and ``reset(seed)`` can sit at an opponent's seat;
``block_env.agents.Agent`` is one. Spec strings such as ``"greedy"`` are turned into agents
above the core: an env given strings needs an ``opponent_factory`` (``gymnasium.make`` and
``block_env.agents.make_env`` pass one), except ``"random"``, which the core plays itself
(:class:`RandomOpponent`), so that the envs work with their defaults.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from block_env.batched import random_legal_actions
from block_env.rules import Rules


@runtime_checkable
class Opponent(Protocol):
    """A policy for one seat, acting on that seat's observation dict alone."""

    def act(self, obs: dict[str, np.ndarray]) -> int:
        """A legal action id (the observation's ``action_mask`` says which are legal)."""
        ...

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; reseed when ``seed`` is given."""
        ...


@runtime_checkable
class BatchOpponent(Opponent, Protocol):
    """An opponent that also acts for many games in one call (the vector env batches it).

    An opponent whose ``observes`` attribute is False chooses from the masks alone and is
    given ``observations=None`` (the env then skips encoding them).
    """

    def act_batch(self, observations: np.ndarray | None, masks: np.ndarray) -> np.ndarray:
        """(k,) legal actions for k observations (k, size) with their bool masks (k, 2T+1)."""
        ...


#: ``compiled_policy`` of an opponent that picks uniformly among the legal actions. An opponent
#: whose ``compiled_policy`` is UNIFORM or a rank array (2T+1,) int (it plays the highest-ranked
#: legal action, the first on ties) is played inside the batched engine's compiled loop by the
#: vector env, without a call per move: it must choose as its ``act`` does (for UNIFORM, in
#: distribution: the env draws from its own seeded streams).
UNIFORM = "uniform"


def compiled_policy(opponent: Opponent) -> np.ndarray | str | None:
    """The opponent's compiled policy (UNIFORM or a rank array), or None."""
    policy = getattr(opponent, "compiled_policy", None)
    if policy is None or (isinstance(policy, str) and policy == UNIFORM):
        return policy
    if isinstance(policy, np.ndarray) and policy.ndim == 1 and np.issubdtype(policy.dtype, np.integer):
        return policy
    raise ValueError(f"{opponent!r}: compiled_policy must be {UNIFORM!r} or a 1-D integer rank array, got {policy!r}")


def random_legal_action(mask: np.ndarray, rng: random.Random) -> int:
    """A legal action drawn uniformly (``mask``: an observation's action mask)."""
    legal = np.flatnonzero(mask)
    if not len(legal):
        raise ValueError("the observation's action mask is all zeros: it is not this seat's turn")
    return int(legal[rng.randrange(len(legal))])


class RandomOpponent:
    """Uniform over the legal actions: the opponent the Gymnasium views use for the spec
    ``"random"`` when they are given no ``opponent_factory`` (``block_env.agents``'
    ``random`` agent plays the same way).

    Examples:
        >>> import numpy as np
        >>> RandomOpponent(seed=0).act({"action_mask": np.array([0, 1, 0], dtype=np.int8)})
        1
    """

    name = "random"
    observes = False  # act_batch reads the masks alone
    compiled_policy = UNIFORM  # the vector env plays it inside its compiled loop

    def __init__(self, seed: int | None = None) -> None:
        self.reseed(seed)

    def reseed(self, seed: int | None) -> None:
        """Both streams from ``seed``: ``act``'s, and ``act_batch``'s own."""
        self.rng = random.Random(seed)
        self.batch_rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.reseed(seed)

    def act(self, obs: dict[str, np.ndarray]) -> int:
        return random_legal_action(obs["action_mask"], self.rng)

    def act_batch(self, observations: np.ndarray | None, masks: np.ndarray) -> np.ndarray:
        return random_legal_actions(masks, self.batch_rng)


class GameByGame:
    """``opponent`` offered without its ``act_batch`` (and without a compiled policy): a vector
    env asks it with ``act``, game by game. What batched play is compared and timed against.

    Examples:
        >>> isinstance(RandomOpponent(), BatchOpponent), isinstance(GameByGame(RandomOpponent()), BatchOpponent)
        (True, False)
    """

    def __init__(self, opponent: Opponent) -> None:
        self.opponent = opponent

    @property
    def rules(self) -> Rules | None:
        """The rules ``opponent`` was built for, if it says (the env checks them)."""
        return getattr(self.opponent, "rules", None)

    @property
    def observation(self) -> str | None:
        """The encoding ``opponent`` reads, if it says (the env encodes its observations in it)."""
        return getattr(self.opponent, "observation", None)

    def act(self, obs: dict[str, np.ndarray]) -> int:
        return self.opponent.act(obs)

    def reset(self, seed: int | None = None) -> None:
        self.opponent.reset(seed)


#: Turns an agent spec string into an Opponent (e.g. ``block_env.agents.AgentFactory``).
OpponentFactory = Callable[[str], Opponent]


def resolve_opponents(opponents: object, factory: OpponentFactory | None, rules: Rules | None = None) -> list[Opponent]:
    """A non-empty opponent pool from Opponents and spec strings (strings need ``factory``).

    An opponent that says which rules it was built for (a ``rules`` attribute, as every agent
    has) must play the env's: ValueError now, rather than a wrong decision mid-episode. Its
    encoding may differ from the env's (:func:`opponent_encoding`)."""
    if isinstance(opponents, (str, Opponent)) or not isinstance(opponents, (list, tuple)) or not opponents:
        raise ValueError(f"opponents must be a non-empty sequence of agent specs or agents, got {opponents!r}")
    pool: list[Opponent] = []
    for i, opponent in enumerate(opponents):
        if isinstance(opponent, Opponent):
            _check_built_for(i, opponent, rules)
            pool.append(opponent)
        elif isinstance(opponent, str):
            if factory is None and opponent == RandomOpponent.name:
                pool.append(RandomOpponent())
                continue
            if factory is None:
                raise ValueError(
                    f"opponents[{i}] is the spec {opponent!r}, but this env has no opponent_factory to build it: "
                    "use gymnasium.make('block_env/BlockDominoes-v0', ...) or block_env.agents.make_env(...), "
                    "or pass agent objects"
                )
            pool.append(factory(opponent))
        else:
            raise ValueError(
                f"opponents[{i}] must be an agent spec string or have act(obs) and reset(seed), got {opponent!r}"
            )
    return pool


def _check_built_for(index: int, opponent: Opponent, rules: Rules | None) -> None:
    built_rules = getattr(opponent, "rules", None)
    if rules is not None and isinstance(built_rules, Rules) and built_rules != rules:
        raise ValueError(f"opponents[{index}] ({opponent!r}) was built for {built_rules}, but this env plays {rules}")


def opponent_encoding(opponent: Opponent, env_encoding: str) -> str:
    """The encoding an env observes for ``opponent``: the one it reads (an agent's
    ``observation``), or the env's for an opponent that does not say."""
    encoding = getattr(opponent, "observation", None)
    return encoding if isinstance(encoding, str) else env_encoding
