"""The main job's teaching chain: a prior stage that trains the model of the players an
inferring search needs, the warm start naming it as ``{prior}``, soft targets from a search's
move values, and the run's time per phase."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from block_env import Rules, raw_env
from block_env.agents import make_agent
from block_env.training.config import config_from_dict
from block_env.training.main_job import final_arena
from block_env.training.train import collect_teacher_decisions, train

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "configs" / "tiny.yaml"


def tiny(**changes: object) -> dict:
    return yaml.safe_load(TINY.read_text()) | changes


@pytest.mark.parametrize(
    "pretrain, message",
    [
        (
            {"teacher": "search:prior={prior},belief=prior"},
            r"pretrain\.teacher names \{prior\}.*pretrain\.prior is not set",
        ),
        ({"init_from": "{prior}", "teacher": None}, r"pretrain\.init_from names \{prior\}"),
        ({"played_by": "{prior}"}, r"pretrain\.played_by names \{prior\}"),
        ({"prior": {"teacher": "policy:{prior}"}}, r"pretrain\.prior\.teacher cannot name \{prior\}"),
        ({"prior": {"decisionz": 10}}, r"unknown config key\(s\) pretrain\.prior\.decisionz"),
        ({"prior": {"decisions": 0}}, r"pretrain\.prior\.decisions must be a positive"),
        ({"prior": {"teacher": "human"}}, r"pretrain\.prior\.teacher cannot be 'human'"),
        ({"prior": {"teacher": "search:worlds=0"}}, r"pretrain\.prior\.teacher: search worlds must be"),
        ({"targets": "values", "teacher": "strategic"}, r'pretrain\.targets "values" needs a search teacher'),
        (
            {"targets": "values", "teacher": "search:hand_at_most=3"},
            r"pretrain\.targets \"values\" reads every decision's searched move values.*searches only some",
        ),
        ({"targets": "moves"}, r"pretrain\.targets must be one of"),
        ({"temperature": 0.0}, r"pretrain\.temperature must be a positive"),
        (  # a spec naming {prior} is built once the prior is trained, but its option names are checked now
            {"prior": {"teacher": "strategic"}, "teacher": "search:prior={prior},playout=policy,wrlds=3"},
            r"pretrain\.teacher: bad options for agent 'search' .*unexpected keyword argument 'wrlds'",
        ),
    ],
)
def test_teaching_config_errors_name_the_key(pretrain, message):
    with pytest.raises(ValueError, match=message):
        config_from_dict(tiny(pretrain=pretrain))


def test_final_opponents_are_the_final_arenas_baselines(tmp_path):
    config = config_from_dict(tiny(eval={"opponents": ["random"], "final_opponents": ["greedy", "search"]}))
    assert final_arena(config, tmp_path, 1).agents[2:] == ("greedy", "search")
    assert final_arena(config_from_dict(tiny()), tmp_path, 1).agents[2:] == ("random", "greedy")
    with pytest.raises(ValueError, match=r"eval\.final_opponents must name at least one baseline"):
        config_from_dict(tiny(eval={"final_opponents": []}))
    with pytest.raises(ValueError, match=r"eval\.final_opponents\[0\]: unknown agent 'wizard'"):
        config_from_dict(tiny(eval={"final_opponents": ["wizard"]}))


def test_search_teacher_values_are_every_legal_moves_mean_and_the_move_is_the_best():
    """With "values" targets each decision keeps the searched mean value of every legal move
    (NaN elsewhere), and the move played is the one with the best mean (a search without a
    prior to fall back on plays its first best mean)."""
    values = tiny(pretrain={"teacher": "search:worlds=4,prior=none", "decisions": 40, "targets": "values"})
    data = collect_teacher_decisions(config_from_dict(values))
    assert data["values"].shape == data["masks"].shape
    np.testing.assert_array_equal(~np.isnan(data["values"]), data["masks"])
    np.testing.assert_array_equal(np.nanargmax(data["values"], axis=1), data["actions"])
    # the choices alone: the same games, the same moves
    choices = collect_teacher_decisions(config_from_dict(tiny(pretrain=values["pretrain"] | {"targets": "choice"})))
    np.testing.assert_array_equal(choices["actions"], data["actions"])
    assert "values" not in choices


def test_the_prior_stage_trains_the_network_the_warm_start_names(tmp_path):
    """A run with pretrain.prior: the prior (a "vector" network fitted to its teacher) is saved
    as RUN/prior; ``init_from: {prior}`` starts the "tracked" learner at it (with no teacher
    after, step_0 decides as the prior does); the summary names each phase's time."""
    values = tiny(observation="tracked", vec_env="batched", n_envs=8, total_timesteps=256)
    values["ppo"] = values["ppo"] | {"critic": "full_information"}
    values["pretrain"] = {"prior": {"teacher": "strategic", "decisions": 200, "epochs": 2}, "init_from": "{prior}"}
    values["pretrain"]["teacher"] = None
    out = tmp_path / "run"
    summary = train(config_from_dict(values), out, progress=False)
    rules = Rules()
    prior, start = make_agent(f"policy:{out / 'prior'}", rules), make_agent(f"policy:{out / 'step_0'}", rules)
    assert prior.observation == "vector" and start.observation == "tracked"
    vector_env, tracked_env = raw_env(rules), raw_env(rules, observation="tracked")
    for env in (vector_env, tracked_env):
        env.reset(seed=11)
    vector = np.stack([vector_env.observe(a)["observation"] for a in vector_env.possible_agents])
    tracked = np.stack([tracked_env.observe(a)["observation"] for a in tracked_env.possible_agents])
    np.testing.assert_allclose(start.logits(tracked), prior.logits(vector), atol=1e-5)
    assert summary["prior"]["decisions"] == 200
    assert list(summary["phases"]) == ["prior", "warm_start", "evaluation", "ppo"]
    assert all(seconds >= 0 for seconds in summary["phases"].values())
    assert json.loads((out / "training.json").read_text())["phases"] == summary["phases"]


def test_an_inferring_teacher_guided_by_the_prior_teaches_with_its_move_values(tmp_path):
    """The warm start's teacher names the prior: a belief search guided by the network the
    prior stage just trained, its move values the targets."""
    values = tiny(observation="tracked", total_timesteps=128)
    values["pretrain"] = {
        "prior": {"teacher": "search:worlds=2", "decisions": 60, "epochs": 1},
        "teacher": "search:prior={prior},belief=prior,worlds=2",
        "targets": "values",
        "decisions": 40,
        "epochs": 1,
    }
    summary = train(config_from_dict(values), tmp_path / "run", progress=False)
    assert summary["pretrain"]["decisions"] == 40
    assert (tmp_path / "run" / "prior" / "agent.json").is_file()


def test_the_prior_plays_the_warm_starts_teacher_games_when_played_by_names_it(tmp_path):
    """``played_by: {prior}`` resolves to the run's prior, whose moves the teacher games play."""
    from block_env.training.train import RunPaths, with_prior

    values = tiny()
    values["pretrain"] = {"prior": {"teacher": "strategic"}, "played_by": "{prior}", "against": "{prior}"}
    resolved = with_prior(config_from_dict(values), RunPaths(tmp_path)).pretrain
    assert resolved.played_by == resolved.against == f"policy:{tmp_path / 'prior'}"
    assert resolved.teacher == "strategic" and resolved.init_from is None
