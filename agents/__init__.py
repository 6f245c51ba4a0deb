"""Agents that act from one seat's observation: scripted baselines, search, trained
policies and a human at the terminal. Build one from a spec string with :func:`make_agent`:

- ``random``, ``greedy``, ``strategic``
- ``search`` or ``search:worlds=96,playout=greedy,epsilon=0.15``
- ``policy:PATH`` (an agent folder written by training)
- ``pretrained:NAME`` (a trained agent shipped with the package: :data:`PRETRAINED`)
- ``openspiel:ismcts`` or ``openspiel:mcts,simulations=200`` (OpenSpiel's search bots)
- ``solved:PATH`` (the average policy ``block-dominoes solve`` wrote into PATH)
- ``human``

Option values read as ints, floats, ``true`` and ``false`` (booleans), or else strings.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from block_env.agents.base import Agent, Observation
from block_env.agents.human import HumanAgent
from block_env.agents.scripted import GreedyAgent, RandomAgent, StrategicAgent
from block_env.agents.search import SearchAgent
from block_env.rules import Rules, resolve_rules

AGENTS: dict[str, type[Agent]] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
    "strategic": StrategicAgent,
    "search": SearchAgent,
    "human": HumanAgent,
}

#: ``openspiel:BOT,...``: OpenSpiel's search bots (block_env.agents.openspiel; the [openspiel] extra).
OPENSPIEL = "openspiel"

#: The trained agents shipped in block_env/agents/pretrained/ (agent folders, loaded weights-only).
PRETRAINED_DIR = Path(__file__).with_name("pretrained")
PRETRAINED = (
    tuple(sorted(p.name for p in PRETRAINED_DIR.iterdir() if (p / "agent.json").is_file()))
    if PRETRAINED_DIR.is_dir()
    else ()
)

__all__ = [
    "AGENTS",
    "Agent",
    "AgentFactory",
    "GreedyAgent",
    "HumanAgent",
    "Observation",
    "RandomAgent",
    "SearchAgent",
    "StrategicAgent",
    "check_option_names",
    "make_agent",
    "make_env",
    "make_vector_env",
    "parse_spec",
    "trained_agent_folder",
]


def _parse_value(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"search:worlds=96"`` -> ("search", {"worlds": 96}); ``"policy:runs/a"`` -> ("policy", {"path": "runs/a"}).

    Examples:
        >>> parse_spec("search:worlds=96,playout=greedy,prior_mirror=false")
        ('search', {'worlds': 96, 'playout': 'greedy', 'prior_mirror': False})
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an agent spec is a non-empty string, got {spec!r}")
    name, _, rest = spec.partition(":")
    if name == "policy":
        if not rest:
            raise ValueError("the policy agent needs a path: policy:PATH")
        return name, {"path": rest}
    if name == "pretrained":
        if rest not in PRETRAINED:
            raise ValueError(f"unknown pretrained agent {rest!r}; shipped: {', '.join(PRETRAINED) or 'none'}")
        return "policy", {"path": str(PRETRAINED_DIR / rest)}
    if name == "solved":
        if not rest:
            raise ValueError("the solved agent needs a path: solved:PATH (a solve's --out folder)")
        return name, {"path": rest}
    kwargs: dict[str, Any] = {}
    items = [item for item in rest.split(",") if item]
    if name == OPENSPIEL:
        if not items or "=" in items[0]:
            raise ValueError(
                f"an OpenSpiel agent names its bot first: openspiel:ismcts or openspiel:mcts, got {spec!r}"
            )
        kwargs["bot"] = items.pop(0).strip()
    elif name not in AGENTS:
        known = [*AGENTS, "policy:PATH", "pretrained:NAME", "openspiel:BOT", "solved:PATH"]
        raise ValueError(f"unknown agent {name!r}; agents: {', '.join(known)}")
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"agent option {item!r} in {spec!r} is not key=value")
        kwargs[key.strip()] = _parse_value(value.strip())
    return name, kwargs


def trained_agent_folder(spec: str) -> Path:
    """The agent folder a trained agent's spec names (``pretrained:NAME``, ``policy:PATH``);
    ValueError for any other spec.

    Examples:
        >>> trained_agent_folder("pretrained:standard").name
        'standard'
    """
    name, kwargs = parse_spec(spec)
    if name != "policy":
        raise ValueError(f"a trained agent is pretrained:NAME or policy:PATH, got {spec!r}")
    return Path(kwargs["path"])


def make_agent(spec: str, rules: Rules | str | None, seed: int | None = None, observation: str | None = None) -> Agent:
    """Build an agent from a spec string (see the module docstring). ``observation``: the
    encoding it reads; by default a trained agent's own (its agent.json's), "history" for a
    search with ``belief=prior`` or a "tracked" prior (it reads the round's moves), "vector"
    for the others.

    Examples:
        >>> from block_env import raw_env
        >>> from block_env.agents import make_agent
        >>> env = raw_env("standard")
        >>> env.reset(seed=0)
        >>> agent = make_agent("search:worlds=8", env.rules, seed=1)
        >>> env.observe("player_0")["action_mask"][agent.act(env.observe(env.agent_selection))] == 1 or env.agent_selection != "player_0"
        True
    """
    name, kwargs = parse_spec(spec)
    rules = resolve_rules(rules)
    if name == "policy":
        from block_env.agents.policy import PolicyAgent

        return PolicyAgent(rules, seed, observation, **kwargs)
    if name == "solved":
        from block_env.agents.solved import SolvedAgent

        return SolvedAgent(rules, seed, observation or "history", **kwargs)
    agent_class = _openspiel_agent_class() if name == OPENSPIEL else AGENTS[name]
    try:
        if observation is None:  # each agent reads its own default encoding
            return agent_class(rules, seed, **kwargs)
        return agent_class(rules, seed, observation, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad options for agent {name!r} in {spec!r}: {e}") from None


def check_option_names(spec: str) -> None:
    """ValueError naming an option ``spec`` gives that its agent does not take: the check a spec
    can have before a file it names exists (a ``{prior}`` that a training stage has yet to
    make). Trained, solved and OpenSpiel agents' options are checked when they are built.

    Examples:
        >>> check_option_names("search:prior={prior},worlds=32")
        >>> check_option_names("search:prior={prior},wrlds=32")
        Traceback (most recent call last):
        ...
        ValueError: bad options for agent 'search' in 'search:prior={prior},wrlds=32': got an unexpected keyword argument 'wrlds'
    """
    name, kwargs = parse_spec(spec)
    if name in ("policy", "solved", OPENSPIEL):
        return
    try:
        inspect.signature(AGENTS[name]).bind_partial(None, None, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad options for agent {name!r} in {spec!r}: {e}") from None


def _openspiel_agent_class() -> type[Agent]:
    """The ``openspiel:`` agents' class, imported on first use (the [openspiel] extra)."""
    try:
        from block_env.agents.openspiel import OpenSpielAgent
    except ImportError as e:
        raise ValueError(
            f"the openspiel agents need the [openspiel] extra (pip install 'block-env[openspiel]'): {e}"
        ) from None
    return OpenSpielAgent


class AgentFactory:
    """Builds agents from spec strings for one rules set: the ``opponent_factory`` the
    Gymnasium views take (picklable, for subprocess envs). Each agent reads its own encoding
    (its default, as :func:`make_agent` builds it, or ``observation`` when given);
    the envs observe for each opponent in the encoding it reads.

    Examples:
        >>> from block_env import Rules
        >>> AgentFactory(Rules())("greedy").name
        'greedy'
    """

    def __init__(self, rules: Rules, observation: str | None = None) -> None:
        self.rules = rules
        self.observation = observation

    def __call__(self, spec: str) -> Agent:
        return make_agent(spec, self.rules, observation=self.observation)


def make_vector_env(num_envs: int, rules: Rules | str | None = None, **kwargs: Any) -> Any:
    """A :class:`block_env.vector_env.BlockDominoesVectorEnv` whose opponents may be agent
    specs: what ``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`` builds.

    Examples:
        >>> envs = make_vector_env(8, "standard", opponents=["strategic"])
        >>> observations, infos = envs.reset(seed=0)
        >>> observations.shape
        (8, 121)
    """
    from block_env.vector_env import BlockDominoesVectorEnv

    resolved = resolve_rules(rules)
    kwargs.setdefault("opponent_factory", AgentFactory(resolved))
    return BlockDominoesVectorEnv(num_envs, resolved, **kwargs)


def make_env(rules: Rules | str | None = None, **kwargs: Any) -> Any:
    """A :class:`block_env.BlockDominoesEnv` whose opponents may be agent specs: what
    ``gymnasium.make("block_env/BlockDominoes-v0", ...)`` builds.

    Examples:
        >>> env = make_env("standard_3p", opponents=["greedy", "strategic"])
        >>> observation, info = env.reset(seed=0)
        >>> info["learner_seat"] in (0, 1, 2)
        True
    """
    from block_env.gym_env import BlockDominoesEnv

    resolved = resolve_rules(rules)
    kwargs.setdefault("opponent_factory", AgentFactory(resolved))
    return BlockDominoesEnv(resolved, **kwargs)
