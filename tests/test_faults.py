"""Killed processes lose nothing: SIGKILL (not only Ctrl-C) during the arena or training, a
record cut short, a crash while an agent is being saved."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_learning_resumed_from, paused_arena, signal_when, spy_on_learning

from block_env.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "block_env.cli"]
ARENA = ["eval", "--agents", "random", "greedy", "strategic", "--deals", "300", "--seed", "4", "--workers", "1"]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The arena run undisturbed: what every resumed run must print."""
    out = tmp_path_factory.mktemp("whole")
    assert main([*ARENA, "--out", str(out), "--quiet"]) == 0
    return out


def test_a_killed_arena_resumes_to_the_undisturbed_numbers(tmp_path, whole):
    cut = tmp_path / "cut"
    marker = tmp_path / "deal_40_started"
    process = subprocess.Popen(paused_arena(40, marker, [*ARENA, "--out", str(cut), "--quiet"]), cwd=ROOT)
    assert signal_when(process, signal.SIGKILL, marker.exists) == -signal.SIGKILL
    records = cut / "records.jsonl"
    assert len(records.read_text().splitlines()) == 1 + 40  # the config line and deals 0-39
    assert main([*ARENA, "--out", str(cut), "--quiet", "--resume"]) == 0
    assert len(records.read_text().splitlines()) == 1 + 300
    for name in ("summary.md", "summary.csv"):
        assert (cut / name).read_text() == (whole / name).read_text()


def test_a_record_cut_short_is_played_again(tmp_path, whole):
    cut = tmp_path / "cut"
    cut.mkdir()
    lines = (whole / "records.jsonl").read_text().splitlines()
    # The config line, 40 whole deals and half of the 41st: what a crash mid-write leaves.
    (cut / "records.jsonl").write_text("\n".join(lines[:41]) + "\n" + lines[41][: len(lines[41]) // 2])
    assert main([*ARENA, "--out", str(cut), "--quiet", "--resume"]) == 0
    assert (cut / "summary.md").read_text() == (whole / "summary.md").read_text()
    assert len((cut / "records.jsonl").read_text().splitlines()) == 301


def test_a_record_cut_short_in_the_middle_is_an_error_naming_the_line(tmp_path, whole):
    cut = tmp_path / "cut"
    cut.mkdir()
    lines = (whole / "records.jsonl").read_text().splitlines()
    lines[5] = lines[5][:10]
    (cut / "records.jsonl").write_text("\n".join(lines[:20]) + "\n")
    with pytest.raises(ValueError, match="line 6 is not a deal's records"):
        from block_env.arena import ArenaConfig, run_arena

        config = ArenaConfig(agents=("random", "greedy", "strategic"), deals=300, seed=4)
        run_arena(config, progress=False, records_path=cut / "records.jsonl", resume=True)


def test_a_killed_training_run_resumes_from_its_last_checkpoint(tmp_path, monkeypatch):
    out = tmp_path / "run"
    args = ["train", "--config", str(ROOT / "configs" / "tiny.yaml"), "--out", str(out), "--quiet"]
    process = subprocess.Popen([*CLI, *args, "--total-timesteps", "1000000"], cwd=ROOT, stdout=subprocess.DEVNULL)
    checkpoints = out / "checkpoints"
    # A million steps: the run is still learning when its second checkpoint appears.
    code = signal_when(process, signal.SIGKILL, lambda: len(list(checkpoints.glob("ppo_*_steps.zip"))) >= 2)
    assert code == -signal.SIGKILL
    latest = max(checkpoints.glob("ppo_*_steps.zip"), key=lambda p: int(p.stem.split("_")[1]))
    target = int(latest.stem.split("_")[1]) + 512
    calls = spy_on_learning(monkeypatch)
    assert main([*args, "--total-timesteps", str(target), "--resume", "latest"]) == 0
    assert_learning_resumed_from(calls, latest)  # its step and weights, not a fresh start
    summary = json.loads((out / "training.json").read_text())
    assert summary["timesteps"] == target and not summary["interrupted"]
    # Its rate counts the 512 steps this run learned, not those before (both figures rounded to 0.1).
    rate, seconds = summary["steps_per_second"], summary["seconds"]
    assert abs(rate * seconds - 512) <= 0.05 * (rate + seconds) + 0.01
    curve = (out / "learning_curve.csv").read_text().splitlines()
    assert curve[0].startswith("timesteps,") and all(len(row.split(",")) == len(curve[0].split(",")) for row in curve)
    assert int(curve[-1].split(",")[0]) == target


def test_resume_latest_without_a_checkpoint_is_a_clear_error(tmp_path):
    args = ["train", "--config", str(ROOT / "configs" / "tiny.yaml"), "--out", str(tmp_path / "empty")]
    result = subprocess.run([*CLI, *args, "--resume", "latest"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2 and "holds no checkpoint to resume from" in result.stderr


def test_a_crash_while_saving_an_agent_leaves_the_previous_one_loadable(tmp_path, monkeypatch):
    import torch

    from block_env import Rules
    from block_env.agents import make_agent
    from block_env.agents.policy import build_policy, policy_shape, save_agent

    rules = Rules()
    net_arch = {"pi": [8], "vf": [8]}
    policy = build_policy(policy_shape(rules, "vector", net_arch, "tanh"))
    folder = save_agent(policy, tmp_path / "agent", rules, "vector", net_arch, "tanh")
    before = (folder / "policy.pth").read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        save_agent(policy, folder, rules, "vector", net_arch, "tanh")
    assert (folder / "policy.pth").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent"]  # no half-written folder left
    make_agent(f"policy:{folder}", rules)  # and it still loads


def test_ctrl_c_while_a_file_is_saved_is_raised_once_the_file_is_in_place(tmp_path):
    """A zip writer cut off mid-entry by Ctrl-C raises its own error, not KeyboardInterrupt; a
    save through save_atomically finishes the file, then raises KeyboardInterrupt."""
    import zipfile

    from block_env.files import save_atomically

    target = tmp_path / "model.zip"

    def save(path):
        with zipfile.ZipFile(path, "w") as archive, archive.open("data", "w") as entry:
            entry.write(b"first half, ")
            os.kill(os.getpid(), signal.SIGINT)
            entry.write(b"second half")

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in a command
    try:
        with pytest.raises(KeyboardInterrupt):
            save_atomically(target, save)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
    with zipfile.ZipFile(target) as archive:
        assert archive.read("data") == b"first half, second half"
