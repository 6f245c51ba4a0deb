"""The strategic agent's batched move (``act_batch``: every game's views read at once, the
moves scored in one compiled pass) against its ``act``, row for row, at every strategic turn of
whole seeded matches on every preset and in every encoding; the batched view decoder against the
one-observation decoder; the vector env playing strategic in batches."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from block_env import PRESETS, Rules, raw_env
from block_env.agents import StrategicAgent
from block_env.agents.scripted import StrategyWeights
from block_env.observations import PublicViews, read_public_view, read_public_views
from block_env.opponents import BatchOpponent, GameByGame
from block_env.options import ENCODINGS
from block_env.tiles import ends_after
from block_env.vector_env import BlockDominoesVectorEnv

#: Weights whose sums round (fractions that are not binary), so that the order in which a move's
#: terms are added shows in the last bit of its score, and a wider "about to lock".
ROUNDING_WEIGHTS = StrategyWeights(
    pips=1.1, pips_near_lock=2.7, control=1.3, double=3.3, opponent_void=7.7, partner_void=2.9, partner_suit=4.1,
    sole_control=11.3, block_win=9.7, block_loss=70.1, near_lock=3, lighter_margin=0.9,
)  # fmt: skip


def strategic_turns(rules: Rules, choices: int, seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every strategic turn's observation (in every encoding) and action mask, forced moves
    included, in whole seeded matches (rounds led by each rule's leader, scores that grow)
    until strategic has had ``choices`` turns with two or more legal moves: strategic at every
    other seat, a seeded random player at the rest (so that the line goes where strategic
    would not take it)."""
    env = raw_env(rules, episode="match")
    strategic = StrategicAgent(rules)
    rng = np.random.default_rng(seed)
    observations: dict[str, list[np.ndarray]] = {e: [] for e in ENCODINGS}
    masks: list[np.ndarray] = []
    game = 0
    while sum(m.sum() > 1 for m in masks) < choices:
        env.reset(seed=seed + game)
        game += 1
        while not all(env.terminations.values()):
            agent = env.agent_selection
            if (env.agent_name_mapping[agent] + game) % 2:
                seen = {e: env.observe(agent, e) for e in ENCODINGS}
                for e in ENCODINGS:
                    observations[e].append(seen[e]["observation"])
                masks.append(seen["vector"]["action_mask"].astype(bool))
                action = strategic.act(seen["vector"])
            else:
                action = int(rng.choice(env.legal_actions()))
            env.step(action)
    return {e: np.stack(rows) for e, rows in observations.items()}, np.stack(masks)


def one_by_one(agent: StrategicAgent, observations: np.ndarray, masks: np.ndarray) -> list[int]:
    return [agent.act({"observation": o, "action_mask": m.astype(np.int8)}) for o, m in zip(observations, masks)]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_batched_move_is_acts_move_in_every_row_of_every_preset_and_encoding(preset):
    rules = Rules.preset(preset)
    observations, masks = strategic_turns(rules, choices=500)
    for observation in ENCODINGS:
        for weights in (None, ROUNDING_WEIGHTS):
            agent = StrategicAgent(rules, observation=observation, weights=weights)
            chosen = agent.act_batch(observations[observation], masks)
            assert chosen.tolist() == one_by_one(agent, observations[observation], masks), (observation, weights)


def test_the_rows_compared_hold_ties_locks_sole_control_and_a_partners_lead():
    """The comparison above meets every branch of the score: moves tied for best (the first
    wins), moves that lock the line while lighter than everyone and while not, moves only the
    mover can follow, and partnership turns after the partner led."""
    seen = dict.fromkeys(["tie", "light lock", "heavy lock", "sole control", "partner led"], 0)
    for preset in ("standard", "standard_3p", "partnership"):
        rules = Rules.preset(preset)
        agent = StrategicAgent(rules)
        # The same score without the lock's bonus or penalty: a lock scores above it when light.
        no_lock_terms = StrategicAgent(rules, weights=dataclasses.replace(agent.weights, block_win=0, block_loss=0))
        ts = rules.tile_set
        observations, masks = strategic_turns(rules, choices=500)
        for o, m in zip(observations["vector"], masks):
            legal = np.flatnonzero(m).tolist()
            if len(legal) < 2:
                continue
            k = read_public_view({"observation": o, "action_mask": m}, rules)
            scores = [agent.score(k, a) for a in legal]
            seen["tie"] += scores.count(max(scores)) > 1
            for a in legal:
                new = ends_after(ts, k.ends, a)
                on_ends = ts.suit_masks[new[0]] | ts.suit_masks[new[1]]
                if k.unseen & on_ends:
                    continue
                if k.hand & ~(1 << (a >> 1)) & on_ends:
                    seen["sole control"] += 1
                else:
                    seen["light lock" if agent.score(k, a) > no_lock_terms.score(k, a) else "heavy lock"] += 1
            seen["partner led"] += k.partner is not None and k.leader == k.partner
    assert all(seen.values()), seen


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership", "double_nine_4p"])
def test_the_batched_views_are_the_one_observation_views(preset):
    rules = Rules.preset(preset)
    observations, masks = strategic_turns(rules, choices=60)
    for observation in ENCODINGS:
        views = read_public_views(observations[observation], masks, rules, observation)
        assert len(views) == len(masks)
        for j, (o, m) in enumerate(zip(observations[observation], masks)):
            view = read_public_view({"observation": o, "action_mask": m}, rules, observation)
            assert views.row(j) == view and PublicViews.of([view]).row(0) == view
    empty = read_public_views(observations["vector"][:0], masks[:0], rules)
    assert len(empty) == 0 and empty.voids.shape == (0, rules.num_players, rules.tile_set.num_suits)


def test_bad_batches_are_refused_by_row_and_piece():
    rules = Rules()
    observations, masks = strategic_turns(rules, choices=5)
    agent = StrategicAgent(rules)
    broken = observations["vector"].copy()
    broken[3, 0] = 2.0  # a hand bit of 2
    with pytest.raises(ValueError, match=r"observation row 3: observation piece 'hand' must hold values in 0..1"):
        agent.act_batch(broken, masks)
    no_turn = masks.copy()
    no_turn[[1, 4]] = False
    with pytest.raises(ValueError, match=r"rows \[1, 4\] are all zeros"):
        agent.act_batch(observations["vector"], no_turn)
    with pytest.raises(ValueError, match=r"are a \(\d+, 121\) array, got \(\d+, 120\)"):
        agent.act_batch(observations["vector"][:, :-1], masks)
    with pytest.raises(ValueError, match=r"action masks of \d+ observations are a \(\d+, 57\) array"):
        agent.act_batch(observations["vector"], masks[:, :-1])
    with pytest.raises(ValueError, match=r"one row per observation \(ndim 2\); got ndim 1"):
        agent.act_batch(observations["vector"][0], masks[:1])
    k = read_public_view({"observation": observations["vector"][0], "action_mask": masks[0]}, rules)
    with pytest.raises(ValueError, match=r"score rates tile moves \(actions 0..55\), got 56"):
        agent.score(k, rules.tile_set.num_actions - 1)


@pytest.mark.parametrize("preset", ["standard", "standard_4p", "partnership"])
@pytest.mark.parametrize("observation", ["vector", "history"])
def test_the_vector_env_plays_strategic_in_batches_the_same_games(preset, observation, monkeypatch):
    """Strategic is a batched opponent of the vector env (its ``act`` is never called there),
    and the seeded games it plays are those it plays game by game."""
    agent = StrategicAgent(preset, observation=observation)
    assert isinstance(agent, BatchOpponent) and not isinstance(GameByGame(agent), BatchOpponent)
    runs = []
    for opponent in (agent, GameByGame(StrategicAgent(preset, observation=observation))):
        env = BlockDominoesVectorEnv(32, preset, opponents=[opponent])
        rng = np.random.default_rng(0)
        with monkeypatch.context() as patch:
            if opponent is agent:
                patch.setattr(StrategicAgent, "act", lambda self, obs: pytest.fail("act called"))
            trajectory = [env.reset(seed=3)[0]]
            for _ in range(30):
                actions = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])
                obs, rewards, terminated, _, _ = env.step(actions)
                trajectory += [obs, rewards, terminated]
        runs.append(trajectory)
    assert sum(t.sum() for t in runs[0][3::3]) > 0  # rounds ended, and were compared
    for batched, alone in zip(*runs):
        np.testing.assert_array_equal(batched, alone)
