"""The last edges of the API: calls out of order, opponents built for other rules, scripted
deals the learner never plays, broken checkpoints, preset names wherever rules are taken."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from block_env import BlockDominoesEnv, Rules, decode_observation, raw_env
from block_env.agents import make_agent, make_env, make_vector_env
from block_env.arena import ArenaConfig
from block_env.batched import BatchedGames
from block_env.observations import read_public_view


@pytest.mark.parametrize("call", ["step", "observe", "last", "legal_actions", "state", "public_view", "deal"])
def test_calls_before_reset_say_so(call):
    env = raw_env("standard")
    action = {
        "step": lambda: env.step(0),
        "observe": lambda: env.observe("player_0"),
        "last": lambda: env.last(),
        "legal_actions": lambda: env.legal_actions(),
        "state": lambda: env.state(),
        "public_view": lambda: env.public_view("player_0"),
        "deal": lambda: env.deal(),
    }[call]
    with pytest.raises(RuntimeError, match=r"call reset\(\) before"):
        action()


def test_stepping_when_every_agent_is_done_says_so():
    env = raw_env("standard")
    env.reset(seed=1)
    for _agent in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        env.step(None if termination or truncation else int(obs["action_mask"].argmax()))
    assert env.agents == []
    with pytest.raises(RuntimeError, match="every agent is done: call reset"):
        env.step(None)


def test_unknown_agents_are_named():
    env = raw_env("standard")
    env.reset(seed=1)
    with pytest.raises(ValueError, match="unknown agent 'player_7'"):
        env.public_view("player_7")


@pytest.mark.parametrize("make", [make_env, lambda rules, **kw: make_vector_env(2, rules, **kw)])
def test_an_opponent_built_for_other_rules_is_refused_and_one_reading_another_encoding_is_given_it(make):
    """An opponent reading "history" at a "vector" env's table decides from its own encoding:
    the same games as with the same opponent reading "vector"."""
    with pytest.raises(ValueError, match=r"opponents\[0\] .* was built for .* but this env plays"):
        make("standard", opponents=[make_agent("greedy", "standard_3p")])

    def trajectory(observation: str) -> list:
        env = make("standard", opponents=[make_agent("strategic", "standard", observation=observation)])
        first, _ = env.reset(seed=0)
        seen = [np.asarray(first).copy()]
        for k in range(12):
            masks = np.asarray(env.action_masks()).reshape(-1, env.rules.tile_set.num_actions)
            actions = masks.argmax(axis=1)
            single = masks.shape[0] == 1 and isinstance(env, BlockDominoesEnv)
            observation, _, terminated, truncated, _ = env.step(int(actions[0]) if single else actions)
            seen.append(np.asarray(observation).copy())
            if single and (terminated or truncated):
                seen.append(env.reset(seed=k + 1)[0])
        return seen

    for a, b in zip(trajectory("history"), trajectory("vector"), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_env_works_with_its_defaults():
    env = BlockDominoesEnv()
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and env.action_masks().any()


def test_a_scripted_deal_the_learner_never_plays_is_a_clear_error():
    env = make_env("standard", learner_seat=1, opponents=["greedy"])
    # Seat 0 leads its only tile and goes out before seat 1 ever moves.
    with pytest.raises(ValueError, match="scripted deal .* ended before the learner's first decision"):
        env.reset(seed=0, options={"hands": [[(6, 6)], [(0, 1), (2, 3)]], "leader": 0})
    with pytest.raises(RuntimeError, match=r"call reset\(\) before"):
        env.step(0)
    obs, _ = env.reset(seed=0)  # a plain reset plays on
    assert obs.shape == env.observation_space.shape


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda p: p.write_text("not a zip"), "is not a checkpoint: not a zip file"),
        (lambda p: zipfile.ZipFile(p, "w").close(), "has no 'data' entry"),
        (lambda p: _zip(p, "data", "{not json"), "'data' entry is not valid JSON"),
        (lambda p: _zip(p, "data", json.dumps([1, 2])), "'data' entry is not a JSON object"),
    ],
)
def test_a_broken_checkpoint_is_a_value_error_naming_the_file(tmp_path, write, message):
    from block_env.training.config import load_config
    from block_env.training.train import safe_custom_objects

    path = tmp_path / "ppo_100_steps.zip"
    write(path)
    config = load_config("configs/tiny.yaml")
    with pytest.raises(ValueError, match=message) as error:
        safe_custom_objects(path, config, make_vector_env(2, "standard"))
    assert str(path) in str(error.value)


def _zip(path, name, text):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(name, text)


def test_a_preset_name_works_wherever_rules_are_taken():
    env = raw_env("standard_3p")
    env.reset(seed=2)
    obs = env.observe(env.agent_selection)
    assert decode_observation(obs, "standard_3p") == decode_observation(obs, Rules.preset("standard_3p"))
    assert read_public_view(obs, "standard_3p") == read_public_view(obs, Rules.preset("standard_3p"))
    assert make_agent("greedy", "standard_3p").rules == Rules.preset("standard_3p")
    assert ArenaConfig(agents=("greedy", "random"), rules="partnership").rules == Rules.preset("partnership")
    assert BatchedGames("standard_4p", 2).rules.num_players == 4
    assert np.array_equal(
        BlockDominoesEnv("standard_3p").reset(seed=1)[0].shape,
        (env.observation_space(env.agents[0])["observation"].shape),
    )


@pytest.mark.parametrize("name", [3, None, ["standard"], 2.5])
def test_a_preset_name_that_is_not_a_string_is_named(name):
    with pytest.raises(ValueError, match="a rules preset is named by a string"):
        Rules.preset(name)
