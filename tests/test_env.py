"""The AEC environment: PettingZoo conformance, bad input, rewards, encodings, rendering."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from conftest import PASS, L, R, legal_ids, play, scripted_env
from pettingzoo.test import api_test, seed_test

import block_env
from block_env import PRESETS, Rules, decode_observation, raw_env
from block_env.observations import history_layout, markdown_tables, state_layout, vector_layout
from block_env.options import ENCODINGS

CASES = [(p, e, o) for p in PRESETS for e in ("round", "match") for o in ENCODINGS]


@pytest.mark.parametrize("preset, episode, observation", CASES)
def test_pettingzoo_api_and_seed_tests(preset, episode, observation):
    api_test(block_env.env(preset, episode=episode, observation=observation), num_cycles=200)
    api_test(raw_env(preset, episode=episode, observation=observation), num_cycles=200)
    seed_test(lambda: block_env.env(preset, episode=episode, observation=observation), num_cycles=200)


def _random_game(env, rng, max_steps=100_000):
    steps = 0
    for _agent in env.agent_iter(max_steps):
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        steps += 1
    return steps


def test_masks_are_int8_and_all_zero_off_turn():
    env = raw_env("standard_4p")
    env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(10):
        for agent in env.agents:
            mask = env.observe(agent)["action_mask"]
            assert mask.dtype == np.int8
            assert (mask.sum() > 0) == (agent == env.agent_selection)
        env.step(int(rng.choice(legal_ids(env))))
        if all(env.terminations.values()):
            break


# -- bad input ----------------------------------------------------------------------------


def _snapshot(env):
    return (
        env.agent_selection,
        env.round_records(),
        env.state().tobytes(),
        dict(env._cumulative_rewards),
    )


@pytest.mark.parametrize(
    "action, error, message",
    [
        (57, ValueError, "out of range 0..56"),
        (-1, ValueError, "out of range"),
        (1.0, TypeError, "integer"),
        ("3", TypeError, "integer"),
        (True, TypeError, "integer"),
        (None, TypeError, "integer"),
        (np.array([1, 2]), TypeError, "integer"),
    ],
)
def test_bad_action_type_or_range_raises_and_changes_nothing(action, error, message):
    env = raw_env()
    env.reset(seed=1)
    before = _snapshot(env)
    with pytest.raises(error, match=message) as info:
        env.step(action)
    assert "legal actions" in str(info.value)
    assert _snapshot(env) == before


def test_illegal_action_raises_naming_legal_actions_and_changes_nothing():
    env = scripted_env(Rules(), [[(1, 4), (2, 2)], [(3, 5), (4, 6)]], leader=0)
    play(env, [((1, 4), L)])
    before = _snapshot(env)
    ts = env.rules.tile_set
    for bad in [ts.pass_action, ts.action((3, 5), L), ts.action((1, 4), L), ts.action((4, 6), L)]:
        with pytest.raises(ValueError, match=rf"legal actions: {ts.action((4, 6), R)} \(\[4\|6\] on right\)$"):
            env.step(bad)
        assert _snapshot(env) == before
    env.step(np.int64(ts.action((4, 6), R)))  # numpy integers are fine
    assert env.public_view("player_0").ends == (1, 6)


def test_opening_on_right_end_is_illegal():
    env = scripted_env(Rules(), [[(1, 4)], [(3, 5)]], leader=0)
    with pytest.raises(ValueError, match="not legal"):
        env.step(env.rules.tile_set.action((1, 4), R))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"hands": [[(1, 2)], [(1, 2)]]}, r"\[1\|2\] is dealt twice"),
        ({"hands": [[(1, 2), (2, 1)], [(3, 4)]]}, "dealt twice"),
        ({"hands": [[(1, 7)], [(3, 4)]]}, r"not in the double-6 set"),
        ({"hands": [[(1, 2)]]}, r"one list of tiles per seat \(2 lists\), got 1 lists"),
        ({"hands": [[(1, 2)], [(3, 4)], [(5, 5)]]}, "2 lists"),
        ({"hands": [[(1, 2)], []]}, r"options\['hands'\]\[1\] must be a non-empty list"),
        ({"hands": [[(1, 2, 3)], [(3, 4)]]}, "a pair of pips"),
        ({"hands": "abc"}, "one list of tiles per seat"),
        ({"leader": 2}, r"options\['leader'\] must be a seat 0..1"),
        ({"leader": -1}, "must be a seat"),
        ({"leader": "0"}, "must be a seat"),
        ("hands", "options must be a dict"),
    ],
)
def test_bad_reset_options_raise_and_keep_the_previous_game(options, message):
    env = raw_env()
    env.reset(seed=3)
    env.step(legal_ids(env)[0])
    before = _snapshot(env)
    with pytest.raises(ValueError, match=message):
        env.reset(seed=9, options=options)
    assert _snapshot(env) == before
    env.step(legal_ids(env)[0])  # the previous game goes on


def test_unknown_reset_option_is_named_in_a_warning():
    env = raw_env()
    with pytest.warns(UserWarning, match=r"\['handz'\] are not used"):
        env.reset(seed=0, options={"handz": []})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"episode": "game"}, "episode must be one of"),
        ({"reward": "score"}, "reward must be one of"),
        ({"observation": "image"}, "observation must be one of"),
        ({"render_mode": "rgb"}, "render_mode must be one of"),
    ],
)
def test_bad_env_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        raw_env(**kwargs)
    with pytest.raises(TypeError, match="rules must be"):
        raw_env(rules=3)


def test_scripted_leader_and_seeded_determinism():
    env = scripted_env(Rules(), [[(1, 4)], [(3, 5)]], leader=1)
    assert env.agent_selection == "player_1"
    a, b = raw_env("standard_3p", episode="match"), raw_env("standard_3p", episode="match")
    a.reset(seed=11)
    b.reset(seed=11)
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    _random_game(a, rng_a)
    _random_game(b, rng_b)
    assert a.scores == b.scores and a.results == b.results and a.round_records() == b.round_records()


# -- rewards and episodes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "reward, expected",
    [("points", [12.0, 0.0, 0.0]), ("zero_sum", [12.0, -6.0, -6.0]), ("win_loss", [1.0, -0.5, -0.5])],
)
def test_reward_modes(reward, expected):
    env = scripted_env(Rules(num_players=3), [[(6, 6), (1, 2)], [(3, 4)], [(3, 5)]], leader=0, reward=reward)
    play(env, [((6, 6), L), PASS, PASS, PASS])
    assert [env.rewards[a] for a in env.possible_agents] == expected
    assert sum(expected) == 0 or reward == "points"


def test_match_episode_deals_rounds_until_target_and_rewards_each_round():
    env = raw_env(Rules(target=40), episode="match", reward="points")
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    totals = {a: 0.0 for a in env.possible_agents}
    rounds = 0
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        totals[agent] += reward
        if term:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        rounds = max(rounds, env.round_number)
    scores = env.scores
    assert max(scores) >= 40 and env.match_winner == int(np.argmax(scores))
    assert [totals[a] for a in env.possible_agents] == [float(s) for s in scores]
    assert rounds == len(env.results) > 1


def test_each_agent_is_told_each_rounds_result_once_and_a_finished_episode_says_so():
    """A round's result is in every agent's info until that agent next acts, as its reward is;
    once every agent is done, legal_actions() is empty and last() asks for a reset."""
    env = raw_env("standard", episode="match")
    env.reset(seed=0)
    told = {a: [] for a in env.possible_agents}
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if "round_result" in info:
            told[agent].append(info["round_result"]["round"])
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
    rounds = list(range(1, len(env.results) + 1))
    assert len(rounds) > 1 and all(seen == rounds for seen in told.values())
    assert env.legal_actions() == []
    with pytest.raises(RuntimeError, match="call reset"):
        env.last()


def test_win_loss_in_match_mode_only_pays_at_match_end():
    env = raw_env(Rules(target=40), episode="match", reward="win_loss")
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    paid = []
    while not all(env.terminations.values()):
        env.step(int(rng.choice(legal_ids(env))))
        if any(env.rewards.values()):
            paid.append(dict(env.rewards))
    winner = f"player_{env.match_winner}"
    assert paid == [{a: (1.0 if a == winner else -1.0) for a in env.possible_agents}]


# -- observations --------------------------------------------------------------------------


def test_vector_observation_decodes_to_the_table_seat_relative():
    rules = Rules(num_players=3)
    env = scripted_env(rules, [[(1, 4), (2, 2)], [(3, 5), (4, 6)], [(0, 0), (0, 5)]], leader=0, episode="match")
    play(env, [((1, 4), L), ((4, 6), R), PASS])  # seat 2 holds no 1 and no 6
    d = decode_observation(env.observe("player_0"), rules)
    assert d["hand"] == [(2, 2)]
    assert d["ends"] == (1, 6)
    assert d["played"] == [(1, 4), (4, 6)]
    assert d["opening"] == (1, 4)
    assert d["to_play"] == 0 and d["leader"] == 0
    assert d["hand_counts"] == [1, 1, 2]
    assert d["voids"] == [[], [], [1, 6]]
    assert d["passes"] == 1
    d1 = decode_observation(env.observe("player_1")["observation"], rules)
    assert d1["hand"] == [(3, 5)] and d1["to_play"] == 2 and d1["leader"] == 2
    assert d1["hand_counts"] == [1, 2, 1] and d1["voids"] == [[], [1, 6], []]


def test_history_observation_decodes_moves_and_replays_ends():
    rules = Rules(num_players=3)
    env = scripted_env(rules, [[(1, 4), (2, 2)], [(3, 5), (4, 6)], [(0, 0), (0, 5)]], leader=0, observation="history")
    play(env, [((1, 4), L), ((4, 6), R), PASS])
    d = decode_observation(env.observe("player_1"), rules, observation="history")
    ts = rules.tile_set
    assert d["moves"] == [(2, ts.action((1, 4), L)), (0, ts.action((4, 6), R)), (1, ts.pass_action)]
    assert d["ends"] == (1, 6) and d["hand"] == [(3, 5)] and d["to_play"] == 2


def test_tracked_observation_holds_who_placed_which_tile_facing_which_ends():
    rules = Rules(num_players=3)
    hands = [[(1, 4), (2, 2), (1, 6)], [(3, 5), (4, 6), (2, 3)], [(0, 0), (0, 5), (2, 5)]]
    env = scripted_env(rules, hands, leader=0, observation="tracked")
    play(env, [((1, 4), L), ((4, 6), R), PASS, ((1, 6), R)])
    d = decode_observation(env.observe("player_1"), rules, observation="tracked")
    # relative seats of player_1: 0 = itself, 1 = player_2, 2 = player_0
    assert d["placed"] == [[(4, 6)], [], [(1, 4), (1, 6)]]
    assert d["placed_facing"] == [[((4, 6), [1, 4])], [], [((1, 6), [1, 6])]]  # the opening faced nothing
    assert d["ends"] == (1, 1) and d["hand"] == [(2, 3), (3, 5)] and d["voids"][1] == [1, 6]


def test_observe_in_another_encoding_equals_an_env_of_that_encoding():
    """observe(agent, encoding) is what an env built with that encoding observes (the arena
    gives each agent its own); an unknown encoding is refused by name."""
    vector_env, history_env = raw_env("standard"), raw_env("standard", observation="history")
    for env in (vector_env, history_env):
        env.reset(seed=3)
    for _ in range(5):
        for agent in vector_env.possible_agents:
            for encoding, env in (("history", history_env), ("vector", vector_env)):
                got, expected = vector_env.observe(agent, encoding), env.observe(agent)
                assert np.array_equal(got["observation"], expected["observation"])
                assert np.array_equal(got["action_mask"], expected["action_mask"])
            assert np.array_equal(
                history_env.observe(agent, "vector")["observation"], vector_env.observe(agent)["observation"]
            )
        action = int(np.flatnonzero(vector_env.observe(vector_env.agent_selection)["action_mask"])[0])
        vector_env.step(action)
        history_env.step(action)
    with pytest.raises(ValueError, match="encoding must be one of"):
        vector_env.observe("player_0", "pixels")


def test_match_scores_are_in_the_observation():
    rules = Rules()
    env = scripted_env(rules, [[(6, 6)], [(3, 5), (0, 1)]], leader=0, episode="match", reward="points")
    play(env, [((6, 6), L)])  # player_0 scores 9 and the next round is dealt
    assert env.scores == [9, 0]
    assert decode_observation(env.observe("player_0"), rules)["scores"] == [9, 0]
    assert decode_observation(env.observe("player_1"), rules)["scores"] == [0, 9]


def test_decoder_refuses_a_vector_of_the_wrong_size():
    size = vector_layout(Rules()).size
    assert size == 28 + 28 + 28 + 2 * 7 + 2 * 7 + 2 + 2 + 2 + 1 + 2  # the piece table for double-six, 2 players
    with pytest.raises(ValueError, match=rf"has shape \({size},\), got \(5,\)"):
        decode_observation(np.zeros(5, np.float32), Rules())


def test_state_holds_every_hand_and_layouts_are_documented():
    rules = Rules()
    env = scripted_env(rules, [[(1, 4), (2, 2)], [(3, 5)]], leader=0)
    views = state_layout(rules).views(env.state())
    ts = rules.tile_set
    assert views["hands"][0, ts.tile_index((2, 2))] == 1 and views["hands"][1, ts.tile_index((3, 5))] == 1
    assert env.state_space.contains(env.state())
    text = markdown_tables(rules)
    for layout in (vector_layout(rules), history_layout(rules), state_layout(rules)):
        for piece in layout.pieces:
            assert f"`{piece.name}`" in text


# -- rendering and misc --------------------------------------------------------------------


def test_render_modes(capsys):
    env = scripted_env(Rules(), [[(1, 4), (2, 2)], [(3, 5), (4, 6)]], leader=0, render_mode="ansi")
    play(env, [((1, 4), L)])
    text = env.render()
    assert "Line:   [1|4]" in text and "player_1's hand: [3|5] [4|6]" in text
    human = scripted_env(Rules(), [[(1, 4)], [(3, 5)]], leader=0, render_mode="human")
    play(human, [((1, 4), L)])
    assert "domino" in capsys.readouterr().out
    rgb = scripted_env(Rules(), [[(1, 4), (2, 2)], [(3, 5), (4, 6)]], leader=0, render_mode="rgb_array")
    play(rgb, [((1, 4), L), ((4, 6), R)])
    img = rgb.render()
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    assert raw_env().render_mode is None


def test_env_pickles_mid_game():
    env = raw_env()
    env.reset(seed=0)
    env.step(legal_ids(env)[0])
    clone = pickle.loads(pickle.dumps(env))
    assert clone.state().tobytes() == env.state().tobytes()


def test_engine_runs_without_pettingzoo_or_gymnasium():
    code = (
        "import sys\n"
        "sys.modules['pettingzoo'] = None; sys.modules['gymnasium'] = None\n"
        "import random, block_env\n"
        "from block_env import Match, Rules, decode_observation\n"
        "from block_env.observations import encode\n"
        "m = Match(Rules(), seed=1); r = m.round; rng = random.Random(0)\n"
        "while not r.is_over:\n"
        "    decode_observation(encode('vector', r, r.current, m.scores), m.rules)\n"
        "    m.step(rng.choice(r.legal_actions()))\n"
        "print('ok', r.result.end)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("ok")
