"""What an arena run plays: its config, and how agents are seated at the tables."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from block_env.agents import parse_spec
from block_env.options import EPISODES
from block_env.rules import Rules, resolve_rules
from block_env.validation import check_choice, check_int


@dataclass(frozen=True)
class ArenaConfig:
    """What to play: agent specs (see :func:`block_env.agents.make_agent`), rules, episode
    mode ("round" or "match"), number of deals, seed and worker processes; ``record`` keeps
    every episode's full move record (a replay, see :mod:`block_env.apps.replay`).

    Examples:
        >>> config = ArenaConfig(agents=("greedy", "random"), deals=10, seed=1)
        >>> config.rules.num_players, config.episode
        (2, 'round')
    """

    agents: tuple[str, ...]
    rules: Rules = field(default_factory=Rules)
    episode: str = "round"
    deals: int = 100
    seed: int = 0
    workers: int = 1
    record: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", resolve_rules(self.rules))  # a preset name is fine too
        object.__setattr__(self, "agents", tuple(self.agents))
        if len(self.agents) < 2:
            raise ValueError(f"the arena needs at least 2 agents, got {list(self.agents)}")
        if len(set(self.agents)) != len(self.agents):
            raise ValueError(f"agent specs must be distinct, got {list(self.agents)}")
        for spec in self.agents:
            name, _ = parse_spec(spec)  # ValueError names an unknown agent
            if name == "human":
                raise ValueError("the arena plays unattended: use `block-dominoes play` for a human")
        check_choice("episode", self.episode, EPISODES)
        check_int("deals", self.deals, low=1)
        check_int("seed", self.seed, low=0)
        check_int("workers", self.workers, low=1)


def tables(num_agents: int, rules: Rules) -> list[tuple[int, ...]]:
    """Seatings before rotation, as agent indices per seat.

    Partnerships: every pair of agents, one per side. Individuals: every group of n agents
    (n = players), or with fewer agents than seats, the agents in turn around the table.
    """
    n = rules.num_players
    if rules.partnership:
        return [(a, b, a, b) for a, b in itertools.combinations(range(num_agents), 2)]
    if num_agents >= n:
        return list(itertools.combinations(range(num_agents), n))
    return [tuple(s % num_agents for s in range(n))]


def rotations(table: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The table's distinct cyclic rotations: each agent takes each seat once."""
    out: list[tuple[int, ...]] = []
    for r in range(len(table)):
        seating = table[r:] + table[:r]
        if seating not in out:
            out.append(seating)
    return out


def seatings(config: ArenaConfig) -> list[tuple[int, tuple[int, ...]]]:
    """Every episode of one deal, as (table index, seating): each table of :func:`tables`
    in each of its :func:`rotations`."""
    return [
        (index, seating)
        for index, table in enumerate(tables(len(config.agents), config.rules))
        for seating in rotations(table)
    ]


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)
