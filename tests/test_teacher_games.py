"""Training's teacher games: the same decisions in this process, in a pool of processes and as
Ray tasks on a local Ray (2 CPUs), and a progress bar fed by the tasks while they play."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from block_env.cli import build_parser, main
from block_env.training.config import config_from_dict
from block_env.training.teaching import decisions_in_processes
from block_env.training.train import collect_teacher_decisions, teacher_games

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "configs" / "tiny.yaml"
CLI = [sys.executable, "-m", "block_env.cli"]

# The Ray tests share one worker with tests/test_ray.py's (one local Ray at a time).
on_ray = pytest.mark.xdist_group("ray")


def teacher_config(teacher: str, decisions: int, workers: int, **pretrain):
    values = yaml.safe_load(TINY.read_text())
    values["pretrain"] = {"teacher": teacher, "decisions": decisions, "workers": workers, **pretrain}
    return config_from_dict(values)


def assert_same_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b) == ["actions", "masks", "observations", "returns", "seats"]
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].tobytes() == b[key].tobytes(), key


def held_play(folder: str, index: int, report=None) -> dict[str, np.ndarray]:
    """A task that tells 5 decisions, then waits (at most a minute) until the driver's progress
    has seen every task's 5 (the file ``seen``): its part comes back only after that when
    reports reach the driver while the tasks play."""
    report(5)
    deadline = time.monotonic() + 60
    while not Path(folder, "seen").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return {"decisions": np.full(5, index)}


def played_with_held_tasks(tmp_path: Path, workers: int, ray_address: str | None = None) -> list[str]:
    """The order in which the driver heard of progress and of parts, for two held tasks."""
    events: list[str] = []
    told = 0

    def progress(more: int) -> None:
        nonlocal told
        told += more
        events.append(f"told {told}")
        if told == 10:
            (tmp_path / "seen").touch()

    data = decisions_in_processes(
        held_play,
        [(str(tmp_path), 0), (str(tmp_path), 1)],
        workers,
        done=lambda part: events.append(f"part {part['decisions'][0]}"),
        progress=progress,
        ray_address=ray_address,
    )
    assert data["decisions"].tolist() == [0] * 5 + [1] * 5  # in task order, whichever finished first
    return events


def test_the_progress_bar_leaves_the_decisions_as_they_were_and_is_quiet_when_off(capsys):
    config = teacher_config("strategic", 120, 1)
    quiet = collect_teacher_decisions(config, progress=False)
    assert capsys.readouterr().out == ""
    shown = collect_teacher_decisions(config, progress=True)
    assert "teacher decisions (strategic)" in capsys.readouterr().out
    assert_same_arrays(quiet, shown)
    assert len(quiet["actions"]) == 120


def test_tasks_report_their_decisions_after_every_game_up_to_their_share():
    told: list[int] = []
    tasks = [(teacher_config("greedy", 200, 2), k, 2, 100) for k in range(2)]
    data = decisions_in_processes(teacher_games, tasks, 1, progress=told.append)
    assert len(data["actions"]) == 200 and sum(told) == 200
    assert len(told) > 2  # more than once per task: after each game, not only at its end


def test_a_process_pool_tells_progress_while_its_tasks_play(tmp_path):
    events = played_with_held_tasks(tmp_path, workers=2)
    assert events.index("told 10") < min(events.index("part 0"), events.index("part 1"))


def test_the_process_pool_gives_the_decisions_of_one_process():
    config = teacher_config("strategic", 150, 2)
    in_pool = collect_teacher_decisions(config, progress=False)
    tasks = [(config, k, 2, 75) for k in range(2)]
    assert_same_arrays(in_pool, decisions_in_processes(teacher_games, tasks, 1))


def test_train_and_main_take_ray_with_an_optional_address():
    parser = build_parser()
    for command in ("train", "main"):
        assert parser.parse_args([command]).ray is None
        assert parser.parse_args([command, "--ray"]).ray == "local"
        assert parser.parse_args([command, "--ray", "auto"]).ray == "auto"


def test_an_empty_ray_address_is_refused_naming_the_key(tmp_path, capsys):
    with pytest.raises(ValueError, match="pretrain.ray_address must be"):
        teacher_config("greedy", 10, 1, ray_address="")
    with pytest.raises(SystemExit):
        main(["train", "--config", str(TINY), "--out", str(tmp_path / "run"), "--ray", ""])
    assert "pretrain.ray_address must be" in capsys.readouterr().err


def test_ray_on_a_run_that_plays_no_teacher_games_is_refused_not_ignored(tmp_path, capsys):
    """--ray says where the teacher games run: with none to run (no teacher, or a resume, which
    continues PPO) it is an error naming why, before anything is written."""
    for extra, why in (
        (["--set", "pretrain.teacher=null"], "this config plays none"),
        (["--resume", "latest"], "a resumed run plays none"),
    ):
        out = tmp_path / "run"
        with pytest.raises(SystemExit):
            main(["train", "--config", str(TINY), "--out", str(out), "--ray", *extra])
        assert why in capsys.readouterr().err and not out.exists()


# -- on a local Ray ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")  # without Ray these skip; in CI that skip is a failure
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # This module's functions travel to Ray's workers by value (they cannot import tests/).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    ray.shutdown()


@on_ray
@pytest.mark.parametrize("teacher, decisions, workers", [("strategic", 300, 2), ("greedy", 400, 3)])
def test_teacher_games_on_ray_give_the_process_pools_arrays_byte_for_byte(local_ray, teacher, decisions, workers):
    in_pool = collect_teacher_decisions(teacher_config(teacher, decisions, workers), progress=False)
    on_ray = collect_teacher_decisions(teacher_config(teacher, decisions, workers, ray_address="local"), progress=True)
    assert len(on_ray["actions"]) == decisions
    assert_same_arrays(in_pool, on_ray)


@on_ray
def test_ray_tasks_tell_progress_while_they_play(local_ray, tmp_path):
    events = played_with_held_tasks(tmp_path, workers=2, ray_address="local")
    assert events.index("told 10") < min(events.index("part 0"), events.index("part 1"))


@on_ray
def test_train_with_ray_starts_a_local_ray_and_warm_starts_from_the_same_decisions(tmp_path):
    """``train --ray`` (its own local Ray, in a process of its own) saves the step-0 agent a run
    without Ray saves: the same teacher decisions, fitted the same way."""
    pytest.importorskip("ray")
    import torch

    weights = {}
    for name, extra in (("processes", []), ("ray", ["--ray"])):
        out = tmp_path / name
        command = [*CLI, "train", "--config", str(TINY), "--out", str(out), "--total-timesteps", "256", "--quiet"]
        done = subprocess.run([*command, *extra], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        weights[name] = torch.load(out / "step_0" / "policy.pth", weights_only=True)
    assert yaml.safe_load((tmp_path / "ray" / "config.yaml").read_text())["pretrain"]["ray_address"] == "local"
    assert sorted(weights["ray"]) == sorted(weights["processes"])
    for key, tensor in weights["processes"].items():
        assert torch.equal(weights["ray"][key], tensor), key


def test_played_by_plays_its_own_moves_while_the_teacher_labels_every_decision():
    """The labels stay the teacher's moves at each recorded position; the positions are those
    the played_by agent's moves reach (the teacher's own games when it is the teacher)."""
    from block_env import Rules
    from block_env.agents import make_agent

    own = collect_teacher_decisions(teacher_config("greedy", 150, 1), progress=False)
    assert_same_arrays(own, collect_teacher_decisions(teacher_config("greedy", 150, 1, played_by="greedy"), False))
    played = collect_teacher_decisions(teacher_config("greedy", 150, 1, played_by="random"), progress=False)
    assert played["observations"].tobytes() != own["observations"].tobytes()
    greedy = make_agent("greedy", Rules())
    for obs, mask, action in zip(played["observations"], played["masks"], played["actions"]):
        assert greedy.act({"observation": obs, "action_mask": mask.astype(np.int8)}) == action


def test_against_labels_one_side_a_game_in_turn_and_seats_that_agent_at_the_others():
    values = yaml.safe_load(TINY.read_text()) | {"rules": "partnership"}
    values["pretrain"] = {"teacher": "greedy", "decisions": 300, "against": "random"}
    sides = collect_teacher_decisions(config_from_dict(values), progress=False)["seats"] % 2
    runs = [int(side) for k, side in enumerate(sides) if k == 0 or side != sides[k - 1]]
    assert len(runs) > 2 and runs == [k % 2 for k in range(len(runs))]  # side 0's game, then side 1's, ...
    values["pretrain"].pop("against")
    every_seat = collect_teacher_decisions(config_from_dict(values), progress=False)["seats"]
    assert sorted(set(every_seat[:12].tolist())) == [0, 1, 2, 3]  # the first game labels all four seats


@pytest.mark.parametrize("key", ["played_by", "against"])
def test_played_by_and_against_need_a_teacher_and_a_known_agent(key):
    with pytest.raises(ValueError, match=rf"pretrain\.{key} \('random'\) needs pretrain.teacher"):
        config_from_dict(yaml.safe_load(TINY.read_text()) | {"pretrain": {"teacher": None, key: "random"}})
    with pytest.raises(ValueError, match=rf"pretrain\.{key}"):
        teacher_config("greedy", 10, 1, **{key: "no_such_agent"})
    with pytest.raises(ValueError, match=rf"pretrain\.{key} cannot be 'human'"):
        teacher_config("greedy", 10, 1, **{key: "human"})
