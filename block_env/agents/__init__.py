"""Agents that act from one seat's observation: scripted baselines, search, trained
policies and a human at the terminal. Build one from a spec string with :func:`make_agent`:

- ``random``, ``greedy``, ``strategic``
- ``search`` or ``search:worlds=96,playout=greedy,epsilon=0.15``
- ``policy:PATH`` (an agent folder written by training)
- ``human``
"""

from __future__ import annotations

from typing import Any

from block_env.agents.base import Agent, Knowledge, Observation
from block_env.agents.human import HumanAgent
from block_env.agents.scripted import GreedyAgent, RandomAgent, StrategicAgent
from block_env.agents.search import SearchAgent
from block_env.rules import Rules

AGENTS: dict[str, type[Agent]] = {
    "random": RandomAgent,
    "greedy": GreedyAgent,
    "strategic": StrategicAgent,
    "search": SearchAgent,
    "human": HumanAgent,
}

__all__ = [
    "AGENTS",
    "Agent",
    "GreedyAgent",
    "HumanAgent",
    "Knowledge",
    "Observation",
    "RandomAgent",
    "SearchAgent",
    "StrategicAgent",
    "make_agent",
    "parse_spec",
]


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"search:worlds=96"`` -> ("search", {"worlds": 96}); ``"policy:runs/a"`` -> ("policy", {"path": "runs/a"})."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"an agent spec is a non-empty string, got {spec!r}")
    name, _, rest = spec.partition(":")
    if name == "policy":
        if not rest:
            raise ValueError("the policy agent needs a path: policy:PATH")
        return name, {"path": rest}
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; agents: {', '.join([*AGENTS, 'policy:PATH'])}")
    kwargs: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"agent option {item!r} in {spec!r} is not key=value")
        kwargs[key.strip()] = _parse_value(value.strip())
    return name, kwargs


def make_agent(spec: str, rules: Rules, seed: int | None = None, observation: str = "vector") -> Agent:
    """Build an agent from a spec string (see the module docstring)."""
    name, kwargs = parse_spec(spec)
    if name == "policy":
        from block_env.agents.policy import PolicyAgent

        return PolicyAgent(rules, seed, observation, **kwargs)
    try:
        return AGENTS[name](rules, seed, observation, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad options for agent {name!r} in {spec!r}: {e}") from None
