"""The single-agent Gymnasium view: checkers, learner-centred transitions, vector envs."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from conftest import round_of
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import block_env
from block_env import Rules, decode_observation
from block_env.agents import make_env
from block_env.options import ENCODINGS


@pytest.mark.parametrize("preset", ["standard", "standard_3p", "partnership", "house"])
@pytest.mark.parametrize("observation", ENCODINGS)
def test_gymnasium_and_sb3_checkers(preset, observation):
    env = gymnasium.make(
        block_env.GYM_ID, rules=preset, observation=observation, opponents=["greedy"], illegal_action="terminate"
    )
    gymnasium_check_env(env, skip_render_check=True)
    sb3_check_env(env)


def test_make_gives_action_masks_and_match_episodes():
    env = gymnasium.make(block_env.GYM_ID, rules="standard_3p", episode="match", opponents=["random", "greedy"])
    obs, info = env.reset(seed=0)
    mask = env.action_masks()
    assert mask.dtype == bool and mask.any() and obs.shape == env.observation_space.shape
    rng = np.random.default_rng(0)
    rounds = 0
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        done = terminated or truncated
        rounds = max(rounds, len(env.unwrapped.aec.results))
    assert rounds > 1 and max(info["scores"]) >= 61


@pytest.mark.parametrize("preset", ["standard", "standard_4p", "partnership"])
def test_transitions_carry_the_learners_observation_and_reward(preset):
    rules = Rules.preset(preset)
    env = make_env(rules, opponents=["random", "strategic"], reward="points")
    rng = np.random.default_rng(1)
    seats = set()
    for episode in range(30):
        obs, info = env.reset(seed=episode)
        seats.add(info["learner_seat"])
        total = 0.0
        done = False
        while not done:
            d = decode_observation(obs, rules)
            engine = round_of(env.aec)
            assert d["hand"] == rules.tile_set.tiles_of(engine.hands[env.seat])  # the learner's own hand
            assert d["to_play"] == 0  # it is the learner's decision
            assert engine.current == env.seat
            legal = np.flatnonzero(env.action_masks())
            assert len(legal) > 1  # forced turns are played automatically
            obs, reward, done, _, info = env.step(int(rng.choice(legal)))
            total += reward
        result = env.aec.results[-1]
        won = result.winning_side == rules.side_of(env.seat)
        assert total == (result.award if won else 0.0)
    assert seats == set(range(rules.num_players))  # learner_seat=None draws every seat


def test_fixed_learner_seat_and_zero_sum_reward_scale():
    env = make_env("standard", opponents=["greedy"], learner_seat=1, reward_scale=0.1)
    rng = np.random.default_rng(2)
    for episode in range(10):
        _, info = env.reset(seed=episode)
        assert info["learner_seat"] == 1
        total, done = 0.0, False
        while not done:
            _, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            total += reward
        result = env.aec.results[-1]
        sign = 0 if result.winning_side is None else (1 if result.winning_side == 1 else -1)
        assert total == pytest.approx(0.1 * sign * result.award)


def test_illegal_actions_raise_by_default_or_terminate_with_a_penalty():
    env = make_env("standard", opponents=["random"])
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(ValueError, match="legal actions"):
        env.step(illegal)
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # nothing was lost
    soft = make_env("standard", opponents=["random"], illegal_action="terminate", reward_scale=0.5)
    soft.reset(seed=0)
    _, reward, terminated, _, info = soft.step(int(np.flatnonzero(~soft.action_masks())[0]))
    assert terminated and reward == -0.5 and info["illegal_action"]
    assert not soft.action_masks().any()
    with pytest.raises(RuntimeError, match="episode is over"):
        soft.step(0)
    # What is not an action id at all is an error in either mode, not an illegal move.
    for bad, error, message in (
        (None, TypeError, "an action is an integer"),
        (2.5, TypeError, "an action is an integer"),
        (np.array([1]), TypeError, "an action is an integer"),
        (999, ValueError, "action 999 is out of range 0..56"),
    ):
        soft.reset(seed=0)
        with pytest.raises(error, match=message + ".*; legal actions for player_"):
            soft.step(bad)
        soft.step(int(np.flatnonzero(soft.action_masks())[0]))  # the episode goes on


def _play_out(env, seed, options=None):
    """A whole episode with random legal moves: the summed reward and the last info."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed, options=options)
    total, done = 0.0, False
    while not done:
        _, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        total += reward
    return total / env.unwrapped.reward_scale, info


def test_a_match_pays_every_round_even_one_over_before_the_learners_first_decision():
    """The episode's rewards add up to the learner's final score margin: a round that ends
    before the learner has a decision (here a scripted one-tile hand that dominoes at once)
    is paid with the learner's first step, not dropped."""
    env = make_env("standard", opponents=["greedy"], episode="match", learner_seat=1)
    total, info = _play_out(env, 0, {"hands": [[(6, 6)], [(0, 0), (1, 1)]], "leader": 0})
    assert total == info["scores"][1] - info["scores"][0]
    env = make_env("tiny", opponents=["random"], episode="match")
    for seed in range(20):
        total, info = _play_out(env, seed)
        side = info["learner_side"]
        assert total == info["scores"][side] - info["scores"][1 - side], seed


def test_a_round_result_is_in_the_info_of_the_step_it_ended_in_only():
    env = make_env("standard", opponents=["random"], episode="match")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    told, done = int("round_result" in info), False  # a round over before the first decision
    while not done:
        before = len(env.unwrapped.aec.results)
        _, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        ended = len(env.unwrapped.aec.results) > before
        assert ("round_result" in info) == ended
        told += ended
    assert told == len(env.unwrapped.aec.results) > 1


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"learner_seat": 2}, ValueError, "learner_seat must be None or a seat 0..1"),
        ({"opponents": []}, ValueError, "non-empty sequence"),
        ({"opponents": "greedy"}, ValueError, "non-empty sequence"),
        ({"opponents": ["wizard"]}, ValueError, "unknown agent"),
        ({"reward_scale": 0}, ValueError, "reward_scale"),
        ({"illegal_action": "ignore"}, ValueError, "illegal_action"),
        ({"render_mode": "human"}, ValueError, "render_mode"),
    ],
)
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        make_env("standard", **kwargs)


def test_step_before_reset_is_refused():
    env = make_env()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(RuntimeError, match="reset"):
        env.action_masks()


def test_render_shows_the_table():
    env = make_env(render_mode="ansi")
    env.reset(seed=3)
    assert "Line:" in env.render()


def test_render_shows_the_learners_hand_after_the_episode_too():
    """At the end the seat that moved last may be an opponent: the view stays the learner's."""
    env = make_env("standard_3p", opponents=["random"], render_mode="ansi", learner_seat=1)
    env.reset(seed=0)  # player_2 places the last tile
    done = False
    while not done:
        assert "player_1's hand" in env.render()
        _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert "player_1's hand" in env.render()


@pytest.mark.parametrize("kind", ["dummy", "subproc"])
def test_works_in_sb3_vector_envs(kind):
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    builders = [lambda: make_env("standard", opponents=["greedy"]) for _ in range(2)]
    vec = DummyVecEnv(builders) if kind == "dummy" else SubprocVecEnv(builders, start_method="spawn")
    try:
        vec.seed(0)
        obs = vec.reset()
        assert obs.shape == (2, vec.observation_space.shape[0])
        rng = np.random.default_rng(0)
        episodes = 0
        for _ in range(60):
            masks = get_action_masks(vec)
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, rewards, dones, infos = vec.step(actions)
            episodes += int(dones.sum())
        assert episodes > 0
        vec.env_method("set_opponents", ["random", "strategic"])
    finally:
        vec.close()
