"""Playing one deal of the arena: every table and seating of it, each an episode from the same
seed. The body of a worker process's task and of a Ray task (:mod:`block_env.arena.play`,
:mod:`block_env.arena.ray`), below both so that neither imports the other.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from block_env.aec import raw_env
from block_env.agents import Agent, make_agent
from block_env.arena.config import ArenaConfig, seatings
from block_env.episodes import play_moves
from block_env.rules import Rules
from block_env.seeding import seat_seed


def play_episode(
    env: raw_env, agents: Sequence[Agent], seed: int, names: Sequence[str] | None = None
) -> dict[str, Any]:
    """One episode from ``reset(seed)`` with ``agents`` by seat: each round's result, the
    first deal (what duplicate play keeps identical across seatings) and the match winner.
    With ``names`` (the agents' specs by seat) also the full move record, as ``replay``."""
    env.reset(seed=seed)
    first_deal = env.deal()
    for seat, agent in enumerate(agents):
        agent.reset(seed=seat_seed(seed, seat))
    for _ in play_moves(env, agents):
        pass
    episode: dict[str, Any] = {
        "rounds": [r.as_dict() for r in env.results],
        "first_deal": first_deal,
        "match_winner_side": env.match_winner if env.episode == "match" else None,
    }
    if names is not None:
        replay = {"rules": env.rules.as_dict(), "agents": list(names), "rounds": env.round_records()}
        episode["replay"] = replay
    return episode


def arena_env(rules: Rules, episode: str) -> raw_env:
    """The env this thread plays its arena episodes of ``rules`` and ``episode`` in: built once,
    since building one (its spaces) costs more than playing a round in it, and every episode
    starts with ``reset(seed)``. One per thread, since an env plays one episode at a time."""
    return _thread_env(rules, episode, threading.get_ident())


@lru_cache(maxsize=8)
def _thread_env(rules: Rules, episode: str, thread: int) -> raw_env:
    return raw_env(rules, episode=episode, reward="points")


def play_deal(
    config: ArenaConfig, deal: int, seed: int, agents: dict[str, Agent] | None = None
) -> list[dict[str, Any]]:
    """Every table and rotation on one deal (the same seed, hence the same tiles).
    ``agents`` caches the built agents by spec across calls."""
    agents = {} if agents is None else agents
    for spec in config.agents:
        if spec not in agents:
            agents[spec] = make_agent(spec, config.rules)
    env = arena_env(config.rules, config.episode)
    records = []
    for table_index, seating in seatings(config):
        seated = [agents[config.agents[a]] for a in seating]
        names = [config.agents[a] for a in seating] if config.record else None
        episode = play_episode(env, seated, seed, names)
        records.append({"deal": deal, "table": table_index, "seating": list(seating), **episode})
    return records


def play_deal_batch(
    config: ArenaConfig, deals: Sequence[tuple[int, int]], agents: dict[str, Agent]
) -> list[tuple[int, list[dict[str, Any]]]]:
    """(deal, records) for each (deal, seed), ``agents`` caching the built agents (a Ray
    task's body: ``block_env.arena.ray``)."""
    return [(deal, play_deal(config, deal, seed, agents=agents)) for deal, seed in deals]
