"""Nothing gets past the edges: bad input gets a clear error naming what was wrong, and
nothing changes; interrupted work resumes."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import (
    agent_plays_legal_round,
    assert_learning_resumed_from,
    default_sigint,
    paused_arena,
    round_of,
    signal_when,
    spy_on_learning,
)
from hypothesis import given
from hypothesis import strategies as st

from block_env import PRESETS, Match, Rules, decode_observation, raw_env
from block_env.agents import make_agent, make_env, make_vector_env
from block_env.cli import main
from block_env.observations import layout_for

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "block_env.cli"]


def engine_state(rnd):
    return (list(rnd.hands), rnd.left, rnd.right, rnd.current, rnd.passes, list(rnd.voids), list(rnd.moves), rnd.result)


def env_state(env):
    """Everything an AEC env holds, through its public API (full information included)."""
    return (env.agent_selection, env.state().tobytes(), env.deal(), env.round_records(), env.scores, env.results)


# -- the engine --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [2.0, True, "2", None, np.float32(2.0), [2]])
def test_engine_step_refuses_non_integers_before_changing_anything(bad):
    match = Match(Rules(), seed=1)
    before = engine_state(match.round)
    with pytest.raises(TypeError, match="an action is an integer action id.*legal actions"):
        match.step(bad)
    assert engine_state(match.round) == before and match.results == []


def test_engine_takes_numpy_integers_as_ints():
    for preset in ("standard", "double_nine_4p"):
        rules = PRESETS[preset].replace(max_pip=12, hand_size=7) if preset == "standard" else PRESETS[preset]
        match = Match(rules, seed=2)
        rng = np.random.default_rng(0)
        while not match.is_over and match.round.result is None:
            match.step(rng.choice(np.array(match.round.legal_actions(), dtype=np.int64)))
        assert all(type(h) is int for h in match.round.hands)
        assert all(type(a) is int for _, a in match.round.moves)


# -- reset options and env arguments -----------------------------------------------------------


@pytest.mark.parametrize("tile", [(0.5, 1), ("1", 2), (True, 1), (1,), "12", (1, 2, 3)])
def test_reset_refuses_tiles_that_are_not_integer_pairs(tile):
    env = raw_env(Rules())
    env.reset(seed=0)
    before = env_state(env)
    with pytest.raises(ValueError, match=r"options\['hands'\]\[0\]"):
        env.reset(options={"hands": [[tile, (3, 3)], [(4, 4)]]})
    assert env_state(env) == before


def test_gym_reset_with_bad_options_keeps_the_game_in_progress():
    env = make_env("standard", opponents=["random", "greedy"])
    env.reset(seed=3)
    seat, opponents = env.seat, list(env.seat_opponents)
    state = copy.deepcopy(env.np_random.bit_generator.state)
    before = env_state(env.aec)
    with pytest.raises(ValueError, match="leader"):
        env.reset(options={"hands": [[(0, 0)], [(1, 1)]], "leader": 7})
    assert env.seat == seat and env.seat_opponents == opponents
    assert env.np_random.bit_generator.state == state and env_state(env.aec) == before


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), -1.0, 0, True, "1"])
def test_reward_scale_must_be_positive_and_finite(scale):
    with pytest.raises(ValueError, match="reward_scale must be a positive finite number"):
        make_env("standard", reward_scale=scale)
    with pytest.raises(ValueError, match="reward_scale must be a positive finite number"):
        make_vector_env(2, "standard", reward_scale=scale)


# -- fuzzing: garbage in, a clear ValueError/TypeError out, nothing changed -------------------

garbage = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.lists(st.integers(-3, 60), max_size=3),
    st.tuples(st.integers(-3, 20), st.floats()),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@given(action=garbage)
def test_fuzz_aec_step(action):
    env = raw_env(Rules())
    env.reset(seed=5)
    before = engine_state(round_of(env))
    legal = env.legal_actions()
    if type(action) is int and action in legal:
        return
    with pytest.raises((ValueError, TypeError), match="legal actions"):
        env.step(action)
    assert engine_state(round_of(env)) == before


@given(
    options=st.one_of(garbage, st.fixed_dictionaries({"hands": garbage}), st.fixed_dictionaries({"leader": garbage}))
)
def test_fuzz_reset_options(options):
    env = raw_env(Rules())
    env.reset(seed=5)
    before = engine_state(round_of(env))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unknown keys only warn (PettingZoo's api_test sends one)
            env.reset(options=options)
    except ValueError:
        assert engine_state(round_of(env)) == before
        return
    # Accepted (None, or unknown keys that only warn): a fresh round, a full hand each, no move.
    fresh = round_of(env)
    assert fresh.moves == [] and fresh.result is None and env.agent_selection in env.agents
    assert [h.bit_count() for h in fresh.hands] == [Rules().resolved_hand_size] * 2


@given(actions=st.one_of(garbage, st.lists(st.integers(-2, 70), min_size=0, max_size=5)))
def test_fuzz_vector_env_step(actions):
    env = make_vector_env(3, "standard", opponents=["greedy"])
    env.reset(seed=1)
    before = env.games.owner.copy(), env.games.num_moves.copy()
    masks = env.action_masks()
    array = np.asarray(actions) if not isinstance(actions, dict) else None
    if array is not None and array.shape == (3,) and array.dtype.kind in "iu" and masks[np.arange(3), array % 57].all():
        if ((array >= 0) & (array < 57)).all():
            return
    with pytest.raises((ValueError, TypeError)):
        env.step(actions)
    assert (env.games.owner == before[0]).all() and (env.games.num_moves == before[1]).all()


@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=130) | garbage)
def test_fuzz_decode_observation(values):
    try:
        decode_observation(values, Rules())
    except (ValueError, TypeError):
        return
    accepted = np.asarray(values, dtype=np.float32)
    assert accepted.shape == (121,) and np.isfinite(accepted).all() and (accepted >= 0).all()


@given(index=st.integers(0, 120), value=st.floats(allow_nan=True, allow_infinity=True, width=32))
def test_one_impossible_number_in_a_real_observation_is_refused_by_name(index, value):
    env = raw_env(Rules())
    env.reset(seed=3)
    env.step(env.legal_actions()[0])
    vector = env.observe(env.agent_selection)["observation"].copy()
    vector[index] = value
    if np.isfinite(value) and value >= 0:
        return  # whether a finite non-negative number fits depends on its piece
    # The error names the piece that holds the number.
    layout = layout_for(Rules(), "vector")
    piece = next(p for p in layout.pieces if layout.offset(p.name) <= index < layout.offset(p.name) + p.size)
    with pytest.raises(ValueError, match=f"observation piece '{piece.name}' must hold values in 0"):
        decode_observation(vector, Rules())


@given(
    fields=st.dictionaries(st.sampled_from(["num_players", "max_pip", "hand_size", "target", "partnership"]), garbage)
)
def test_fuzz_rules(fields):
    try:
        rules = Rules.from_dict(fields)
    except ValueError as e:
        assert "Rules." in str(e) or "unknown Rules field" in str(e)
        return
    # Accepted: each field as given (nothing replaced), and the rules read back the same.
    assert all(
        getattr(rules, key) == value and type(getattr(rules, key)) is type(value) for key, value in fields.items()
    )
    assert Rules.from_dict(rules.as_dict()) == rules


# -- agent folders -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agent_folder(tmp_path_factory):
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    from block_env.agents.policy import save_agent

    rules = Rules()
    policy = MaskableActorCriticPolicy(
        spaces.Box(0.0, np.inf, shape=(121,), dtype=np.float32),
        spaces.Discrete(57),
        lr_schedule=lambda _: 0.0,
        net_arch={"pi": [16], "vf": [16]},
    )
    return save_agent(policy, tmp_path_factory.mktemp("agent") / "a", rules, "vector", {"pi": [16], "vf": [16]}, "tanh")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: [m], "must hold a JSON object"),
        (lambda m: {k: v for k, v in m.items() if k != "net_arch"}, "net_arch must be"),
        (lambda m: m | {"activation": "gelu"}, "activation must be one of"),
        (lambda m: m | {"observation_size": 120}, "observation_size must be 121"),
        (lambda m: m | {"observation_size": "121"}, "observation_size must be 121"),
        (lambda m: m | {"rules": {"num_players": 9}}, r"rules: Rules\.num_players"),
        (lambda m: m | {"rules": [1]}, "rules must be an object"),
        (lambda m: m | {"num_actions": 3}, "num_actions must be 57"),
        (lambda m: m | {"net_arch": {"pi": [32], "vf": [16]}}, r"has shape .* needs"),
        (lambda m: m | {"observation": "history", "observation_size": 1949}, "shape"),
        (lambda m: m | {"format": 2}, "format must be 1"),
    ],
)
def test_malformed_agent_json_is_refused_with_the_key(agent_folder, tmp_path, edit, message):
    import shutil

    folder = tmp_path / "agent"
    shutil.copytree(agent_folder, folder)
    edited = edit(json.loads((folder / "agent.json").read_text()))
    (folder / "agent.json").write_text(json.dumps(edited))
    observation = edited.get("observation", "vector") if isinstance(edited, dict) else "vector"
    with pytest.raises(ValueError, match=message):
        make_agent(f"policy:{folder}", Rules(), observation=observation)


def test_pickled_code_in_weights_is_refused(agent_folder, tmp_path):
    import shutil

    import torch

    folder = tmp_path / "agent"
    shutil.copytree(agent_folder, folder)
    torch.save({"payload": object()}, folder / "policy.pth")  # not plain tensors
    with pytest.raises(ValueError, match="refused, not a weights-only tensor file"):
        make_agent(f"policy:{folder}", Rules())


# -- the command line --------------------------------------------------------------------------


def run_cli(*args, stdin=""):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, input=stdin, cwd=ROOT, timeout=300)


@pytest.mark.parametrize(
    "args, message",
    [
        (["eval", "--agents", "random", "policy:/no/such", "--deals", "1"], "agent.json is missing"),
        (["eval", "--agents", "random", "greedy", "--out", "README.md"], "is an existing file"),
        (["eval", "--agents", "random", "search:worlds=0"], "search worlds must be"),
        (["eval", "--agents", "random", "greedy", "--seed", "-3"], "a seed is an integer >= 0"),
        (["train", "--config", "tests/data/broken.yaml"], "is not valid YAML"),
        (["play", "--opponents", "greedy", "--seed", "1"], "the input ended"),
        (
            ["average", "--agents", "pretrained:standard", "search", "--out", "runs/never"],
            "--agents: a trained agent is",
        ),
    ],
)
def test_cli_user_errors_are_one_line_and_exit_2(args, message, tmp_path):
    (ROOT / "tests" / "data").mkdir(exist_ok=True)
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_average_command_writes_the_agents_mean_which_plays_and_never_overwrites(tmp_path, capsys):
    import torch

    from block_env.agents import PRETRAINED_DIR

    out = tmp_path / "soup"
    assert (
        main(["average", "--agents", "pretrained:standard_thirteenth", "pretrained:standard_belief", "--out", str(out)])
        == 0
    )
    assert f"play it as policy:{out}" in capsys.readouterr().out
    key = "action_net.weight"
    a, b = (
        torch.load(PRETRAINED_DIR / name / "policy.pth", weights_only=True)[key]
        for name in ("standard_thirteenth", "standard_belief")
    )
    mean = torch.load(out / "policy.pth", weights_only=True)[key]
    torch.testing.assert_close(mean.double(), (a.double() + b.double()) / 2, rtol=0, atol=1e-7)
    env = raw_env("standard")
    env.reset(seed=1)
    obs = env.observe(env.agent_selection, "tracked")  # the averaged networks' encoding
    assert obs["action_mask"][make_agent(f"policy:{out}", env.rules, seed=0).act(obs)] == 1
    with pytest.raises(SystemExit) as exit_:
        main(["average", "--agents", "pretrained:standard_thirteenth", "pretrained:standard_belief", "--out", str(out)])
    assert exit_.value.code == 2 and "already exists and is not an empty folder" in capsys.readouterr().err
    torch.testing.assert_close(torch.load(out / "policy.pth", weights_only=True)[key], mean, rtol=0, atol=0)


def test_an_interrupted_arena_resumes_to_the_uninterrupted_numbers(tmp_path):
    args = ["eval", "--agents", "random", "greedy", "strategic", "--deals", "300", "--seed", "4", "--workers", "1"]
    whole = tmp_path / "whole"
    assert main([*args, "--out", str(whole), "--quiet"]) == 0
    cut = tmp_path / "cut"
    marker = tmp_path / "deal_40_started"
    process = subprocess.Popen(
        paused_arena(40, marker, [*args, "--out", str(cut), "--quiet"]),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    assert signal_when(process, signal.SIGINT, marker.exists) == 130
    assert process.stdout is not None and "continue with the same command and --resume" in process.stdout.read()
    records = cut / "records.jsonl"
    assert len(records.read_text().splitlines()) == 1 + 40  # the config line and deals 0-39
    assert main([*args, "--out", str(cut), "--quiet", "--resume"]) == 0
    assert len(records.read_text().splitlines()) == 1 + 300
    assert (cut / "summary.csv").read_text() == (whole / "summary.csv").read_text()
    assert (cut / "summary.md").read_text() == (whole / "summary.md").read_text()


def test_ctrl_c_during_training_leaves_a_resumable_checkpoint(tmp_path, monkeypatch):
    out = tmp_path / "run"
    config = ROOT / "configs" / "tiny.yaml"
    args = ["train", "--config", str(config), "--out", str(out), "--quiet"]
    process = subprocess.Popen(
        [*CLI, *args, "--total-timesteps", "1000000"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
        preexec_fn=default_sigint,
    )
    curve = out / "learning_curve.csv"
    # A million steps: the run is still learning when its second evaluation is on the curve.
    code = signal_when(process, signal.SIGINT, lambda: curve.exists() and len(curve.read_text().splitlines()) >= 3)
    assert code == 130
    summary = json.loads((out / "training.json").read_text())
    assert summary["interrupted"] and summary["timesteps"] >= 256
    checkpoint = out / "checkpoints" / f"ppo_{summary['timesteps']}_steps.zip"
    assert checkpoint.is_file() and (out / "learning_curve.png").is_file()
    before = [int(row.split(",")[0]) for row in curve.read_text().splitlines()[1:]]
    target = summary["timesteps"] + 512
    calls = spy_on_learning(monkeypatch)
    assert main([*args, "--total-timesteps", str(target), "--resume", str(checkpoint)]) == 0
    assert_learning_resumed_from(calls, checkpoint)  # its step and weights, not a fresh start
    assert json.loads((out / "training.json").read_text())["timesteps"] == target
    # The curve goes on past the interruption: the earlier points kept, none measured again.
    after = [int(row.split(",")[0]) for row in curve.read_text().splitlines()[1:]]
    assert after[: len(before)] == before and after == sorted(set(after)) and after[-1] == target


def test_ctrl_c_during_expert_iteration_keeps_the_rounds_already_saved(tmp_path):
    values = {
        "total_timesteps": 0,
        "ppo": {"net_arch": [16, 16]},
        "pretrain": {"teacher": None},
        "expert": {"rounds": 50, "decisions": 48, "worlds": 2, "workers": 1, "games": 4, "eval_deals": 2},
        "eval": {"opponents": ["random"]},
    }
    config = tmp_path / "expert.yaml"
    config.write_text(yaml.safe_dump(values))
    out = tmp_path / "run"
    process = subprocess.Popen(
        [*CLI, "train", "--config", str(config), "--out", str(out), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
        preexec_fn=default_sigint,
    )
    code = signal_when(process, signal.SIGINT, lambda: (out / "expert_round_2" / "policy.pth").exists())
    assert code == 130
    assert process.stdout is not None and "interrupted in round" in process.stdout.read()
    saved = sorted(int(p.name.rsplit("_", 1)[1]) for p in out.glob("expert_round_*"))
    assert saved[:3] == [0, 1, 2] and saved == list(range(len(saved))) and len(saved) < 51
    agent_plays_legal_round(
        make_agent(f"policy:{out / f'expert_round_{saved[-1]}'}", "standard", seed=0), "standard", 0
    )
