"""The arena on Ray and self-play training on RLlib, on a local Ray with 2 CPUs at tiny sizes."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import agent_plays_legal_round

# Without Ray these tests skip; in CI (CI set) tests/conftest.py makes that skip a failure.
ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")

from block_env.agents import make_agent  # noqa: E402
from block_env.arena import evaluate  # noqa: E402
from block_env.arena.ray import MARKERS, batch_size  # noqa: E402
from block_env.rules import PRESETS  # noqa: E402
from block_env.training.config import PPOConfig  # noqa: E402
from block_env.training.rllib import PROGRESS, RLlibConfig, export_agent, make_rllib_env, train_rllib  # noqa: E402

CLI = [sys.executable, "-m", "block_env.cli"]

# One local Ray per test process: the tests of this module run in one xdist worker.
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize("rules, episode", [("standard", "round"), ("standard_3p", "match")])
def test_arena_on_ray_gives_the_local_numbers(local_ray, rules, episode):
    agents = ["greedy", "random", "strategic"]
    local = evaluate(agents, rules, episode=episode, deals=6, seed=3, workers=1)
    on_ray = evaluate(agents, rules, episode=episode, deals=6, seed=3, ray_address="local")
    assert on_ray.records == local.records
    assert on_ray.agents == local.agents and on_ray.head_to_head == local.head_to_head


def test_batches_give_every_cpu_several_tasks_and_stay_bounded():
    assert batch_size(1000, 2) == 64 and batch_size(100, 2) == 12 and batch_size(3, 8) == 1


def test_eval_cli_runs_on_ray_and_streams_records(tmp_path):
    out = tmp_path / "arena"
    cli = [sys.executable, "-m", "block_env.cli", "eval", "--agents", "greedy", "random", "--deals", "4"]
    done = subprocess.run(
        [*cli, "--ray", "--workers", "2", "--quiet", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["config"]["deals"] == 4
    local = subprocess.run(
        [*cli, "--workers", "1", "--quiet", "--out", str(tmp_path / "local")], capture_output=True, text=True
    )
    assert (out / "summary.md").read_text() == (tmp_path / "local" / "summary.md").read_text()
    assert local.returncode == 0


def test_rllib_env_is_turn_based_with_masks_and_scaled_zero_sum_rewards():
    """Move for move the AEC env's game (a twin fed the same moves): its seat to play, its
    masks, and at the end each seat's zero-sum value of the round times reward_scale."""
    from block_env import raw_env

    env = make_rllib_env({"rules": "standard", "reward_scale": 0.05})
    twin = raw_env("standard", reward="zero_sum")
    obs, _ = env.reset(seed=4)
    twin.reset(seed=4)
    rewards, done, moves = {}, False, 0
    while not done:
        (agent,) = obs
        mask = obs[agent]["action_mask"]
        assert agent == twin.agent_selection and mask.dtype == np.float32
        np.testing.assert_array_equal(mask, twin.observe(agent)["action_mask"])
        action = int(np.flatnonzero(mask)[moves % int(mask.sum())])
        obs, rewards, terminated, _, _ = env.step({agent: action})
        twin.step(action)
        done, moves = terminated["__all__"], moves + 1
    assert all(twin.terminations.values()) and len(twin.results) == 1
    values = twin.results[0].side_values("zero_sum")
    assert any(values)
    assert rewards == {f"player_{seat}": pytest.approx(0.05 * v) for seat, v in enumerate(values)}


def test_tiny_rllib_training_checkpoints_resumes_and_exports(local_ray, tmp_path):
    config = RLlibConfig(
        iterations=1,
        num_env_runners=0,
        envs_per_runner=2,
        ppo=PPOConfig(n_steps=100, batch_size=100, n_epochs=1, net_arch=(32, 32)),
        snapshots=1,
        snapshot_every=1,
        checkpoint_every=1,
        final_deals=4,
    )
    run = tmp_path / "run"
    first = train_rllib(config, run, progress=False, evaluate_against=("greedy",))
    assert (run / "checkpoint").is_dir() and (run / "tensorboard").is_dir() and "policy:" in first["arena"]
    with pytest.raises(ValueError, match="pass --resume"):
        train_rllib(config, run, progress=False)
    second = train_rllib(dataclasses.replace(config, iterations=2), run, resume=True, progress=False)
    assert second["env_steps"] > first["env_steps"]  # continued, not restarted
    assert json.loads((run / "checkpoint" / PROGRESS).read_text())["iteration"] == 2
    agent_plays_legal_round(make_agent(f"policy:{run / 'agent'}", PRESETS["standard"]), "standard", seed=1)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_an_exported_rllib_module_loads_weights_only_and_plays_legal_moves(preset, tmp_path):
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

    config = RLlibConfig(rules=preset, ppo=PPOConfig(net_arch=(16,)))
    env = make_rllib_env({"rules": preset})
    module = ActionMaskingTorchRLModule(
        observation_space=env.observation_spaces["player_0"],
        action_space=env.action_spaces["player_0"],
        model_config={"fcnet_hiddens": [16], "fcnet_activation": "tanh", "vf_share_layers": False},
    )
    folder = export_agent(module, config, tmp_path / "agent")
    agent = make_agent(f"policy:{folder}", PRESETS[preset])  # torch.load(weights_only=True) inside
    agent_plays_legal_round(agent, preset, seed=2)


def test_rllib_config_errors_name_the_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("iterations: 0\n")
    with pytest.raises(ValueError, match="iterations must be an int >= 1"):
        RLlibConfig.load(path)
    path.write_text("scripted: [strategic]\n")
    with pytest.raises(ValueError, match="scripted opponents must be among"):
        RLlibConfig.load(path)
    path.write_text("colour: red\n")
    with pytest.raises(ValueError, match=r"unknown config key\(s\) colour"):
        RLlibConfig.load(path)
    path.write_text("ppo:\n  anneal_learning_rate: true\n")
    with pytest.raises(ValueError, match="ppo.anneal_learning_rate is for train"):
        RLlibConfig.load(path)
    path.write_text("ppo:\n  critic_warmup: 4096\n")
    with pytest.raises(ValueError, match="ppo.critic_warmup is for train"):
        RLlibConfig.load(path)


def test_rllib_evaluate_opponents_are_checked_before_training(tmp_path):
    """A misspelt or human --evaluate opponent fails before Ray starts or the run folder is made."""
    config = RLlibConfig(rules="tiny", iterations=1)
    for spec, message in (("gredy", "--evaluate gredy: unknown agent 'gredy'"), ("human", "plays unattended")):
        with pytest.raises(ValueError, match=message):
            train_rllib(config, tmp_path / "run", evaluate_against=("random", spec), progress=False)
    assert not (tmp_path / "run").exists()


# -- faults: killed processes -------------------------------------------------------------------

ARENA = ["eval", "--agents", "greedy", "random", "strategic", "--deals", "240", "--seed", "5"]


def _kill_group(process):
    """The driver and every process it started (its local Ray), however the test ends."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def wait_for(what: str, done, process, timeout: float = 240) -> None:
    """Wait until ``done()`` (a marker the run writes); the run must still be going meanwhile."""
    deadline = time.time() + timeout
    while not done():
        assert process.poll() is None, f"the run ended before {what}"
        assert time.time() < deadline, f"the run never got to {what}"
        time.sleep(0.01)


def starts(markers: Path) -> list[tuple[int, int]]:
    """(first deal, worker pid) of each task started so far (arena.ray's MARKERS files)."""
    found = []
    for path in markers.glob("started-*"):
        _, deal, pid = path.name.split("-")
        found.append((int(deal), int(pid)))
    return found


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    out = tmp_path_factory.mktemp("undisturbed")
    done = subprocess.run(
        [*CLI, *ARENA, "--workers", "1", "--quiet", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def arena_on_ray(out: Path, markers: Path, hold: int, *extra: str) -> subprocess.Popen:
    """The arena on a local Ray whose tasks mark their start in ``markers`` and wait while
    ``markers/hold`` names a deal at or below their first (arena.ray's MARKERS)."""
    markers.mkdir()
    (markers / "hold").write_text(str(hold))
    return subprocess.Popen(
        [*CLI, *ARENA, "--ray", "--workers", "2", "--quiet", "--out", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, MARKERS: str(markers)},
    )


def test_a_ray_worker_killed_mid_task_is_retried_to_the_undisturbed_numbers(tmp_path, undisturbed):
    markers = tmp_path / "markers"
    out = tmp_path / "ray"
    process = arena_on_ray(out, markers, hold=0)  # every task waits once started
    try:
        wait_for("a task started", lambda: starts(markers), process)
        first, pid = starts(markers)[0]
        os.kill(pid, signal.SIGKILL)  # mid-task: it is waiting on the hold, its deals unplayed
        (markers / "hold").unlink()
        assert process.wait(timeout=300) == 0
    finally:
        _kill_group(process)
    retried = [p for deal, p in starts(markers) if deal == first]
    assert len(retried) == 2 and retried[0] != retried[1], "the killed task was not run again on another worker"
    for name in ("summary.md", "summary.csv"):
        assert (out / name).read_text() == (undisturbed / name).read_text()


def test_a_killed_ray_driver_resumes_to_the_undisturbed_numbers(tmp_path, undisturbed):
    markers = tmp_path / "markers"
    out = tmp_path / "ray"
    records = out / "records.jsonl"
    held = 2 * batch_size(240, 2)  # the first two tasks play; every later one waits, so the run cannot end
    process = arena_on_ray(out, markers, hold=held)
    try:
        wait_for(
            f"{held} deals recorded", lambda: records.exists() and len(records.read_text().splitlines()) > held, process
        )
    finally:
        _kill_group(process)  # the driver and its local Ray, at once
    assert len(records.read_text().splitlines()) == held + 1  # the config line and the deals before the hold
    done = subprocess.run(
        [*CLI, *ARENA, "--ray", "--workers", "2", "--quiet", "--out", str(out), "--resume"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("summary.md", "summary.csv"):
        assert (out / name).read_text() == (undisturbed / name).read_text()


def test_train_rllib_killed_resumes_from_its_last_checkpoint(tmp_path):
    config = tmp_path / "rllib.yaml"
    config.write_text(
        "envs_per_runner: 2\nnum_env_runners: 0\nsnapshots: 1\nsnapshot_every: 1\ncheckpoint_every: 1\n"
        "final_deals: 2\nppo: {n_steps: 100, batch_size: 100, n_epochs: 1, net_arch: [16]}\n"
    )
    run = tmp_path / "run"
    command = [*CLI, "train-rllib", "--config", str(config), "--out", str(run), "--quiet", "--evaluate", "random"]
    process = subprocess.Popen(
        [*command, "--iterations", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    progress = run / "checkpoint" / PROGRESS
    try:  # a thousand iterations: the run is still going when its second checkpoint is written
        wait_for(
            "a second checkpoint",
            lambda: progress.exists() and json.loads(progress.read_text())["iteration"] >= 2,
            process,
            300,
        )
    finally:
        _kill_group(process)
    reached = json.loads(progress.read_text())["iteration"]
    done = subprocess.run([*command, "--iterations", str(reached + 1), "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(progress.read_text())["iteration"] == reached + 1  # continued, not restarted
    assert (run / "agent" / "agent.json").is_file()
