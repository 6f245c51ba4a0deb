"""The coach: what the project's agents think of each legal move of a person's seat, as a hint
before moving or as a review of a finished round.

Two views, made from what the agents already compute and from nothing the seat cannot see:

- **search** (agents/search.py): every legal move played on the same sampled deals of the
  hidden tiles, each round played out; per move its mean points for the person's side (net of
  the others', as the arena counts: the winning side +award, the others -award / (sides - 1))
  with the standard error of that mean, and the share of deals in which the side wins the round.
- **network**: where a network is shipped for the rules (``pretrained:PRESET``), the share of
  its policy on each legal move: how likely its network is to play it (an agent that hands
  its last tiles to a search is read without that search: the network's own shares).

Cost is bounded per request: at most :data:`COACH_WORLDS` sampled deals a position, fewer so
that every position's moves together play out at most :data:`COACH_PLAYOUTS` rounds, all in
one batch on the batched engine. A fixed seed makes the same position get the same advice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from block_env.aec import raw_env
from block_env.agents import PRETRAINED, trained_agent_folder
from block_env.agents.policy import PolicyAgent
from block_env.agents.search import SearchAgent
from block_env.apps.replay import replay_round
from block_env.engine import Round
from block_env.observations import encode
from block_env.rules import PRESETS, Rules
from block_env.tiles import TileSet

#: Sampled deals of the hidden tiles per position, at most.
COACH_WORLDS = 256
#: At most this many rounds played out per request (deals x legal moves, over every position).
COACH_PLAYOUTS = 32_768
#: The fewest deals a position is searched on, however many positions a review holds.
MIN_WORLDS = 16
COACH_SEED = 2026


@dataclass(frozen=True)
class Decision:
    """One decision of the person's seat: what the seat saw (the "vector" observation the
    search reads, and the network's own encoding), the legal moves, the line then, and the
    move made (None for a hint)."""

    vector: np.ndarray
    network_input: np.ndarray | None
    legal: list[int]
    line: list[list[int]]
    ends: list[int] | None
    played: int | None = None


def network_for(preset: str) -> str | None:
    """The shipped agent whose network the coach reads for ``preset`` (None where none is
    shipped)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown rules {preset!r}; rules: {', '.join(PRESETS)}")
    return f"pretrained:{preset}" if preset in PRETRAINED else None


def _network(preset: str, rules: Rules) -> PolicyAgent | None:
    spec = network_for(preset)
    if spec is None:
        return None
    # Its network alone (endgame=False): the coach reads its logits, never an endgame search.
    return PolicyAgent(rules, COACH_SEED, path=trained_agent_folder(spec), endgame=False)


def hint_decision(env: raw_env, seat: int, network: PolicyAgent | None) -> Decision:
    """The decision in front of ``seat`` now (ValueError when it is not that seat's move)."""
    agent = env.possible_agents[seat]
    if env.episode_over or env.agent_selection != agent:
        raise ValueError("a hint is for your own move: it is not your move now")
    obs = env.observe(agent, "vector")
    legal = [int(a) for a in np.flatnonzero(obs["action_mask"])]
    ends = env.public_view(agent).ends
    return Decision(
        vector=obs["observation"],
        network_input=None if network is None else env.observe(agent, network.observation)["observation"],
        legal=legal,
        line=[list(t) for t in env.line()],
        ends=None if ends is None else list(ends),
    )


def round_decisions(
    rules: Rules, record: dict[str, Any], seat: int, scores: list[int], network: PolicyAgent | None
) -> list[Decision]:
    """Each decision ``seat`` made in a recorded round with a choice (two or more legal moves),
    as the seat saw it; ``scores``: the match score per side before the round."""
    final, _ = replay_round(rules, record)  # checks the record move by move
    rnd = Round.start(rules, final.dealt_hands(), record["lead"])
    decisions = []
    for mover, action in record["moves"]:
        legal = rnd.legal_actions()
        if mover == seat and len(legal) > 1:
            decisions.append(
                Decision(
                    vector=encode("vector", rnd, seat, scores),
                    network_input=None if network is None else encode(network.observation, rnd, seat, scores),
                    legal=legal,
                    line=[list(t) for t in rnd.line()],
                    ends=None if rnd.ends is None else list(rnd.ends),
                    played=action,
                )
            )
        rnd.step(action)
    return decisions


def advise(preset: str, rules: Rules, decisions: list[Decision], network: PolicyAgent | None) -> dict[str, Any]:
    """Search's and the network's view of every legal move of each decision, searched in one batch."""
    total_moves = sum(len(d.legal) for d in decisions)
    worlds = max(MIN_WORLDS, min(COACH_WORLDS, COACH_PLAYOUTS // max(total_moves, 1)))
    search = SearchAgent(rules, seed=COACH_SEED, worlds=worlds)
    masks = np.zeros((len(decisions), rules.tile_set.num_actions), dtype=bool)
    for row, d in enumerate(decisions):
        masks[row, d.legal] = True
    searched = search.search_moves(np.array([d.vector for d in decisions]), masks) if decisions else []
    shares: list[np.ndarray | None] = [None] * len(decisions)
    if network is not None and decisions:
        logits = network.logits(np.array([d.network_input for d in decisions]))
        for row, d in enumerate(decisions):
            legal_logits = logits[row, d.legal]
            p = np.exp(legal_logits - legal_logits.max())
            shares[row] = p / p.sum()
    positions = [_position(rules.tile_set, d, s.values, share) for d, s, share in zip(decisions, searched, shares)]
    return {
        "rules": preset,
        "search": f"search on {worlds} deals of the hidden tiles",
        "worlds": worlds,
        "network": network_for(preset),
        "positions": positions,
    }


def _position(ts: TileSet, d: Decision, values: np.ndarray, share: np.ndarray | None) -> dict[str, Any]:
    means = values.mean(axis=1)
    errors = [_standard_error(row) for row in values]
    moves = []
    for j, action in enumerate(d.legal):
        placed = action != ts.pass_action
        moves.append(
            {
                "action": action,
                "text": ts.describe_action(action),
                "tile": list(ts.tiles[action >> 1]) if placed else None,
                "end": None if not placed or d.ends is None else ("right" if action & 1 else "left"),
                "points": round(float(means[j]), 2),
                "error": round(float(errors[j]), 2),
                "win": round(float((values[j] > 0).mean()), 3),
                "network": None if share is None else round(float(share[j]), 3),
            }
        )
    best = d.legal[int(np.argmax(means))]
    position: dict[str, Any] = {
        "line": d.line,
        "ends": d.ends,
        "moves": moves,
        "best": best,
        "network_best": None if share is None else d.legal[int(np.argmax(share))],
        "played": d.played,
    }
    if d.played is not None:
        played = d.legal.index(d.played)
        position["played_text"] = ts.describe_action(d.played)
        # The points given up against the best move, and that difference's standard error over
        # the same deals (paired: both moves were played on each deal).
        best_row = int(np.argmax(means))
        given_up = values[best_row] - values[played]
        position["cost"] = round(float(given_up.mean()), 2)
        position["cost_error"] = round(float(_standard_error(given_up)), 2)
    return position


def _standard_error(values: np.ndarray) -> float:
    """The standard error of the mean of ``values`` (0 for a single value)."""
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def hint(env: raw_env, preset: str, seat: int) -> dict[str, Any]:
    """The coach's view of the legal moves in front of ``seat`` now."""
    network = _network(preset, env.rules)
    return advise(preset, env.rules, [hint_decision(env, seat, network)], network)


def review(env: raw_env, preset: str, seat: int) -> dict[str, Any]:
    """The coach's view of each choice ``seat`` made in the last finished round (ValueError
    when no round has finished)."""
    if not env.results:
        raise ValueError("no round has finished yet: a review looks back at a finished round")
    record = env.round_records()[len(env.results) - 1]
    last = env.results[-1]
    scores = list(env.scores)  # before the round: take its award back
    if last.winning_side is not None:
        scores[last.winning_side] -= last.award
    network = _network(preset, env.rules)
    return advise(preset, env.rules, round_decisions(env.rules, record, seat, scores, network), network)
