"""The inferring search (search with belief="prior") at every table: each seat reads every
other seat's moves from its "history" observation, the real deal's likelihood is what the prior
gives those moves in it, and (at three and four individual players) the search is a vector
env's opponent. Whole seeded rounds at every table: tests/test_agents.py (GUIDED)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import round_of

from block_env import Rules, raw_env
from block_env.agents import PRETRAINED, make_agent
from block_env.agents.search_belief import FLOOR, move_log_likelihoods
from block_env.episodes import play_moves
from block_env.observations import batch_encoder, decode_observation, read_moves
from block_env.tiles import ends_after

PRESETS = ("standard_3p", "standard_4p")
#: The tables whose history and likelihood are checked: two players (and a match of the house
#: rules), partnerships, three and four individual players.
TABLES = ("standard", "house", "partnership", *PRESETS)


def _prior(preset: str) -> str:
    """The shipped network for ``preset`` that reads "vector" (the teachers' prior)."""
    name = f"{preset}_vector" if f"{preset}_vector" in PRETRAINED else preset
    return f"pretrained:{name}"


class _Recording:
    """An agent that also keeps every (observation, action) it was asked for."""

    def __init__(self, agent):
        self.agent, self.decisions = agent, []
        self.observation = agent.observation

    def reset(self, seed=None):
        self.agent.reset(seed)

    def act(self, obs):
        action = self.agent.act(obs)
        self.decisions.append((obs, action))
        return action


def _real_deal(rules: Rules, hands: list[int], me: int) -> np.ndarray:
    """(1, P, T) bool: the real hands now, seat-relative to ``me`` (the reader is seat 0)."""
    n, num_tiles = rules.num_players, rules.tile_set.num_tiles
    deal = np.zeros((1, n, num_tiles), dtype=bool)
    for relative in range(n):
        deal[0, relative, [i for i in range(num_tiles) if hands[(me + relative) % n] >> i & 1]] = True
    return deal


@pytest.mark.parametrize("preset", TABLES)
def test_each_seat_reads_every_other_seats_moves_from_its_history(preset):
    """Over matches, at every decision the moves a seat reads from its "history" observation
    are the round's moves so far in order, each mover relative to the reader; every other
    seat's own moves (placements and passes) are among them in its order; a new round starts
    an empty list."""
    rules = Rules.preset(preset)
    n = rules.num_players
    read_per_seat = [0] * n  # moves read per relative seat
    rounds = 0
    for seed in range(2):
        env = raw_env(rules, episode="match")
        env.reset(seed=seed)
        seats = [_Recording(make_agent("greedy", rules, seed=s, observation="history")) for s in range(n)]
        moves = []  # the current round's moves, as (seat, action)
        for move in play_moves(env, seats):
            obs, action = seats[move.seat].decisions[-1]
            assert action == move.action
            read = read_moves(obs, rules)
            assert read == [((s - move.seat) % n, a) for s, a in moves]
            for relative in range(1, n):
                other = (move.seat + relative) % n
                assert [a for s, a in read if s == relative] == [a for s, a in moves if s == other]
                read_per_seat[relative] += sum(s == other for s, _ in moves)
            moves.append((move.seat, move.action))
            if move.round_over is not None:
                moves, rounds = [], rounds + 1
    assert rounds > 2
    assert min(read_per_seat[1:]) > 50


@pytest.mark.parametrize("preset", [p for p in TABLES if p != "house"])
def test_the_real_deals_likelihood_is_the_priors_probability_of_every_other_seats_placements(preset):
    """At each of one seat's decisions, the log-likelihood of the real deal computed from its
    history observation equals the sum over every other seat's placements so far of
    log((1 - FLOOR) p + FLOOR / legal moves), p the prior's probability of the move (or of the
    other side of its tile when that gives the same line) from its logits on the mover's real
    "vector" observation. Every other seat's placements are scored."""
    rules = Rules.preset(preset)
    ts, n = rules.tile_set, rules.num_players
    model = make_agent(_prior(preset), rules)
    assert model.observation == "vector"
    encode = batch_encoder(rules, "vector")
    scored_seats: set[int] = set()
    checked = 0
    for seed in range(4):
        env = raw_env(rules)
        env.reset(seed=seed)
        seats = [_Recording(make_agent("strategic", rules, seed=s)) for s in range(n)]
        me = seed % n
        while not env.episode_over:
            seat = env.agent_name_mapping[env.agent_selection]
            if seat == me:
                moves = read_moves(env.observe(env.agent_selection, "history"), rules)
                deal = _real_deal(rules, list(round_of(env).hands), me)
                got = move_log_likelihoods(rules, deal, moves, model, encode)[0]
                expected, scored = 0.0, 0
                for other in range(n):
                    for obs, action in seats[other].decisions if other != me else []:
                        if action == ts.pass_action:
                            continue
                        mask = obs["action_mask"].astype(bool)
                        ends = decode_observation(obs, rules)["ends"]
                        line = ends_after(ts, ends, action)
                        same_line = [a for a in (action & ~1, action | 1) if ends_after(ts, ends, a) == line]
                        logits = np.where(mask, model.logits(obs["observation"][None])[0], -np.inf)
                        probs = np.exp(logits - logits.max())
                        probs /= probs.sum()
                        expected += np.log((1 - FLOOR) * probs[same_line].sum() + FLOOR / mask.sum())
                        scored += 1
                        scored_seats.add((other - me) % n)
                assert scored == sum(s != 0 and a != ts.pass_action for s, a in moves)
                assert got == pytest.approx(expected, rel=1e-5, abs=1e-5)
                checked += scored
            env.step(seats[seat].act(env.observe(env.agent_selection, "vector")))
    assert scored_seats == set(range(1, n))
    assert checked > 40


@pytest.mark.parametrize("preset", PRESETS)
def test_the_real_deal_is_among_the_likeliest_of_the_sampled_deals(preset):
    """Players who play as the prior does: late in each round, at one seat's decision, the
    real deal is likelier under the prior's model of the other seats' moves than most of 400
    deals sampled from the public record: on average over eight rounds fewer than a quarter of
    them are likelier (about half would be, were its moves no evidence)."""
    rules = Rules.preset(preset)
    ts, n = rules.tile_set, rules.num_players
    prior = _prior(preset)
    model = make_agent(prior, rules)
    sampler = make_agent(f"search:prior={prior},belief=prior,worlds=4", rules, seed=0)
    encode = batch_encoder(rules, "vector")
    likelier = []  # per round: the share of sampled deals likelier than the real one
    for seed in range(8):
        env = raw_env(rules)
        env.reset(seed=seed)
        players = [make_agent(prior, rules, seed=s) for s in range(n)]
        me = seed % n
        position = None
        while not env.episode_over:
            seat = env.agent_name_mapping[env.agent_selection]
            if seat == me:
                moves = read_moves(env.observe(env.agent_selection, "history"), rules)
                placed_by = {s for s, a in moves if s != 0 and a != ts.pass_action}
                if placed_by == set(range(1, n)):  # the last such decision: the most to infer from
                    position = (
                        _real_deal(rules, list(round_of(env).hands), me),
                        moves,
                        env.public_view(env.agent_selection),
                    )
            env.step(players[seat].act(env.observe(env.agent_selection, "vector")))
        assert position is not None
        real, moves, view = position
        sampled = sampler.sample_worlds(view, 400)
        log_likelihoods = move_log_likelihoods(rules, np.concatenate([real, sampled]), moves, model, encode)
        likelier.append(float((log_likelihoods[1:] > log_likelihoods[0]).mean()))
    # Were the real deal just another deal of the record, half the sampled ones would be likelier.
    assert np.mean(likelier) < 0.25
    assert np.median(likelier) < 0.2


@pytest.mark.parametrize("preset", ("partnership", *PRESETS))
def test_an_inferring_search_is_a_batched_opponent_of_the_vector_env(preset):
    """One inferring search decides for every waiting game at once, each from its own history
    (its "history" observation): rounds of three games played to their ends, every learner move
    legal, every opponent move accepted by the engine."""
    from block_env.agents import make_vector_env

    envs = make_vector_env(3, preset, opponents=[f"search:worlds=4,prior={_prior(preset)},belief=prior"])
    envs.reset(seed=0)
    rounds = 0
    for _ in range(30):
        masks = envs.action_masks()
        _, _, terminated, _, _ = envs.step(masks.argmax(axis=1))
        rounds += int(terminated.sum())
    assert rounds >= 3
