"""Training: config validation, a smoke run of the real script, resume, evaluation of its
output, and saved agents that load and play legally in every preset."""

from __future__ import annotations

import csv
import gc
import io
import json
import re
import warnings
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from conftest import agent_plays_legal_round, assert_same_decisions_under_redeals, load_benchmark

from block_env import PRESETS, Rules, decode_observation, raw_env
from block_env.agents import make_agent, make_env
from block_env.agents.policy import build_policy, save_agent
from block_env.cli import main
from block_env.seeding import derive_seed
from block_env.training.config import apply_settings, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "configs" / "tiny.yaml"


def test_shipped_configs_are_valid():
    from block_env.training.rllib import RLlibConfig

    for path in sorted((ROOT / "configs").glob("*.yaml")):
        if path.name == "rllib.yaml":  # train-rllib's config
            assert RLlibConfig.load(path).iterations > 0
            continue
        config = load_config(path)
        assert config.total_timesteps > 0 or config.expert.rounds > 0, path


@pytest.mark.parametrize(
    "values, message",
    [
        ({"total_timesteps": 100, "learning_rate": 1e-3}, "unknown config key.*learning_rate"),
        ({"ppo": {"lr": 0.1}}, r"unknown config key\(s\) ppo\.lr"),
        ({True: 3}, "config keys are names; the config has True"),
        ({"ppo": {"n_steps": 512, 2: 3}}, "config keys are names; ppo has 2"),
        ({"ppo": {"net_arch": [64, 0]}}, "ppo.net_arch"),
        ({"ppo": {"gamma": 1.5}}, r"ppo\.gamma must be in 0.0..1.0"),
        ({"n_envs": "4"}, "n_envs must be int"),
        ({"n_envs": 0}, "n_envs must be a positive finite number"),
        ({"ppo": {"learning_rate": float("nan")}}, "ppo.learning_rate must be a positive finite number, got nan"),
        ({"ppo": {"clip_range": float("inf")}}, "ppo.clip_range must be a positive finite number, got inf"),
        ({"ppo": {"vf_coef": float("nan")}}, "ppo.vf_coef"),
        ({"reward_scale": float("inf")}, "reward_scale must be a positive finite number"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"eval": {"opponents": ["human"]}}, r"eval\.opponents\[0\] cannot be 'human'"),
        ({"opponents": {"scripted": ["search:worlds=0"]}}, r"opponents\.scripted\[0\]: search worlds must be"),
        ({"pretrain": {"teacher": "policy:/no/such/folder"}}, r"pretrain\.teacher: .*agent\.json is missing"),
        ({"rules": "nope"}, "rules: unknown rules preset"),
        ({"rules": {"num_players": 5}}, r"rules: Rules\.num_players"),
        ({"episode": "game"}, "episode must be one of"),
        ({"vec_env": "ray"}, "vec_env must be one of"),
        ({"opponents": {"scripted": ["human"]}}, r"opponents\.scripted\[0\] cannot be 'human'"),
        ({"opponents": {"scripted": [], "self_play": False}}, "at least one scripted opponent"),
        ({"eval": {"opponents": ["wizard"]}}, "unknown agent 'wizard'"),
        ({"eval": 5}, "eval must be a mapping"),
        ({"ppo": {"critic": "oracle"}}, "ppo.critic must be one of"),
        ({"ppo": {"critic_warmup": -1}}, "ppo.critic_warmup must be an int >= 0"),
        ({"ppo": {"anneal_learning_rate": "yes"}}, "ppo.anneal_learning_rate must be bool, got 'yes'"),
        ({"pretrain": {"anneal_learning_rate": 1}}, "pretrain.anneal_learning_rate must be bool, got 1"),
        ({"ppo": {"critic": "full_information"}, "vec_env": "dummy"}, 'needs vec_env "batched"'),
        ({"eval": {"halfwidth": 0}}, "eval.halfwidth must be a positive finite number, got 0"),
        ({"eval": {"deals": 500, "max_deals": 400}}, r"eval\.max_deals \(400\) must be at least eval\.deals \(500\)"),
        ({"update_threads": -1}, "update_threads must be an int >= 0"),
        ({"env_processes": 0}, "env_processes must be an int >= 1"),
        ({"env_processes": 2, "vec_env": "dummy"}, 'env_processes splits the "batched" vec_env'),
        ({"env_processes": 3, "n_envs": 8}, r"n_envs \(8\) must be a multiple of env_processes \(3\)"),
        (
            {"pretrain": {"init_from": "strategic"}},
            "pretrain.init_from: a trained agent is pretrained:NAME or policy:PATH",
        ),
        ({"pretrain": {"init_from": "pretrained:nope"}}, r"pretrain\.init_from: unknown pretrained agent 'nope'"),
        ({"pretrain": {"init_from": "pretrained:standard_3p"}}, r"pretrain\.init_from: .* cannot play"),
        ({"pretrain": {"decisions": 0}}, "pretrain.decisions is 0 with no pretrain.earlier_decisions"),
        (
            {"pretrain": {"earlier_decisions": ["a.npz"], "teacher": None}},
            "pretrain.earlier_decisions needs pretrain.teacher",
        ),
        (
            {"pretrain": {"earlier_decisions": "run/teacher_decisions.npz"}},
            r"pretrain\.earlier_decisions must be a list",
        ),
        ({"pretrain": {"earlier_decisions": [" "]}}, r"pretrain\.earlier_decisions: an empty path"),
        (
            {"pretrain": {"earlier_decisions": ["run/a.npz", "run/../run/a.npz"]}},
            r"pretrain\.earlier_decisions names .*run/a\.npz more than once",
        ),
        ({"pretrain": {"holdout": -0.1}}, r"pretrain\.holdout must be a finite number >= 0\.0"),
        ({"pretrain": {"holdout": 1}}, r"pretrain\.holdout must be below 1"),
        ({"pretrain": {"belief_weight": -1}}, r"pretrain\.belief_weight must be a finite number >= 0\.0"),
        (
            {"pretrain": {"belief_weight": 1, "teacher": None}},
            r"pretrain\.belief_weight \(1\.0\) needs pretrain\.teacher",
        ),
        (
            {"pretrain": {"belief_weight": 1.0}},
            r'pretrain\.belief_weight \(1\.0\) learns from the hidden hands .* needs ppo\.critic "full_information", '
            "got 'observation'",
        ),
        ({"pretrain": {"holdout": 0.1, "teacher": None}}, r"pretrain\.holdout \(0\.1\) needs pretrain\.teacher"),
        ({"pretrain": {"earlier_decisions": ["a.npz"], "decisions": -1}}, "pretrain.decisions must be an int >= 0"),
        (
            {"pretrain": {"average_with": ["search"]}},
            "pretrain.average_with: a trained agent is pretrained:NAME or policy:PATH",
        ),
        (
            {"pretrain": {"average_with": ["pretrained:standard"], "teacher": None}},
            "pretrain.average_with averages the warm start's network .* needs pretrain.init_from or pretrain.teacher",
        ),
        (
            {"pretrain": {"average_with": ["pretrained:nope"]}},
            r"pretrain\.average_with: unknown pretrained agent 'nope'",
        ),
        ({"total_timesteps": 0}, "total_timesteps must be a finite number >= 1, got 0"),
        ({"expert": {"rounds": 1}, "observation": "history"}, "expert iteration needs observation 'vector'"),
        ({"expert": {"rounds": 1}, "episode": "match"}, "expert iteration needs episode 'round'"),
        ({"expert": {"rounds": 1}, "ppo": {"critic": "full_information"}}, "needs ppo.critic 'observation'"),
        ({"expert": {"worlds": 0}}, "expert.worlds must be an int >= 1"),
        ({"expert": {"temperature": 0.0}}, "expert.temperature must be a positive finite number"),
        ({"expert": {"targets": "moves"}}, "expert.targets must be one of"),
        ({"expert": {"eval_opponent": "human"}}, "expert.eval_opponent cannot be 'human'"),
        ({"expert": {"rounds": 1, "eval_opponent": "search:worlds=0"}}, r"expert\.eval_opponent: search worlds"),
        ({"opponents": {"partner": "learner"}}, "opponents.partner: only partnership rules seat a partner"),
        ({"rules": "partnership", "opponents": {"partner": "human"}}, r"opponents\.partner cannot be 'human'"),
        ({"rules": "partnership", "opponents": {"partner": "wizard"}}, "unknown agent 'wizard'"),
        ({"rules": "partnership", "opponents": {"partner": "learner"}, "vec_env": "dummy"}, 'needs vec_env "batched"'),
    ],
)
def test_config_validation_names_the_key(values, message):
    with pytest.raises(ValueError, match=message):
        config_from_dict(values)


def test_settings_reach_into_sections_read_as_yaml_and_name_what_is_wrong(tmp_path):
    """``train --set KEY=VALUE``: a dotted key sets one key of its section, its value read as
    YAML, after the file and the top-level overrides; the rest of the file stays as it was."""
    base = load_config(TINY)
    settings = ["pretrain.decisions=123", "ppo.net_arch=[16, 8]", "seed=5", "opponents.scripted=[greedy]"]
    config = load_config(TINY, {"seed": 3}, settings)
    assert (config.pretrain.decisions, config.ppo.net_arch, config.seed) == (123, (16, 8), 5)
    assert config.opponents.scripted == ("greedy",) and config.opponents.self_play == base.opponents.self_play
    assert (config.pretrain.teacher, config.pretrain.epochs, config.ppo.batch_size) == ("strategic", 2, 64)
    assert config.total_timesteps == base.total_timesteps and config.eval == base.eval
    assert load_config(TINY, settings=["seed=1", "seed=2"]).seed == 2  # the last one wins
    assert load_config(TINY, settings=[" pretrain . epochs = 3"]).pretrain.epochs == 3
    nested = {"pretrain": {"decisions": 1}}
    assert apply_settings(nested, ["pretrain.decisions=2"]) == {"pretrain": {"decisions": 2}}
    assert nested == {"pretrain": {"decisions": 1}}  # the caller's mapping is left as it was
    for setting, message in [
        ("pretrain.decisions", "--set takes KEY=VALUE"),
        ("pretrain..decisions=1", "--set takes KEY=VALUE"),
        ("pretrain.teacher=", "VALUE is empty"),
        ("pretrain.decisions=[1", "VALUE is not valid YAML"),
        ("total_timesteps.low=1", "total_timesteps is not a section"),
    ]:
        with pytest.raises(ValueError, match=message) as e:
            load_config(TINY, settings=[setting])
        assert repr(setting) in str(e.value)
    for setting, message in [
        ("pretrain.decisons=1", r"unknown config key\(s\) pretrain\.decisons"),
        ("ppo.net_arch=wide", "ppo.net_arch must be a list"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_config(TINY, settings=[setting])
    with pytest.raises(ValueError, match="a list of KEY=VALUE strings"):
        apply_settings({}, "seed=1")
    listed = tmp_path / "listed.yaml"
    listed.write_text("- seed: 1\n")
    with pytest.raises(ValueError, match=f"{re.escape(str(listed))} must be a mapping"):
        load_config(listed, {"seed": 2})
    with pytest.raises(SystemExit) as e:
        main(["train", "--config", str(TINY), "--set", "pretrain.decisons=1", "--out", str(tmp_path / "run")])
    assert e.value.code == 2 and not (tmp_path / "run").exists()


def test_an_interrupted_main_job_says_how_to_resume_from_the_run_folders_config(tmp_path, monkeypatch, capsys):
    """The hint names the run folder's config.yaml (which holds every --set), quoted for a shell."""
    import shlex

    import block_env.training.main_job as main_job

    monkeypatch.setattr(main_job, "run_main_job", lambda *args, **kwargs: SimpleNamespace(training={}, report=None))
    run = tmp_path / "my run"
    assert main(["main", "--config", str(TINY), "--out", str(run), "--set", "seed=3", "--quiet"]) == 130
    hint, arena = capsys.readouterr().out.strip().split("; then the final arena: ")
    assert shlex.split(hint)[-7:] == [
        "train",
        "--config",
        str(run / "config.yaml"),
        "--out",
        str(run),
        "--resume",
        "latest",
    ]
    # The arena the job would have run: the same agents, deals and seed as final_arena's.
    from block_env.cli import build_parser

    args = build_parser().parse_args(shlex.split(arena)[1:])
    expected = main_job.final_arena(load_config(TINY, settings=["seed=3"]), run, 1)
    assert (tuple(args.agents), args.deals, args.seed, args.out) == (
        expected.agents,
        expected.deals,
        expected.seed,
        str(run / "arena"),
    )

    # Stopped before PPO's first checkpoint (in the warm start): one line, no traceback.
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(main_job, "run_main_job", interrupted)
    assert main(["main", "--config", str(TINY), "--out", str(tmp_path / "other"), "--quiet"]) == 130
    assert "interrupted before the teacher's decisions were all gathered" in capsys.readouterr().out
    # Stopped in the fit, its teacher decisions on disk: how to fit them again without their games.
    (tmp_path / "fitting").mkdir()
    (tmp_path / "fitting" / "teacher_decisions.npz").write_bytes(b"")
    assert main(["main", "--config", str(TINY), "--out", str(tmp_path / "fitting"), "--quiet"]) == 130
    hint = capsys.readouterr().out
    assert "--set pretrain.decisions=0" in hint and str(tmp_path / "fitting" / "teacher_decisions.npz") in hint


def test_yaml_config_errors_come_from_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: standard\nppo:\n  batch_sise: 64\n")
    with pytest.raises(ValueError, match=r"ppo\.batch_sise"):
        load_config(bad)
    with pytest.raises(SystemExit) as e:
        main(["train", "--config", str(bad), "--out", str(tmp_path / "run")])
    assert e.value.code == 2


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "tiny"
    assert main(["train", "--config", str(TINY), "--out", str(out), "--quiet"]) == 0
    return out


def test_an_agent_trained_on_the_history_encoding_is_evaluated_and_plays_in_the_arena(tmp_path, capsys):
    """Its learning-curve evaluations and the arena seat it beside agents reading "vector":
    each agent is given its own encoding."""
    values = yaml.safe_load(TINY.read_text())
    values.update(observation="history", total_timesteps=256, checkpoint_every=256)
    values["eval"] = {**values["eval"], "every": 256}
    config = tmp_path / "history.yaml"
    config.write_text(yaml.safe_dump(values))
    out = tmp_path / "run"
    assert main(["train", "--config", str(config), "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "final" / "agent.json").read_text())["observation"] == "history"
    rows = list(csv.DictReader((out / "learning_curve.csv").open()))
    assert [int(r["timesteps"]) for r in rows] == [0, 256]
    spec = f"policy:{out / 'final'}"
    assert (
        main(
            [
                "eval",
                "--agents",
                spec,
                "greedy",
                "--deals",
                "3",
                "--workers",
                "1",
                "--out",
                str(tmp_path / "a"),
                "--quiet",
            ]
        )
        == 0
    )
    assert f"`{spec}`" in capsys.readouterr().out


def test_training_smoke_run_writes_every_output(tiny_run):
    summary = json.loads((tiny_run / "training.json").read_text())
    assert summary["timesteps"] == 512
    # the rate is the learned steps over the run's seconds; both are written to a tenth
    seconds = summary["seconds"]
    assert 512 / (seconds + 0.05) - 0.05 <= summary["steps_per_second"] <= 512 / max(seconds - 0.05, 1e-9) + 0.05
    # the accuracy is a share of the 300 decisions fitted
    pretrain = summary["pretrain"]
    assert pretrain["decisions"] == 300 and round(pretrain["accuracy"] * 300, 6).is_integer()
    for name in ["best", "final", "latest"]:
        assert (tiny_run / name / "agent.json").is_file() and (tiny_run / name / "policy.pth").is_file()
    assert sorted(p.name for p in (tiny_run / "checkpoints").iterdir()) == ["ppo_256_steps.zip", "ppo_512_steps.zip"]
    assert len(list((tiny_run / "snapshots").iterdir())) == 2
    with (tiny_run / "learning_curve.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["timesteps"]) for r in rows] == [0, 256, 512]  # 0: right after the warm start
    assert (tiny_run / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert any((tiny_run / "tensorboard").rglob("events.out.tfevents.*"))


def test_each_curve_point_plays_fresh_deals_and_the_best_agent_is_the_best_point(tiny_run):
    """Point k plays the deals of the "evaluation" stream's index k (the CSV says which), so no
    point is judged on deals an earlier one was chosen on; best/ is the agent of the first point
    with the highest mean margin (the step-0 agent, or the snapshot taken at that step)."""
    import torch

    with (tiny_run / "learning_curve.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["seed"]) for r in rows] == [derive_seed(0, "evaluation", k) for k in range(3)]
    top = max(rows, key=lambda r: float(r["mean_margin"]))
    steps = int(top["timesteps"])
    source = tiny_run / ("step_0" if steps == 0 else f"snapshots/step_{steps:09d}")
    best, chosen = (torch.load(folder / "policy.pth", weights_only=True) for folder in (tiny_run / "best", source))
    assert _same_weights(best, chosen)


def test_training_on_a_sharded_env_swaps_snapshots_into_every_shard(tmp_path):
    """env_processes 2: the games step in two processes; self-play's snapshots reach both."""
    from block_env.training.train import train

    config = load_config(TINY, {"env_processes": 2, "pretrain": {"teacher": None}})
    summary = train(config, tmp_path / "sharded", progress=False)
    assert summary["timesteps"] == 512 and not summary["interrupted"]
    assert len(list((tmp_path / "sharded" / "snapshots").iterdir())) == 2
    assert (tmp_path / "sharded" / "final" / "agent.json").is_file()


@pytest.mark.parametrize("partner", ["learner", "greedy"])
def test_a_partnership_learner_trains_beside_its_own_copy_or_a_fixed_partner(partner, tmp_path, monkeypatch):
    """opponents.partner: a fixed partner is seated once; the learner's copy is seated at every
    rollout with the weights that collect it (the first: the starting policy, step_0)."""
    import torch

    from block_env.training.train import train
    from block_env.vector_env import BlockDominoesVectorEnv

    seated = []

    def spy(env, spec):
        copy = spec.removeprefix("policy:") + "/policy.pth" if spec.startswith("policy:") else None
        seated.append((spec, copy and torch.load(copy, weights_only=True)))
        set_partner(env, spec)

    set_partner = BlockDominoesVectorEnv.set_partner
    monkeypatch.setattr(BlockDominoesVectorEnv, "set_partner", spy)
    changes = {"rules": "partnership", "pretrain": {"teacher": None}, "opponents": {"partner": partner}}
    train(load_config(TINY, changes), tmp_path / "run", progress=False)
    if partner == "greedy":
        assert [spec for spec, _ in seated] == ["greedy"] and not (tmp_path / "run" / "partner").exists()
        return
    assert [spec for spec, _ in seated] == [f"policy:{tmp_path / 'run' / 'partner'}"] * 2  # 512 steps, 2 rollouts
    start = torch.load(tmp_path / "run" / "step_0" / "policy.pth", weights_only=True)
    first, second = seated[0][1], seated[1][1]
    assert _same_weights(start, first)
    assert not all(torch.equal(first[k], second[k]) for k in first)  # learned in between


def test_curve_points_play_deals_until_the_interval_is_narrow_enough(tiny_run):
    from block_env.training.train import evaluate_against_baselines

    base = load_config(TINY)
    agent = tiny_run / "final"
    fixed = evaluate_against_baselines(agent, base, deals=20, seed=5)
    assert fixed["vs_random_deals"] == 20
    wide = fixed["vs_random_high"] - fixed["vs_random_low"]
    wanted = wide / 2 * 0.6  # about 2.8x the deals for this interval
    narrowed = _with_eval(halfwidth=wanted, max_deals=400)
    row = evaluate_against_baselines(agent, narrowed, deals=20, seed=5)
    for opponent in narrowed.eval.opponents:
        half = (row[f"vs_{opponent}_high"] - row[f"vs_{opponent}_low"]) / 2
        assert half <= wanted or row[f"vs_{opponent}_deals"] == 400, opponent
    assert row["vs_random_deals"] > 20
    capped = _with_eval(halfwidth=1e-6, max_deals=30)
    with pytest.warns(UserWarning, match="after eval.max_deals=30 deals, wider than eval.halfwidth") as caught:
        assert evaluate_against_baselines(agent, capped, deals=20, seed=5)["vs_random_deals"] == 30
    assert sorted(str(w.message).split(":")[0] for w in caught) == [
        "learning-curve point against greedy",
        "learning-curve point against random",
    ]
    one = evaluate_against_baselines(agent, _with_eval(deals=1, halfwidth=1.0, max_deals=3), deals=1, seed=5)
    assert one["vs_random_deals"] > 1  # one deal has no interval to stop on: it plays on


def _with_eval(**changes):
    import yaml

    values = yaml.safe_load(TINY.read_text())
    return config_from_dict({**values, "eval": {**values["eval"], **changes}})


def _configs_of_other_networks(values, folder):
    """The run config ``values`` written to ``folder`` twice over, once with wider layers and
    once with another activation: configs whose network a checkpoint of ``values`` does not fit."""
    paths = {}
    for name, ppo in (("wider", {"net_arch": [48, 48]}), ("relu", {"activation": "relu"})):
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump(values | {"ppo": values["ppo"] | ppo}))
    return paths


def _same_weights(first, second):
    """Two state dicts with the same keys and equal tensors."""
    import torch

    return first.keys() == second.keys() and all(torch.equal(first[key], second[key]) for key in first)


def test_resume_continues_from_a_checkpoint(tiny_run, tmp_path):
    out = tmp_path / "resumed"
    import shutil

    shutil.copytree(tiny_run, out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        code = main(
            [
                "train",
                "--config",
                str(TINY),
                "--out",
                str(out),
                "--quiet",
                "--total-timesteps",
                "768",
                "--resume",
                str(out / "checkpoints" / "ppo_512_steps.zip"),
            ]
        )
        gc.collect()
    assert code == 0
    assert json.loads((out / "training.json").read_text())["timesteps"] == 768
    with (out / "learning_curve.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["timesteps"]) for r in rows] == [0, 256, 512, 768]
    # the point after the resume plays deals of its own too
    assert [int(r["seed"]) for r in rows] == [derive_seed(0, "evaluation", k) for k in range(4)]
    # reading the curve on resume, at each point and for the plot closes the file each time
    assert not [w for w in caught if "learning_curve.csv" in str(w.message)]


def test_a_resume_with_a_config_of_another_network_is_refused_and_the_run_is_left_as_it_was(tiny_run, tmp_path, capsys):
    """Other layers or another activation than the checkpoint's, or a total of steps the
    checkpoint already has: one line naming what was wrong, not torch's traceback, and the
    run's files (its config.yaml too) unchanged."""
    import shutil

    out = tmp_path / "run"
    shutil.copytree(tiny_run, out)
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    configs = _configs_of_other_networks(yaml.safe_load(TINY.read_text()), tmp_path)
    steps = json.loads((out / "training.json").read_text())["timesteps"]
    for options, message in (
        (["--config", str(configs["wider"])], "its network does not fit the config's (size mismatch for"),
        (["--config", str(configs["relu"])], "the config's ppo.activation is 'relu'"),
        (
            ["--config", str(out / "config.yaml"), "--total-timesteps", "256", "--set", "ppo.n_epochs=7"],
            f"already has {steps} steps, total_timesteps is 256",
        ),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(["train", *options, "--out", str(out), "--quiet", "--resume", "latest"])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


def test_resume_learns_on_with_the_configs_ppo_settings(tiny_run):
    """Editing a run's ppo section before --resume changes how it learns on (weights and step
    count stay the checkpoint's)."""
    from block_env.training.train import load_checkpoint

    values = yaml.safe_load(TINY.read_text())
    changed = {"n_steps": 64, "batch_size": 32, "n_epochs": 3, "ent_coef": 0.003, "learning_rate": 1e-4}
    config = config_from_dict({**values, "ppo": {**values["ppo"], **changed}})
    env = make_env()
    model = load_checkpoint(tiny_run / "checkpoints" / "ppo_512_steps.zip", config, env)
    assert model.num_timesteps == 512
    assert (model.n_steps, model.batch_size, model.n_epochs, model.ent_coef) == (64, 32, 3, 0.003)
    assert model.rollout_buffer.buffer_size == 64
    assert model.lr_schedule(1.0) == pytest.approx(1e-4)
    original = load_checkpoint(tiny_run / "checkpoints" / "ppo_512_steps.zip", load_config(TINY), env)
    assert original.n_steps == 128
    for key, tensor in original.policy.state_dict().items():
        assert np.array_equal(tensor.numpy(), model.policy.state_dict()[key].numpy()), key


def test_export_writes_a_checkpoints_policy_as_an_agent_that_plays(tiny_run, tmp_path):
    """Each checkpoint exports as the weights stored in it, and the run's last model
    (final.zip) as its final agent, agent.json too; each export plays a legal round."""
    import torch

    def weights(folder):
        return torch.load(folder / "policy.pth", weights_only=True)

    def stored(checkpoint):
        with zipfile.ZipFile(checkpoint) as archive:
            return torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)

    exported = {}
    for name in ("final.zip", "checkpoints/ppo_256_steps.zip", "checkpoints/ppo_512_steps.zip"):
        exported[name] = tmp_path / name.replace("/", "_")
        assert main(["export", "--checkpoint", str(tiny_run / name), "--out", str(exported[name])]) == 0
        assert _same_weights(weights(exported[name]), stored(tiny_run / name))
    assert _same_weights(weights(exported["final.zip"]), weights(tiny_run / "final"))
    assert not _same_weights(*(weights(exported[f"checkpoints/ppo_{steps}_steps.zip"]) for steps in (256, 512)))
    metadata = json.loads((exported["final.zip"] / "agent.json").read_text())
    assert metadata == json.loads((tiny_run / "final" / "agent.json").read_text())
    for folder in exported.values():
        agent_plays_legal_round(make_agent(f"policy:{folder}", Rules(), seed=0), Rules(), seed=3)


def test_export_refuses_what_it_cannot_read_and_writes_nothing(tiny_run, tmp_path, capsys):
    """A missing checkpoint (with or without a run config beside it), one whose run folder
    has no config, a config of other layers or another activation and an --out that holds
    files are each refused by name, before anything is written."""
    checkpoint = tiny_run / "checkpoints" / "ppo_512_steps.zip"
    loose = tmp_path / "elsewhere" / "loose.zip"
    loose.parent.mkdir()
    loose.write_bytes(checkpoint.read_bytes())
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("keep me")
    configs = _configs_of_other_networks(yaml.safe_load((tiny_run / "config.yaml").read_text()), tmp_path)
    cases = [
        (
            ["--checkpoint", str(checkpoint), "--config", str(configs["wider"])],
            "ppo_512_steps.zip: its network does not fit the config's (size mismatch for",
        ),
        (
            ["--checkpoint", str(checkpoint), "--config", str(configs["relu"])],
            "its network uses <class 'torch.nn.modules.activation.Tanh'>, the config's ppo.activation is 'relu'",
        ),
        (["--checkpoint", str(tmp_path / "nowhere" / "ppo_1_steps.zip")], "ppo_1_steps.zip: no such checkpoint"),
        (["--checkpoint", str(tiny_run / "checkpoints" / "ppo_9_steps.zip")], "ppo_9_steps.zip: no such checkpoint"),
        (
            ["--checkpoint", str(loose)],
            f"no run config at {loose.parent / 'config.yaml'} or {tmp_path / 'config.yaml'}",
        ),
        (["--checkpoint", str(checkpoint), "--out", str(taken)], f"{taken} already exists and is not an empty folder"),
    ]
    for arguments, message in cases:
        out = ["--out", str(tmp_path / "new")] if "--out" not in arguments else []
        with pytest.raises(SystemExit) as exit_:
            main(["export", *arguments, *out])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "new").exists() and (taken / "notes.txt").read_text() == "keep me"
    # The run's config named: the loose checkpoint exports.
    assert (
        main(
            [
                "export",
                "--checkpoint",
                str(loose),
                "--config",
                str(tiny_run / "config.yaml"),
                "--out",
                str(tmp_path / "new"),
            ]
        )
        == 0
    )
    assert (tmp_path / "new" / "policy.pth").is_file()


def test_an_annealed_learning_rate_falls_to_zero_over_the_run_and_a_resume_carries_it_on(tmp_path, monkeypatch):
    """Each update's step size with ppo.anneal_learning_rate: the rate times the share of the
    run still to go (three rollouts of 256 steps in 768: two thirds, a third, zero); a run
    resumed from its first checkpoint takes the later updates' rates, not rates spread anew
    over the steps it has left."""
    from sb3_contrib import MaskablePPO

    rates: list[float] = []
    update = MaskablePPO.train

    def spy(model):
        update(model)
        rates.append(model.policy.optimizer.param_groups[0]["lr"])

    monkeypatch.setattr(MaskablePPO, "train", spy)
    values = yaml.safe_load(TINY.read_text())
    values = {**values, "ppo": {**values["ppo"], "learning_rate": 0.003, "anneal_learning_rate": True}}
    values.update(total_timesteps=768, pretrain={"teacher": None})
    config = tmp_path / "anneal.yaml"
    config.write_text(yaml.safe_dump(values))
    out = tmp_path / "run"
    assert main(["train", "--config", str(config), "--out", str(out), "--quiet"]) == 0
    assert rates == [pytest.approx(0.002), pytest.approx(0.001), pytest.approx(0.0)]
    rates.clear()
    checkpoint = out / "checkpoints" / "ppo_256_steps.zip"
    assert main(["train", "--config", str(config), "--out", str(out), "--quiet", "--resume", str(checkpoint)]) == 0
    assert rates == [pytest.approx(0.001), pytest.approx(0.0)]


def test_checkpoints_with_unknown_pickled_entries_are_refused(tiny_run, tmp_path):
    from block_env.training.train import safe_custom_objects

    source = tiny_run / "checkpoints" / "ppo_512_steps.zip"
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(tampered, "w") as dst:
        for item in src.infolist():
            payload = src.read(item.filename)
            if item.filename == "data":
                data = json.loads(payload)
                data["payload"] = {":type:": "<class 'object'>", ":serialized:": "gASV"}
                payload = json.dumps(data).encode()
            dst.writestr(item, payload)
    with pytest.raises(ValueError, match=r"refusing to unpickle checkpoint entries \['payload'\]"):
        safe_custom_objects(tampered, load_config(TINY), make_env())


def test_evaluation_runs_on_the_trained_agent(tiny_run, tmp_path, capsys):
    spec = f"policy:{tiny_run / 'best'}"
    assert (
        main(["eval", "--agents", spec, "random", "--deals", "2", "--workers", "1", "--out", str(tmp_path), "--quiet"])
        == 0
    )
    assert f"`{spec}`" in capsys.readouterr().out


def test_trained_agent_plays_legal_moves(tiny_run):
    rules = Rules()
    agent = make_agent(f"policy:{tiny_run / 'final'}", rules, seed=0)
    _play_with(agent, rules)


def _play_with(agent, rules: Rules) -> None:
    env = raw_env(rules, episode="match")
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    steps = 0
    while not all(env.terminations.values()) and steps < 5000:
        obs = env.observe(env.agent_selection)
        if env.agent_name_mapping[env.agent_selection] == 0:
            action = agent.act(obs)
            assert obs["action_mask"][action] == 1
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        steps += 1
    assert all(env.terminations.values()), "the match did not end"


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_saved_policies_load_and_play_legal_moves_in_every_preset(preset, tmp_path):
    """A policy saved for each preset's shapes loads weights-only into the policy agent."""
    import torch

    rules = Rules.preset(preset)
    env = raw_env(rules)
    metadata = {
        "observation_size": env.observation_space("player_0")["observation"].shape[0],
        "num_actions": rules.tile_set.num_actions,
        "net_arch": {"pi": [16], "vf": [16]},
        "activation": "relu",
    }
    torch.manual_seed(0)
    policy = build_policy(metadata)
    folder = save_agent(policy, tmp_path / preset, rules, "vector", metadata["net_arch"], "relu")
    agent = make_agent(f"policy:{folder}", rules)
    for name, tensor in policy.state_dict().items():
        assert torch.equal(agent.policy.state_dict()[name], tensor)
    _play_with(agent, rules)
    other = Rules.preset("standard_3p" if preset != "standard_3p" else "standard")
    with pytest.raises(ValueError, match="cannot play"):
        make_agent(f"policy:{folder}", other)


def test_policy_spec_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="agent.json is missing"):
        make_agent(f"policy:{tmp_path}", Rules())


def test_main_job_trains_then_evaluates_against_the_baselines(tmp_path, capsys):
    out = tmp_path / "main"
    assert main(["main", "--config", str(TINY), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "env steps/s" in printed and "`random`" in printed and "`greedy`" in printed
    assert (out / "arena" / "summary.md").is_file() and (out / "arena" / "chart.png").is_file()


def test_ppo_shows_its_steps_on_the_progress_bar_of_the_other_phases(tmp_path, capsys):
    """Where the output is not a terminal (here, captured), PPO's bar is plain lines that end
    at the run's total, not SB3's bar, which shows nothing in a log file until it ends."""
    from block_env.training.train import train

    config = load_config(TINY)
    train(config, tmp_path / "run", progress=True)
    total = f"{config.total_timesteps}/{config.total_timesteps} (100%)"
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("PPO steps: ")]
    assert lines and lines[-1].startswith(f"PPO steps: {total}")


def test_policy_agent_chooses_as_sb3_masked_predict(tiny_run):
    """The agent's fast path picks the same action as MaskablePPO's own predict()."""
    rules = Rules()
    agent = make_agent(f"policy:{tiny_run / 'final'}", rules)
    env = raw_env(rules)
    rng = np.random.default_rng(0)
    checked = 0
    for game in range(20):
        env.reset(seed=game)
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            expected, _ = agent.policy.predict(
                obs["observation"], action_masks=obs["action_mask"].astype(bool), deterministic=True
            )
            assert agent.act(obs) == int(expected)
            checked += 1
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert checked > 100


def test_the_single_env_vectorisation_still_trains(tmp_path):
    import yaml

    from block_env.training.train import train

    values = yaml.safe_load(TINY.read_text()) | {"vec_env": "dummy", "total_timesteps": 256}
    values["pretrain"]["teacher"] = None
    summary = train(config_from_dict(values), tmp_path / "dummy", progress=False)
    assert summary["timesteps"] == 256


def test_policy_agent_acts_in_batch_as_one_by_one(tiny_run):
    rules = Rules()
    agent = make_agent(f"policy:{tiny_run / 'final'}", rules)
    env = raw_env(rules)
    observations, masks = [], []
    for game in range(30):
        env.reset(seed=game)
        obs = env.observe(env.agent_selection)
        observations.append(obs["observation"])
        masks.append(obs["action_mask"].astype(bool))
    batch = agent.act_batch(np.array(observations), np.array(masks))
    singles = [agent.act({"observation": o, "action_mask": m.astype(np.int8)}) for o, m in zip(observations, masks)]
    assert batch.tolist() == singles
    masks[3][:] = False  # as act refuses a seat with no move, so does the batch
    with pytest.raises(ValueError, match=r"rows \[3\] are all zeros"):
        agent.act_batch(np.array(observations), np.array(masks))


# -- the asymmetric critic (ppo.critic: full_information) --------------------------------------


def asymmetric_config(preset: str, **pretrain: object) -> object:
    """configs/tiny.yaml's run with the asymmetric critic, on ``preset``: one PPO update."""
    import yaml

    values = yaml.safe_load(TINY.read_text())
    values.update(rules=preset, total_timesteps=256, checkpoint_every=256, vec_env="batched")
    values["ppo"]["critic"] = "full_information"
    values["eval"].update(every=256, deals=2, opponents=["random"])
    values["opponents"]["scripted"] = ["random"]
    values["pretrain"] = {"teacher": "greedy", "decisions": 64, "epochs": 1, **pretrain}
    return config_from_dict(values)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_asymmetric_critic_trains_saves_and_its_actor_plays_in_every_preset(preset, tmp_path):
    """It builds, imitates and trains a PPO update on privileged observations, checkpoints,
    and its exported actor (a plain policy over the observation) loads weights-only and plays
    legal moves, deciding as the training policy does on the observation part."""
    import torch

    from block_env.observations import layout_for, privileged_layout
    from block_env.training.critic import AsymmetricActorCriticPolicy
    from block_env.training.train import export_checkpoint, load_checkpoint, make_vec_env, train

    config = asymmetric_config(preset)
    rules = Rules.preset(preset)
    summary = train(config, tmp_path / "run", progress=False)
    assert summary["timesteps"] == 256 and summary["pretrain"]["decisions"] == 64
    env = make_vec_env(config, ["random"])
    assert env.observation_space.shape == (privileged_layout(rules, "vector").size,)
    assert (tmp_path / "run" / "checkpoints" / "ppo_256_steps.zip").is_file()
    model = load_checkpoint(tmp_path / "run" / "final.zip", config, env)
    assert isinstance(model.policy, AsymmetricActorCriticPolicy)
    agent = make_agent(f"policy:{tmp_path / 'run' / 'final'}", rules, seed=0)
    assert agent.policy.observation_space.shape == (layout_for(rules, "vector").size,)
    obs = env.reset()
    masks = env.env_method("action_masks")
    actor_size = layout_for(rules, "vector").size
    with torch.no_grad():
        trained, _ = model.predict(obs, action_masks=np.array(masks), deterministic=True)
    assert np.array_equal(agent.act_batch(obs[:, :actor_size], np.array(masks)), trained)
    env.close()
    agent_plays_legal_round(agent, rules, seed=3)
    # The run's last model exports as its final actor (the run's config read from its folder).
    exported = export_checkpoint(tmp_path / "run" / "final.zip", tmp_path / "exported")
    final = torch.load(tmp_path / "run" / "final" / "policy.pth", weights_only=True)
    weights = torch.load(exported / "policy.pth", weights_only=True)
    assert _same_weights(weights, final)


def test_an_agent_trained_with_the_full_information_critic_decides_the_same_under_redeals(tmp_path):
    """The critic's full information never reaches the deployed actor."""
    from block_env.training.train import train

    train(asymmetric_config("standard"), tmp_path / "run", progress=False)
    assert_same_decisions_under_redeals(f"policy:{tmp_path / 'run' / 'final'}", Rules())


def test_the_asymmetric_actor_never_reads_the_hidden_hands():
    """The critic's value moves with the hidden hands; the actor's logits do not."""
    import torch

    from block_env.observations import layout_for, privileged_layout
    from block_env.training.critic import AsymmetricActorCriticPolicy

    rules = Rules()
    size, actor_size = privileged_layout(rules, "vector").size, layout_for(rules, "vector").size
    from gymnasium import spaces

    policy = AsymmetricActorCriticPolicy(
        spaces.Box(0.0, np.inf, shape=(size,), dtype=np.float32),
        spaces.Discrete(rules.tile_set.num_actions),
        lr_schedule=lambda _: 0.0,
        net_arch={"pi": [16], "vf": [16]},
        actor_size=actor_size,
    )
    torch.manual_seed(0)
    obs = torch.rand(4, size)
    other = obs.clone()
    other[:, actor_size:] = torch.rand(4, size - actor_size)
    with torch.no_grad():
        features = policy.extract_features(obs, policy.pi_features_extractor)
        features_other = policy.extract_features(other, policy.pi_features_extractor)
        assert torch.equal(
            policy.mlp_extractor.forward_actor(features), policy.mlp_extractor.forward_actor(features_other)
        )
        assert not torch.equal(policy.predict_values(obs), policy.predict_values(other))


def test_policy_agent_logits_are_the_torch_modules(tiny_run):
    """The numpy forward pass the agent decides with equals the loaded torch policy's."""
    import torch

    rules = Rules()
    agent = make_agent(f"policy:{tiny_run / 'final'}", rules)
    env = raw_env(rules)
    env.reset(seed=4)
    obs = np.stack([env.observe(a)["observation"] for a in env.possible_agents])
    policy = agent.policy
    with torch.no_grad():
        latent = policy.mlp_extractor.forward_actor(
            policy.extract_features(torch.as_tensor(obs), policy.pi_features_extractor)
        )
        expected = policy.action_net(latent).numpy()
    np.testing.assert_allclose(agent.logits(obs), expected, rtol=1e-5, atol=1e-5)


def test_exploit_trains_a_best_response_and_measures_it_on_fresh_deals(tmp_path):

    out = tmp_path / "exploit"
    args = ["exploit", "--agent", "greedy", "--rules", "tiny", "--steps", "2048", "--deals", "20", "--workers", "1"]
    assert main([*args, "--out", str(out), "--quiet"]) == 0
    result = json.loads((out / "exploit.json").read_text())
    assert result["target"] == "greedy" and result["deals"] == 20 and result["steps"] >= 2048
    assert result["low"] <= result["margin"] <= result["high"]
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["opponents"] == {
        "scripted": ["greedy"],
        "self_play": False,
        "snapshot_every": 50000,
        "max_snapshots": 3,
        "partner": None,
    }
    assert config["pretrain"]["teacher"] is None and config["ppo"]["critic"] == "full_information"
    assert (out / "arena" / "summary.md").is_file() and (out / "learning_curve.png").is_file()
    assert make_agent(f"policy:{out / 'best'}", "tiny").name == "policy:best"  # loads weights-only


def test_exploit_can_start_the_best_response_from_a_trained_agent(tmp_path):
    """--init-from (and --env-processes: the games in two processes, the update on every core):
    the best response reads "tracked" by default and starts as the "vector" agent it is
    carried from."""
    out = tmp_path / "exploit"
    args = ["exploit", "--agent", "greedy", "--steps", "512", "--deals", "10", "--workers", "1", "--env-processes", "2"]
    assert main([*args, "--init-from", "pretrained:standard_vector", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "exploit.json").read_text())["init_from"] == "pretrained:standard_vector"
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["env_processes"] == 2 and config["update_threads"] == 0 and config["observation"] == "tracked"
    rules = Rules()
    env = raw_env(rules)
    env.reset(seed=5)
    obs = np.stack([env.observe(a)["observation"] for a in env.possible_agents])
    tracked = np.stack([env.observe(a, "tracked")["observation"] for a in env.possible_agents])
    start, source = make_agent(f"policy:{out / 'step_0'}", rules), make_agent("pretrained:standard_vector", rules)
    np.testing.assert_allclose(start.logits(tracked), source.logits(obs), atol=1e-5)


def test_exploit_measures_a_target_that_reads_another_encoding(tmp_path):
    """A "tracked" agent as the frozen target of a best response that reads "vector": the
    vector env observes the target in its own encoding, and the arena does too."""
    from block_env.agents.policy import build_policy, policy_shape, save_agent

    rules = Rules.preset("tiny")
    arch = {"pi": [16], "vf": [16]}
    target = save_agent(
        build_policy(policy_shape(rules, "tracked", arch, "tanh")), tmp_path / "t", rules, "tracked", arch, "tanh"
    )
    out = tmp_path / "exploit"
    args = ["exploit", "--agent", f"policy:{target}", "--rules", "tiny", "--steps", "1024", "--deals", "10"]
    assert main([*args, "--observation", "vector", "--workers", "1", "--out", str(out), "--quiet"]) == 0
    result = json.loads((out / "exploit.json").read_text())
    assert result["deals"] == 10 and yaml.safe_load((out / "config.yaml").read_text())["observation"] == "vector"


def test_exploit_refuses_a_human_target():
    from block_env.training.exploit import exploit_config

    with pytest.raises(ValueError, match="not 'human'"):
        exploit_config("human", "standard", 1000)


def _every_seats_first_observation(rules: Rules) -> np.ndarray:
    """Each seat's observation at the start of one round (seed 3)."""
    env = raw_env(rules)
    env.reset(seed=3)
    return np.stack([env.observe(a)["observation"] for a in env.possible_agents])


def test_init_from_starts_the_learner_at_a_trained_agent(tiny_run, tmp_path):
    """pretrain.init_from copies the agent's policy network (and value head): the step-0
    agent decides exactly as the source; another network shape is refused by name."""
    source = tiny_run / "final"
    values = yaml.safe_load(TINY.read_text())
    values["pretrain"] = {"init_from": f"policy:{source}", "teacher": None}
    values["total_timesteps"] = 256
    out = tmp_path / "continued"
    from block_env.training.train import train

    train(config_from_dict(values), out, progress=False)
    rules = Rules()
    obs = _every_seats_first_observation(rules)
    start, before = make_agent(f"policy:{out / 'step_0'}", rules), make_agent(f"policy:{source}", rules)
    np.testing.assert_array_equal(start.logits(obs), before.logits(obs))
    np.testing.assert_array_equal(start.values(obs), before.values(obs))
    values["ppo"]["net_arch"] = [16, 16]
    with pytest.raises(ValueError, match=r"does not fit ppo.net_arch \[16, 16\]"):
        train(config_from_dict(values), tmp_path / "other_shape", progress=False)
    values["ppo"]["net_arch"] = [32, 32]
    values["ppo"]["activation"] = "relu"
    with pytest.raises(ValueError, match=r"uses activation 'tanh', ppo\.activation is 'relu'"):
        train(config_from_dict(values), tmp_path / "other_activation", progress=False)
    values["ppo"]["activation"] = "tanh"
    values["ppo"]["net_arch"] = [32, 32, 32]
    with pytest.raises(ValueError, match=r"does not fit ppo.net_arch \[32, 32, 32\] .*policy_net\.4\.weight"):
        train(config_from_dict(values), tmp_path / "deeper", progress=False)


def test_average_with_makes_the_step_0_policy_the_weight_mean_of_the_fitted_learner_and_the_named_agents(
    tiny_run, tmp_path
):
    """pretrain.average_with: the step-0 agent's policy network is the mean, weight by weight,
    of the learner once fitted (the same run without averaging gives that fit) and the named
    agent, and its value head stays the learner's; a member of other layers or rules is
    refused by name before any teacher game."""
    import torch

    from block_env.agents.policy import ACTOR_KEYS, CRITIC_KEYS
    from block_env.training.train import train

    learner, member = tiny_run / "final", tiny_run / "step_0"
    values = yaml.safe_load(TINY.read_text())
    values["pretrain"] = {"init_from": f"policy:{learner}", "teacher": "greedy", "decisions": 200, "epochs": 2}
    values["total_timesteps"] = 256
    train(config_from_dict(values), tmp_path / "fitted", progress=False)
    values["pretrain"]["average_with"] = [f"policy:{member}"]
    train(config_from_dict(values), tmp_path / "averaged", progress=False)
    rules = Rules()
    fitted, named, averaged = (
        make_agent(f"policy:{path}", rules).policy.state_dict()
        for path in (tmp_path / "fitted" / "step_0", member, tmp_path / "averaged" / "step_0")
    )
    assert any(not torch.equal(fitted[k], named[k]) for k in fitted if k.startswith(ACTOR_KEYS))
    for key, tensor in averaged.items():
        if key.startswith(ACTOR_KEYS):
            torch.testing.assert_close(
                tensor.double(), (fitted[key].double() + named[key].double()) / 2, rtol=0, atol=1e-7
            )
        else:
            assert key.startswith(CRITIC_KEYS) and torch.equal(tensor, fitted[key])

    deeper = dict(values, ppo=values["ppo"] | {"net_arch": [32, 32, 32]}, pretrain={"teacher": None})
    train(config_from_dict(deeper), tmp_path / "deeper", progress=False)
    values["pretrain"]["teacher"] = "search"  # a slow teacher: the refusals come before its games
    values["pretrain"]["average_with"] = [f"policy:{tmp_path / 'deeper' / 'step_0'}"]
    with pytest.raises(
        ValueError,
        match=r"pretrain\.average_with: policy:.*deeper/step_0's network does not have this one's layers \(mlp_extractor\.policy_net\.4\.weight",
    ):
        train(config_from_dict(values), tmp_path / "other_layers", progress=False)
    values["pretrain"]["average_with"] = ["pretrained:standard_3p"]
    with pytest.raises(ValueError, match=r"pretrain\.average_with 'pretrained:standard_3p': .* cannot play"):
        train(config_from_dict(values), tmp_path / "other_rules", progress=False)


def test_init_from_into_wider_layers_starts_as_the_smaller_network_and_its_new_units_learn(tiny_run, tmp_path):
    """A learner wider than the source (ppo.net_arch [48, 40] from [32, 32]) starts deciding
    and valuing exactly as the source (its added units at zero weight into the rest), and
    imitation moves the added units' weights too."""
    import torch

    source = tiny_run / "final"
    values = yaml.safe_load(TINY.read_text())
    values["ppo"] = values["ppo"] | {"net_arch": [48, 40]}
    values["pretrain"] = {"init_from": f"policy:{source}", "teacher": None}
    values["total_timesteps"] = 256
    from block_env.training.train import train

    train(config_from_dict(values), tmp_path / "wider", progress=False)
    rules = Rules()
    obs = _every_seats_first_observation(rules)
    start, before = make_agent(f"policy:{tmp_path / 'wider' / 'step_0'}", rules), make_agent(f"policy:{source}", rules)
    np.testing.assert_allclose(start.logits(obs), before.logits(obs), atol=1e-5)
    np.testing.assert_allclose(start.values(obs), before.values(obs), atol=1e-5)

    values["pretrain"] = {"init_from": f"policy:{source}", "teacher": "greedy", "decisions": 200, "epochs": 2}
    train(config_from_dict(values), tmp_path / "taught", progress=False)
    taught = make_agent(f"policy:{tmp_path / 'taught' / 'step_0'}", rules).policy.state_dict()
    added = taught["mlp_extractor.policy_net.2.weight"][:32, 32:]  # added first-layer units into the source's
    assert added.shape == (32, 16) and torch.count_nonzero(added) > 0


@pytest.mark.parametrize("critic", ["observation", "full_information"])
@pytest.mark.parametrize("warmup, policy_moves", [(512, False), (256, True)])
def test_a_critic_warmup_holds_the_policy_while_the_value_network_learns(
    critic, warmup, policy_moves, tiny_run, tmp_path
):
    """ppo.critic_warmup: the updates of rollouts that start before it fit the value network
    alone (a run that is all warm-up ends with the policy it started from, its values moved);
    the rollouts after it move the policy too; with either critic."""
    from block_env.training.train import train

    values = yaml.safe_load(TINY.read_text())
    values["pretrain"] = {"init_from": f"policy:{tiny_run / 'final'}", "teacher": None}
    values["ppo"]["critic_warmup"] = warmup  # 512 steps: two rollouts of 2 games x 128 steps
    values["ppo"]["critic"] = critic
    values["vec_env"] = "batched"  # the full-information critic's env
    out = tmp_path / "warmup"
    train(config_from_dict(values), out, progress=False)
    rules = Rules()
    obs = _every_seats_first_observation(rules)
    start, end = make_agent(f"policy:{out / 'step_0'}", rules), make_agent(f"policy:{out / 'final'}", rules)
    assert np.array_equal(start.logits(obs), end.logits(obs)) != policy_moves

    def value_weights(checkpoint: Path) -> list[np.ndarray]:
        import torch

        with zipfile.ZipFile(checkpoint) as archive:
            state = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
        return [v.numpy() for k, v in state.items() if "value" in k]

    after_first, last = value_weights(out / "checkpoints" / "ppo_256_steps.zip"), value_weights(out / "final.zip")
    assert after_first and not all(np.array_equal(a, b) for a, b in zip(after_first, last))


def test_an_asymmetric_critic_starts_as_the_source_value_head_when_the_units_agree(tiny_run, tmp_path):
    """With the full-information critic, init_from starts the critic as the source's value
    head (zero weights on the hidden hands it also reads) when the source's value_scale is the
    config's reward_scale, and leaves it fresh when it is not."""
    import torch

    from block_env.training.train import RunPaths, build_model, init_from_agent, make_vec_env

    source = make_agent(f"policy:{tiny_run / 'final'}", Rules())
    values = yaml.safe_load(TINY.read_text()) | {"vec_env": "batched", "n_envs": 8}
    values["ppo"] = values["ppo"] | {"critic": "full_information"}
    values["pretrain"] = {"init_from": f"policy:{tiny_run / 'final'}", "teacher": None}
    for reward_scale, copied in [(0.05, True), (0.1, False)]:
        config = config_from_dict(values | {"reward_scale": reward_scale})
        env = make_vec_env(config, ["random"])
        model = build_model(config, env, RunPaths(tmp_path / str(reward_scale)))
        init_from_agent(model, config)
        privileged = env.reset()
        with torch.no_grad():
            critic = model.policy.predict_values(torch.as_tensor(privileged)).numpy()[:, 0] / 0.05
        expected = source.values(privileged[:, : model.policy.actor_size])
        assert np.allclose(critic, expected, atol=1e-4) == copied
        env.close()


def test_teacher_games_seat_one_teacher_per_seat_reading_its_own_encoding_in_many_processes():
    """A belief search (which reads "history") teaches a "tracked" learner: the decisions come in the learner's encoding, each action legal in its
    mask, as many as asked, from one process or shared out among two."""
    from block_env.observations import read_public_view
    from block_env.training.train import collect_teacher_decisions

    teacher = "search:worlds=2,playout=greedy,prior=pretrained:standard_vector,belief=prior"
    values = yaml.safe_load(TINY.read_text()) | {"observation": "tracked"}
    for workers in (1, 2):
        values["pretrain"] = {"teacher": teacher, "decisions": 30, "workers": workers}
        data = collect_teacher_decisions(config_from_dict(values))
        assert data["observations"].shape == (30, 569) and len(data["returns"]) == 30
        assert data["masks"][np.arange(30), data["actions"]].all()
        for obs, mask in zip(data["observations"], data["masks"]):
            view = read_public_view({"observation": obs, "action_mask": mask}, Rules(), "tracked")
            assert view.hand_counts[0] == len(view.hand_tiles)
    with pytest.raises(ValueError, match="pretrain.workers must be an int >= 1"):
        config_from_dict(values | {"pretrain": {"workers": 0}})


def test_a_vector_agent_starts_a_tracked_learner_that_decides_and_values_as_it_does(tiny_run, tmp_path):
    """init_from a "vector" agent into a "tracked" learner: each first-layer column goes to the
    vector piece's place in the wider input, the tracking pieces start at zero weight, so the
    step-0 agent's logits on tracked observations and its full-information critic's values
    are the source's on the same positions; an agent reading "history" does not fit."""
    import torch

    from block_env.training.train import RunPaths, build_model, init_from_agent, make_vec_env, train

    source = make_agent(f"policy:{tiny_run / 'final'}", Rules())
    values = yaml.safe_load(TINY.read_text()) | {"vec_env": "batched", "observation": "tracked", "total_timesteps": 256}
    values["ppo"] = values["ppo"] | {"critic": "full_information"}
    values["pretrain"] = {"init_from": f"policy:{tiny_run / 'final'}", "teacher": None}
    config = config_from_dict(values)
    train(config, tmp_path / "tracked", progress=False)
    start = make_agent(f"policy:{tmp_path / 'tracked' / 'step_0'}", Rules())
    assert start.observation == "tracked"
    vector_env, tracked_env = raw_env(Rules()), raw_env(Rules(), observation="tracked")
    for env in (vector_env, tracked_env):
        env.reset(seed=5)
    for _ in range(6):  # a few moves in, so that the tracking pieces are not all zero
        action = int(np.flatnonzero(vector_env.observe(vector_env.agent_selection)["action_mask"])[0])
        vector_env.step(action)
        tracked_env.step(action)
    tracked = np.stack([tracked_env.observe(a)["observation"] for a in tracked_env.possible_agents])
    assert tracked[:, 121:-5].any()
    vector = np.stack([vector_env.observe(a)["observation"] for a in vector_env.possible_agents])
    np.testing.assert_allclose(start.logits(tracked), source.logits(vector), atol=1e-5)

    env = make_vec_env(config, ["random"])
    model = build_model(config, env, RunPaths(tmp_path / "critic"))
    init_from_agent(model, config)
    privileged = env.reset()
    with torch.no_grad():
        critic = model.policy.predict_values(torch.as_tensor(privileged)).numpy()[:, 0] / 0.05
    from block_env.observations import tracked_layout, vector_layout

    columns = vector_layout(Rules()).columns_in(tracked_layout(Rules()))
    np.testing.assert_allclose(critic, source.values(privileged[:, columns]), atol=1e-4)
    env.close()
    with pytest.raises(ValueError, match=r"pretrain\.init_from: the 'history' encoding has no piece 'played'"):
        history = values | {
            "observation": "history",
            "vec_env": "dummy",
            "ppo": values["ppo"] | {"critic": "observation"},
        }
        config_from_dict(history | {"pretrain": {"init_from": f"policy:{tmp_path / 'tracked' / 'step_0'}"}})


def test_a_run_keeps_its_teacher_decisions_and_a_later_run_fits_to_them_without_playing(
    tiny_run, tmp_path, monkeypatch
):
    """A run saves the decisions its teacher made; a later run names them in
    pretrain.earlier_decisions and, with decisions: 0, fits to them alone (no teacher game),
    or beside decisions of its own; a missing file, or one made under other settings, is refused
    before any stage runs."""
    from block_env.training import train as training
    from block_env.training.teaching import load_decisions

    kept = tiny_run / "teacher_decisions.npz"
    values = yaml.safe_load(TINY.read_text())
    width = raw_env(Rules()).observation_space("player_0")["observation"].shape[0]
    data = load_decisions(kept, config_from_dict(values), width, 57)
    assert len(data["actions"]) == values["pretrain"]["decisions"] == len(data["observations"])
    assert all(data["masks"][np.arange(len(data["actions"])), data["actions"]])

    more = values | {"total_timesteps": 256}
    more["pretrain"] = values["pretrain"] | {"decisions": 100, "earlier_decisions": [str(kept)]}
    summary = training.train(config_from_dict(more), tmp_path / "more", progress=False)
    assert summary["pretrain"]["decisions"] == values["pretrain"]["decisions"] + 100
    assert len(np.load(tmp_path / "more" / "teacher_decisions.npz")["actions"]) == 100  # its own only

    def no_teacher_games(*args, **kwargs):
        raise AssertionError("a run with decisions: 0 played teacher games")

    monkeypatch.setattr(training, "collect_teacher_decisions", no_teacher_games)
    later = values | {"total_timesteps": 256}
    own = str(tmp_path / "more" / "teacher_decisions.npz")
    later["pretrain"] = values["pretrain"] | {"decisions": 0, "earlier_decisions": [str(kept), own]}
    summary = training.train(config_from_dict(later), tmp_path / "later", progress=False)
    assert summary["pretrain"]["decisions"] == values["pretrain"]["decisions"] + 100
    assert not (tmp_path / "later" / "teacher_decisions.npz").exists()

    later["pretrain"]["earlier_decisions"] = [str(tmp_path / "missing.npz")]
    with pytest.raises(ValueError, match=r"pretrain\.earlier_decisions: no file '.*missing\.npz'"):
        training.train(config_from_dict(later), tmp_path / "missing", progress=False)
    assert not (tmp_path / "missing").exists()
    later["pretrain"]["earlier_decisions"] = [str(kept)]
    with pytest.raises(ValueError, match=r"was made with observation 'vector', this run has 'tracked'"):
        training.train(config_from_dict(later | {"observation": "tracked", "vec_env": "batched"}), tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_a_held_out_share_measures_the_fit_and_the_pass_that_did_best_on_it_is_kept(tiny_run, tmp_path):
    """pretrain.holdout keeps the last games' decisions out of the fit, reports the held-out
    loss before fitting and after every pass, and keeps the network of the pass with the lowest
    one (the run's step_0 agent has that pass's held-out loss): a fit that overfits a few
    decisions ends on an earlier pass than its last. A share that holds out none, or all, is
    refused."""
    from block_env.agents.policy import load_policy_weights
    from block_env.training.teaching import (
        PolicyTargets,
        fit_policy,
        load_decisions,
        policy_figures,
        split_held_out,
    )
    from block_env.training.train import RunPaths, build_model, imitation_targets, make_vec_env, train

    kept = tiny_run / "teacher_decisions.npz"
    values = yaml.safe_load(TINY.read_text()) | {"total_timesteps": 256}
    values["pretrain"] = values["pretrain"] | {"decisions": 0, "earlier_decisions": [str(kept)], "holdout": 0.25}
    config = config_from_dict(values)
    summary = train(config, tmp_path / "held", progress=False)["pretrain"]
    total = yaml.safe_load(TINY.read_text())["pretrain"]["decisions"]
    assert summary["held_out_decisions"] == round(0.25 * total) and summary["decisions"] == total - round(0.25 * total)
    assert len(summary["held_out_by_epoch"]) == values["pretrain"]["epochs"] + 1

    env = make_vec_env(config, ["random"])
    model = build_model(config, env, RunPaths(tmp_path / "model"))
    env.close()
    data = load_decisions(kept, config, model.observation_space.shape[0], model.action_space.n)
    fitted, held = split_held_out(data, 0.25)
    assert np.array_equal(np.concatenate([fitted["actions"], held["actions"]]), data["actions"])  # the last held
    held_out = PolicyTargets(held["observations"], held["masks"], imitation_targets(held, config))
    load_policy_weights(tmp_path / "held" / "step_0", model.policy)
    assert policy_figures(model.policy, held_out, 64)["loss"] == pytest.approx(summary["held_out_loss"], rel=1e-5)
    assert "value" not in summary["held_out_by_epoch"][0]  # the teacher's moves only: no searched values

    few = {key: array[:16] for key, array in fitted.items()}
    stats = fit_policy(
        model,
        few["observations"],
        few["masks"],
        imitation_targets(few, config),
        few["returns"],
        epochs=40,
        batch_size=16,
        learning_rate=0.01,
        seed=0,
        held_out=held_out,
    )
    losses = [fit["loss"] for fit in stats["held_out_by_epoch"]]
    assert stats["kept_epoch"] < 40 and losses[-1] > stats["held_out_loss"] == min(losses)
    assert stats["held_out_target_entropy"] <= stats["held_out_loss"]
    assert policy_figures(model.policy, held_out, 64)["loss"] == pytest.approx(stats["held_out_loss"], rel=1e-5)
    # Steps so large that no pass helps: the policy goes back to its start, while the value
    # head, which the held-out loss does not measure, keeps its last pass's fit.
    import torch

    before = {name: t.clone() for name, t in model.policy.state_dict().items()}
    arrays = (few["observations"], few["masks"], imitation_targets(few, config), few["returns"])
    stats = fit_policy(model, *arrays, epochs=2, batch_size=16, learning_rate=5.0, seed=0, held_out=held_out)
    after = model.policy.state_dict()
    critic = [name for name in after if name.startswith(("mlp_extractor.value_net.", "value_net."))]
    actor = [name for name in after if name.startswith(("mlp_extractor.policy_net.", "action_net."))]
    assert stats["kept_epoch"] == 0 and critic and actor
    assert all(torch.equal(after[name], before[name]) for name in actor)
    assert all(not torch.equal(after[name], before[name]) for name in critic)

    values["pretrain"]["holdout"] = 0.001
    with pytest.raises(
        ValueError, match=rf"pretrain\.holdout 0\.001 of {total} decisions holds out 0: none would be held out"
    ):
        train(config_from_dict(values), tmp_path / "none", progress=False)
    values["pretrain"]["holdout"] = 0.999
    with pytest.raises(ValueError, match=rf"holds out {total}: none would be fitted"):
        train(config_from_dict(values), tmp_path / "all", progress=False)


def test_an_annealed_imitation_step_size_falls_linearly_to_zero_over_every_pass(tiny_run, tmp_path, monkeypatch):
    """pretrain.anneal_learning_rate: each minibatch's Adam step of the warm start is the rate
    times the share of all the passes' minibatches still to come (300 decisions in minibatches
    of 150, two passes: 1, 3/4, 1/2, 1/4); without it every step takes the rate itself."""
    import torch

    from block_env.training.train import RunPaths, build_model, imitate, make_vec_env

    rates: list[float] = []
    step = torch.optim.Adam.step

    def spy(optimizer, *args, **kwargs):
        rates.append(optimizer.param_groups[0]["lr"])
        return step(optimizer, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    values = yaml.safe_load(TINY.read_text())
    kept = {"decisions": 0, "earlier_decisions": [str(tiny_run / "teacher_decisions.npz")]}
    fit = {"epochs": 2, "batch_size": 150, "learning_rate": 0.004}
    for anneal, expected in ((True, [0.004, 0.003, 0.002, 0.001]), (False, [0.004] * 4)):
        values["pretrain"] = values["pretrain"] | kept | fit | {"anneal_learning_rate": anneal}
        config = config_from_dict(values)
        env = make_vec_env(config, ["random"])
        model = build_model(config, env, RunPaths(tmp_path / f"anneal-{anneal}"))
        env.close()
        rates.clear()
        assert imitate(model, config, progress=False)["decisions"] == 300
        assert rates == pytest.approx(expected)


def test_a_new_run_into_a_folder_that_holds_a_run_is_refused_and_the_run_is_left_as_it_was(tiny_run, capsys):
    """Without --resume, a run's folder is never reused: its learning curve, best agent and
    snapshots would mix with the new run's (the new curve appended to the old, the old best
    kept unless beaten) or be overwritten."""
    before = {path: path.read_bytes() for path in tiny_run.rglob("*") if path.is_file()}
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--config", str(TINY), "--out", str(tiny_run), "--quiet"])
    error = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"{tiny_run} is not empty (best, checkpoints, config.yaml, final, final.zip, latest and " in error
    # The run has all its steps: continuing it needs a larger total as well.
    steps = json.loads((tiny_run / "training.json").read_text())["timesteps"]
    assert f"past its {steps} steps with train's --resume latest and a larger --total-timesteps" in error
    assert {path: path.read_bytes() for path in tiny_run.rglob("*") if path.is_file()} == before


def test_the_hidden_tile_loss_scores_each_tile_by_the_other_seat_that_holds_it_or_none():
    """Every tile counts, each by the softmax over the other seats and "no other seat" at where it is."""
    import torch

    from block_env.training.teaching import hidden_tile_loss

    policy = SimpleNamespace(mlp_extractor=SimpleNamespace(actor_size=2))
    # Two other seats, three tiles: tile 0 held by relative seat 1, tile 2 by relative seat 2, tile 1 by neither.
    observations = torch.tensor([[9.0, 9.0, 1, 0, 0, 0, 0, 1]])
    logits = torch.tensor([[0.0, 5.0, 0.0, 2.0, -5.0, 1.0, 1.0, 3.0, 0.5]])  # seat 1's tiles, seat 2's, none's
    head = lambda latent: latent  # noqa: E731 - the logits stand in for the head's output
    log_softmax = torch.log_softmax(logits.reshape(3, 3), 0)  # over where each tile (column) is
    expected = -(log_softmax[0, 0] + log_softmax[2, 1] + log_softmax[1, 2]) / 3
    assert hidden_tile_loss(head, logits, observations, policy, 2).item() == pytest.approx(expected.item())


@pytest.mark.parametrize("preset", ["standard", "partnership"])
def test_tile_places_reads_the_hidden_hands_a_teacher_decision_keeps_as_the_round_deals_them(preset):
    """What the teacher games append to an observation (the env's hidden hands) read back as
    each tile's holder: the other seat (relative to the observer) that holds it, else none."""
    import torch

    from block_env.observations import state_layout
    from block_env.training.teaching import tile_places

    env = raw_env(preset)
    env.reset(seed=3)
    rules, n = env.rules, env.rules.num_players
    for _ in range(5):  # a few moves in, so some tiles are played
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    agent = env.agent_selection
    seen = env.observe(agent, "tracked")["observation"]
    kept = np.concatenate([seen, env.hidden_hands(agent)])  # as the teacher games keep it
    places = tile_places(torch.as_tensor(kept[None]), len(seen), n - 1)[0].numpy()
    hands = state_layout(rules).views(env.state())["hands"]
    seat = env.seat_of(agent)
    expected = np.full(rules.tile_set.num_tiles, n - 1)
    for relative in range(1, n):
        expected[hands[(seat + relative) % n] > 0.5] = relative - 1
    assert np.array_equal(places, expected)


def test_fitting_with_a_belief_weight_teaches_the_network_where_the_hidden_tiles_are(tmp_path):
    """With pretrain.belief_weight, a head on the policy network's last hidden layer learns which
    other seat holds each hidden tile from the full-information critic's decisions: its loss on
    held-out decisions falls below the start's; the policy network is fitted differently from
    the same fit without it, and the agent saved is the plain policy."""
    from block_env.training.train import train

    values = yaml.safe_load(TINY.read_text()) | {"total_timesteps": 256, "vec_env": "batched"}
    values["ppo"] = values["ppo"] | {"critic": "full_information"}
    values["pretrain"] = values["pretrain"] | {
        "decisions": 400,
        "epochs": 4,
        "holdout": 0.25,
        "learning_rate": 0.01,
        "batch_size": 32,
    }
    plain = train(config_from_dict(values), tmp_path / "plain", progress=False)["pretrain"]
    values["pretrain"]["belief_weight"] = 1.0
    summary = train(config_from_dict(values), tmp_path / "belief", progress=False)["pretrain"]

    assert "belief_loss" not in plain and "belief_loss" not in plain["held_out_by_epoch"][0]
    held = [figures["belief_loss"] for figures in summary["held_out_by_epoch"]]
    assert len(held) == 5 and min(held[1:]) < held[0] - 0.05, held
    rules = Rules()
    fitted = [make_agent(f"policy:{tmp_path / name / 'step_0'}", rules) for name in ("plain", "belief")]
    width = json.loads((tmp_path / "plain" / "step_0" / "agent.json").read_text())["observation_size"]
    observations = np.random.default_rng(0).integers(0, 2, (8, width)).astype(np.float32)
    assert not np.allclose(fitted[0].logits(observations), fitted[1].logits(observations))
    import torch

    saved = [torch.load(tmp_path / name / "step_0" / "policy.pth", weights_only=True) for name in ("plain", "belief")]
    assert {k: v.shape for k, v in saved[0].items()} == {k: v.shape for k, v in saved[1].items()}  # no head kept
    agent_plays_legal_round(fitted[1], rules, seed=0)


def _tiles_held(observations: np.ndarray, masks: np.ndarray, encoding: str) -> np.ndarray:
    """The deciding seat's tiles in each row, read from its hand (not from the count piece)."""
    from block_env.observations import read_public_view

    return np.array(
        [
            len(read_public_view({"observation": o, "action_mask": m}, Rules(), encoding).hand_tiles)
            for o, m in zip(observations, masks)
        ]
    )


@pytest.mark.parametrize("encoding", ["vector", "tracked"])
def test_hand_at_most_targets_are_the_teachers_late_and_the_warm_starts_own_moves_earlier(tiny_run, tmp_path, encoding):
    """With pretrain.hand_at_most, the targets are the teacher's where the deciding seat holds
    that many tiles or fewer and the warm start's own move distribution at the others: on
    "vector" decisions, and on "tracked" ones with the hidden hands appended for the
    full-information critic (a "vector" warm start reads its own columns of them)."""
    from block_env.observations import layout_for
    from block_env.training.teaching import load_decisions, one_hot_targets
    from block_env.training.train import (
        RunPaths,
        build_model,
        collect_teacher_decisions,
        imitation_targets,
        init_from_agent,
        make_vec_env,
    )

    start = f"policy:{tiny_run / 'final'}"
    values = yaml.safe_load(TINY.read_text()) | {"observation": encoding}
    values["pretrain"] = values["pretrain"] | {"init_from": start, "hand_at_most": 4}
    if encoding == "tracked":
        values |= {"vec_env": "batched", "ppo": values["ppo"] | {"critic": "full_information"}}
        values["pretrain"]["decisions"] = 120
    config = config_from_dict(values)
    env = make_vec_env(config, ["random"])
    model = build_model(config, env, RunPaths(tmp_path / "model"))
    init_from_agent(model, config)
    env.close()
    if encoding == "tracked":
        data = collect_teacher_decisions(config, progress=False)
    else:
        data = load_decisions(tiny_run / "teacher_decisions.npz", config, model.observation_space.shape[0], 57)
    targets = imitation_targets(data, config, model.policy)

    width = layout_for(Rules(), encoding).size  # the hidden hands, where kept, come after
    late = _tiles_held(data["observations"][:, :width], data["masks"], encoding) <= 4
    assert 0 < late.sum() < len(late)  # both kinds of decision
    assert np.array_equal(targets[late], one_hot_targets(data["actions"], 57)[late])
    columns = layout_for(Rules(), "vector").columns_in(layout_for(Rules(), encoding))
    logits = make_agent(start, Rules()).logits(data["observations"][~late][:, columns])
    legal = data["masks"][~late]
    expected = np.exp(np.where(legal, logits - logits.max(axis=1, keepdims=True), -np.inf))
    assert np.allclose(targets[~late], expected / expected.sum(axis=1, keepdims=True), atol=1e-5)
    with pytest.raises(ValueError, match="pretrain.hand_at_most's targets read the warm start's policy"):
        imitation_targets(data, config)


def test_a_fit_with_hand_at_most_reads_those_targets_and_is_measured_on_them(tiny_run, tmp_path):
    """The fit reads pretrain.hand_at_most's targets (its agreement before fitting counts the
    start's own best move at the earlier decisions), the held-out decisions are measured
    against the same targets, and the option is refused without a warm start or below 2."""
    from block_env.observations import layout_for
    from block_env.training.teaching import load_decisions, split_held_out, target_entropy
    from block_env.training.train import RunPaths, build_model, imitation_targets, init_from_agent, make_vec_env, train

    start = f"policy:{tiny_run / 'final'}"
    values = yaml.safe_load(TINY.read_text()) | {"total_timesteps": 256}
    values["pretrain"] = values["pretrain"] | {
        "init_from": start,
        "decisions": 0,
        "earlier_decisions": [str(tiny_run / "teacher_decisions.npz")],
        "hand_at_most": 4,
        "holdout": 0.25,
    }
    config = config_from_dict(values)
    summary = train(config, tmp_path / "run", progress=False)["pretrain"]

    data = load_decisions(tiny_run / "teacher_decisions.npz", config, layout_for(Rules(), "vector").size, 57)
    fitted, held_out = split_held_out(data, 0.25)
    start_moves = np.where(fitted["masks"], make_agent(start, Rules()).logits(fitted["observations"]), -np.inf)
    agrees = start_moves.argmax(axis=1) == fitted["actions"]
    earlier = _tiles_held(fitted["observations"], fitted["masks"], "vector") > 4
    assert summary["agreement"] == pytest.approx(np.mean(agrees | earlier))
    env = make_vec_env(config, ["random"])
    model = build_model(config, env, RunPaths(tmp_path / "model"))
    init_from_agent(model, config)
    env.close()
    expected_entropy = target_entropy(imitation_targets(held_out, config, model.policy))
    assert summary["held_out_target_entropy"] == pytest.approx(expected_entropy, rel=1e-5)
    for key in ("teacher", "init_from"):
        with pytest.raises(ValueError, match=rf"pretrain\.hand_at_most \(4\) needs pretrain\.{key}: the teacher's"):
            config_from_dict(values | {"pretrain": values["pretrain"] | {key: None}})
    with pytest.raises(ValueError, match=r"pretrain\.hand_at_most must be an int >= 2, got 1"):
        config_from_dict(values | {"pretrain": values["pretrain"] | {"hand_at_most": 1}})


def test_held_out_decisions_with_move_values_report_the_searched_value_of_the_policys_choices(tiny_run, tmp_path):
    """Fitted to move values, the held-out report adds each pass's mean searched value of the
    policy's best legal move there: for the kept network, the mean of the held-out values at
    the moves its saved agent chooses."""
    from block_env.training.teaching import save_decisions, split_held_out
    from block_env.training.train import train

    saved = np.load(tiny_run / "teacher_decisions.npz")
    data = {key: saved[key] for key in saved.files if key != "about"}
    rng = np.random.default_rng(0)
    data["values"] = np.where(data["masks"], rng.normal(0.0, 5.0, data["masks"].shape), np.nan).astype(np.float32)
    values = yaml.safe_load(TINY.read_text()) | {"total_timesteps": 256}
    values["pretrain"] = values["pretrain"] | {
        "teacher": "search",
        "targets": "values",
        "decisions": 0,
        "earlier_decisions": [str(tmp_path / "searched.npz")],
        "holdout": 0.25,
    }
    config = config_from_dict(values)
    save_decisions(tmp_path / "searched.npz", data, config)
    summary = train(config, tmp_path / "run", progress=False)["pretrain"]

    by_epoch = summary["held_out_by_epoch"]
    assert len(by_epoch) == values["pretrain"]["epochs"] + 1 and all("value" in fit for fit in by_epoch)
    held = split_held_out(data, 0.25)[1]
    agent = make_agent(f"policy:{tmp_path / 'run' / 'step_0'}", Rules())
    chosen = np.where(held["masks"], agent.logits(held["observations"]), -np.inf).argmax(axis=1)
    expected = held["values"][np.arange(len(chosen)), chosen].mean()
    assert summary["held_out_value"] == pytest.approx(expected, rel=1e-5) == by_epoch[summary["kept_epoch"]]["value"]
    best, worst = np.nanmax(held["values"], axis=1).mean(), np.nanmin(held["values"], axis=1).mean()
    assert all(worst <= fit["value"] <= best for fit in by_epoch)


def test_the_endgame_gap_benchmark_reads_only_the_held_out_decisions_when_asked(tiny_run, tmp_path, monkeypatch):
    """benchmarks/endgame_gap.py --held-out: the decisions per hand size are those of the last
    share (the ones a fit with that pretrain.holdout never saw), read exactly as a file of those
    decisions alone is; a share holding none is refused."""

    from block_env.observations import layout_for
    from block_env.training.teaching import held_out_cut, save_decisions

    bench = load_benchmark("endgame_gap", monkeypatch)
    saved = np.load(tiny_run / "teacher_decisions.npz")
    data = {key: saved[key] for key in saved.files if key != "about"}
    rng = np.random.default_rng(0)
    data["values"] = np.where(data["masks"], rng.normal(0.0, 5.0, data["masks"].shape), np.nan).astype(np.float32)
    values = yaml.safe_load(TINY.read_text())
    values["pretrain"] = values["pretrain"] | {"teacher": "search", "targets": "values"}
    path = tmp_path / "searched.npz"
    save_decisions(path, data, config_from_dict(values))

    _, counts, figures = bench.gaps(str(path), ["greedy"], per_hand=10_000, held_out=0.25)
    cut = held_out_cut(len(data["actions"]), 0.25)
    last = data["observations"][cut:, layout_for(Rules(), "vector").slices["hand_counts"].start]
    assert counts == {hand: int((last == hand).sum()) for hand in sorted(set(last.astype(int).tolist()))}
    save_decisions(tmp_path / "last.npz", {key: array[cut:] for key, array in data.items()}, config_from_dict(values))
    _, alone_counts, alone = bench.gaps(str(tmp_path / "last.npz"), ["greedy"], per_hand=10_000)
    assert (alone_counts, alone) == (counts, figures)  # the same decisions, masks and values read
    _, every, _ = bench.gaps(str(path), ["greedy"], per_hand=10_000)
    assert sum(every.values()) == len(data["actions"]) > sum(counts.values())
    with pytest.raises(ValueError, match="the last 0.001 of 300 decisions holds none"):
        bench.gaps(str(path), ["random"], per_hand=10, held_out=0.001)


def test_saved_teacher_decisions_that_do_not_fit_the_run_are_refused_naming_the_file(tiny_run, tmp_path):
    """Another encoding, no move values for "values" targets, another input width, or a file
    that is not a saved set of decisions: each refused with the file and what was wrong."""
    from block_env.training.teaching import load_decisions

    kept = tiny_run / "teacher_decisions.npz"
    values = yaml.safe_load(TINY.read_text())
    config = config_from_dict(values)
    width = raw_env(Rules()).observation_space("player_0")["observation"].shape[0]
    named = f"pretrain.earlier_decisions: '{kept}'"
    tracked = config_from_dict(values | {"observation": "tracked", "vec_env": "batched"})
    with pytest.raises(
        ValueError, match=rf"{re.escape(named)} was made with observation 'vector', this run has 'tracked'"
    ):
        load_decisions(kept, tracked, width, 57)
    searched = config_from_dict(values | {"pretrain": values["pretrain"] | {"teacher": "search", "targets": "values"}})
    with pytest.raises(ValueError, match=rf"{re.escape(named)} holds no values \(its teacher 'strategic'"):
        load_decisions(kept, searched, width, 57)
    with pytest.raises(ValueError, match=rf"{re.escape(named)} holds observations of \({width},\)"):
        load_decisions(kept, config, width + 1, 57)
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04 not a zip")
    plain = tmp_path / "plain.npz"
    np.savez(plain, observations=np.zeros((2, width)))
    for path in (single, garbage, plain):
        with pytest.raises(ValueError, match=rf"'{re.escape(str(path))}' is not a saved set of teacher decisions"):
            load_decisions(path, config, width, 57)


def test_saved_agents_name_their_value_head_units_only_when_it_reads_the_observation(tiny_run, tmp_path):
    """value_scale (what a guided search's leaves read) is written for a zero-sum value head
    over the observation, and left out for the full-information critic's export."""
    assert json.loads((tiny_run / "final" / "agent.json").read_text())["value_scale"] == 0.05
    values = yaml.safe_load(TINY.read_text()) | {"total_timesteps": 256}
    values["ppo"] = values["ppo"] | {"critic": "full_information"}
    values["pretrain"] = {"teacher": None}
    from block_env.training.train import train

    train(config_from_dict(values), tmp_path / "asymmetric", progress=False)
    assert "value_scale" not in json.loads((tmp_path / "asymmetric" / "final" / "agent.json").read_text())
    with pytest.raises(ValueError, match="no value_scale"):
        make_agent(f"search:prior=policy:{tmp_path / 'asymmetric' / 'final'},leaf=value", Rules())


# -- expert iteration -------------------------------------------------------------------------


def expert_config(preset: str, workers: int = 1, targets: str = "values") -> object:
    """Expert iteration alone (no PPO) on ``preset`` at a tiny budget: one round."""
    return config_from_dict(
        {
            "rules": preset,
            "total_timesteps": 0,
            "ppo": {"net_arch": [16, 16]},
            "pretrain": {"teacher": None},
            "expert": {
                "rounds": 1,
                "decisions": 48,
                "worlds": 2,
                "workers": workers,
                "games": 4,
                "eval_deals": 2,
                "targets": targets,
            },
            "eval": {"opponents": ["random"]},
        }
    )


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_expert_iteration_trains_saves_and_its_policy_plays_in_every_preset(preset, tmp_path):
    """A round searches, distils and measures; each round's policy is an agent folder that
    loads weights-only and plays legal moves, and distilling changed the policy."""
    import torch

    from block_env.training.train import train

    # the process pool on standard; the search's choices as targets on partnerships
    config = expert_config(preset, 2 if preset == "standard" else 1, "choice" if preset == "partnership" else "values")
    summary = train(config, tmp_path, progress=False)
    assert summary["timesteps"] == 0 and [row["round"] for row in summary["expert"]] == [0, 1]
    # the accuracy is a share of the 48 decisions distilled (written to four decimals)
    distilled = summary["expert"][1]
    assert distilled["decisions"] == 48
    assert abs(distilled["accuracy"] * 48 - round(distilled["accuracy"] * 48)) <= 48 * 0.00005
    with (tmp_path / "expert.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["round"]) for r in rows] == [0, 1] and all(-100 < float(r["margin"]) < 100 for r in rows)
    assert (tmp_path / "expert.png").stat().st_size > 0
    rules = Rules.preset(preset)
    before, after, final = (
        make_agent(f"policy:{tmp_path / name}", rules, seed=0) for name in ("expert_round_0", "expert_round_1", "final")
    )
    assert any(not torch.equal(before.policy.state_dict()[k], v) for k, v in after.policy.state_dict().items())
    assert all(torch.equal(final.policy.state_dict()[k], v) for k, v in after.policy.state_dict().items())
    agent_plays_legal_round(after, rules, seed=1)


def test_searched_decisions_are_the_searchs_values_of_every_legal_move_and_seeded():
    from block_env.observations import layout_for
    from block_env.training.expert import search_decisions
    from block_env.training.teaching import move_value_targets

    config = expert_config("standard")
    student = ROOT / "agents" / "pretrained" / "standard_vector"
    data = search_decisions(str(student), config.resolved_rules(), config.expert, 40, seed=5)
    masks, values = data["masks"], data["values"]
    assert data["observations"].shape == (40, layout_for(config.resolved_rules(), "vector").size)
    assert (masks.sum(axis=1) >= 2).all() and np.array_equal(~np.isnan(values), masks)
    # the move played is the search's choice, and its value that move's
    assert np.array_equal(values[np.arange(40), data["choices"]], data["played"])
    targets = move_value_targets(values, 1.0)
    assert np.allclose(targets.sum(axis=1), 1.0) and (targets[~masks] == 0).all()
    best = np.where(masks, values, -np.inf).argmax(axis=1)
    assert np.array_equal(targets.argmax(axis=1), best)
    again = search_decisions(str(student), config.resolved_rules(), config.expert, 40, seed=5)
    assert all(np.array_equal(data[k], again[k], equal_nan=True) for k in data)


def test_rollouts_use_every_update_thread_only_when_the_games_step_in_this_process():
    """The rollout's forward passes take the update's threads while the batched games step in
    this process (they wait for it), and one thread beside env processes (busy on the cores)."""
    import torch
    from stable_baselines3.common.vec_env import VecMonitor

    from block_env.agents import make_vector_env
    from block_env.training.sb3_vec_env import BlockDominoesVecEnv, ShardedVecEnv
    from block_env.training.train import UpdateThreadsCallback, batched_shard

    before = torch.get_num_threads()
    shard = [lambda: batched_shard(2, Rules(), False, {"opponents": ["random"]})] * 2
    envs = {
        "in process": VecMonitor(BlockDominoesVecEnv(make_vector_env(4, "standard", opponents=["random"]))),
        "sharded": VecMonitor(ShardedVecEnv(shard)),
    }
    try:
        seen = {}
        for name, env in envs.items():
            callback = UpdateThreadsCallback(2)
            callback.model = SimpleNamespace(get_env=lambda env=env: env)  # what the callback reads of the model
            torch.set_num_threads(1)
            callback.on_rollout_start()
            seen[name] = torch.get_num_threads()
            callback.on_rollout_end()
            assert torch.get_num_threads() == 2  # the update always takes them
        assert seen == {"in process": 2, "sharded": 1}
    finally:
        for env in envs.values():
            env.close()
        torch.set_num_threads(before)


def test_the_hand_reading_benchmark_reads_places_and_scores_the_counts_guess_at_a_rounds_start(tmp_path, monkeypatch):
    """benchmarks/hand_reading.py: at a partnership round's first move every other seat holds
    seven of the 21 tiles the observer cannot see, so each place is as likely and the counts
    guess costs ln 3 a hidden tile; the places it reads put exactly those 21 in other hands, and
    the same position in the "history" encoding beside it; --deep adds the two-layer read-outs."""

    bench = load_benchmark("hand_reading", monkeypatch)
    from block_env.observations import layout_for

    agent = make_agent("pretrained:partnership_average", "partnership", seed=0)
    observations, places, history = bench.self_play_positions(agent, "partnership", 1, seed=5, extra_encoding="history")
    layout = layout_for(agent.rules, agent.observation)
    unseen = 1.0 - observations[:, layout.slices["hand"]] - observations[:, layout.slices["played"]]
    assert unseen.sum() == 21 and (places < 3).sum() == 21 and np.array_equal(places < 3, unseen > 0.5)
    history_hand = history[:, layout_for(agent.rules, "history").slices["hand"]]
    assert np.array_equal(history_hand, observations[:, layout.slices["hand"]])  # the same position
    assert bench.counts_loss(observations, places, unseen, layout, 0) == pytest.approx(np.log(3))
    table = tmp_path / "table.md"
    figures = bench.main(
        ["--positions", "400", "--agent", "pretrained:standard", "--rules", "standard", "--markdown", str(table)]
    )
    assert len(figures) == 3 and all(np.isfinite(list(figures.values())))
    deep = bench.main(["--positions", "200", "--agent", "pretrained:standard", "--rules", "standard", "--deep"])
    assert len(deep) == 5 and "a two-layer read-out of the observation and the move history" in deep
    assert all(np.isfinite(list(deep.values())))
    assert "on 40 held-out positions" in table.read_text() and "fitted on 360" in table.read_text()
    with pytest.raises(SystemExit):
        bench.main(["--positions", "5"])


def test_mirrored_decisions_follow_the_played_ones_with_their_ends_and_moves_swapped():
    """with_mirrored keeps the decisions as played and adds each one made after the opening,
    mirrored: its ends swapped (the hidden hands appended for the full-information critic read
    the same), its legal moves and target moved to the other end, its return kept."""
    from block_env.observations import layout_for
    from block_env.training.teaching import one_hot_targets, with_mirrored
    from block_env.training.train import collect_teacher_decisions

    values = yaml.safe_load(TINY.read_text()) | {"observation": "tracked", "vec_env": "batched"}
    values["ppo"] = values["ppo"] | {"critic": "full_information"}
    values["pretrain"] = values["pretrain"] | {"decisions": 120}
    config = config_from_dict(values)
    data = collect_teacher_decisions(config, progress=False)
    rules, layout = Rules(), layout_for(Rules(), "tracked")
    targets = one_hot_targets(data["actions"], 57)
    observations, masks, mirrored_targets, returns = with_mirrored(
        layout, rules.tile_set, data["observations"], data["masks"], targets, data["returns"]
    )

    n = len(targets)
    opened = [decode_observation(o[: layout.size], rules, "tracked")["ends"] is not None for o in data["observations"]]
    later = np.flatnonzero(opened)
    assert 0 < len(later) < n and len(observations) == n + len(later)
    assert np.array_equal(observations[:n], data["observations"]) and np.array_equal(mirrored_targets[:n], targets)
    for row, source in zip(range(n, len(observations)), later):
        played = decode_observation(data["observations"][source][: layout.size], rules, "tracked")
        mirror = decode_observation(observations[row][: layout.size], rules, "tracked")
        assert mirror == {**played, "ends": played["ends"][::-1]}
        assert np.array_equal(observations[row][layout.size :], data["observations"][source][layout.size :])
        action = int(data["actions"][source])
        other_end = action if action == rules.tile_set.pass_action else action ^ 1
        assert mirrored_targets[row].argmax() == other_end and masks[row][other_end]
        # Each legal move on the other end: the mask read through the tile set's mirror.
        for move in range(57):
            tile, end = divmod(move, 2)
            mirrored_move = move if move == rules.tile_set.pass_action else 2 * tile + 1 - end
            assert masks[row][mirrored_move] == data["masks"][source][move]
        assert returns[row] == returns[source]


def test_a_mirrored_fit_fits_both_orientations_and_is_refused_without_a_teacher_or_with_history(tiny_run, tmp_path):
    """pretrain.mirror fits each decision after the opening twice (the held-out ones once), and
    its configuration errors name what is missing."""
    from block_env.observations import layout_for
    from block_env.training.teaching import load_decisions, split_held_out
    from block_env.training.train import train

    values = yaml.safe_load(TINY.read_text()) | {"total_timesteps": 256}
    values["pretrain"] = values["pretrain"] | {
        "decisions": 0,
        "earlier_decisions": [str(tiny_run / "teacher_decisions.npz")],
        "mirror": True,
        "holdout": 0.25,
    }
    config = config_from_dict(values)
    summary = train(config, tmp_path / "run", progress=False)["pretrain"]

    data = load_decisions(tiny_run / "teacher_decisions.npz", config, layout_for(Rules(), "vector").size, 57)
    fitted, held_out = split_held_out(data, 0.25)
    after_opening = sum(decode_observation(o, Rules())["ends"] is not None for o in fitted["observations"])
    assert 0 < after_opening < len(fitted["actions"])
    assert summary["decisions"] == len(fitted["actions"]) + after_opening
    assert summary["held_out_decisions"] == len(held_out["actions"])
    with pytest.raises(ValueError, match=r"pretrain\.mirror \(true\) needs pretrain\.teacher"):
        config_from_dict(values | {"pretrain": values["pretrain"] | {"teacher": None}})
    with pytest.raises(ValueError, match=r"pretrain\.mirror and pretrain\.hand_at_most \(4\) do not go together"):
        config_from_dict(values | {"pretrain": values["pretrain"] | {"init_from": "random", "hand_at_most": 4}})
    with pytest.raises(
        ValueError, match="pretrain.mirror with observation 'history': the 'history' layout has no ends"
    ):
        config_from_dict(values | {"observation": "history"})
    with pytest.raises(ValueError, match="pretrain.mirror must be"):
        config_from_dict(values | {"pretrain": values["pretrain"] | {"mirror": "yes"}})
