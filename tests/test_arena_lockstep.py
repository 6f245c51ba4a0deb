"""The arena's lockstep play: many deals' episodes stepped together give exactly the records of
playing each deal alone (``play_deal``), for trained networks asked in batches and for agents
that draw random numbers from their per-episode streams."""

from __future__ import annotations

import numpy as np
import pytest

from block_env import Rules, raw_env
from block_env.agents import make_agent
from block_env.arena import ArenaConfig, play_deal, run_arena
from block_env.arena.lockstep import play_lockstep, supports
from block_env.seeding import deal_seeds

# Each table size with shipped trained networks (one reading the "vector" encoding, one the
# "tracked"), the scripted baselines and random, which draws a number per move. With two agents
# at three or four seats one agent holds two seats and shares its stream between them.
CASES = [
    ("standard", ("pretrained:standard_vector", "pretrained:standard", "strategic", "random")),
    ("standard_3p", ("pretrained:standard_3p", "greedy", "strategic", "random")),
    ("standard_3p", ("pretrained:standard_3p", "random")),
    ("standard_4p", ("pretrained:standard_4p", "greedy", "random", "strategic")),
    ("standard_4p", ("random", "pretrained:standard_4p")),
    ("partnership", ("pretrained:partnership_vector", "pretrained:partnership_average", "random")),
    # A network that hands its last decisions to a search seeded by the observation: batched too.
    ("partnership", ("pretrained:partnership", "pretrained:partnership_average", "greedy")),
]


@pytest.mark.parametrize("preset, agents", CASES)
def test_lockstep_play_gives_each_deals_records_exactly(preset, agents):
    config = ArenaConfig(agents=agents, rules=preset, deals=12, seed=5)
    deals = list(enumerate(deal_seeds(config.seed, config.deals)))
    alone = [(deal, play_deal(config, deal, seed)) for deal, seed in deals]
    together = play_lockstep(config, deals)
    assert together == alone
    # Not a comparison of empty or one-sided records: every agent won rounds.
    winners = {
        record["seating"][record["rounds"][0]["winner"]]
        for _, records in together
        for record in records
        if record["rounds"][0]["winner"] is not None
    }
    assert winners == set(range(len(agents)))


def counting(monkeypatch, name: str) -> list[tuple]:
    """The arguments of each call of ``block_env.arena.play``'s ``name``, as it plays."""
    import block_env.arena.play as play

    calls: list[tuple] = []
    original = getattr(play, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(play, name, counted)
    return calls


def test_the_arena_plays_in_lockstep_without_a_records_file_and_deal_by_deal_with_one(tmp_path, monkeypatch):
    config = ArenaConfig(agents=("pretrained:standard_vector", "greedy", "random"), deals=30, seed=9)
    assert supports(config)
    together, alone = counting(monkeypatch, "play_lockstep"), counting(monkeypatch, "play_deal")
    in_lockstep = run_arena(config, progress=False)
    assert sum(len(deals) for _, deals, *_ in together) == 30 and not alone
    deal_by_deal = run_arena(config, progress=False, records_path=tmp_path / "r.jsonl")
    assert len(together) == 1 and len(alone) == 30
    assert in_lockstep == deal_by_deal


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        ({"episode": "match"}, "episode='match'"),
        ({"record": True}, "record=True"),
        ({"rules": "house"}, "first_lead='heaviest'"),
    ],
)
def test_configs_lockstep_does_not_lay_out_are_played_deal_by_deal(kwargs, reason, monkeypatch):
    config = ArenaConfig(**{"agents": ("greedy", "random"), "deals": 2, "seed": 1, **kwargs})
    assert not supports(config)
    with pytest.raises(ValueError, match=reason):
        play_lockstep(config, [(0, 3)])
    together = counting(monkeypatch, "play_lockstep")
    records = run_arena(config, progress=False)
    assert not together
    assert records == [r for deal, seed in enumerate(deal_seeds(1, 2)) for r in play_deal(config, deal, seed)]


def test_a_policys_batched_choices_are_its_one_by_one_choices_even_on_near_ties(monkeypatch):
    """Each tile's right-end logit made exactly its left-end one, and a pass over many rows
    made to round them apart (the right end a rounding-sized step higher, as a batched pass
    may): plain argmax over the batch then chooses otherwise than ``act`` on such rows, and
    ``act_batch`` still chooses what ``act`` chooses."""
    rules = Rules()
    agent = make_agent("pretrained:standard_vector", rules)
    forward = agent.logits

    def tied_logits(observations: np.ndarray) -> np.ndarray:
        logits = np.array(forward(observations))  # actions 2i and 2i + 1: tile i on the left and the right end
        logits[..., 1:-1:2] = logits[..., 0:-1:2]
        if np.ndim(observations) == 2:  # many rows in one pass
            logits[..., 1:-1:2] += 1e-6 * (1 + np.abs(logits[..., 0:-1:2]))
        return logits

    monkeypatch.setattr(agent, "logits", tied_logits)

    env = raw_env(rules)
    observations, masks = [], []
    for seed in range(400):
        env.reset(seed=seed)
        for _ in range(int(seed % 9)):  # positions from the opening to mid-round
            if env.episode_over:
                break
            env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))
        if not env.episode_over:
            obs = env.observe(env.agent_selection)
            observations.append(obs["observation"])
            masks.append(obs["action_mask"].astype(bool))
    observations_array, masks_array = np.array(observations), np.array(masks)
    one_by_one = [agent.act({"observation": o, "action_mask": m.astype(np.int8)}) for o, m in zip(observations, masks)]
    plain_batch = np.where(masks_array, agent.logits(observations_array), -np.inf).argmax(axis=1)
    assert plain_batch.tolist() != one_by_one  # the rounding this test is about does occur
    assert agent.act_batch(observations_array, masks_array).tolist() == one_by_one
